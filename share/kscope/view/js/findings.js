// findings.js: the Findings view of a memory-tool report (findings/list:
// memcheck errors and leaks, contention sites, objects and lines, false
// and true sharing, falsely shared objects with the parts of their
// lines, latent false sharing).  Findings are grouped by kind with counts; each expands
// to its stacks, and a frame with a file and line opens that line in the
// Source tab.

import { request } from './api.js';
import { el, clear, emptyState, fmtNum } from './util.js';

function isFrame(x) {
	return x && typeof x === 'object' && !Array.isArray(x) && ('fn' in x || 'ip' in x);
}

// Every stack of a finding: its array fields whose elements are frames,
// also inside a nested "block" (memcheck's allocation and free stacks).
function stacksOf(f) {
	const out = [];
	const scan = (o, prefix) => {
		for (const [k, v] of Object.entries(o)) {
			if (Array.isArray(v) && v.length && v.every(isFrame))
				out.push([`${prefix}${k.replace(/_/g, ' ')}`, v]);
			else if (v && typeof v === 'object' && !Array.isArray(v) && k === 'block')
				scan(v, 'block ');
		}
	};
	scan(f, '');
	return out;
}

// The findings of a report as [{kind, title, facts, item}].
function collect(r) {
	const out = [];
	for (const e of Array.isArray(r.errors) ? r.errors : []) {
		out.push({ kind: e.kind || e.xml_kind || 'error', title: e.what || e.kind,
			facts: [e.auxwhat, e.tid !== undefined && `thread ${e.tid}`, e.count > 1 && `${fmtNum(e.count)} times`], item: e });
	}
	for (const l of Array.isArray(r.leaks) ? r.leaks : []) {
		out.push({ kind: l.kind || 'leak', title: l.what || `${fmtNum(l.bytes)} bytes in ${fmtNum(l.blocks)} blocks`,
			facts: [], item: l });
	}
	for (const s of Array.isArray(r.sites) ? r.sites : []) {
		const loc = s.location || {};
		out.push({ kind: 'contention site', title: `${loc.fn || loc.ip || '?'}${loc.file ? ` (${loc.file}:${loc.line})` : ''}`,
			facts: [`${fmtNum(s.accesses)} accesses`, `${fmtNum(s.misses)} misses`, `${fmtNum(s.invalidations)} invalidations`, `score ${fmtNum(s.score)}`], item: s });
	}
	for (const o of Array.isArray(r.objects) ? r.objects : []) {
		out.push({ kind: r.analysis === 'falseshare' ? 'shared object' : 'contended object', title: o.name,
			facts: [`${fmtNum(o.misses)} misses`, `${fmtNum(o.invalidations)} invalidations`, `score ${fmtNum(o.score)}`], item: o });
	}
	for (const l of Array.isArray(r.lines) ? r.lines : []) {
		const vars = (l.variables || []).map((v) => v.name || v.kind).filter(Boolean);
		out.push({ kind: 'contended line', title: `line ${l.addr}${vars.length ? `: ${vars.join(', ')}` : ''}`,
			facts: [`${fmtNum(l.misses)} misses`, `${fmtNum(l.invalidations)} invalidations`], item: l });
	}
	const fsObjects = r.false_sharing && Array.isArray(r.false_sharing.objects) ? r.false_sharing.objects : [];
	for (const o of fsObjects) {
		const parts = [];
		for (const l of o.lines || [])
			for (const p of l.parts || [])
				parts.push(p);
		out.push({ kind: 'falsely shared object', title: o.name,
			facts: [o.verdict, `${fmtNum(o.invalidations)} invalidations`, `${parts.length} ${parts.length === 1 ? 'part' : 'parts'}`],
			item: o, parts });
	}
	for (const lay of Array.isArray(r.layout_prediction) ? r.layout_prediction : []) {
		if (!lay.latent)
			continue;
		const sizes = Array.isArray(lay.line_sizes) ? lay.line_sizes : [];
		out.push({ kind: 'latent false sharing', title: lay.name,
			facts: sizes.map((z) => (z.false_at && z.false_at.length
				? `${z.line_size}-byte lines: false sharing if it starts at byte ${z.false_at.join(', ')} (it starts at ${z.start_offset})`
				: `${z.line_size}-byte lines: none`)), item: lay });
	}
	for (const [key, kind] of [['false_sharing', 'false sharing'], ['true_sharing', 'true sharing']]) {
		const fs = r[key];
		const per = fs && !Array.isArray(fs) ? fs.per_thread : null;
		if (Array.isArray(per)) {
			for (const t of per)
				for (const e of t.entries || [])
					out.push({ kind, title: `${e.name || 'object'} · thread ${t.tid}`,
						facts: [`${fmtNum(e.count)} accesses`, `${fmtNum(e.reads)} reads`, `${fmtNum(e.writes)} writes`], item: e });
		} else if (Array.isArray(fs)) {
			for (const e of fs)
				out.push({ kind, title: e.name || e.what || kind, facts: [], item: e });
		}
	}
	return out;
}

export class FindingsView {
	constructor(panel, app) {
		this.app = app;
		this.panel = panel;
	}

	async show(card) {
		this.card = card;
		clear(this.panel).append(el('div.loading', { text: 'Loading the findings…' }));
		let r;
		try {
			r = await request('findings', 'findings/list', { cardId: card.cardId });
		} catch (e) {
			clear(this.panel).append(emptyState('The findings could not be loaded.', e.serverMessage));
			return;
		}
		if (this.card !== card)
			return;
		clear(this.panel);
		const prog = r.program || {};
		const exit = r.exit || {};
		const head = el('section.box', null, el('h3', { text: `kscope ${r.analysis || r.command || 'report'}` }),
			el('dl.facts', null,
				el('dt', { text: 'Program' }), el('dd', null, el('code', { text: Array.isArray(prog.argv) ? prog.argv.join(' ') : (prog.exe || '') })),
				el('dt', { text: 'Ended' }), el('dd', { text: exit.how ? `${exit.how} ${exit.code ?? exit.signal ?? ''}` : '' }),
				r.truncated ? [el('dt', { text: 'Note' }), el('dd', { text: 'the report was truncated' })] : null));
		const sum = r.summary && typeof r.summary === 'object' ? r.summary : null;
		if (sum) {
			const dl = el('dl.facts.summary');
			for (const [k, v] of Object.entries(sum)) {
				if (v === null || typeof v === 'object')
					continue;
				dl.append(el('dt', { text: k.replace(/_/g, ' ') }), el('dd', { text: typeof v === 'number' ? fmtNum(v) : String(v) }));
			}
			head.append(el('h4', { text: 'Summary' }), dl);
		}
		this.panel.append(head);
		const found = collect(r);
		if (!found.length) {
			this.panel.append(emptyState('No findings: the analysis found nothing to report.'));
			return;
		}
		const groups = new Map();
		for (const f of found) {
			if (!groups.has(f.kind))
				groups.set(f.kind, []);
			groups.get(f.kind).push(f);
		}
		// Sharing and memory errors first, the long list of contention sites last.
		const rank = (k) => (k === 'contention site' ? 4 : k === 'contended line' ? 3 : k === 'contended object' || k === 'shared object' ? 2
			: k === 'true sharing' || k === 'latent false sharing' ? 1 : 0);
		const sorted = [...groups].sort((a, b) => rank(a[0]) - rank(b[0]));
		groups.clear();
		for (const [k, v] of sorted)
			groups.set(k, v);
		const nav = el('div.kind-counts');
		for (const [kind, list] of groups)
			nav.append(el('span.kind-badge', { text: `${kind} · ${list.length}` }));
		this.panel.append(nav);
		for (const [kind, list] of groups) {
			const sec = el('section.box.finding-group', { dataset: { kind } },
				el('h3', null, el('span.kind', { text: kind }), el('span.count', { text: ` (${list.length})` })));
			for (const f of list)
				sec.append(this.finding(f));
			this.panel.append(sec);
		}
	}

	finding(f) {
		const facts = f.facts.filter(Boolean).join(' · ');
		const d = el('details.finding', null, el('summary', null, el('span.finding-title', { text: f.title || f.kind }),
			facts ? el('span.finding-facts', { text: ` — ${facts}` }) : null));
		const stacks = stacksOf(f.item);
		if (!stacks.length)
			d.append(el('p.hint', { text: 'No stack recorded for this finding.' }));
		for (const [name, frames] of stacks) {
			const ol = el('ol.stack');
			for (const fr of frames)
				ol.append(el('li', null, this.frame(fr)));
			d.append(el('h4', { text: name }), ol);
		}
		if (f.item.variable)
			d.append(el('p.note', { text: `variable: ${f.item.variable.name || ''} (${f.item.variable.kind || ''}, ${fmtNum(f.item.variable.size)} bytes at ${f.item.variable.addr || '?'})` }));
		if (f.parts && f.parts.length) {
			// Each variable, member or element of its lines, and who touched it.
			const words = (t, k) => (t[k] && t[k].length ? t[k].length : 0);
			const tb = el('tbody');
			for (const p of f.parts) {
				const who = (p.threads || []).map((t) => `${t.tid}${words(t, 'write_words') ? ' w' : ''}${words(t, 'read_words') ? ' r' : ''}`);
				tb.append(el('tr', null, el('td', null, el('code', { text: p.name })),
					el('td.num', { text: String(p.offset_in_line) }), el('td.num', { text: String(p.size) }),
					el('td', { text: who.join(', ') })));
			}
			d.append(el('h4', { text: 'parts of its lines' }), el('table.data.parts', null,
				el('thead', null, el('tr', null, el('th', { text: 'part' }), el('th', { text: 'byte' }),
					el('th', { text: 'bytes' }), el('th', { text: 'threads (w: wrote, r: read)' }))), tb));
		}
		return d;
	}

	frame(fr) {
		const where = fr.file ? `${fr.file}:${fr.line ?? ''}` : (fr.obj || '');
		const full = fr.file ? (fr.dir && !fr.file.startsWith('/') ? `${fr.dir}/${fr.file}` : fr.file) : null;
		const src = full ? this.sourceName(full) : null;
		const parts = [el('code.fn', { text: fr.fn || fr.ip || '?' }), ' '];
		if (src && fr.line) {
			const a = el('a.src-link', { href: '#', title: `Show ${src}:${fr.line} in the Source tab`, text: where });
			a.addEventListener('click', (ev) => {
				ev.preventDefault();
				this.app.openSource(this.card.cardId, src, Number(fr.line));
			});
			parts.push(a);
		} else {
			parts.push(el('span.where', { text: where }));
		}
		if (fr.ip)
			parts.push(el('span.ip', { text: ` ${fr.ip}` }));
		return parts;
	}

	// The name the data uses for a frame's file, if the result names it.
	sourceName(full) {
		const list = (this.card.sourceList || []).map(String);
		if (list.includes(full))
			return full;
		const base = full.split('/').pop();
		return list.find((s) => s === base || s.endsWith(`/${full}`) || full.endsWith(`/${s}`)) ||
			list.find((s) => s.endsWith(`/${base}`)) || null;
	}
}
