// causal.js: the Causal view of a kscope causal run (causal/curves): one
// small chart per curve of causal.csv, in its (rank) order -- line speedup
// across, program speedup up on one scale for all charts, each point with
// its 95% interval -- and a table of every curve point's values, so that
// the numbers can be read exactly.  What was wrong with causal.csv (the
// import's messages) is listed above the charts.  All text goes into the
// page through el()/svg() as text, never as markup: file and point names
// come from the profiled program.

import { request } from './api.js';
import { el, svg, clear, emptyState, fmtNum, SortTable, showTip, hideTip } from './util.js';

// One chart's size in SVG units, and the room its axes' labels take.
const W = 260, H = 170;
const M = { left: 46, right: 16, top: 10, bottom: 24 };
const X_TICKS = [0, 25, 50, 75, 100];

export class CausalView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
	}

	async show(card) {
		this.card = card;
		clear(this.panel).append(el('div.loading', { text: 'Loading the causal profile…' }));
		let b;
		try {
			b = await request('causal', 'causal/curves', { cardId: card.cardId });
		} catch (e) {
			clear(this.panel).append(emptyState('The causal profile could not be loaded.', e.serverMessage));
			return;
		}
		if (this.card !== card)
			return;
		clear(this.panel);
		const curves = Array.isArray(b.curves) ? b.curves : [];
		const messages = Array.isArray(b.messages) ? b.messages : [];
		if (messages.length) {
			const list = el('ul.causal-messages');
			for (const m of messages)
				list.append(el('li', { text: m }));
			this.panel.append(el('section.box', null, el('h3', { text: 'Problems in causal.csv' }), list));
		}
		if (!curves.length) {
			this.panel.append(emptyState('This causal profile has no curves.',
				messages.length ? 'See the problems above.' : 'report.txt in the run directory says why.'));
			return;
		}
		const points = [...new Set(curves.map((c) => c.point))];
		const scale = yScale(curves);
		const grid = el('div.causal-grid');
		curves.forEach((c, i) => grid.append(panel(c, i, scale, points.length > 1)));
		const n = curves.length;
		this.panel.append(el('section.box', null,
			el('h3', { text: 'Causal profile' }),
			el('p.hint', { text: `${n} curve${n === 1 ? '' : 's'}, best ranked first` +
				` (progress point${points.length === 1 ? '' : 's'} ${points.join(', ')}).` +
				' Across: the line\'s virtual speedup, 0–100%; up: the predicted program speedup,' +
				' on one scale for every chart; the bars are 95% intervals.' }),
			grid));
		this.panel.append(el('section.box', null, el('h3', { text: 'Curve points' }), table(curves)));
	}
}

// The file's last component: the charts' titles (the whole path is their
// tooltip and the table's).
function baseName(file) {
	const s = String(file ?? '');
	const i = s.lastIndexOf('/');
	return i >= 0 && i < s.length - 1 ? s.slice(i + 1) : s;
}

// -0 shown as 0.
function num(v) {
	return typeof v === 'number' ? v + 0 : v;
}

function known(v) {
	return typeof v === 'number' && Number.isFinite(v);
}

// 1, 2 or 5 times a power of ten, at least step.
function niceStep(step) {
	const p = 10 ** Math.floor(Math.log10(step));
	for (const m of [1, 2, 5, 10])
		if (m * p >= step)
			return m * p;
	return 10 * p;
}

// The program-speedup axis every chart shares: from the lowest to the
// highest value or interval end of all curves, 0 included, on round ticks.
function yScale(curves) {
	let lo = 0, hi = 0;
	for (const c of curves)
		for (const p of c.points || [])
			for (const v of [p.program_speedup_pct, p.ci_low_pct, p.ci_high_pct])
				if (known(v)) {
					lo = Math.min(lo, v);
					hi = Math.max(hi, v);
				}
	if (hi - lo < 1e-9) {
		lo -= 1;
		hi += 1;
	}
	const step = niceStep((hi - lo) / 4);
	lo = Math.floor(lo / step - 1e-9) * step;
	hi = Math.ceil(hi / step + 1e-9) * step;
	const ticks = [];
	for (let t = lo; t <= hi + step / 2; t += step)
		ticks.push(Number(t.toFixed(10)));
	return { lo, hi, ticks };
}

function pct(v) {
	return known(v) ? `${fmtNum(num(v))}%` : '?';
}

// One curve's chart.
function panel(c, index, scale, showPoint) {
	const iw = W - M.left - M.right, ih = H - M.top - M.bottom;
	const x = (v) => M.left + (Math.max(0, Math.min(100, v)) / 100) * iw;
	const y = (v) => M.top + (1 - (v - scale.lo) / (scale.hi - scale.lo)) * ih;
	const where = `${baseName(c.file)}:${c.line}`;
	const s = svg('svg', { class: 'causal-chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
		'aria-label': `${where}: program speedup by line speedup` });
	for (const t of scale.ticks) {
		s.append(svg('line', { class: t === 0 ? 'causal-zero' : 'grid', x1: M.left, x2: W - M.right, y1: y(t), y2: y(t) }),
			svg('text', { class: 'tick', x: M.left - 4, y: y(t), 'text-anchor': 'end', 'dominant-baseline': 'middle', text: `${t}%` }));
	}
	for (const t of X_TICKS) {
		s.append(svg('line', { class: 'grid', x1: x(t), x2: x(t), y1: M.top, y2: H - M.bottom }),
			svg('text', { class: 'tick', x: x(t), y: H - M.bottom + 13, 'text-anchor': 'middle', text: `${t}%` }));
	}
	s.append(svg('rect', { class: 'frame', x: M.left, y: M.top, width: iw, height: ih }));
	const pts = (c.points || []).filter((p) => known(p.line_speedup_pct) && known(p.program_speedup_pct))
		.slice().sort((a, b) => a.line_speedup_pct - b.line_speedup_pct);
	for (const p of pts) {
		if (!known(p.ci_low_pct) || !known(p.ci_high_pct))
			continue;
		const cx = x(p.line_speedup_pct), y0 = y(p.ci_low_pct), y1 = y(p.ci_high_pct);
		s.append(svg('path', { class: 'causal-ci', d: `M${cx - 3},${y0} H${cx + 3} M${cx},${y0} V${y1} M${cx - 3},${y1} H${cx + 3}` }));
	}
	if (pts.length > 1)
		s.append(svg('polyline', { class: 'causal-line',
			points: pts.map((p) => `${x(p.line_speedup_pct)},${y(p.program_speedup_pct)}`).join(' ') }));
	for (const p of pts) {
		const dot = svg('circle', { class: 'causal-point', cx: x(p.line_speedup_pct), cy: y(p.program_speedup_pct), r: 3.5 });
		const tip = [where, `line +${fmtNum(num(p.line_speedup_pct))}%: program ${pct(p.program_speedup_pct)}`,
			`95% interval [${pct(p.ci_low_pct)}, ${pct(p.ci_high_pct)}]`,
			`${fmtNum(p.experiments)} experiments, ${fmtNum(p.visits)} visits`];
		dot.addEventListener('mousemove', (ev) => showTip(ev, tip));
		dot.addEventListener('mouseleave', hideTip);
		s.append(dot);
	}
	const cap = el('figcaption', null,
		el('span.causal-title', { text: where, title: String(c.file ?? '') }),
		c.function ? el('span.causal-function', { text: `in ${c.function}` }) : null,
		el('span.causal-impact', { text: `impact ${known(c.impact_pct) ? fmtNum(num(c.impact_pct), 1) : '?'}%` }),
		showPoint ? el('span.causal-pointname', { text: `point ${c.point}` }) : null);
	return el('figure.causal-panel', { dataset: { curve: String(index) } }, cap, s);
}

// Every point of every curve, in the file's order.
function table(curves) {
	const rows = [];
	curves.forEach((c, i) => {
		for (const p of c.points || [])
			rows.push({ curve: i, where: `${baseName(c.file)}:${c.line}`, file: c.file, point: c.point,
				function: c.function ?? null,
				line_speedup_pct: num(p.line_speedup_pct), program_speedup_pct: num(p.program_speedup_pct),
				ci_low_pct: num(p.ci_low_pct), ci_high_pct: num(p.ci_high_pct),
				experiments: p.experiments, visits: p.visits });
	});
	const interval = (key) => (r) => el('span', { text: known(r[key]) ? fmtNum(r[key]) : '?',
		title: known(r[key]) ? null : 'unknown: no resample visited the point' });
	const cols = [
		{ key: 'where', label: 'Line', render: (r) => el('span', { text: r.where, title: String(r.file ?? '') }) },
		{ key: 'function', label: 'Function', render: (r) => el('span', r.function === null
			? { text: '?', title: 'causal.csv names no function (written by an older kscope causal)' }
			: { text: r.function }) },
		{ key: 'point', label: 'Progress point' },
		{ key: 'line_speedup_pct', label: 'Line speedup (%)', num: true },
		{ key: 'program_speedup_pct', label: 'Program speedup (%)', num: true },
		{ key: 'ci_low_pct', label: '95% low (%)', num: true, render: interval('ci_low_pct') },
		{ key: 'ci_high_pct', label: '95% high (%)', num: true, render: interval('ci_high_pct') },
		{ key: 'experiments', label: 'Experiments', num: true },
		{ key: 'visits', label: 'Visits', num: true },
	];
	return new SortTable(cols, rows, { limit: rows.length, rowClass: (r) => `causal-row curve-${r.curve}` }).table;
}
