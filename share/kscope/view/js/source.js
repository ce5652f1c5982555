// source.js: the Source view.  A file's code with the per-line columns of
// the card's hot-spot map (source/api/line; the "Files Dtype" decides
// which columns show: 0 hidden, 1 int, 2 float, 3 string), a core
// selector for the per-core values, and the instruction table
// (source/api/instructions).  Clicking a line selects its instructions
// (by address range, or by source location for blocks mapped by
// location); clicking an instruction selects its line.

import { request } from './api.js';
import { el, clear, emptyState, fmtNum, fmtPct, SortTable } from './util.js';

// Instruction fields that name a source location ("file:line").
const LOCATION_FIELDS = ['AscendC Inner Code', 'Source Location', 'location', 'Location'];

function parseAddr(a) {
	try {
		return typeof a === 'number' ? BigInt(Math.trunc(a)) : BigInt(String(a).trim());
	} catch {
		return null;
	}
}

function parseLocation(v) {
	const m = /^(.*?):(\d+)(?::\d+)?$/.exec(String(v ?? ''));
	return m ? { file: m[1], line: Number(m[2]) } : null;
}

function baseName(p) {
	return String(p).split('/').pop();
}

// Whether a column holds rates (a hit rate: a fraction from 0 to 1),
// shown as percentages.
function isRate(col) {
	return /\b(rate|ratio)$/i.test(String(col).trim());
}

// Whether two names of a file name the same file (one may be a suffix).
function sameFile(a, b) {
	if (!a || !b)
		return false;
	if (a === b)
		return true;
	return a.endsWith(`/${b}`) || b.endsWith(`/${a}`);
}

export class SourceView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
		this.card = null;
	}

	async show(card) {
		this.card = card;
		const pending = this.app.pendingSource;
		this.app.pendingSource = null;
		clear(this.panel).append(el('div.loading', { text: 'Loading the sources…' }));
		const [files, insts] = await Promise.all([this.findFiles(card), this.loadInstructions(card)]);
		if (this.card !== card)
			return;
		this.files = files;
		this.insts = insts;
		if (pending && pending.file && !files.some((f) => sameFile(f, pending.file))) {
			// A file not in the list (a finding's frame): ask for it by name.
			files.unshift(pending.file);
		}
		if (!files.length && !insts) {
			clear(this.panel).append(emptyState('This result names no source files and has no instruction table.'));
			return;
		}
		this.build();
		let file = files[0];
		if (pending && pending.file)
			file = files.find((f) => sameFile(f, pending.file)) || pending.file;
		else if (insts && insts.rows.length) {
			// Start on the file of the costliest instruction.
			const loc = this.instLocation(insts.rows[0]);
			const f = loc && files.find((x) => sameFile(x, loc.file));
			if (f)
				file = f;
		}
		if (file)
			await this.openFile(file, pending ? pending.line : null);
		else
			clear(this.codePane).append(emptyState('This result names no source files.'));
	}

	// The files this card can serve (import/action lists them per card).
	async findFiles(card) {
		return Array.isArray(card.sourceList) ? card.sourceList.map(String) : [];
	}

	async loadInstructions(card) {
		if (!this.app.hasKind(card, 'source'))
			return null;
		let body;
		try {
			body = await request('source', 'source/api/instructions', { cardId: card.cardId }, { quiet: true });
		} catch {
			return null;
		}
		let j = body.instructions;
		if (typeof j === 'string') {
			try {
				j = JSON.parse(j);
			} catch {
				return null;
			}
		}
		if (!j || !Array.isArray(j.Instructions))
			return null;
		const dt = (j['Instructions Dtype'] && j['Instructions Dtype'].Instructions) || {};
		let cols = Object.keys(dt).filter((k) => Number(dt[k]) !== 0);
		if (!cols.length && j.Instructions.length)
			cols = Object.keys(j.Instructions[0]);
		const rows = j.Instructions.map((ins, i) => ({ ins, i, addr: parseAddr(ins.Address) }));
		return { cores: Array.isArray(j.Cores) ? j.Cores.map(String) : [], dtype: dt, cols, rows };
	}

	instLocation(r) {
		for (const f of LOCATION_FIELDS) {
			const loc = parseLocation(r.ins[f]);
			if (loc)
				return loc;
		}
		return null;
	}

	build() {
		clear(this.panel);
		this.fileSel = el('select', { 'aria-label': 'Source file' });
		for (const f of this.files)
			this.fileSel.append(el('option', { value: f, text: f }));
		this.fileSel.addEventListener('change', () => this.openFile(this.fileSel.value));
		this.coreSel = el('select', { 'aria-label': 'Core' });
		this.coreSel.addEventListener('change', () => this.openFile(this.file, null, true));
		this.coreBox = el('label', null, 'Core ', this.coreSel);
		this.codePane = el('div.code-pane');
		this.instPane = el('div.inst-pane');
		this.panel.append(el('div.toolbar', null, el('label', null, 'File ', this.fileSel), this.coreBox,
			el('span.hint', { text: 'click a line to select its instructions, an instruction to select its line' })),
		el('div.source-split', null, this.codePane, this.instPane));
		this.setCores(this.insts ? this.insts.cores : []);
	}

	setCores(cores) {
		const cur = this.coreSel.value;
		const list = cores.length ? cores : (this.app.imported.coreList || []).map(String);
		if (list.join('\n') === this.coreList?.join('\n'))
			return;
		this.coreList = list;
		clear(this.coreSel);
		for (const c of list)
			this.coreSel.append(el('option', { value: c, text: c }));
		if (list.includes(cur))
			this.coreSel.value = cur;
		this.coreBox.hidden = list.length === 0;
	}

	async openFile(file, line = null, keepScroll = false) {
		this.file = file;
		if ([...this.fileSel.options].every((o) => o.value !== file))
			this.fileSel.append(el('option', { value: file, text: file }));
		this.fileSel.value = file;
		const card = this.card;
		const scroll = this.codePane.scrollTop;
		clear(this.codePane).append(el('div.loading', { text: `Loading ${file}…` }));
		let code;
		try {
			code = await request('source', 'source/code/file', { cardId: card.cardId, sourceName: file });
		} catch (e) {
			clear(this.codePane).append(emptyState(`${file} could not be shown.`, e.serverMessage));
			this.renderInstructions();
			return;
		}
		let lines = null;
		if (this.app.hasKind(card, 'source')) {
			const params = { cardId: card.cardId, sourceName: file };
			if (this.coreSel.value)
				params.coreName = this.coreSel.value;
			try {
				lines = await request('source', 'source/api/line', params, { quiet: true });
			} catch {
				lines = null;
			}
		}
		if (this.card !== card || this.file !== file)
			return;
		if (lines && Array.isArray(lines.cores))
			this.setCores(lines.cores.map(String));
		this.renderCode(String(code.fileContent ?? ''), lines);
		this.renderInstructions();
		if (keepScroll)
			this.codePane.scrollTop = scroll;
		if (line)
			this.selectLine(line, true);
	}

	renderCode(text, lines) {
		const byLine = new Map();
		let cols = [];
		if (lines && Array.isArray(lines.lines)) {
			for (const l of lines.lines)
				byLine.set(Number(l.Line), l);
			const dt = lines.dtype || {};
			cols = Object.keys(dt).filter((k) => k !== 'Line' && Number(dt[k]) !== 0);
			this.lineDtype = dt;
		}
		this.lineData = byLine;
		const heatCol = cols.find((c) => c === 'Cycles') || cols.find((c) => Number(this.lineDtype[c]) === 1);
		let heatMax = 0;
		if (heatCol)
			for (const l of byLine.values())
				heatMax = Math.max(heatMax, Number(l[heatCol]) || 0);
		const table = el('table.code');
		const head = el('tr', null, el('th.num', { text: 'Line' }),
			cols.map((c) => el('th.num', { text: c })), el('th', { text: 'Code' }));
		table.append(el('thead', null, head));
		const tbody = el('tbody');
		this.lineRows = new Map();
		const src = text.split(/\r?\n/);
		if (src.length && src[src.length - 1] === '')
			src.pop();
		src.forEach((codeText, i) => {
			const n = i + 1;
			const d = byLine.get(n);
			const tr = el('tr', { class: d ? 'has-data' : null, dataset: { line: n } });
			tr.append(el('td.ln', { text: String(n) }));
			for (const c of cols) {
				const v = d ? d[c] : undefined;
				const td = el('td.num', { text: v === undefined || v === null ? '' : this.fmtCell(v, this.lineDtype[c], c) });
				if (c === heatCol && d && heatMax > 0) {
					const pct = (Number(v) || 0) / heatMax * 100;
					td.classList.add('heat');
					td.style.setProperty('--heat', `${pct.toFixed(1)}%`);
				}
				tr.append(td);
			}
			tr.append(el('td.src', null, el('code', { text: codeText })));
			tr.addEventListener('click', () => this.selectLine(n, false));
			this.lineRows.set(n, tr);
			tbody.append(tr);
		});
		table.append(tbody);
		clear(this.codePane).append(table);
		if (!lines)
			this.codePane.prepend(el('p.note', { text: 'No per-line data for this file in this result.' }));
	}

	fmtCell(v, type, col) {
		if (Array.isArray(v))
			return v.map((x) => this.fmtCell(x, type, col)).join(', ');
		if (v === null || v === undefined)
			return '';
		if (col !== undefined && isRate(col) && typeof v === 'number' && v >= 0 && v <= 1)
			return fmtPct(v * 100);
		if (Number(type) === 2 && typeof v === 'number')
			return fmtNum(v, 4);
		if (Number(type) === 1)
			return fmtNum(v);
		return String(v);
	}

	renderInstructions() {
		clear(this.instPane);
		const I = this.insts;
		if (!I) {
			this.instPane.append(emptyState('This result has no instruction table.'));
			this.instTable = null;
			return;
		}
		const core = this.coreSel.value;
		let ci = I.cores.indexOf(core);
		if (ci < 0)
			ci = 0;
		const cols = I.cols.map((c) => {
			const type = Number(I.dtype[c]);
			const val = (r) => {
				const v = r.ins[c];
				return Array.isArray(v) ? v[ci] : v;
			};
			return { key: c, label: c, num: type === 1 || type === 2, value: val,
				render: (r) => { const v = val(r); return v === null || v === undefined ? '' : this.fmtCell(v, type, c); } };
		});
		const rows = this.fileInstructions();
		this.shownInsts = rows;
		this.selInsts = new Set();
		this.instTable = new SortTable(cols, rows, {
			rowClass: (r) => (this.selInsts.has(r) ? 'sel' : null),
			onRowClick: (r) => this.selectInstruction(r),
		});
		this.instTable.table.classList.add('inst-table');
		const of = rows === I.rows ? `all ${I.rows.length}` : `${rows.length} of ${I.rows.length}, in ${baseName(this.file)}`;
		this.instPane.append(el('h3', { text: `Instructions (${of})${I.cores.length ? ` · core ${I.cores[ci]}` : ''}` }),
			this.instTable.table);
		if (!rows.length)
			this.instPane.append(emptyState(`No instruction of this result comes from ${this.file}.`));
	}

	// The instructions of the file shown: those whose source location
	// names it, or (without a location) whose address lies in one of its
	// lines' address ranges.  All of them when the table says nothing of
	// where its instructions come from.
	fileInstructions() {
		const I = this.insts;
		const ranges = [];
		if (this.lineData)
			for (const d of this.lineData.values())
				for (const r of Array.isArray(d['Address Range']) ? d['Address Range'] : []) {
					const lo = Array.isArray(r) ? parseAddr(r[0]) : null, hi = Array.isArray(r) ? parseAddr(r[1]) : null;
					if (lo !== null && hi !== null)
						ranges.push([lo, hi]);
				}
		const located = I.rows.some((r) => this.instLocation(r));
		if (!this.file || (!located && !ranges.length))
			return I.rows;
		return I.rows.filter((r) => {
			const loc = this.instLocation(r);
			if (loc)
				return sameFile(loc.file, this.file);
			return r.addr !== null && ranges.some(([lo, hi]) => r.addr >= lo && r.addr < hi);
		});
	}

	// The instructions of a line of the current file.
	instructionsOf(n) {
		const I = this.insts;
		if (!I)
			return [];
		const d = this.lineData && this.lineData.get(n);
		const ranges = d && Array.isArray(d['Address Range']) ? d['Address Range'] : [];
		const parsed = ranges.map((r) => (Array.isArray(r) ? [parseAddr(r[0]), parseAddr(r[1])] : null))
			.filter((r) => r && r[0] !== null && r[1] !== null);
		if (parsed.length) {
			return I.rows.filter((r) => r.addr !== null &&
				parsed.some(([lo, hi]) => r.addr >= lo && (r.addr < hi || (lo === hi && r.addr === lo))));
		}
		return I.rows.filter((r) => {
			const loc = this.instLocation(r);
			return loc && loc.line === n && sameFile(loc.file, this.file);
		});
	}

	selectLine(n, scroll) {
		for (const tr of this.codePane.querySelectorAll('tr.sel'))
			tr.classList.remove('sel');
		const tr = this.lineRows && this.lineRows.get(n);
		if (tr) {
			tr.classList.add('sel');
			if (scroll)
				tr.scrollIntoView({ block: 'center' });
		}
		this.markInstructions(this.instructionsOf(n));
	}

	markInstructions(rows) {
		if (!this.instTable)
			return;
		for (const r of this.selInsts) {
			const e = this.instTable.rowElement(r);
			if (e)
				e.classList.remove('sel');
		}
		this.selInsts = new Set(rows);
		let first = null;
		for (const r of rows) {
			const e = this.instTable.rowElement(r);
			if (e) {
				e.classList.add('sel');
				if (!first || e.rowIndex < first.rowIndex)
					first = e;
			}
		}
		if (first)
			first.scrollIntoView({ block: 'nearest' });
	}

	// The line of an instruction: the line whose address ranges hold it,
	// else its source location.
	async selectInstruction(r) {
		this.markInstructions([r]);
		let n = null;
		if (r.addr !== null && this.lineData) {
			for (const [line, d] of this.lineData) {
				const ranges = Array.isArray(d['Address Range']) ? d['Address Range'] : [];
				if (ranges.some((x) => Array.isArray(x) && parseAddr(x[0]) !== null &&
					r.addr >= parseAddr(x[0]) && r.addr < parseAddr(x[1]))) {
					n = line;
					break;
				}
			}
		}
		if (n === null) {
			const loc = this.instLocation(r);
			if (!loc)
				return;
			if (!sameFile(loc.file, this.file)) {
				const f = this.files.find((x) => sameFile(x, loc.file)) ||
					this.files.find((x) => baseName(x) === baseName(loc.file));
				if (!f)
					return;
				await this.openFile(f);
				this.markInstructions([this.insts.rows[r.i]]);
			}
			n = loc.line;
		}
		for (const tr of this.codePane.querySelectorAll('tr.sel'))
			tr.classList.remove('sel');
		const tr = this.lineRows.get(n);
		if (tr) {
			tr.classList.add('sel');
			tr.scrollIntoView({ block: 'center' });
		}
	}
}
