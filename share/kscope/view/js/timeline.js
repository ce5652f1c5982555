// timeline.js: the Timeline view, a canvas of tracks (one row per
// process, one block of rows per thread, one row per nesting depth) with
// a time ruler, zoom (wheel, +/-), pan (drag, arrow keys), slice details
// and flow arrows; below a process's threads, one row per counter ("C"
// events: op --simulate's bandwidth per path, sample's CPU %), a step
// chart of its series scaled to the counter's maximum.
//
// The server aggregates: for the tracks on screen the view asks
// unit/threadTraces (or unit/threadTracesSummary for a collapsed process)
// with timePerPx = window / plot width, so it never receives more items
// than it can draw.  Requests go out debounced after each zoom or pan.

import { request } from './api.js';
import { el, clear, emptyState, nameColour, fmtNs, debounce, prettyJson,
	showTip, hideTip } from './util.js';

const LABEL_W = 190;   // the track-name column, px
const RULER_H = 26;    // the time ruler, px
const PROC_H = 22;     // a process header row, px
const DEPTH_H = 18;    // one nesting depth of a thread, px
const THREAD_PAD = 4;  // space below a thread's rows, px
const MIN_WINDOW = 10; // ns: the deepest zoom
const COUNTER_H = 42;  // a counter row, px
const SERIES_COLOURS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd'];

export class Timeline {
	// container: the element to fill.  opts.hookName: the name under which
	// a read-only test hook goes on window.kscopeView.
	constructor(container, app, opts = {}) {
		this.app = app;
		this.root = container;
		this.opts = opts;
		this.card = null;
		this.rows = [];
		this.cache = new Map();
		this.gen = 0;
		this.selected = null;   // {pid, tid, id}
		this.flows = [];
		this.start = 0;
		this.end = 1;
		this.total = 1;
		const later = debounce(() => {
			this.scheduled = false;
			this.fetchVisible();
		}, 60);
		this.fetchSoon = () => {
			this.scheduled = true;
			later();
		};
		if (opts.hookName)
			window.kscopeView[opts.hookName] = this.hook();
	}

	// What tests may read: no way to change the data.
	hook() {
		return {
			visibleSlices: () => this.visibleSlices(),
			slicePosition: (id) => {
				const s = this.visibleSlices().find((x) => x.id === id);
				return s ? { x: s.x, y: s.y } : null;
			},
			window: () => ({ start: this.start, end: this.end }),
			// the counter rows, with the samples they hold and the
			// page y of their middle (null when off screen)
			counterRows: () => this.rows.filter((r) => r.type === 'counter').map((r) => {
				const top = this.canvas ? this.canvas.getBoundingClientRect().top : 0;
				const y = RULER_H + r.y - this.scroller.scrollTop + r.h / 2;
				return { pid: r.pid, tid: r.tid, name: r.cname, max: r.max,
					y: y >= RULER_H && y <= this.cssH ? top + y : null,
					data: (this.cache.get(key(r)) || {}).data || null };
			}),
			// the page x of time t (ns from the origin)
			xAt: (t) => (this.canvas ? this.canvas.getBoundingClientRect().left : 0) + this.xOf(t),
			pending: () => this.scheduled || this.inflight > 0,
		};
	}

	async load(card) {
		this.card = card;
		this.gen++;
		this.cache.clear();
		this.selected = null;
		this.flows = [];
		this.inflight = 0;
		clear(this.root);
		this.root.append(el('div.loading', { text: 'Loading the timeline…' }));
		let body;
		try {
			body = await request('timeline', 'unit/threads', { cardId: card.cardId });
		} catch (e) {
			clear(this.root).append(emptyState('The timeline could not be loaded.', e.serverMessage));
			return;
		}
		if (this.card !== card)
			return;
		// Counters: a server without unit/counters has none to show.
		let counters = null;
		try {
			counters = await request('timeline', 'unit/counters', { cardId: card.cardId });
		} catch {
			counters = null;
		}
		if (this.card !== card)
			return;
		this.processes = Array.isArray(body.processes) ? body.processes : [];
		this.counters = counters && Array.isArray(counters.counters) ? counters.counters : [];
		// A counter of a pid without a thread track gets a process row.
		for (const c of this.counters)
			if (!this.processes.some((p) => String(p.pid) === String(c.pid)))
				this.processes.push({ pid: c.pid, name: c.processName || c.pid, threads: [] });
		const nthreads = this.processes.reduce((n, p) => n + (p.threads || []).length, 0);
		if (!nthreads && !this.counters.length) {
			clear(this.root).append(emptyState('This timeline has no tracks.'));
			return;
		}
		this.total = Math.max(Number(body.endTime) || 0, Number(counters && counters.endTime) || 0, 1);
		this.start = 0;
		this.end = this.total;
		const expand = nthreads <= 48;
		this.collapsed = new Set();
		this.processes.forEach((p, i) => {
			if (!expand && i > 0)
				this.collapsed.add(String(p.pid));
		});
		this.build();
		this.layout();
	}

	build() {
		clear(this.root);
		const zin = el('button', { type: 'button', title: 'Zoom in (+)', text: '+' });
		const zout = el('button', { type: 'button', title: 'Zoom out (−)', text: '−' });
		const fit = el('button', { type: 'button', title: 'Show everything (0)', text: 'Fit' });
		this.windowLabel = el('span.tl-window');
		zin.addEventListener('click', () => this.zoom(0.5));
		zout.addEventListener('click', () => this.zoom(2));
		fit.addEventListener('click', () => this.setWindow(0, this.total));
		const bar = el('div.toolbar', null, zin, zout, fit, this.windowLabel,
			el('span.hint', { text: 'wheel or +/− zoom · drag or ←/→ pan · ↑/↓ scroll · click a slice for details' }));
		this.canvas = el('canvas.tl-canvas', { tabindex: 0, 'aria-label': 'Timeline; use + and − to zoom, arrow keys to pan' });
		this.inner = el('div.tl-inner', null, this.canvas);
		this.scroller = el('div.tl-scroll', null, this.inner);
		this.details = el('div.tl-details', null, el('p.hint', { text: 'Click a slice to see its details.' }));
		this.root.append(bar, this.scroller, this.details);
		this.ctx = this.canvas.getContext('2d');
		this.scroller.addEventListener('scroll', () => {
			this.draw();
			this.fetchSoon();
		});
		this.canvas.addEventListener('wheel', (ev) => this.onWheel(ev), { passive: false });
		this.canvas.addEventListener('mousedown', (ev) => this.onDown(ev));
		this.canvas.addEventListener('mousemove', (ev) => this.onHover(ev));
		this.canvas.addEventListener('mouseleave', () => hideTip());
		this.canvas.addEventListener('keydown', (ev) => this.onKey(ev));
		this.resizeObs = new ResizeObserver(() => this.resize());
		this.resizeObs.observe(this.scroller);
	}

	// Rows and their y offsets (from the top of the track area).
	layout() {
		this.rows = [];
		let y = 0;
		for (const p of this.processes) {
			const pid = String(p.pid);
			const collapsed = this.collapsed.has(pid);
			this.rows.push({ type: 'proc', pid: p.pid, name: p.name || `process ${p.pid}`, y, h: PROC_H, collapsed });
			y += PROC_H;
			if (collapsed)
				continue;
			for (const t of p.threads || []) {
				const depths = Math.max(1, (Number(t.maxDepth) || 0) + 1);
				const h = depths * DEPTH_H + THREAD_PAD;
				this.rows.push({ type: 'thread', pid: p.pid, tid: t.tid, name: t.name || `thread ${t.tid}`, y, h, depths });
				y += h;
			}
			for (const c of this.counters || []) {
				if (String(c.pid) !== pid)
					continue;
				const name = c.tid ? `${c.name} (thread ${c.tid})` : c.name;
				this.rows.push({ type: 'counter', pid: c.pid, tid: c.tid || '', cname: c.name, name,
					series: c.series || [], max: Number(c.max) || 0, y, h: COUNTER_H });
				y += COUNTER_H;
			}
		}
		this.tracksH = y;
		this.inner.style.height = `${Math.max(140, RULER_H + y)}px`;
		this.resize();
	}

	resize() {
		if (!this.scroller)
			return;
		const w = this.scroller.clientWidth, h = this.scroller.clientHeight;
		if (w <= 0 || h <= 0)
			return;
		const dpr = window.devicePixelRatio || 1;
		this.cssW = w;
		this.cssH = h;
		this.canvas.style.width = `${w}px`;
		this.canvas.style.height = `${h}px`;
		this.canvas.width = Math.round(w * dpr);
		this.canvas.height = Math.round(h * dpr);
		this.ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
		this.draw();
		this.fetchSoon();
	}

	visible() {
		this.resize();
	}

	hide() {}

	plotW() {
		return Math.max(1, this.cssW - LABEL_W);
	}

	xOf(t) {
		return LABEL_W + (t - this.start) / (this.end - this.start) * this.plotW();
	}

	tOf(x) {
		return this.start + (x - LABEL_W) / this.plotW() * (this.end - this.start);
	}

	setWindow(start, end) {
		let w = Math.max(MIN_WINDOW, end - start);
		const span = Math.max(this.total, MIN_WINDOW);
		if (w > span * 1.05)
			w = span * 1.05;
		start = Math.max(-span * 0.025, Math.min(start, span * 1.025 - w));
		this.start = start;
		this.end = start + w;
		this.draw();
		this.fetchSoon();
	}

	zoom(factor, atX) {
		const x = atX ?? LABEL_W + this.plotW() / 2;
		const t = this.tOf(x);
		const w = (this.end - this.start) * factor;
		const f = (x - LABEL_W) / this.plotW();
		this.setWindow(t - f * w, t - f * w + w);
	}

	pan(dx) {
		const dt = dx / this.plotW() * (this.end - this.start);
		this.setWindow(this.start + dt, this.end + dt);
	}

	onWheel(ev) {
		ev.preventDefault();
		if (ev.shiftKey || Math.abs(ev.deltaX) > Math.abs(ev.deltaY)) {
			this.pan(ev.shiftKey ? ev.deltaY : ev.deltaX);
			return;
		}
		const rect = this.canvas.getBoundingClientRect();
		const x = Math.max(LABEL_W, ev.clientX - rect.left);
		this.zoom(Math.exp(ev.deltaY * 0.0015), x);
	}

	onKey(ev) {
		const k = ev.key;
		if (k === '+' || k === '=')
			this.zoom(0.5);
		else if (k === '-' || k === '_')
			this.zoom(2);
		else if (k === 'ArrowLeft')
			this.pan(-this.plotW() * 0.15);
		else if (k === 'ArrowRight')
			this.pan(this.plotW() * 0.15);
		else if (k === 'ArrowUp')
			this.scroller.scrollTop -= 40;
		else if (k === 'ArrowDown')
			this.scroller.scrollTop += 40;
		else if (k === '0' || k === 'Home')
			this.setWindow(0, this.total);
		else
			return;
		ev.preventDefault();
	}

	onDown(ev) {
		if (ev.button !== 0)
			return;
		const rect = this.canvas.getBoundingClientRect();
		const x0 = ev.clientX, y0 = ev.clientY;
		const s0 = this.start, e0 = this.end;
		let moved = false;
		const move = (m) => {
			const dx = m.clientX - x0;
			if (Math.abs(dx) > 3 || Math.abs(m.clientY - y0) > 3)
				moved = true;
			if (moved && x0 - rect.left >= LABEL_W) {
				const dt = -dx / this.plotW() * (e0 - s0);
				this.setWindow(s0 + dt, e0 + dt);
			}
		};
		const up = (u) => {
			window.removeEventListener('mousemove', move);
			window.removeEventListener('mouseup', up);
			if (!moved)
				this.onClick(u.clientX - rect.left, u.clientY - rect.top);
		};
		window.addEventListener('mousemove', move);
		window.addEventListener('mouseup', up);
	}

	rowAt(y) {
		const ty = y - RULER_H + this.scroller.scrollTop;
		if (y < RULER_H)
			return null;
		return this.rows.find((r) => ty >= r.y && ty < r.y + r.h) || null;
	}

	// The drawn item under (x, y), with its row.
	itemAt(x, y) {
		const row = this.rowAt(y);
		if (!row || row.type !== 'thread' || x < LABEL_W)
			return null;
		const c = this.cache.get(key(row));
		if (!c || !Array.isArray(c.data))
			return null;
		const d = Math.floor((y - RULER_H + this.scroller.scrollTop - row.y) / DEPTH_H);
		const items = c.data[d];
		if (!Array.isArray(items))
			return null;
		const t = this.tOf(x), slack = 2 * (this.end - this.start) / this.plotW();
		let best = null;
		for (const it of items) {
			if (it.startTime - slack <= t && t <= it.endTime + slack) {
				if (!best || (it.startTime <= t && t <= it.endTime))
					best = it;
			}
		}
		return best ? { row, item: best } : null;
	}

	onClick(x, y) {
		const row = this.rowAt(y);
		if (row && row.type === 'proc' && x < LABEL_W) {
			const pid = String(row.pid);
			if (this.collapsed.has(pid))
				this.collapsed.delete(pid);
			else
				this.collapsed.add(pid);
			this.layout();
			return;
		}
		const hit = this.itemAt(x, y);
		if (hit)
			this.select(hit.row, hit.item);
	}

	// The sample of a counter row in force at x: {row, item, next}.
	counterAt(x, y) {
		const row = this.rowAt(y);
		if (!row || row.type !== 'counter' || x < LABEL_W)
			return null;
		const c = this.cache.get(key(row));
		if (!c || !Array.isArray(c.data))
			return null;
		const t = this.tOf(x);
		let k = -1;
		for (let i = 0; i < c.data.length && Number(c.data[i].startTime) <= t; i++)
			k = i;
		return k < 0 ? null : { row, item: c.data[k], series: c.series || row.series };
	}

	onHover(ev) {
		const rect = this.canvas.getBoundingClientRect();
		const ctr = this.counterAt(ev.clientX - rect.left, ev.clientY - rect.top);
		if (ctr) {
			const it = ctr.item, vals = it.count > 1 ? it.last || it.values : it.values;
			const lines = [ctr.row.name];
			(ctr.series || []).forEach((s, i) => {
				const v = Number((vals || [])[i]);
				const peak = it.count > 1 ? ` (peak ${fmtValue(Number(it.values[i]))} in ${it.count} samples)` : '';
				lines.push(`${s}: ${fmtValue(v)}${peak}`);
			});
			lines.push(`from ${fmtNs(it.startTime)}`);
			this.canvas.style.cursor = 'default';
			showTip(ev, lines);
			return;
		}
		const hit = this.itemAt(ev.clientX - rect.left, ev.clientY - rect.top);
		this.canvas.style.cursor = hit ? 'pointer' : 'default';
		if (!hit) {
			hideTip();
			return;
		}
		const it = hit.item;
		showTip(ev, [it.count > 1 ? `${it.name} and ${it.count - 1} more (merged)` : it.name,
			`duration ${fmtNs(it.duration ?? it.endTime - it.startTime)}`, `start ${fmtNs(it.startTime)}`]);
	}

	async select(row, item) {
		this.selected = { pid: row.pid, tid: row.tid, id: item.id };
		this.flows = [];
		this.draw();
		clear(this.details).append(el('div.loading', { text: 'Loading the slice…' }));
		const params = { cardId: this.card.cardId, pid: String(row.pid), tid: String(row.tid), id: item.id };
		const card = this.card;
		let detail, flows;
		try {
			[detail, flows] = await Promise.all([
				request('timeline', 'unit/threadDetail', params),
				request('timeline', 'unit/flows', params).catch(() => null),
			]);
		} catch (e) {
			clear(this.details).append(emptyState('The slice could not be loaded.', e.serverMessage));
			return;
		}
		if (this.card !== card)
			return;
		this.flows = [];
		if (flows && Array.isArray(flows.unitAllFlows))
			for (const g of flows.unitAllFlows)
				for (const f of g.flows || [])
					this.flows.push(f);
		this.renderDetails(row, detail);
		this.draw();
	}

	renderDetails(row, body) {
		clear(this.details);
		const d = body && body.data;
		if (!d || body.emptyFlag) {
			this.details.append(emptyState('This slice has no details.'));
			return;
		}
		let args = null;
		if (typeof d.args === 'string' && d.args.trim()) {
			try {
				args = JSON.parse(d.args);
			} catch {
				args = null;
			}
		} else if (d.args && typeof d.args === 'object') {
			args = d.args;
		}
		// A slice under 1 ns (op --simulate's) has 0 ns in whole
		// nanoseconds, but it is no instant.
		const dur = d.brief ? 'under 1 ns' : fmtNs(d.duration);
		const facts = el('dl.facts', null,
			el('dt', { text: 'Duration' }), el('dd', { text: dur }),
			el('dt', { text: 'Start' }), el('dd', { text: fmtNs(d.startTime) }),
			el('dt', { text: 'Self time' }), el('dd', { text: fmtNs(d.selfTime) }),
			el('dt', { text: 'Track' }), el('dd', { text: `${this.procName(row.pid)} / ${row.name}` }),
			el('dt', { text: 'Depth' }), el('dd', { text: String(d.depth ?? '') }),
			d.cat ? [el('dt', { text: 'Category' }), el('dd', { text: d.cat })] : null);
		const where = el('div.code-loc');
		if (args && typeof args === 'object') {
			// A sampled frame gives its file and line apart.
			const fileLine = typeof args.file === 'string' && args.file && Number(args.line) > 0
				? `${args.file}:${Number(args.line)}` : null;
			const fields = [['code', args.code], ['location', args.location], ['code', fileLine],
				['pc_addr', args.pc_addr], ['function', args.function]];
			for (const [k, value] of fields) {
				if (value === undefined || value === null || value === '')
					continue;
				const v = String(value);
				const m = /^(.*):(\d+)(?::\d+)?$/.exec(v);
				// "??:0" (op --simulate's) is no location: nothing to show.
				if ((k === 'code' || k === 'location') && m && (m[1] === '??' || Number(m[2]) === 0))
					continue;
				let chip;
				if ((k === 'code' || k === 'location') && m) {
					chip = el('a.chip.hl', { href: '#', title: 'Show in the Source tab', text: v });
					chip.addEventListener('click', (ev) => {
						ev.preventDefault();
						this.app.openSource(this.card.cardId, m[1], Number(m[2]));
					});
				} else {
					chip = el('span.chip.hl', { text: v });
				}
				where.append(el('span.chip-label', { text: k }), chip);
			}
		}
		const argText = args ? JSON.stringify(args, null, 2) : prettyJson(d.args || '');
		// Element.append writes null as the text "null": leave out what
		// this slice lacks.
		const parts = [el('h3.slice-title', { text: d.title ?? '' }), facts,
			where.childNodes.length ? where : null,
			argText ? el('details', { open: true }, el('summary', { text: 'Arguments' }),
				el('pre.args', { text: argText })) : null];
		this.details.append(...parts.filter(Boolean));
		if (this.flows.length) {
			const ul = el('ul.flow-list');
			for (const f of this.flows)
				ul.append(el('li', { text: `${f.title || f.cat || 'flow'}: ${f.from?.name ?? '?'} (${fmtNs(f.from?.timestamp)}) → ${f.to?.name ?? '?'} (${fmtNs(f.to?.timestamp)})` }));
			this.details.append(el('h4', { text: `Flows (${this.flows.length})` }), ul);
		}
	}

	procName(pid) {
		const p = this.processes.find((x) => String(x.pid) === String(pid));
		return p ? p.name || `process ${p.pid}` : String(pid);
	}

	visibleRows() {
		const top = this.scroller.scrollTop, bottom = top + this.cssH - RULER_H;
		return this.rows.filter((r) => r.y + r.h > top && r.y < bottom);
	}

	// Asks for the data of the tracks on screen, for a window 3 times the
	// visible one (so a pan shows data at once), at the visible resolution.
	async fetchVisible() {
		if (!this.card || !this.cssW)
			return;
		const gen = ++this.gen;
		const w = this.end - this.start;
		const tpp = w / this.plotW();
		const start = Math.max(0, Math.floor(this.start - w));
		const end = Math.max(start + 1, Math.ceil(Math.min(this.total, this.end + w)));
		const jobs = [];
		for (const row of this.visibleRows()) {
			const k = key(row);
			const c = this.cache.get(k);
			if (c && c.tpp === tpp && c.start <= Math.max(0, this.start) && c.end >= Math.min(this.total, this.end))
				continue;
			const base = { cardId: this.card.cardId, processId: String(row.pid), startTime: start, endTime: end, timePerPx: tpp };
			let p;
			if (row.type === 'thread')
				p = request('timeline', 'unit/threadTraces', { ...base, threadId: String(row.tid) });
			else if (row.type === 'counter')
				p = request('timeline', 'unit/counterValues', { ...base, name: row.cname,
					...(row.tid ? { threadId: String(row.tid) } : {}) });
			else if (row.collapsed)
				p = request('timeline', 'unit/threadTracesSummary', base);
			else
				continue;
			this.inflight = (this.inflight || 0) + 1;
			jobs.push(p.then((body) => {
				if (gen === this.gen || !this.cache.has(k))
					this.cache.set(k, { start, end, tpp, data: body.data, series: body.series });
			}).catch(() => {}).finally(() => {
				this.inflight--;
			}));
		}
		if (!jobs.length)
			return;
		await Promise.all(jobs);
		this.draw();
	}

	// Every item drawn now, with its centre in page coordinates.
	visibleSlices() {
		const out = [];
		if (!this.canvas)
			return out;
		const rect = this.canvas.getBoundingClientRect();
		for (const row of this.visibleRows()) {
			if (row.type !== 'thread')
				continue;
			const c = this.cache.get(key(row));
			if (!c || !Array.isArray(c.data))
				continue;
			c.data.forEach((items, d) => {
				for (const it of items || []) {
					const x0 = Math.max(LABEL_W, this.xOf(it.startTime));
					const x1 = Math.min(this.cssW, this.xOf(it.endTime));
					if (x1 < x0)
						continue;
					const y = RULER_H + row.y - this.scroller.scrollTop + d * DEPTH_H + DEPTH_H / 2;
					if (y < RULER_H || y > this.cssH)
						continue;
					out.push({ id: it.id, name: it.name, count: it.count ?? 1, width: x1 - x0,
						pid: row.pid, tid: row.tid, depth: d, start: it.startTime, end: it.endTime,
						x: rect.left + (x0 + x1) / 2, y: rect.top + y });
				}
			});
		}
		return out;
	}

	draw() {
		if (!this.ctx || !this.cssW)
			return;
		const g = this.ctx, W = this.cssW, H = this.cssH;
		const scroll = this.scroller.scrollTop;
		g.clearRect(0, 0, W, H);
		g.font = '12px system-ui, sans-serif';
		g.textBaseline = 'middle';
		for (const row of this.visibleRows()) {
			const y = RULER_H + row.y - scroll;
			if (row.type === 'proc') {
				g.fillStyle = '#eef1f6';
				g.fillRect(0, y, W, row.h);
				g.fillStyle = '#1d2433';
				g.font = '600 12px system-ui, sans-serif';
				g.fillText(fitText(g, `${row.collapsed ? '▸' : '▾'} ${row.name}`, LABEL_W - 12), 6, y + row.h / 2);
				g.font = '12px system-ui, sans-serif';
				if (row.collapsed)
					this.drawSummary(row, y);
			} else if (row.type === 'counter') {
				g.fillStyle = '#4a5468';
				g.fillText(fitText(g, row.name, LABEL_W - 24), 18, y + DEPTH_H / 2);
				this.drawCounter(row, y);
				g.strokeStyle = '#e6e9ef';
				g.beginPath();
				g.moveTo(0, y + row.h - 0.5);
				g.lineTo(W, y + row.h - 0.5);
				g.stroke();
			} else {
				g.fillStyle = '#4a5468';
				g.fillText(fitText(g, row.name, LABEL_W - 24), 18, y + DEPTH_H / 2);
				this.drawThread(row, y);
				g.strokeStyle = '#e6e9ef';
				g.beginPath();
				g.moveTo(0, y + row.h - 0.5);
				g.lineTo(W, y + row.h - 0.5);
				g.stroke();
			}
		}
		this.drawFlows(scroll);
		g.strokeStyle = '#d5d9e2';
		g.beginPath();
		g.moveTo(LABEL_W - 0.5, RULER_H);
		g.lineTo(LABEL_W - 0.5, H);
		g.stroke();
		this.drawRuler();
		if (this.windowLabel)
			this.windowLabel.textContent = `${fmtNs(Math.max(0, this.start))} – ${fmtNs(this.end)} (window ${fmtNs(this.end - this.start)})`;
	}

	drawSummary(row, y) {
		const c = this.cache.get(key(row));
		if (!c || !Array.isArray(c.data))
			return;
		const g = this.ctx;
		g.fillStyle = '#7b8fb8';
		for (const s of c.data) {
			const x0 = Math.max(LABEL_W, this.xOf(s.startTime));
			const x1 = Math.min(this.cssW, this.xOf(s.startTime + s.duration));
			if (x1 >= x0)
				g.fillRect(x0, y + 5, Math.max(1, x1 - x0), row.h - 10);
		}
	}

	// A counter's series as step lines (the first also as an area), each
	// sample holding until the next and the last until the end; a merged
	// item rises to its peak for a pixel, then holds its last values.
	drawCounter(row, y) {
		const c = this.cache.get(key(row));
		const g = this.ctx;
		const top = y + 4, h = row.h - 8;
		if (row.max > 0) {
			g.fillStyle = '#8a93a6';
			g.font = '10px system-ui, sans-serif';
			g.fillText(fmtValue(row.max), LABEL_W - 4 - g.measureText(fmtValue(row.max)).width, top + 5);
			g.font = '12px system-ui, sans-serif';
		}
		if (!c || !Array.isArray(c.data) || !c.data.length)
			return;
		const yOf = (v) => top + h - (row.max > 0 ? Math.max(0, Math.min(1, v / row.max)) : 0) * h;
		const nser = (c.series || row.series || []).length;
		g.save();
		g.beginPath();
		g.rect(LABEL_W, y, this.cssW - LABEL_W, row.h);
		g.clip();
		for (let s = nser - 1; s >= 0; s--) {
			const colour = SERIES_COLOURS[s % SERIES_COLOURS.length];
			g.beginPath();
			let first = true, x0 = 0;
			c.data.forEach((it, i) => {
				const xs = Math.max(LABEL_W - 1, this.xOf(Number(it.startTime)));
				const next = i + 1 < c.data.length ? Number(c.data[i + 1].startTime) : this.total;
				const xe = Math.min(this.cssW + 1, Math.max(xs, this.xOf(next)));
				const peak = Number((it.values || [])[s]) || 0;
				const hold = it.count > 1 ? Number((it.last || [])[s]) || 0 : peak;
				if (first) {
					g.moveTo(xs, yOf(0));
					x0 = xs;
					first = false;
				}
				g.lineTo(xs, yOf(peak));
				if (it.count > 1 && xe > xs + 1) {
					g.lineTo(xs + 1, yOf(peak));
					g.lineTo(xs + 1, yOf(hold));
				}
				g.lineTo(xe, yOf(hold));
			});
			g.strokeStyle = colour;
			g.lineWidth = 1.25;
			g.stroke();
			if (s === 0) {
				// the area under the first series
				g.lineTo(Math.min(this.cssW + 1, this.xOf(this.total)), yOf(0));
				g.lineTo(x0, yOf(0));
				g.globalAlpha = 0.18;
				g.fillStyle = colour;
				g.fill();
				g.globalAlpha = 1;
			}
		}
		g.restore();
		g.lineWidth = 1;
	}

	drawThread(row, y) {
		const c = this.cache.get(key(row));
		if (!c || !Array.isArray(c.data))
			return;
		const g = this.ctx, sel = this.selected;
		c.data.forEach((items, d) => {
			const sy = y + d * DEPTH_H + 1;
			for (const it of items || []) {
				const x0 = Math.max(LABEL_W, this.xOf(it.startTime));
				const x1 = Math.min(this.cssW, this.xOf(it.endTime));
				if (x1 < LABEL_W || x0 > this.cssW)
					continue;
				const w = Math.max(1, x1 - x0);
				g.fillStyle = nameColour(it.name, it.count > 1 ? 72 : 62);
				g.fillRect(x0, sy, w, DEPTH_H - 2);
				if (sel && sel.id === it.id && String(sel.pid) === String(row.pid) && String(sel.tid) === String(row.tid)) {
					g.strokeStyle = '#0b1a33';
					g.lineWidth = 2;
					g.strokeRect(x0 + 1, sy + 1, Math.max(1, w - 2), DEPTH_H - 4);
					g.lineWidth = 1;
				}
				if (w > 28) {
					g.fillStyle = '#111a2b';
					const label = it.count > 1 ? `${it.name} ×${it.count}` : it.name;
					g.fillText(fitText(g, label, w - 6), x0 + 3, sy + (DEPTH_H - 2) / 2);
				}
			}
		});
	}

	// y (canvas) of a slice at (pid, tid, depth); the process row when the
	// process is collapsed.
	yOfTrack(pid, tid, depth, scroll) {
		const r = this.rows.find((x) => x.type === 'thread' && String(x.pid) === String(pid) && String(x.tid) === String(tid));
		if (r)
			return RULER_H + r.y - scroll + (Number(depth) || 0) * DEPTH_H + DEPTH_H / 2;
		const p = this.rows.find((x) => x.type === 'proc' && String(x.pid) === String(pid));
		return p ? RULER_H + p.y - scroll + PROC_H / 2 : null;
	}

	drawFlows(scroll) {
		const g = this.ctx;
		for (const f of this.flows) {
			if (!f.from || !f.to)
				continue;
			const y0 = this.yOfTrack(f.from.pid, f.from.tid, f.from.depth, scroll);
			const y1 = this.yOfTrack(f.to.pid, f.to.tid, f.to.depth, scroll);
			if (y0 === null || y1 === null)
				continue;
			const x0 = this.xOf(Number(f.from.timestamp) + (Number(f.from.duration) || 0));
			const x1 = this.xOf(Number(f.to.timestamp));
			g.strokeStyle = '#c2410c';
			g.fillStyle = '#c2410c';
			g.lineWidth = 1.5;
			g.beginPath();
			g.moveTo(x0, y0);
			const mx = (x0 + x1) / 2;
			g.bezierCurveTo(mx, y0, mx, y1, x1, y1);
			g.stroke();
			const a = Math.atan2(y1 - y0, Math.max(1, x1 - mx));
			g.beginPath();
			g.moveTo(x1, y1);
			g.lineTo(x1 - 8 * Math.cos(a - 0.4), y1 - 8 * Math.sin(a - 0.4));
			g.lineTo(x1 - 8 * Math.cos(a + 0.4), y1 - 8 * Math.sin(a + 0.4));
			g.closePath();
			g.fill();
			g.lineWidth = 1;
		}
	}

	drawRuler() {
		const g = this.ctx, W = this.cssW;
		g.fillStyle = '#fafbfd';
		g.fillRect(0, 0, W, RULER_H);
		g.strokeStyle = '#c9ced8';
		g.beginPath();
		g.moveTo(0, RULER_H - 0.5);
		g.lineTo(W, RULER_H - 0.5);
		g.stroke();
		const w = this.end - this.start;
		const raw = w / this.plotW() * 110;
		const p = Math.pow(10, Math.floor(Math.log10(raw)));
		const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) || raw;
		g.fillStyle = '#4a5468';
		g.font = '11px system-ui, sans-serif';
		for (let t = Math.ceil(this.start / step) * step; t <= this.end; t += step) {
			const x = this.xOf(t);
			if (x < LABEL_W)
				continue;
			g.beginPath();
			g.moveTo(x + 0.5, RULER_H - 7);
			g.lineTo(x + 0.5, RULER_H);
			g.stroke();
			g.fillText(fmtTick(t, step), x + 3, RULER_H / 2 - 2);
		}
		g.fillStyle = '#4a5468';
		g.fillText('time', 6, RULER_H / 2);
	}
}

// text cut with an ellipsis to fit maxW pixels.
function fitText(g, text, maxW) {
	if (maxW <= 0)
		return '';
	if (g.measureText(text).width <= maxW)
		return text;
	let lo = 0, hi = text.length;
	while (lo < hi) {
		const mid = (lo + hi + 1) >> 1;
		if (g.measureText(`${text.slice(0, mid)}…`).width <= maxW)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo ? `${text.slice(0, lo)}…` : '';
}

// A counter value, short: 3 significant digits, SI suffixes above 1e4.
function fmtValue(v) {
	if (!Number.isFinite(v))
		return String(v);
	const a = Math.abs(v);
	if (a >= 1e4) {
		const units = [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k']];
		const [d, u] = units.find(([x]) => a >= x);
		return `${(v / d).toPrecision(3)}${u}`;
	}
	return a === 0 ? '0' : String(Number(v.toPrecision(4)));
}

// A ruler tick with as many digits as its step needs.
function fmtTick(t, step) {
	const units = [[1e9, 's'], [1e6, 'ms'], [1e3, 'µs'], [1, 'ns']];
	const [div, name] = units.find(([d]) => Math.abs(t) >= d || d === 1) || units[3];
	const digits = Math.max(0, Math.min(9, Math.ceil(-Math.log10(step / div) - 1e-9)));
	return `${(t / div).toFixed(digits)} ${name}`;
}

function key(row) {
	return `${row.type}|${row.pid}|${row.tid ?? ''}`;
}

// The Timeline tab: one Timeline on the selected card.
export class TimelineView {
	constructor(panel, app) {
		this.tl = new Timeline(panel, app, { hookName: 'timeline' });
	}

	show(card) {
		this.tl.load(card);
	}

	visible() {
		this.tl.visible();
	}
}

