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
			for (const ch of charts)
				sec.append(rooflineChart(c, ch));
			this.panel.append(sec);
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
	const W = 760, H = 440, L = 70, R = 180, T = 16, B = 48;
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
	// Ceilings: one roof per distinct compute ceiling, one slope per roofline.
	const roofDone = new Set();
	roofs.forEach((r, i) => {
		const bw = Number(r.bw), comp = Number(r.computility);
		const colour = nameColour(r.bw_name || `bw${i}`, 42);
		const x0 = Math.max(xmin, ymin / bw), ridge = comp / bw;
		const slope = svg('line', { x1: X(x0), y1: Y(bw * x0), x2: X(ridge), y2: Y(comp), class: 'ceiling', stroke: colour });
		const bwName = r.bw_name ? `${r.bw_name}: ` : '';
		const tipText = [`${bwName}${fmtNum(bw)} GB/s`, `ridge at ${fmtNum(ridge)} FLOP/byte`];
		slope.addEventListener('mousemove', (ev) => showTip(ev, tipText));
		slope.addEventListener('mouseleave', hideTip);
		s.append(slope);
		const lx = X(x0) + 6, ly = Y(bw * x0) - 6;
		s.append(svg('text', { x: lx, y: ly, class: 'ceiling-label', fill: colour,
			transform: `rotate(${slopeAngle(X, Y, bw, x0, ridge)} ${lx} ${ly})` }, `${bwName}${fmtNum(bw)} GB/s`));
		if (!roofDone.has(comp)) {
			roofDone.add(comp);
			const roof = svg('line', { x1: X(ridge), y1: Y(comp), x2: L + pw, y2: Y(comp), class: 'ceiling roof' });
			const t = [`${r.computility_name || 'compute'}: ${fmtNum(comp)} GFLOP/s`];
			roof.addEventListener('mousemove', (ev) => showTip(ev, t));
			roof.addEventListener('mouseleave', hideTip);
			s.append(roof, svg('text', { x: L + pw + 6, y: Y(comp) + 4, class: 'roof-label' },
				`${r.computility_name || 'compute'} ${fmtNum(comp)}`));
		}
	});
	// The measured points.
	pts.forEach((r, i) => {
		const ai = Number(r.point[0]), perf = Number(r.point[1]);
		const colour = nameColour(r.bw_name || `bw${roofs.indexOf(r)}`, 42);
		const bound = ai < Number(r.computility) / Number(r.bw) ? 'memory-bound' : 'compute-bound';
		const label = r.bw_name || `${card.title || card.cardId}${pts.length > 1 ? ` #${i + 1}` : ''}`;
		const c = svg('circle', { cx: X(ai), cy: Y(perf), r: 6, class: 'roofline-point', fill: colour,
			dataset: { card: card.cardId } });
		const tip = [label, `intensity ${fmtNum(ai, 4)} FLOP/byte`, `performance ${fmtNum(perf, 4)} GFLOP/s`,
			`${bound}; ${fmtNum(perf / Math.min(Number(r.computility), Number(r.bw) * ai) * 100, 1)}% of its ceiling`];
		c.append(svg('title', null, tip.join('\n')));
		c.addEventListener('mousemove', (ev) => showTip(ev, tip));
		c.addEventListener('mouseleave', hideTip);
		s.append(c, svg('text', { x: X(ai) + 9, y: Y(perf) + 4 + i * 13, class: 'point-label' }, label));
	});
	wrap.append(s);
	return wrap;
}

// The screen angle of a bandwidth slope, for its label.
function slopeAngle(X, Y, bw, x0, x1) {
	const dx = X(x1) - X(x0), dy = Y(bw * x1) - Y(bw * x0);
	return (Math.atan2(dy, dx) * 180) / Math.PI;
}
