// profile.js: the Profile view of a sampled profile: a flame graph of the
// call tree (profile/tree; click a frame to zoom into it, hover for its
// self and total samples), the top functions (profile/flat, sortable),
// the per-sample counters by function when the run recorded some
// (profile/counters), a thread selector (profile/threads) and, for a
// profile with samples of both timers, a clock selector: CPU-time and
// wall-clock samples are never added up, so every view counts one timer's.

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
		this.clockSel = el('select', { 'aria-label': 'Clock' },
			el('option', { value: 'cpu', text: 'CPU time' }), el('option', { value: 'real', text: 'wall-clock time' }));
		this.clockSel.addEventListener('change', () => this.load());
		this.clockLabel = el('label', { hidden: true }, 'Count ', this.clockSel);
		this.hasCounters = false;
		this.summary = el('span.hint');
		this.flame = el('section.box', null, el('div.loading', { text: 'Loading the threads…' }));
		this.flat = el('section.box');
		this.counters = el('section.box');
		this.panel.append(el('div.toolbar', null, el('label', null, 'Thread ', this.threadSel), this.clockLabel,
			el('label', null, 'Hide frames under ', this.minPct), this.summary), this.flame, this.flat, this.counters);
		try {
			const t = await request('profile', 'profile/threads', { cardId: card.cardId });
			// With both timers, each thread's share is given per timer.
			const share = (r) => (t.by_clock ? `CPU ${fmtPct(r.cpu_share_pct)} · wall ${fmtPct(r.wall_share_pct)}`
				: fmtPct(r.share_pct));
			for (const r of Array.isArray(t.rows) ? t.rows : []) {
				this.threadSel.append(el('option', { value: String(r.index),
					text: `${r.name || 'thread'} (tid ${r.tid}, ${fmtNum(r.samples)} samples, ${share(r)})` }));
			}
			this.clockLabel.hidden = !t.by_clock;
			this.hasCounters = Number(t.counters_recorded) > 0;
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
		if (!this.clockLabel.hidden)
			p.clock = this.clockSel.value;
		clear(this.flame).append(el('div.loading', { text: 'Loading the call tree…' }));
		clear(this.flat);
		clear(this.counters);
		const [tree, flat, counters] = await Promise.all([
			request('profile', 'profile/tree', { ...p, minPct: Number(this.minPct.value) }).catch((e) => ({ error: e })),
			request('profile', 'profile/flat', p).catch((e) => ({ error: e })),
			this.hasCounters ? request('profile', 'profile/counters', p).catch((e) => ({ error: e })) : null,
		]);
		if (this.card !== card)
			return;
		// Counts of both timers side by side, or counters, that the
		// threads did not announce (their request failed): choose a timer,
		// or fetch the counters, and ask again.
		if ((!p.clock && (tree.by_clock || flat.by_clock)) ||
		    (!this.hasCounters && Number(flat.counters_recorded) > 0)) {
			if (tree.by_clock || flat.by_clock)
				this.clockLabel.hidden = false;
			this.hasCounters = Number(flat.counters_recorded) > 0;
			this.load();
			return;
		}
		this.renderFlame(tree);
		this.renderFlat(flat);
		this.renderCounters(counters);
	}

	// What the shares are of, in words: the timer whose samples count.
	clockWords(r) {
		if (r.filter && r.filter.clock === 'cpu')
			return 'CPU-time samples';
		if (r.filter && r.filter.clock === 'real')
			return 'wall-clock samples';
		const cpu = Number(r.timers?.cpu?.periods) > 0, wall = Number(r.timers?.wall?.periods) > 0;
		return cpu && !wall ? 'CPU-time samples' : wall && !cpu ? 'wall-clock samples' : 'samples';
	}

	renderFlame(tree) {
		clear(this.flame).append(el('h3', { text: 'Flame graph' }));
		if (tree.error) {
			this.flame.append(emptyState('The call tree could not be loaded.', tree.error.serverMessage));
			return;
		}
		const roots = Array.isArray(tree.roots) ? tree.roots : [];
		this.summary.textContent = `${fmtNum(tree.samples)} ${this.clockWords(tree)} · ${fmtNum(tree.threads)} threads`;
		if (!roots.length || !(Number(tree.samples) > 0)) {
			this.flame.append(emptyState('This profile has no samples with a call stack.',
				'The program may have run too briefly for the sampler to see it.'));
			return;
		}
		this.root = { function: 'all', total: roots.reduce((n, r) => n + (Number(r.total) || 0), 0), self: 0, children: roots, parent: null };
		let deepest = 0;
		const link = (n, d) => {
			deepest = Math.max(deepest, d);
			for (const c of n.children || []) {
				c.parent = n;
				link(c, d + 1);
			}
		};
		link(this.root, 0);
		this.flameBox = el('div.flame-box');
		this.flame.append(el('p.hint', { text: 'Click a frame to zoom into it; click "all" or an ancestor to zoom out.' }));
		const cut = Number(tree.max_depth) || 0;
		if (cut && deepest >= cut)
			this.flame.append(el('p.hint.cut-note', { text: `Call paths deeper than ${fmtNum(cut)} levels are cut at that depth here; kscope report --tree shows them whole.` }));
		this.flame.append(this.flameBox);
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
		this.flat.append(el('p.hint', { text: `Shares of the ${fmtNum(flat.periods)} timer periods of the `
			+ `${fmtNum(flat.samples)} ${this.clockWords(flat)} counted.` }));
		const cols = [
			{ key: 'self_pct', label: 'Self %', num: true, render: (r) => fmtPct(r.self_pct) },
			{ key: 'total_pct', label: 'Total %', num: true, render: (r) => fmtPct(r.total_pct) },
			{ key: 'self', label: 'Self', num: true },
			{ key: 'total', label: 'Total', num: true },
			...placeColumns(),
		];
		this.flat.append(new SortTable(cols, fns, { sortKey: 'self_pct', sortDesc: true, limit: 500 }).table);
	}

	// The per-sample counters per function (kscope sample --counters), as
	// kscope report --counters gives them; a counter the machine lacked
	// reads "not supported" in every row.
	renderCounters(cnt) {
		clear(this.counters).append(el('h3', { text: 'Counters by function' }));
		if (cnt === null) {
			this.counters.append(emptyState('This profile has no per-sample counters.',
				'kscope sample --counters LIST records them (kscope avail --counters lists them).'));
			return;
		}
		if (cnt.error) {
			this.counters.append(emptyState('The counters could not be loaded.', cnt.error.serverMessage));
			return;
		}
		const names = Array.isArray(cnt.counters) ? cnt.counters : [];
		const totals = cnt.totals || {};
		this.counters.append(el('ul.counter-totals', null, names.map((c) => el('li', {
			text: c.supported ? `${c.name}: ${fmtNum(totals[c.name])} events in these samples`
				: `${c.name}: ${c.note || 'not supported'}` }))));
		this.counters.append(el('p.hint', { text: 'The events between two of a thread\'s '
			+ `${this.clockWords(cnt)} go to the function the later one found running.` }));
		const fns = Array.isArray(cnt.functions) ? cnt.functions : [];
		if (!fns.length) {
			this.counters.append(emptyState('No function has samples or counted events.'));
			return;
		}
		const cols = [
			...names.map((c) => ({ key: `counter:${c.name}`, label: c.name, num: true,
				value: (r) => r.counters?.[c.name] ?? null,
				render: (r) => (c.supported && r.counters?.[c.name] !== null && r.counters?.[c.name] !== undefined
					? fmtNum(r.counters[c.name]) : 'not supported') })),
			{ key: 'self', label: 'Self', num: true },
			...placeColumns(),
		];
		const first = names.find((c) => c.supported);
		this.counters.append(new SortTable(cols, fns, { sortKey: first ? `counter:${first.name}` : 'self',
			sortDesc: true, limit: 500 }).table);
	}
}

// A function's name and place, as the flat profile and the counters show
// them: words where the profile does not know.
function placeColumns() {
	return [
		{ key: 'function', label: 'Function', render: (r) => r.function || 'unknown' },
		{ key: 'file', label: 'Location', value: (r) => (r.file ? `${r.file}:${r.line ?? ''}` : ''),
			render: (r) => (r.file ? `${r.file}${r.line ? `:${r.line}` : ''}` : 'unknown') },
		{ key: 'module', label: 'Module', render: (r) => r.module || 'unknown' },
	];
}

function truncate(s, n) {
	return s.length <= n ? s : `${s.slice(0, Math.max(1, n - 1))}…`;
}
