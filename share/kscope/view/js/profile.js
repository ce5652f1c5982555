// profile.js: the Profile view of a sampled profile: a flame graph of the
// call tree (profile/tree; click a frame to zoom into it, hover for its
// self and total samples), the top functions (profile/flat, sortable) and
// a thread selector (profile/threads).

import { request } from './api.js';
import { el, svg, clear, emptyState, fmtNum, fmtPct, nameColour, SortTable, showTip, hideTip } from './util.js';

const FRAME_H = 18;
const FLAME_W = 1200;

export class ProfileView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
	}

	async show(card) {
		this.card = card;
		clear(this.panel);
		this.threadSel = el('select', { 'aria-label': 'Thread' }, el('option', { value: '', text: 'all threads' }));
		this.threadSel.addEventListener('change', () => this.load());
		this.minPct = el('select', { 'aria-label': 'Smallest frame shown' },
			...['0', '0.1', '0.5', '1', '5'].map((v) => el('option', { value: v, text: `${v}%` })));
		this.minPct.value = '0.1';
		this.minPct.addEventListener('change', () => this.load());
		this.summary = el('span.hint');
		this.flame = el('section.box', null, el('div.loading', { text: 'Loading the threads…' }));
		this.flat = el('section.box');
		this.panel.append(el('div.toolbar', null, el('label', null, 'Thread ', this.threadSel),
			el('label', null, 'Hide frames under ', this.minPct), this.summary), this.flame, this.flat);
		try {
			const t = await request('profile', 'profile/threads', { cardId: card.cardId });
			for (const r of Array.isArray(t.rows) ? t.rows : []) {
				this.threadSel.append(el('option', { value: String(r.index),
					text: `${r.name || 'thread'} (tid ${r.tid}, ${fmtNum(r.samples)} samples, ${fmtPct(r.share_pct)})` }));
			}
		} catch {
			// The error bar says why; the profile can still show all threads.
		}
		if (this.card === card)
			this.load();
	}

	async load() {
		const card = this.card;
		const p = { cardId: card.cardId };
		if (this.threadSel.value !== '')
			p.thread = Number(this.threadSel.value);
		clear(this.flame).append(el('div.loading', { text: 'Loading the call tree…' }));
		clear(this.flat);
		const [tree, flat] = await Promise.all([
			request('profile', 'profile/tree', { ...p, minPct: Number(this.minPct.value) }).catch((e) => ({ error: e })),
			request('profile', 'profile/flat', p).catch((e) => ({ error: e })),
		]);
		if (this.card !== card)
			return;
		this.renderFlame(tree);
		this.renderFlat(flat);
	}

	renderFlame(tree) {
		clear(this.flame).append(el('h3', { text: 'Flame graph' }));
		if (tree.error) {
			this.flame.append(emptyState('The call tree could not be loaded.', tree.error.serverMessage));
			return;
		}
		const roots = Array.isArray(tree.roots) ? tree.roots : [];
		this.summary.textContent = `${fmtNum(tree.samples)} samples · ${fmtNum(tree.threads)} threads`;
		if (!roots.length || !(Number(tree.samples) > 0)) {
			this.flame.append(emptyState('This profile has no samples with a call stack.',
				'The program may have run too briefly for the sampler to see it.'));
			return;
		}
		this.root = { function: 'all', total: roots.reduce((n, r) => n + (Number(r.total) || 0), 0), self: 0, children: roots, parent: null };
		const link = (n) => {
			for (const c of n.children || []) {
				c.parent = n;
				link(c);
			}
		};
		link(this.root);
		this.flameBox = el('div.flame-box');
		this.flame.append(el('p.hint', { text: 'Click a frame to zoom into it; click "all" or an ancestor to zoom out.' }), this.flameBox);
		this.drawFlame(this.root);
	}

	drawFlame(focus) {
		const ancestors = [];
		for (let a = focus.parent; a; a = a.parent)
			ancestors.unshift(a);
		let depth = 0;
		const measure = (n, d) => {
			depth = Math.max(depth, d);
			for (const c of n.children || [])
				measure(c, d + 1);
		};
		measure(focus, ancestors.length);
		const H = (depth + 1) * FRAME_H + 2;
		const s = svg('svg', { class: 'flame', viewBox: `0 0 ${FLAME_W} ${H}`, role: 'img', 'aria-label': 'Flame graph' });
		const total = Number(focus.total) || 1;
		const frame = (n, x, w, d, dim) => {
			if (w < 0.3)
				return;
			const g = svg('g', { class: `flame-frame${dim ? ' dim' : ''}`, tabindex: 0 });
			g.append(svg('rect', { x, y: d * FRAME_H, width: Math.max(0.5, w - 0.5), height: FRAME_H - 1, rx: 2,
				fill: n === this.root ? '#c9d2e3' : nameColour(n.function || '?', 70) }));
			if (w > 40) {
				g.append(svg('text', { x: x + 4, y: d * FRAME_H + 13, class: 'flame-label' },
					truncate(n.function || '?', Math.floor((w - 8) / 6.5))));
			}
			const where = n.file ? `${n.file}${n.line ? `:${n.line}` : ''}` : (n.module || '');
			const tip = [n.function || '?', where, `total ${fmtNum(n.total)} samples (${fmtPct(n.total_pct ?? (n.total / this.root.total * 100))})`,
				`self ${fmtNum(n.self)} samples (${fmtPct(n.self_pct ?? (n.self / this.root.total * 100))})`];
			g.addEventListener('mousemove', (ev) => showTip(ev, tip.filter(Boolean)));
			g.addEventListener('mouseleave', hideTip);
			const zoom = () => {
				hideTip();
				this.drawFlame(n);
			};
			g.addEventListener('click', zoom);
			g.addEventListener('keydown', (ev) => {
				if (ev.key === 'Enter' || ev.key === ' ') {
					ev.preventDefault();
					zoom();
				}
			});
			s.append(g);
		};
		ancestors.forEach((a, d) => frame(a, 0, FLAME_W, d, true));
		const walk = (n, x, w, d) => {
			frame(n, x, w, d, false);
			let cx = x;
			for (const c of n.children || []) {
				const cw = (Number(c.total) || 0) / (Number(n.total) || 1) * w;
				walk(c, cx, cw, d + 1);
				cx += cw;
			}
		};
		walk(focus, 0, FLAME_W * (Number(focus.total) || 0) / total, ancestors.length);
		clear(this.flameBox).append(s);
	}

	renderFlat(flat) {
		clear(this.flat).append(el('h3', { text: 'Top functions' }));
		if (flat.error) {
			this.flat.append(emptyState('The function list could not be loaded.', flat.error.serverMessage));
			return;
		}
		const fns = Array.isArray(flat.functions) ? flat.functions : [];
		if (!fns.length) {
			this.flat.append(emptyState('This profile has no functions with samples.'));
			return;
		}
		const cols = [
			{ key: 'self_pct', label: 'Self %', num: true, render: (r) => fmtPct(r.self_pct) },
			{ key: 'total_pct', label: 'Total %', num: true, render: (r) => fmtPct(r.total_pct) },
			{ key: 'self', label: 'Self', num: true },
			{ key: 'total', label: 'Total', num: true },
			{ key: 'function', label: 'Function' },
			{ key: 'file', label: 'Location', value: (r) => (r.file ? `${r.file}:${r.line ?? ''}` : ''),
				render: (r) => (r.file ? `${r.file}${r.line ? `:${r.line}` : ''}` : '') },
			{ key: 'module', label: 'Module' },
		];
		this.flat.append(new SortTable(cols, fns, { sortKey: 'self_pct', sortDesc: true, limit: 500 }).table);
	}
}

function truncate(s, n) {
	return s.length <= n ? s : `${s.slice(0, Math.max(1, n - 1))}…`;
}
