// details.js: the Details view of a kernel: basic info
// (source/details/baseInfo), the compute workload as a bar chart and a
// table (source/details/computeworkload), the memory heat map drawn as a
// diagram of the memory units with the paths between them labelled with
// bandwidth and requests and coloured by their share of the peak
// (source/details/memoryGraph), and the memory tables
// (source/details/memoryTable), the inter-core load (source/details/coreLoad),
// and the caches (source/details/cacheSets
// and cacheLines): a strip of the sets coloured by miss ratio and a table
// of the hottest lines.

import { request } from './api.js';
import { el, svg, clear, emptyState, fmtNum, ratioColour, SortTable, showTip, hideTip } from './util.js';

export class DetailsView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
	}

	async show(card) {
		this.card = card;
		this.blockId = null;
		clear(this.panel);
		this.blockSel = el('select', { 'aria-label': 'Block' });
		this.blockSel.addEventListener('change', () => {
			this.blockId = this.blockSel.value;
			this.loadBlock();
		});
		this.blockBox = el('label', null, 'Block ', this.blockSel);
		this.blockBox.hidden = true;
		this.showAs = el('select', { 'aria-label': 'Memory paths show' },
			el('option', { value: 'bandwidth', text: 'bandwidth' }), el('option', { value: 'request', text: 'requests' }));
		this.showAs.addEventListener('change', () => this.loadBlock());
		this.base = el('section.box');
		this.compute = el('section.box');
		this.memGraph = el('section.box');
		this.memTable = el('section.box');
		this.cacheBox = el('section.box');
		this.coreBox = el('section.box');
		this.panel.append(el('div.toolbar', null, this.blockBox, el('label', null, 'Memory paths by ', this.showAs)),
			el('div.details-grid', null, this.base, this.compute), this.memGraph, this.memTable);
		const [base, compute] = await Promise.all([
			this.quiet('source/details/baseInfo', {}),
			this.quiet('source/details/computeworkload', {}),
		]);
		if (this.card !== card)
			return;
		this.renderBase(base);
		const ids = new Set();
		if (compute.body && Array.isArray(compute.body.blockIdList))
			compute.body.blockIdList.forEach((b) => ids.add(String(b)));
		if (base.body && base.body.blockDetail && Array.isArray(base.body.blockDetail.row))
			base.body.blockDetail.row.forEach((r) => Array.isArray(r.value) && ids.add(String(r.value[0])));
		const list = [...ids].sort((a, b) => Number(a) - Number(b));
		for (const b of list)
			this.blockSel.append(el('option', { value: b, text: b }));
		this.blockBox.hidden = list.length === 0;
		this.blockId = list.length ? list[0] : null;
		this.renderCompute(compute);
		this.loadBlock(true);
		this.loadCores(card);
		this.loadCaches(card);
	}

	// The inter-core load (0x0C): a row per core, and the advice; nothing
	// shown when the card has none.
	async loadCores(card) {
		const r = await this.quiet('source/details/coreLoad', {});
		if (this.card !== card || !r.body)
			return;
		clear(this.coreBox).append(el('h3', { text: 'Inter-core load' }));
		this.panel.append(this.coreBox);
		const rows = Array.isArray(r.body.rows) ? r.body.rows : [];
		const cols = [{ key: 'coreId', label: 'Core', num: true }, { key: 'thread', label: 'Thread' },
			{ key: 'subcoreType', label: 'Type' }, { key: 'cycles', label: 'Cycles', num: true },
			{ key: 'throughput', label: 'Bytes moved', num: true },
			{ key: 'l2HitRate', label: 'L2 hit rate (%)', num: true,
				value: (row) => (Number(row.l2HitRate) >= 0 ? row.l2HitRate : '') }];
		this.coreBox.append(new SortTable(cols, rows, { sortKey: 'cycles' }).table);
		this.advice(this.coreBox, r.body.advice);
	}

	// The cache sets and hot lines (kscope op --simulate); nothing shown when
	// the card has neither.
	async loadCaches(card) {
		const [sets, lines] = await Promise.all([
			this.quiet('source/details/cacheSets', {}),
			this.quiet('source/details/cacheLines', {}),
		]);
		if (this.card !== card || (!sets.body && !lines.body))
			return;
		clear(this.cacheBox).append(el('h3', { text: 'Caches' }));
		this.panel.append(this.cacheBox);
		if (sets.body)
			this.cacheBox.append(cacheStrip(sets.body));
		if (lines.body)
			this.cacheBox.append(cacheLinesTable(lines.body));
	}

	// A request whose failure (data missing from this card) is shown in the
	// section, not in the error bar.
	async quiet(command, extra) {
		try {
			return { body: await request('source', command, { cardId: this.card.cardId, ...extra }, { quiet: true }) };
		} catch (e) {
			return { error: e.serverMessage || e.message };
		}
	}

	async loadBlock(first = false) {
		const card = this.card;
		const extra = { showAs: this.showAs.value };
		if (this.blockId !== null)
			extra.blockId = this.blockId;
		const jobs = [this.quiet('source/details/memoryGraph', extra), this.quiet('source/details/memoryTable', extra)];
		if (!first)
			jobs.push(this.quiet('source/details/computeworkload', this.blockId !== null ? { blockId: this.blockId } : {}));
		const [g, t, c] = await Promise.all(jobs);
		if (this.card !== card)
			return;
		this.renderGraph(g);
		this.renderTables(t);
		if (c)
			this.renderCompute(c);
	}

	renderBase(r) {
		clear(this.base).append(el('h3', { text: 'Basic info' }));
		if (!r.body) {
			this.base.append(emptyState('This result has no basic info.', r.error));
			return;
		}
		const b = r.body;
		const dl = el('dl.facts');
		const names = { name: 'Name', soc: 'SoC / device', opType: 'Type', blockDim: 'Blocks', mixBlockDim: 'Mixed blocks', duration: 'Duration (µs)' };
		for (const [k, label] of Object.entries(names)) {
			if (b[k] === undefined || b[k] === null || b[k] === '' || b[k] === '-1')
				continue;
			dl.append(el('dt', { text: label }), el('dd', { text: String(b[k]) }));
		}
		this.base.append(dl);
		const bd = b.blockDetail;
		if (bd && Array.isArray(bd.headerName) && Array.isArray(bd.row) && bd.row.length) {
			const cols = bd.headerName.map((h, i) => {
				const value = (row) => (Array.isArray(row.value) ? row.value[i] : '');
				return { key: String(i), label: h, num: numericColumn(bd.row, value), value };
			});
			this.base.append(el('h4', { text: 'Blocks' }), new SortTable(cols, bd.row).table);
		}
		this.advice(this.base, b.advice);
	}

	advice(box, list) {
		if (!Array.isArray(list) || !list.length)
			return;
		const ul = el('ul.advice');
		for (const a of list)
			ul.append(el('li', { text: typeof a === 'string' ? a : JSON.stringify(a) }));
		box.append(el('h4', { text: 'Advice' }), ul);
	}

	renderCompute(r) {
		clear(this.compute).append(el('h3', { text: 'Compute workload' }));
		if (!r.body) {
			this.compute.append(emptyState('This result has no compute workload.', r.error));
			return;
		}
		const chart = r.body.chartData && Array.isArray(r.body.chartData.detailDataList) ? r.body.chartData.detailDataList : [];
		const table = r.body.tableData && Array.isArray(r.body.tableData.detailDataList) ? r.body.tableData.detailDataList : [];
		if (!chart.length && !table.length) {
			this.compute.append(emptyState('The compute workload has no entries.'));
			return;
		}
		if (chart.length)
			this.compute.append(barChart(chart));
		if (table.length) {
			const cols = [
				{ key: 'blockId', label: 'Block', num: true },
				{ key: 'blockType', label: 'Unit' },
				{ key: 'name', label: 'Name' },
				{ key: 'value', label: 'Value', num: true },
				{ key: 'unit', label: 'Unit of value' },
			];
			this.compute.append(new SortTable(cols, table).table);
		}
		this.advice(this.compute, r.body.chartData && r.body.chartData.advice);
	}

	renderGraph(r) {
		clear(this.memGraph).append(el('h3', { text: 'Memory heat map' }));
		if (!r.body) {
			this.memGraph.append(emptyState('This result has no memory heat map.', r.error));
			return;
		}
		const cores = Array.isArray(r.body.coreMemory) ? r.body.coreMemory : [];
		if (!cores.length) {
			this.memGraph.append(emptyState('The memory heat map has no cores.'));
			return;
		}
		for (const c of cores) {
			const units = (c.memoryUnit || []).filter((u) => u.display !== false);
			const title = [c.blockId !== undefined && `block ${c.blockId}`, c.blockType, c.chipType].filter(Boolean).join(' · ');
			this.memGraph.append(el('h4', { text: title }), memoryDiagram(units, this.showAs.value));
			const l2 = c.l2Cache;
			if (l2 && (l2.hit !== '' || l2.miss !== '') && (l2.hit !== undefined || l2.totalRequest !== undefined)) {
				this.memGraph.append(el('p.note', { text: `L2 cache: ${fmtNum(l2.hit)} hits, ${fmtNum(l2.miss)} misses of ${fmtNum(l2.totalRequest)} requests (hit ratio ${fmtNum(l2.hitRatio, 2)}%)` }));
			}
			const pipes = ['cube', 'vector', 'vector1'].filter((k) => c[k] && c[k].cycle !== '' && c[k].cycle !== undefined);
			if (pipes.length)
				this.memGraph.append(el('p.note', { text: pipes.map((k) => `${k}: ${fmtNum(c[k].cycle)} of ${fmtNum(c[k].totalCycles)} cycles`).join(' · ') }));
			this.advice(this.memGraph, c.advice);
		}
	}

	renderTables(r) {
		clear(this.memTable).append(el('h3', { text: 'Memory tables' }));
		if (!r.body) {
			this.memTable.append(emptyState('This result has no memory tables.', r.error));
			return;
		}
		const blocks = Array.isArray(r.body.memoryTable) ? r.body.memoryTable : [];
		if (!blocks.length) {
			this.memTable.append(emptyState('The memory tables are empty.'));
			return;
		}
		for (const b of blocks) {
			for (const t of b.tableDetail || []) {
				const rows = Array.isArray(t.row) ? t.row : [];
				const head = Array.isArray(t.headerName) ? t.headerName.map(String) : [];
				// A header names either the value columns alone (kscope
				// op's) or the row-name column too (the seed's): the
				// values decide which.
				const nvals = Math.max(0, ...rows.map((r) => (Array.isArray(r.value) ? r.value.length : 0)));
				const withName = head.length === nvals + 1;
				const names = withName ? head.slice(1) : head;
				const cols = [{ key: 'name', label: withName && head[0] ? head[0] : 'Name' }];
				for (let i = 0; i < Math.max(nvals, names.length); i++) {
					const value = (row) => (Array.isArray(row.value) ? row.value[i] ?? '' : '');
					cols.push({ key: `v${i}`, label: names[i] ?? `column ${i + 1}`,
						num: numericColumn(rows, value), value });
				}
				this.memTable.append(el('h4', { text: `${t.tableName || 'Table'}${b.blockId !== undefined ? ` · block ${b.blockId}` : ''}` }),
					new SortTable(cols, rows).table);
			}
			this.advice(this.memTable, b.advice);
		}
	}
}

// Whether every non-empty value(row) of a column is a number (or a
// number's text): such a column is right-aligned and formatted.
function numericColumn(rows, value) {
	let any = false;
	for (const r of rows) {
		const v = value(r);
		if (v === '' || v === null || v === undefined)
			continue;
		if (typeof v === 'boolean' || !Number.isFinite(Number(v)))
			return false;
		any = true;
	}
	return any;
}

// A horizontal bar chart of detailDataList entries (value, unit).
function barChart(list) {
	const rowH = 22, labelW = 220, W = 640;
	const vals = list.map((d) => Number(d.value) || 0);
	const max = Math.max(...vals, 1e-12);
	const s = svg('svg', { class: 'bars', viewBox: `0 0 ${W} ${list.length * rowH + 8}`, role: 'img',
		'aria-label': 'Compute workload' });
	list.forEach((d, i) => {
		const y = i * rowH + 4, w = (vals[i] / max) * (W - labelW - 90);
		const label = `${d.blockType ? `${d.blockType} ` : ''}${d.name}`;
		const bar = svg('rect', { x: labelW, y, width: Math.max(1, w), height: rowH - 6, rx: 2, class: 'bar' });
		bar.addEventListener('mousemove', (ev) => showTip(ev, [label, `${fmtNum(d.value)} ${d.unit || ''}`,
			d.originValue !== undefined ? `raw ${fmtNum(d.originValue)}` : '']));
		bar.addEventListener('mouseleave', hideTip);
		s.append(svg('text', { x: labelW - 8, y: y + rowH / 2, 'text-anchor': 'end', class: 'bar-label' }, label),
			bar, svg('text', { x: labelW + Math.max(1, w) + 6, y: y + rowH / 2, class: 'bar-value' },
				`${fmtNum(d.value)} ${d.unit || ''}`));
	});
	return s;
}

// Where a memory unit sits, nearest the core first; unknown names go by
// first appearance, between the caches and memory.
function unitRank(name) {
	const n = name.toLowerCase();
	const order = [
		[/regist|kernel|core|^(cube|vector)/, 0], [/l0/, 1], [/^ub|unified/, 2], [/l1/, 3],
		[/l2/, 4], [/l3/, 5], [/^ll|last/, 6], [/memory|^gm|global|dram|hbm|ddr/, 9],
	];
	for (const [re, r] of order)
		if (re.test(n))
			return r;
	return 7;
}

// The memory units as boxes on a row, the paths between them as arrows
// (towards the core above the row, away from it below), each labelled
// with its bandwidth or requests and coloured by its share of the peak.
let diagramCount = 0;

function memoryDiagram(units, showAs) {
	const paths = units.map((u) => {
		const p = String(u.memoryPath ?? '');
		const m = p.split(/\s*(?:->|→)\s*/);
		return m.length === 2 ? { from: m[0], to: m[1], u } : { from: p, to: 'core', u };
	});
	const names = [];
	for (const p of paths)
		for (const n of [p.from, p.to])
			if (!names.includes(n))
				names.push(n);
	names.sort((a, b) => unitRank(a) - unitRank(b));
	const boxW = 120, boxH = 44, gap = 150;
	const W = names.length * boxW + (names.length - 1) * gap + 40;
	const H = 300, midY = H / 2;
	const x = (n) => 20 + names.indexOf(n) * (boxW + gap);
	const s = svg('svg', { class: 'memdiagram', viewBox: `0 0 ${Math.max(W, 400)} ${H}`, role: 'img',
		'aria-label': 'Memory units and the traffic between them' });
	const defs = svg('defs');
	s.append(defs);
	const uid = `m${++diagramCount}`;
	// Paths between the same two units stack outwards.
	const used = new Map();
	paths.forEach((p, i) => {
		const a = names.indexOf(p.from), b = names.indexOf(p.to);
		const up = a > b;  // towards the core: drawn above
		const k = `${Math.min(a, b)}|${Math.max(a, b)}|${up}`;
		const level = used.get(k) || 0;
		used.set(k, level + 1);
		const x0 = x(p.from) + boxW / 2, x1 = x(p.to) + boxW / 2;
		const sign = up ? -1 : 1;
		const y0 = midY + sign * boxH / 2;
		const bend = sign * (40 + level * 34 + Math.abs(a - b) * 12);
		// The design's -1 (or nothing) is "no peak to compare with".
		if (!(Number(p.u.peakRatio) >= 0) || p.u.peakRatio === '')
			p.u.peakRatio = '';
		// A negative peak ratio is the design's "unknown" (-1: kscope op
		// --simulate without a calibration): drawn grey, no share shown.
		const known = p.u.peakRatio !== '' && Number(p.u.peakRatio) >= 0;
		const colour = known ? ratioColour(p.u.peakRatio) : '#888';
		defs.append(svg('marker', { id: `${uid}-${i}`, viewBox: '0 0 10 10', refX: 9, refY: 5,
			markerWidth: 6, markerHeight: 6, orient: 'auto' }, svg('path', { d: 'M0,0 L10,5 L0,10 z', fill: colour })));
		const d = `M${x0 + (up ? -10 : 10)},${y0} C${x0},${y0 + bend} ${x1},${y0 + bend} ${x1 + (up ? 10 : -10)},${y0}`;
		const path = svg('path', { d, class: 'mempath', stroke: colour, 'stroke-width': 2 + Math.min(4, known ? Number(p.u.peakRatio) / 25 : 0),
			fill: 'none', 'marker-end': `url(#${uid}-${i})` });
		const bw = `${fmtNum(p.u.bandwidth)} GB/s`, req = `${fmtNum(p.u.request)} ${showAs === 'request' ? 'requests' : 'bytes'}`;
		const label = showAs === 'request' ? req : bw;
		const tip = [String(p.u.memoryPath), `bandwidth ${bw}`, `requests ${fmtNum(p.u.request)}`,
			known ? `peak ratio ${fmtNum(p.u.peakRatio, 2)}%` : 'peak ratio unknown (no calibration)'];
		path.addEventListener('mousemove', (ev) => showTip(ev, tip));
		path.addEventListener('mouseleave', hideTip);
		const lx = (x0 + x1) / 2, ly = y0 + bend * 0.75 + (up ? -4 : 12);
		s.append(path, svg('text', { x: lx, y: ly, 'text-anchor': 'middle', class: 'mem-label', fill: colour },
			known ? `${label} · ${fmtNum(p.u.peakRatio, 1)}%` : label));
	});
	for (const n of names) {
		s.append(svg('rect', { x: x(n), y: midY - boxH / 2, width: boxW, height: boxH, rx: 6, class: 'memunit' }),
			svg('text', { x: x(n) + boxW / 2, y: midY + 4, 'text-anchor': 'middle', class: 'memunit-label' }, n));
	}
	const legend = el('div.legend', null, 'share of peak: ',
		...[0, 25, 50, 75, 100].map((p) => {
			const sw = el('span.swatch');
			sw.style.background = ratioColour(p);
			return el('span', null, sw, `${p}% `);
		}));
	return el('div.memwrap', null, s, legend);
}

// One cell per cache set, coloured by its miss ratio (grey: never
// accessed); the tooltip gives the set's counts.
function cacheStrip(b) {
	const box = el('div.cache-sets');
	const sets = Array.isArray(b.sets) ? b.sets : [];
	const t = b.totals || {};
	const acc = (Number(t.load) || 0) + (Number(t.store) || 0);
	box.append(el('h4', { text: `Sets of ${b.level || 'the second level'}` }),
		el('p.note', { text: `${fmtNum(sets.length)} sets, ${fmtNum(acc)} accesses, ${fmtNum(t.miss)} misses` +
			(acc ? ` (miss ratio ${fmtNum(100 * t.miss / acc, 2)}%)` : '') }));
	if (!sets.length)
		return box;
	const perRow = Math.min(128, sets.length), cell = 8;
	const rows = Math.ceil(sets.length / perRow);
	const s = svg('svg', { class: 'cachestrip', viewBox: `0 0 ${perRow * cell} ${rows * cell}`, role: 'img',
		'aria-label': 'Cache sets coloured by miss ratio' });
	sets.forEach((x, i) => {
		const r = svg('rect', { x: (i % perRow) * cell, y: Math.floor(i / perRow) * cell, width: cell - 1, height: cell - 1,
			fill: x.missRatio === null ? '#ccc' : ratioColour(100 * x.missRatio) });
		const tip = [`set ${x.set}`, `loads ${fmtNum(x.load)}, stores ${fmtNum(x.store)}`,
			`hits ${fmtNum(x.hit)}, misses ${fmtNum(x.miss)}` + (x.missRatio === null ? '' : ` (${fmtNum(100 * x.missRatio, 2)}%)`),
			`allocated ${fmtNum(x.allocate)}, evicted ${fmtNum(x.evictAndWrite)} dirty + ${fmtNum(x.evictWithoutWrite)} clean`];
		r.addEventListener('mousemove', (ev) => showTip(ev, tip));
		r.addEventListener('mouseleave', hideTip);
		s.append(r);
	});
	box.append(s);
	return box;
}

// The hottest cache lines by first-level misses, with the instruction that
// missed most on each.
function cacheLinesTable(b) {
	const box = el('div.cache-lines');
	const levels = Array.isArray(b.levels) ? b.levels : [];
	const lines = Array.isArray(b.lines) ? b.lines : [];
	const o = b.other || {};
	box.append(el('h4', { text: `Hottest ${b.lineSize ? b.lineSize + '-byte ' : ''}lines` }));
	if (!lines.length) {
		box.append(emptyState('No line missed the first level.'));
		return box;
	}
	const cols = [{ key: 'address', label: 'Address' }];
	levels.forEach((name, k) => cols.push({ key: `m${k}`, label: `${name} misses`, num: true, value: (r) => (r.misses || [])[k] }));
	const top = (f) => (r) => (r.topInstruction ? r.topInstruction[f] : '');
	cols.push({ key: 'loadMisses', label: 'Load misses', num: true }, { key: 'storeMisses', label: 'Store misses', num: true },
		{ key: 'writebacks', label: 'Write-backs', num: true },
		{ key: 'top', label: 'Top instruction', value: top('address') },
		{ key: 'topMisses', label: 'Its misses', num: true, value: top('misses') },
		{ key: 'source', label: 'Disassembly', value: top('source') },
		{ key: 'where', label: 'Source', value: (r) => (r.topInstruction ? `${r.topInstruction.file}:${r.topInstruction.line}` : '') },
		{ key: 'function', label: 'Function', value: top('function') });
	box.append(new SortTable(cols, lines, { sortKey: 'm0' }).table);
	if (Number(o.lines) || (o.misses && Number(o.misses[0])))
		box.append(el('p.note', { text: `Other lines: ${fmtNum(o.lines)} more, ${fmtNum((o.misses || [])[0])} first-level misses` }));
	return box;
}
