// util.js: small DOM, SVG, number-formatting and table helpers shared by
// the views.  Nothing here talks to the server.

const SVGNS = 'http://www.w3.org/2000/svg';

// el('div.card.big', {title: 'x', onclick: f}, child, 'text', ...)
export function el(spec, attrs, ...children) {
	const [tag, ...classes] = spec.split('.');
	const e = document.createElement(tag || 'div');
	if (classes.length)
		e.className = classes.join(' ');
	applyAttrs(e, attrs);
	append(e, children);
	return e;
}

export function svg(tag, attrs, ...children) {
	const e = document.createElementNS(SVGNS, tag);
	applyAttrs(e, attrs);
	append(e, children);
	return e;
}

function applyAttrs(e, attrs) {
	if (!attrs)
		return;
	for (const [k, v] of Object.entries(attrs)) {
		if (v === undefined || v === null || v === false)
			continue;
		if (k.startsWith('on') && typeof v === 'function')
			e.addEventListener(k.slice(2), v);
		else if (k === 'text')
			e.textContent = v;
		else if (k === 'dataset')
			Object.assign(e.dataset, v);
		else
			e.setAttribute(k, v === true ? '' : String(v));
	}
}

function append(e, children) {
	for (const c of children.flat()) {
		if (c === null || c === undefined || c === false)
			continue;
		e.append(c instanceof Node ? c : document.createTextNode(String(c)));
	}
}

export function clear(e) {
	while (e.firstChild)
		e.removeChild(e.firstChild);
	return e;
}

// A message in place of a view's content: what is missing and why.
export function emptyState(text, detail) {
	return el('div.empty', null, el('p', { text }), detail ? el('p.hint', { text: detail }) : null);
}

export function loading(text = 'Loading…') {
	return el('div.loading', { text });
}

// A colour from a name: the same name always gets the same colour.
export function nameColour(name, light = 62) {
	let h = 2166136261;
	const s = String(name);
	for (let i = 0; i < s.length; i++) {
		h ^= s.charCodeAt(i);
		h = Math.imul(h, 16777619);
	}
	h >>>= 0;
	const hue = h % 360, sat = 45 + (h >>> 9) % 25;
	return `hsl(${hue} ${sat}% ${light}%)`;
}

// 0..100 (a share of the peak) -> green .. yellow .. red.
export function ratioColour(pct) {
	const p = Math.max(0, Math.min(100, Number(pct) || 0));
	const hue = 130 - p * 1.3;
	return `hsl(${hue} 70% 42%)`;
}

export function fmtNum(v, digits = 3) {
	if (v === null || v === undefined || v === '')
		return '';
	const n = Number(v);
	if (!Number.isFinite(n))
		return String(v);
	if (Number.isInteger(n))
		return n.toLocaleString('en-US');
	const a = Math.abs(n);
	if (a !== 0 && (a < 1e-3 || a >= 1e9))
		return n.toExponential(2);
	return n.toLocaleString('en-US', { maximumFractionDigits: digits });
}

// Nanoseconds as a readable duration.
export function fmtNs(ns) {
	const n = Number(ns);
	if (!Number.isFinite(n))
		return String(ns);
	const a = Math.abs(n);
	if (a >= 1e9)
		return `${+(n / 1e9).toFixed(3)} s`;
	if (a >= 1e6)
		return `${+(n / 1e6).toFixed(3)} ms`;
	if (a >= 1e3)
		return `${+(n / 1e3).toFixed(3)} µs`;
	return `${+n.toFixed(1)} ns`;
}

export function fmtPct(v) {
	const n = Number(v);
	return Number.isFinite(n) ? `${n.toFixed(n >= 10 ? 1 : 2)}%` : '';
}

export function debounce(fn, ms) {
	let t = 0;
	return (...args) => {
		clearTimeout(t);
		t = setTimeout(() => fn(...args), ms);
	};
}

// A value that sorts: numbers (and numeric strings) as numbers.
function sortKey(v) {
	if (typeof v === 'number')
		return v;
	if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v)))
		return Number(v);
	if (v === null || v === undefined)
		return -Infinity;
	return String(v);
}

function compare(a, b) {
	const ka = sortKey(a), kb = sortKey(b);
	if (typeof ka === 'number' && typeof kb === 'number')
		return ka - kb;
	return String(ka).localeCompare(String(kb));
}

// A table whose columns sort on a click of their header (and Enter/Space
// on a focused header).  columns: [{key, label, num, render(row) -> node
// or text, value(row) -> the cell's value, shown (unless render is given)
// and sorted on; row[key] without it}].  rows: objects.  Options:
// onRowClick(row, tr), rowClass(row), limit (rows drawn at most).
export class SortTable {
	constructor(columns, rows, opts = {}) {
		this.columns = columns;
		this.rows = rows;
		this.opts = opts;
		this.sortCol = opts.sortKey ?? null;
		this.sortDesc = opts.sortDesc ?? true;
		this.trOf = new Map();
		this.table = el('table.data');
		this.thead = el('thead');
		this.tbody = el('tbody');
		this.table.append(this.thead, this.tbody);
		this.renderHead();
		this.renderBody();
	}

	value(col, row) {
		return col.value ? col.value(row) : row[col.key];
	}

	renderHead() {
		const tr = el('tr');
		for (const col of this.columns) {
			const th = el('th', { tabindex: 0, scope: 'col', class: col.num ? 'num' : null,
				title: col.title || 'Sort by this column' }, col.label ?? col.key);
			if (col.key === this.sortCol)
				th.setAttribute('aria-sort', this.sortDesc ? 'descending' : 'ascending');
			const sort = () => {
				if (this.sortCol === col.key)
					this.sortDesc = !this.sortDesc;
				else {
					this.sortCol = col.key;
					this.sortDesc = !!col.num;
				}
				clear(this.thead);
				this.renderHead();
				this.renderBody();
			};
			th.addEventListener('click', sort);
			th.addEventListener('keydown', (ev) => {
				if (ev.key === 'Enter' || ev.key === ' ') {
					ev.preventDefault();
					sort();
				}
			});
			tr.append(th);
		}
		this.thead.append(tr);
	}

	renderBody() {
		clear(this.tbody);
		this.trOf.clear();
		let rows = this.rows;
		const col = this.columns.find((c) => c.key === this.sortCol);
		if (col) {
			rows = rows.slice().sort((a, b) => compare(this.value(col, a), this.value(col, b)));
			if (this.sortDesc)
				rows.reverse();
		}
		const limit = this.opts.limit ?? 5000;
		for (const row of rows.slice(0, limit)) {
			const tr = el('tr', { class: this.opts.rowClass ? this.opts.rowClass(row) : null });
			for (const c of this.columns) {
				const v = c.render ? c.render(row) : this.value(c, row);
				tr.append(el('td', { class: c.num ? 'num' : null },
					v instanceof Node ? v : (c.num ? fmtNum(v) : (v ?? ''))));
			}
			if (this.opts.onRowClick) {
				tr.classList.add('clickable');
				tr.addEventListener('click', () => this.opts.onRowClick(row, tr));
			}
			this.trOf.set(row, tr);
			this.tbody.append(tr);
		}
		if (rows.length > limit)
			this.tbody.append(el('tr', null, el('td.more', { colspan: this.columns.length,
				text: `${rows.length - limit} more rows not shown` })));
	}

	rowElement(row) {
		return this.trOf.get(row) || null;
	}
}

// A floating tooltip shared by the charts.
let tipEl = null;
export function showTip(ev, lines) {
	if (!tipEl) {
		tipEl = el('div.tooltip', { role: 'tooltip' });
		document.body.append(tipEl);
	}
	clear(tipEl);
	for (const l of [].concat(lines))
		tipEl.append(el('div', { text: l }));
	tipEl.hidden = false;
	const x = Math.min(ev.clientX + 14, window.innerWidth - tipEl.offsetWidth - 8);
	const y = Math.min(ev.clientY + 14, window.innerHeight - tipEl.offsetHeight - 8);
	tipEl.style.left = `${x}px`;
	tipEl.style.top = `${y}px`;
}

export function hideTip() {
	if (tipEl)
		tipEl.hidden = true;
}

// Pretty-prints a JSON text (or any value); returns the text as is when it
// is not JSON.
export function prettyJson(v) {
	if (typeof v === 'string') {
		if (v.trim() === '')
			return '';
		try {
			return JSON.stringify(JSON.parse(v), null, 2);
		} catch {
			return v;
		}
	}
	return JSON.stringify(v, null, 2);
}
