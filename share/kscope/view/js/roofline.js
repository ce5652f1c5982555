// roofline.js: the Roofline view: for every card with a roofline block
// (roofline/charts), each chart on log-log axes with every ceiling (a
// bandwidth slope up to its ridge point, then the compute roof) and each
// measured point, labelled; hovering shows the values.  The selected
// card's charts come first.

import { request } from './api.js';
import { el, svg, clear, emptyState, fmtNum, nameColour, showTip, hideTip } from './util.js';

export class RooflineView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
		this.body = null;
	}

	async show(card) {
		clear(this.panel).append(el('div.loading', { text: 'Loading the rooflines…' }));
		if (!this.body) {
			try {
				this.body = await request('roofline', 'roofline/charts', {});
			} catch (e) {
				clear(this.panel).append(emptyState('The rooflines could not be loaded.', e.serverMessage));
				return;
			}
		}
		const cards = Array.isArray(this.body.cards) ? this.body.cards.slice() : [];
		clear(this.panel);
		if (!cards.length) {
			this.panel.append(emptyState('This result has no roofline.'));
			return;
		}
		cards.sort((a, b) => (b.cardId === card.cardId) - (a.cardId === card.cardId));
		if (!cards.some((c) => c.cardId === card.cardId))
			this.panel.append(el('p.note', { text: `${card.cardName || card.cardId} has no roofline; these results have one.` }));
		for (const c of cards) {
			const sec = el('section.box', { dataset: { card: c.cardId } }, el('h3', { text: c.title || c.cardId }));
			const charts = Array.isArray(c.charts) ? c.charts : [];
			if (!charts.length)
				sec.append(emptyState('This roofline block has no charts.'));
			const figs = charts.map((ch) => rooflineChart(c, ch));
			sec.append(...figs);
			this.panel.append(sec);
			for (const f of figs)
				if (f.placeLabels)
					f.placeLabels();
		}
	}
}

function decadeFloor(v) {
	return Math.pow(10, Math.floor(Math.log10(v)));
}

function decadeCeil(v) {
	return Math.pow(10, Math.ceil(Math.log10(v)));
}

function rooflineChart(card, chart) {
	const roofs = (Array.isArray(chart.rooflines) ? chart.rooflines : []).filter((r) =>
		Number(r.bw) > 0 && Number(r.computility) > 0);
	const wrap = el('figure.roofline', null, el('figcaption', { text: chart.title || 'Roofline' }));
	if (!roofs.length) {
		wrap.append(emptyState('This chart has no ceilings.'));
		return wrap;
	}
	const pts = roofs.filter((r) => Array.isArray(r.point) && Number(r.point[0]) > 0 && Number(r.point[1]) > 0);
	const xs = [], ys = [];
	for (const r of roofs) {
		xs.push(Number(r.computility) / Number(r.bw));
		ys.push(Number(r.computility));
	}
	for (const r of pts) {
		xs.push(Number(r.point[0]));
		ys.push(Number(r.point[1]));
	}
	const xmin = decadeFloor(Math.min(...xs) / 4), xmax = decadeCeil(Math.max(...xs) * 4);
	const ymin = decadeFloor(Math.min(...ys) / 10), ymax = decadeCeil(Math.max(...ys) * 2);
	const W = 760, H = 440, L = 70, R = 24, T = 16, B = 48;
	const pw = W - L - R, ph = H - T - B;
	const X = (v) => L + (Math.log10(v) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin)) * pw;
	const Y = (v) => T + ph - (Math.log10(v) - Math.log10(ymin)) / (Math.log10(ymax) - Math.log10(ymin)) * ph;
	const s = svg('svg', { class: 'roofline-chart', viewBox: `0 0 ${W} ${H}`, role: 'img',
		'aria-label': `Roofline: ${chart.title || ''}` });
	// Grid and axes.
	for (let v = xmin; v <= xmax * 1.0001; v *= 10) {
		s.append(svg('line', { x1: X(v), x2: X(v), y1: T, y2: T + ph, class: 'grid' }),
			svg('text', { x: X(v), y: T + ph + 16, 'text-anchor': 'middle', class: 'tick' }, fmtNum(v)));
	}
	for (let v = ymin; v <= ymax * 1.0001; v *= 10) {
		s.append(svg('line', { x1: L, x2: L + pw, y1: Y(v), y2: Y(v), class: 'grid' }),
			svg('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'tick' }, fmtNum(v)));
	}
	s.append(svg('rect', { x: L, y: T, width: pw, height: ph, class: 'frame' }),
		svg('text', { x: L + pw / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis' }, 'arithmetic intensity (FLOP/byte)'),
		svg('text', { x: 16, y: T + ph / 2, 'text-anchor': 'middle', class: 'axis',
			transform: `rotate(-90 16 ${T + ph / 2})` }, 'performance (GFLOP/s)'));
	// Ceilings: one slope per distinct bandwidth, up to its highest roof,
	// and one roof per distinct compute ceiling, from its leftmost ridge
	// (a block repeats a bandwidth for every compute ceiling it meets).
	const labels = [], obstacles = [];
	const slopes = new Map(), tops = new Map();
	roofs.forEach((r, i) => {
		const bw = Number(r.bw), comp = Number(r.computility);
		const sk = `${bw}|${r.bw_name || ''}`, ck = `${comp}|${r.computility_name || ''}`;
		const sl = slopes.get(sk);
		if (!sl)
			slopes.set(sk, { bw, name: r.bw_name || '', top: comp, colour: nameColour(r.bw_name || `bw${i}`, 42) });
		else
			sl.top = Math.max(sl.top, comp);
		const ro = tops.get(ck);
		if (!ro)
			tops.set(ck, { comp, name: r.computility_name || 'compute', ridge: comp / bw });
		else
			ro.ridge = Math.min(ro.ridge, comp / bw);
	});
	for (const sl of slopes.values()) {
		const x0 = Math.max(xmin, ymin / sl.bw), ridge = sl.top / sl.bw;
		const slope = svg('line', { x1: X(x0), y1: Y(sl.bw * x0), x2: X(ridge), y2: Y(sl.top), class: 'ceiling', stroke: sl.colour });
		const text = `${sl.name ? `${sl.name}: ` : ''}${fmtNum(sl.bw)} GB/s`;
		const tipText = [text, `ridge at ${fmtNum(ridge)} FLOP/byte`];
		slope.addEventListener('mousemove', (ev) => showTip(ev, tipText));
		slope.addEventListener('mouseleave', hideTip);
		s.append(slope);
		const label = svg('text', { x: X(x0) + 6, y: Y(sl.bw * x0) - 6, class: 'ceiling-label', fill: sl.colour,
			dataset: { value: sl.bw } }, text);
		s.append(label);
		labels.push({ e: label, value: fmtNum(sl.bw) });
	}
	for (const ro of tops.values()) {
		const roof = svg('line', { x1: X(ro.ridge), y1: Y(ro.comp), x2: L + pw, y2: Y(ro.comp), class: 'ceiling roof' });
		const t = [`${ro.name}: ${fmtNum(ro.comp)} GFLOP/s`];
		roof.addEventListener('mousemove', (ev) => showTip(ev, t));
		roof.addEventListener('mouseleave', hideTip);
		// Above its roof at the plot's right edge; a long name is cut to
		// fit, never the value.
		const keep = `: ${fmtNum(ro.comp)} GFLOP/s`;
		const label = svg('text', { x: L + pw - 4, y: Y(ro.comp) - 5, 'text-anchor': 'end', class: 'roof-label',
			dataset: { value: ro.comp } }, `${ro.name}${keep}`);
		s.append(roof, label);
		labels.push({ e: label, cut: ro.name, keep, maxW: pw * 0.6 });
	}
	// The measured points: rooflines that share a point (kscope op gives
	// the launch's point with every ceiling) are one point, labelled with
	// the result; distinct points (one per cache level of a simulation)
	// with their bandwidth's name.
	const groups = new Map();
	for (const r of pts) {
		const k = `${Number(r.point[0])}|${Number(r.point[1])}`;
		if (!groups.has(k))
			groups.set(k, []);
		groups.get(k).push(r);
	}
	[...groups.values()].forEach((g, i) => {
		const r = g[0];
		const ai = Number(r.point[0]), perf = Number(r.point[1]);
		// The ceiling that binds: the lowest of the group's at this intensity.
		const bind = g.reduce((a, b) => (Math.min(Number(b.computility), Number(b.bw) * ai) <
			Math.min(Number(a.computility), Number(a.bw) * ai) ? b : a));
		const ceil = Math.min(Number(bind.computility), Number(bind.bw) * ai);
		const colour = g.length > 1 ? '#30384a' : nameColour(r.bw_name || `bw${roofs.indexOf(r)}`, 42);
		const bound = ai < Number(bind.computility) / Number(bind.bw) ? `memory-bound (${bind.bw_name || 'bandwidth'})`
			: `compute-bound (${bind.computility_name || 'compute'})`;
		const label = g.length === 1 && r.bw_name ? r.bw_name
			: `${card.title || card.cardId}${groups.size > 1 ? ` #${i + 1}` : ''}`;
		const c = svg('circle', { cx: X(ai), cy: Y(perf), r: 6, class: 'roofline-point', fill: colour,
			dataset: { card: card.cardId } });
		const tip = [label, `intensity ${fmtNum(ai, 4)} FLOP/byte`, `performance ${fmtNum(perf, 4)} GFLOP/s`,
			`${bound}; ${fmtNum(perf / ceil * 100, 1)}% of its ceiling`];
		c.append(svg('title', null, tip.join('\n')));
		c.addEventListener('mousemove', (ev) => showTip(ev, tip));
		c.addEventListener('mouseleave', hideTip);
		const text = svg('text', { x: X(ai) + 9, y: Y(perf) + 4, class: 'point-label' }, label);
		s.append(c, text);
		labels.push({ e: text });
		obstacles.push({ l: X(ai) - 7, r: X(ai) + 7, t: Y(perf) - 7, b: Y(perf) + 7 });
	});
	wrap.append(s);
	wrap.placeLabels = () => placeLabels(labels, obstacles, { top: 2, bottom: H - 2 });
	return wrap;
}

// Moves labels apart once they are in the page and can be measured: a
// label that would overlap one placed before it goes down (or up) by
// whole label heights to the nearest free place, clear of the obstacles
// (the points) as well.  A label with maxW has
// its cut part (a name) shortened until it fits, its keep part (the
// value) never.  Sizes are estimated when the chart is not laid out (a
// hidden tab).
function placeLabels(labels, obstacles, { top, bottom }) {
	const placed = obstacles.slice();
	const box = (e) => {
		let b = null;
		try {
			b = e.getBBox();
		} catch {
			b = null;
		}
		if (b && b.width > 0)
			return { l: b.x, r: b.x + b.width, t: b.y, b: b.y + b.height };
		const w = e.textContent.length * 6.2, h = 14;
		const x = Number(e.getAttribute('x')), y = Number(e.getAttribute('y'));
		const l = e.getAttribute('text-anchor') === 'end' ? x - w : x;
		return { l, r: l + w, t: y - 0.8 * h, b: y + 0.2 * h };
	};
	for (const lab of labels) {
		const e = lab.e;
		if (lab.maxW) {
			let n = lab.cut.length;
			while (n > 8 && box(e).r - box(e).l > lab.maxW) {
				n--;
				e.textContent = `${lab.cut.slice(0, n)}…${lab.keep}`;
			}
		}
		const b0 = box(e), h = b0.b - b0.t;
		const y0 = Number(e.getAttribute('y'));
		const free = (bx) => placed.every((p) => bx.r <= p.l || bx.l >= p.r || bx.b <= p.t || bx.t >= p.b);
		let dy = 0;
		for (let k = 0; k < 80; k++) {
			const d = (k % 2 ? -1 : 1) * Math.ceil(k / 2) * (h + 1);
			const bx = { l: b0.l, r: b0.r, t: b0.t + d, b: b0.b + d };
			if (bx.t < top || bx.b > bottom)
				continue;
			if (free(bx)) {
				dy = d;
				break;
			}
		}
		e.setAttribute('y', y0 + dy);
		placed.push({ l: b0.l, r: b0.r, t: b0.t + dy, b: b0.b + dy });
	}
}
