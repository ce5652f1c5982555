// predict.js: the Prediction view of a kscope predict run
// (predict/summary): the pipe table, the instruction-time pie chart and
// the run's pipe timeline (the Timeline view on the same card).

import { request } from './api.js';
import { el, svg, clear, emptyState, fmtNum, nameColour, SortTable, showTip, hideTip } from './util.js';
import { Timeline } from './timeline.js';

export class PredictView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
		this.tl = null;
	}

	async show(card) {
		this.card = card;
		clear(this.panel).append(el('div.loading', { text: 'Loading the prediction…' }));
		let b;
		try {
			b = await request('predict', 'predict/summary', { cardId: card.cardId });
		} catch (e) {
			clear(this.panel).append(emptyState('The prediction could not be loaded.', e.serverMessage));
			return;
		}
		if (this.card !== card)
			return;
		clear(this.panel);
		const pipes = Array.isArray(b.pipes) ? b.pipes : [];
		const insts = Array.isArray(b.instructions) ? b.instructions : [];
		const top = el('div.details-grid');
		const pipeBox = el('section.box', null, el('h3', { text: 'Pipes' }));
		pipeBox.append(pipes.length ? table(pipes) : emptyState('The prediction has no pipe statistics.'));
		const pieBox = el('section.box', null, el('h3', { text: 'Instruction time' }));
		pieBox.append(insts.length ? pie(insts) : emptyState('The prediction has no instruction statistics.'));
		top.append(pipeBox, pieBox);
		this.panel.append(top);
		if (insts.length)
			this.panel.append(el('section.box', null, el('h3', { text: 'Instructions' }), table(insts)));
		const tlBox = el('section.box', null, el('h3', { text: 'Pipe timeline' }));
		this.panel.append(tlBox);
		if (this.app.hasKind(card, 'timeline')) {
			const holder = el('div.predict-tl');
			tlBox.append(holder);
			this.tl = new Timeline(holder, this.app, { hookName: 'predictTimeline' });
			this.tl.load(card);
		} else {
			tlBox.append(emptyState('This prediction has no timeline.'));
		}
	}

	visible() {
		if (this.tl)
			this.tl.visible();
	}
}

function table(rows) {
	const keys = Object.keys(rows[0]);
	const cols = keys.map((k) => ({ key: k, label: k, num: rows.every((r) => typeof r[k] === 'number' || r[k] === null) }));
	return new SortTable(cols, rows).table;
}

// The share of time per instruction (and pipe) as a pie.
function pie(rows) {
	const timeKey = Object.keys(rows[0]).find((k) => /^total/i.test(k)) ||
		Object.keys(rows[0]).find((k) => typeof rows[0][k] === 'number');
	const items = rows.map((r) => ({
		label: [r.Instruction ?? r.instruction ?? r.Name, r.Pipe ?? r.pipe].filter((x) => x !== undefined).join(' · '),
		v: Math.max(0, Number(r[timeKey]) || 0), r,
	})).filter((x) => x.v > 0).sort((a, b) => b.v - a.v);
	const sum = items.reduce((n, x) => n + x.v, 0);
	if (!sum)
		return emptyState('No instruction took any time.');
	const R = 110, C = 130;
	const s = svg('svg', { class: 'pie', viewBox: '0 0 260 260', role: 'img', 'aria-label': 'Instruction time' });
	const legend = el('ul.legend-list');
	let a0 = -Math.PI / 2;
	for (const it of items) {
		const frac = it.v / sum;
		const a1 = a0 + frac * 2 * Math.PI;
		const colour = nameColour(it.label, 58);
		let shape;
		if (frac > 0.9999) {
			shape = svg('circle', { cx: C, cy: C, r: R, fill: colour, class: 'pie-slice' });
		} else {
			const large = a1 - a0 > Math.PI ? 1 : 0;
			const d = `M${C},${C} L${C + R * Math.cos(a0)},${C + R * Math.sin(a0)} A${R},${R} 0 ${large} 1 ${C + R * Math.cos(a1)},${C + R * Math.sin(a1)} Z`;
			shape = svg('path', { d, fill: colour, class: 'pie-slice' });
		}
		const tip = [it.label, `${fmtNum(it.v)} (${timeKey})`, `${(frac * 100).toFixed(1)}% of the time`];
		shape.addEventListener('mousemove', (ev) => showTip(ev, tip));
		shape.addEventListener('mouseleave', hideTip);
		s.append(shape);
		const sw = el('span.swatch');
		sw.style.background = colour;
		legend.append(el('li', null, sw, `${it.label} — ${(frac * 100).toFixed(1)}%`));
		a0 = a1;
	}
	return el('div.pie-wrap', null, s, legend);
}
