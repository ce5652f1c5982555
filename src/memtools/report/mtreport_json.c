/*
 * report.json: the memory tools' findings for programs to read, with the
 * same content as report.txt but every table complete and every stack
 * resolved inline.  Written as a stream (mtr_jw) in jansson's layout,
 * indent 2, keys in the fixed order below, so the same findings always
 * give the same bytes.
 *
 * Layout (keys in this order; optional ones are left out when absent):
 *
 *   format "kscope-memtools-report", version 1, analysis, command (the
 *   kscope command line or null), program {exe, argv[], pid}, exit
 *   ({how:"exit", code} | {how:"signal", signal} | null when the run
 *   ended early), truncated (bool), settings {line_size, word_size,
 *   redzone?, freelist_vol?, options{min_write?, pad_smu?,
 *   thread_isolation?}}, summary {...}, then per analysis:
 *
 *   memcheck: summary {contexts, occurrences, error_contexts, leaks,
 *     filtered, definitely_lost{bytes, blocks}, possibly_lost{...}};
 *     errors[] {kind (the findings kind), xml_kind (Valgrind's), what,
 *     tid, count, size?, addr?, access?, syscall?, param?, stack[],
 *     auxwhat? (the block sentence), block? {addr, size, offset, state,
 *     alloc_stack[], free_stack[]?}}, in the file's order, filtered ones
 *     left out; leaks[] {kind, xml_kind, what, bytes, blocks, stack[]},
 *     smallest first; heap {allocs, frees, bytes_allocated, in_use_bytes,
 *     in_use_blocks} or null.
 *   contention and falseshare: summary {accesses, reads, writes,
 *     cold_misses, misses, invalidations, contention_accesses (null
 *     without a total record), contention_percent (null likewise, or
 *     with no accesses)}; threads[] {tid, counts}; sites[] {location
 *     (frame), stack[], counts, score = misses + invalidations}, by
 *     score; objects[] {name, variable (VAR), cold_misses, misses,
 *     invalidations, score}, by score.
 *   falseshare adds false_sharing {lines, false_lines, mixed_lines,
 *     per_thread[] {tid, entries[ENTRY]}, global_all_threads_info
 *     [ENTRY], global_all_threads_compact_info[] {object, name, count},
 *     objects[] {object, name, variable (VAR or null), addr, size,
 *     verdict, potential_invalidations, misses, invalidations, count,
 *     lines[LINE], source_lines[] {file, line}, contexts[] {stack[],
 *     count}}} and true_sharing[LINE].
 *
 *   A frame is {ip, fn?, obj?, dir?, file?, line?}; a stack an array of
 *   frames, innermost first.  VAR is {id, kind, addr, size, name?, obj?,
 *   alloc_stack[]?}.  ENTRY is {object (1-based index into
 *   false_sharing.objects), name, context[] (stack), reads, writes,
 *   count}.  LINE is {addr, verdict, word_size, offset_in_object (line
 *   start - object start; absent without an object), misses,
 *   invalidations, potential_invalidations, threads[] {tid, read_words[],
 *   write_words[], reads, writes}}; a word w covers bytes
 *   offset_in_object + w * word_size onwards.  Addresses are strings
 *   "0x...", counts integers.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Pieces                                                              */
/* ------------------------------------------------------------------ */

static json_t *addr_json(uint64_t a)
{
	char buf[19];

	mtr_hex(buf, a);
	return json_string(buf);
}

/* json_object_set_new that tolerates a NULL value (out of memory). */
static void set(json_t *o, const char *key, json_t *v)
{
	if (o && v)
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

static json_t *frame_json(const struct mtr_frame *f)
{
	json_t *o = json_object();

	set(o, "ip", addr_json(f->ip));
	if (f->fn)
		set(o, "fn", json_string(f->fn));
	if (f->obj)
		set(o, "obj", json_string(f->obj));
	if (f->dir)
		set(o, "dir", json_string(f->dir));
	if (f->file)
		set(o, "file", json_string(f->file));
	if (f->line)
		set(o, "line", mtr_json_u64(f->line));
	return o;
}

/* The same, streamed: errors and leaks, the bulk of a large report. */
static void jw_stack(struct mtr_jw *w, const char *key, const struct mtr_run *r,
		     uint32_t idx)
{
	const struct mtr_stack *s = &r->stacks[idx];

	mtr_jw_array(w, key);
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct mtr_frame *f = &s->frames[i];

		mtr_jw_object(w, NULL);
		mtr_jw_addr(w, "ip", f->ip);
		if (f->fn)
			mtr_jw_str(w, "fn", f->fn);
		if (f->obj)
			mtr_jw_str(w, "obj", f->obj);
		if (f->dir)
			mtr_jw_str(w, "dir", f->dir);
		if (f->file)
			mtr_jw_str(w, "file", f->file);
		if (f->line)
			mtr_jw_uint(w, "line", f->line);
		mtr_jw_end(w);
	}
	mtr_jw_end(w);
}

static json_t *stack_json(const struct mtr_run *r, uint32_t idx)
{
	const struct mtr_stack *s = &r->stacks[idx];
	json_t *a = json_array();

	for (uint32_t i = 0; a && i < s->nframes; i++)
		json_array_append_new(a, frame_json(&s->frames[i]));
	return a;
}

static void counts_set(json_t *o, const struct mtr_counts *c)
{
	set(o, "accesses", mtr_json_u64(c->accesses));
	set(o, "reads", mtr_json_u64(c->reads));
	set(o, "writes", mtr_json_u64(c->writes));
	set(o, "cold_misses", mtr_json_u64(c->cold_misses));
	set(o, "misses", mtr_json_u64(c->misses));
	set(o, "invalidations", mtr_json_u64(c->invalidations));
}

static json_t *var_json(const struct mtr_run *r, const struct mtr_var *v)
{
	json_t *o = json_object();

	set(o, "id", json_integer(v->id));
	set(o, "kind", json_string(mtr_vkind_names[v->kind]));
	set(o, "addr", addr_json(v->addr));
	set(o, "size", mtr_json_u64(v->size));
	if (v->name)
		set(o, "name", json_string(v->name));
	if (v->obj)
		set(o, "obj", json_string(v->obj));
	if (v->alloc_stack != MTR_NONE)
		set(o, "alloc_stack", stack_json(r, v->alloc_stack));
	return o;
}

/* ------------------------------------------------------------------ */
/* Sections                                                            */
/* ------------------------------------------------------------------ */

static void put_head(struct mtr_jw *w, const struct mtr_run *r,
		     const struct ks_mtr_opts *o)
{
	const struct mtr_start *s = &r->start;
	json_t *j, *a;

	mtr_jw_str(w, "format", "kscope-memtools-report");
	mtr_jw_uint(w, "version", 1);
	mtr_jw_str(w, "analysis", mtr_analysis_names[s->analysis]);
	mtr_jw_str(w, "command", o->command);
	j = json_object();
	set(j, "exe", json_string(s->exe));
	a = json_array();
	for (size_t i = 0; a && i < s->argc; i++)
		json_array_append_new(a, json_string(s->argv[i]));
	set(j, "argv", a);
	set(j, "pid", json_integer(s->pid));
	mtr_jw_put(w, "program", j);
	if (r->end.present) {
		j = json_object();
		set(j, "how", json_string(r->end.signaled ? "signal" : "exit"));
		set(j, r->end.signaled ? "signal" : "code", json_integer(r->end.code));
		mtr_jw_put(w, "exit", j);
	} else {
		mtr_jw_put(w, "exit", json_null());
	}
	mtr_jw_put(w, "truncated", json_boolean(r->truncated));
	j = json_object();
	set(j, "line_size", json_integer(s->line_size));
	set(j, "word_size", json_integer(s->word_size));
	if (s->has_redzone)
		set(j, "redzone", mtr_json_u64(s->redzone));
	if (s->has_freelist)
		set(j, "freelist_vol", mtr_json_u64(s->freelist_vol));
	a = json_object();
	if (s->min_write >= 0)
		set(a, "min_write", json_boolean(s->min_write));
	if (s->pad_smu >= 0)
		set(a, "pad_smu", json_boolean(s->pad_smu));
	if (s->thread_isolation >= 0)
		set(a, "thread_isolation", json_boolean(s->thread_isolation));
	set(j, "options", a);
	mtr_jw_put(w, "settings", j);
}

static json_t *lost_json(uint64_t bytes, uint64_t blocks)
{
	json_t *o = json_object();

	set(o, "bytes", mtr_json_u64(bytes));
	set(o, "blocks", mtr_json_u64(blocks));
	return o;
}

static void put_memcheck(struct mtr_jw *w, const struct mtr_run *r)
{
	uint64_t lost[2][2] = { { 0 } };
	unsigned long filtered = 0;
	char buf[1024];
	json_t *j;

	for (size_t i = 0; i < r->nleaks; i++) {
		bool p = r->leaks[i].kind == MTR_E_LEAK_POSSIBLE;

		lost[p][0] += r->leaks[i].bytes;
		lost[p][1] += r->leaks[i].blocks;
	}
	for (size_t i = 0; i < r->nerrors; i++)
		filtered += r->errors[i].filtered;
	j = json_object();
	set(j, "contexts", mtr_json_u64(r->nreported));
	set(j, "occurrences", mtr_json_u64(r->occurrences));
	set(j, "error_contexts", mtr_json_u64(r->nreported - r->nleaks));
	set(j, "leaks", mtr_json_u64(r->nleaks));
	set(j, "filtered", mtr_json_u64(filtered));
	set(j, "definitely_lost", lost_json(lost[0][0], lost[0][1]));
	set(j, "possibly_lost", lost_json(lost[1][0], lost[1][1]));
	mtr_jw_put(w, "summary", j);

	mtr_jw_array(w, "errors");
	for (size_t i = 0; i < r->nerrors; i++) {
		const struct mtr_error *e = &r->errors[i];

		if (e->filtered)
			continue;
		mtr_jw_object(w, NULL);
		mtr_jw_str(w, "kind", mtr_ekind_names[e->kind]);
		mtr_jw_str(w, "xml_kind", mtr_xml_kind(e->kind, e->write));
		mtr_error_what(e, buf, sizeof(buf));
		mtr_jw_str(w, "what", buf);
		mtr_jw_int(w, "tid", e->tid);
		mtr_jw_uint(w, "count", e->count);
		if (e->has_size)
			mtr_jw_uint(w, "size", e->size);
		if (e->has_addr)
			mtr_jw_addr(w, "addr", e->addr);
		if (e->kind == MTR_E_USE_AFTER_FREE)
			mtr_jw_str(w, "access", e->write ? "write" : "read");
		if (e->syscall) {
			mtr_jw_str(w, "syscall", e->syscall);
			mtr_jw_str(w, "param", e->param);
		}
		jw_stack(w, "stack", r, e->stack);
		mtr_error_where(e, buf, sizeof(buf));
		if (buf[0])
			mtr_jw_str(w, "auxwhat", buf);
		if (e->has_block) {
			mtr_jw_object(w, "block");
			mtr_jw_addr(w, "addr", e->block.addr);
			mtr_jw_uint(w, "size", e->block.size);
			mtr_jw_int(w, "offset", e->block.offset);
			mtr_jw_str(w, "state", e->block.freed ? "freed" : "alloc");
			jw_stack(w, "alloc_stack", r, e->block.alloc_stack);
			if (e->block.free_stack != MTR_NONE)
				jw_stack(w, "free_stack", r, e->block.free_stack);
			mtr_jw_end(w);
		}
		mtr_jw_end(w);
	}
	mtr_jw_end(w);

	mtr_jw_array(w, "leaks");
	for (size_t i = 0; i < r->nleaks; i++) {
		const struct mtr_leak *l = &r->leaks[r->leak_order[i]];

		mtr_jw_object(w, NULL);
		mtr_jw_str(w, "kind", mtr_ekind_names[l->kind]);
		mtr_jw_str(w, "xml_kind", mtr_xml_kind(l->kind, false));
		mtr_leak_what(l, buf, sizeof(buf));
		mtr_jw_str(w, "what", buf);
		mtr_jw_uint(w, "bytes", l->bytes);
		mtr_jw_uint(w, "blocks", l->blocks);
		jw_stack(w, "stack", r, l->stack);
		mtr_jw_end(w);
	}
	mtr_jw_end(w);

	if (r->end.has_heap) {
		j = json_object();
		set(j, "allocs", mtr_json_u64(r->end.allocs));
		set(j, "frees", mtr_json_u64(r->end.frees));
		set(j, "bytes_allocated", mtr_json_u64(r->end.bytes_allocated));
		set(j, "in_use_bytes", mtr_json_u64(r->end.in_use_bytes));
		set(j, "in_use_blocks", mtr_json_u64(r->end.in_use_blocks));
		mtr_jw_put(w, "heap", j);
	} else {
		mtr_jw_put(w, "heap", json_null());
	}
}

static void put_contention(struct mtr_jw *w, const struct mtr_run *r)
{
	char name[1024];
	json_t *j;

	j = json_object();
	counts_set(j, &r->sum);
	set(j, "contention_accesses",
	    r->has_contention ? mtr_json_u64(r->contention_accesses) : json_null());
	set(j, "contention_percent",
	    r->has_contention && r->sum.accesses
		    ? json_real(100.0 * (double)r->contention_accesses / (double)r->sum.accesses)
		    : json_null());
	mtr_jw_put(w, "summary", j);

	mtr_jw_array(w, "threads");
	for (size_t i = 0; i < r->nthreads; i++) {
		j = json_object();
		set(j, "tid", json_integer(r->threads[i].tid));
		counts_set(j, &r->threads[i].c);
		mtr_jw_put(w, NULL, j);
	}
	mtr_jw_end(w);

	mtr_jw_array(w, "sites");
	for (size_t i = 0; i < r->nsites; i++) {
		const struct mtr_site *s = &r->sites[r->site_order[i]];

		j = json_object();
		set(j, "location", frame_json(&r->stacks[s->stack].frames[0]));
		set(j, "stack", stack_json(r, s->stack));
		counts_set(j, &s->c);
		set(j, "score", mtr_json_u64(mtr_score(&s->c)));
		mtr_jw_put(w, NULL, j);
	}
	mtr_jw_end(w);

	mtr_jw_array(w, "objects");
	for (size_t i = 0; i < r->nobjects; i++) {
		const struct mtr_object *ob = &r->objects[r->object_order[i]];

		j = json_object();
		mtr_var_name(r, &r->vars[ob->var], name, sizeof(name));
		set(j, "name", json_string(name));
		set(j, "variable", var_json(r, &r->vars[ob->var]));
		set(j, "cold_misses", mtr_json_u64(ob->cold_misses));
		set(j, "misses", mtr_json_u64(ob->misses));
		set(j, "invalidations", mtr_json_u64(ob->invalidations));
		set(j, "score", mtr_json_u64(ob->misses + ob->invalidations));
		mtr_jw_put(w, NULL, j);
	}
	mtr_jw_end(w);
}

static json_t *words_json(const struct mtr_line *l, const uint64_t *m)
{
	json_t *a = json_array();

	for (unsigned i = 0; a && i < l->nwords; i++)
		if (m[i / 64] >> (i % 64) & 1)
			json_array_append_new(a, json_integer(i));
	return a;
}

/* A line; base is its object's start (has_base false: no object). */
static json_t *line_json(const struct mtr_line *l, bool has_base, uint64_t base)
{
	json_t *o = json_object(), *ts = json_array();

	set(o, "addr", addr_json(l->addr));
	set(o, "verdict", json_string(mtr_verdict_names[l->verdict]));
	set(o, "word_size", json_integer(l->word_size));
	if (has_base)
		set(o, "offset_in_object", json_integer((json_int_t)(l->addr - base)));
	set(o, "misses", mtr_json_u64(l->misses));
	set(o, "invalidations", mtr_json_u64(l->invalidations));
	set(o, "potential_invalidations", mtr_json_u64(l->potential));
	for (uint32_t t = 0; ts && t < l->nthreads; t++) {
		const struct mtr_lthread *lt = &l->threads[t];
		json_t *e = json_object();

		set(e, "tid", json_integer(lt->tid));
		set(e, "read_words", words_json(l, lt->read));
		set(e, "write_words", words_json(l, lt->write));
		set(e, "reads", mtr_json_u64(lt->reads));
		set(e, "writes", mtr_json_u64(lt->writes));
		json_array_append_new(ts, e);
	}
	set(o, "threads", ts);
	return o;
}

static json_t *entry_json(const struct mtr_run *r, const struct mtr_fentry *e)
{
	json_t *o = json_object();
	char name[1024];

	mtr_fobj_name(r, &r->fobjs[e->fobj], name, sizeof(name));
	set(o, "object", json_integer(e->fobj + 1));
	set(o, "name", json_string(name));
	set(o, "context", stack_json(r, e->context));
	set(o, "reads", mtr_json_u64(e->reads));
	set(o, "writes", mtr_json_u64(e->writes));
	set(o, "count", mtr_json_u64(e->reads + e->writes));
	return o;
}

static json_t *fobj_json(const struct mtr_run *r, size_t idx)
{
	const struct mtr_fobj *f = &r->fobjs[idx];
	json_t *o = json_object(), *a;
	uint64_t addr, size;
	char name[1024];

	mtr_fobj_name(r, f, name, sizeof(name));
	mtr_fobj_range(r, f, &addr, &size);
	set(o, "object", json_integer((json_int_t)idx + 1));
	set(o, "name", json_string(name));
	set(o, "variable", f->var != MTR_NONE ? var_json(r, &r->vars[f->var]) : json_null());
	set(o, "addr", addr_json(addr));
	set(o, "size", mtr_json_u64(size));
	set(o, "verdict", json_string(mtr_verdict_names[f->verdict]));
	set(o, "potential_invalidations", mtr_json_u64(f->potential));
	set(o, "misses", mtr_json_u64(f->misses));
	set(o, "invalidations", mtr_json_u64(f->invalidations));
	set(o, "count", mtr_json_u64(f->count));
	a = json_array();
	for (size_t j = 0; a && j < f->nlines; j++)
		json_array_append_new(a, line_json(&r->lines[f->lines[j]], true, addr));
	set(o, "lines", a);
	a = json_array();
	for (size_t j = 0; a && j < f->nsrclines; j++) {
		json_t *e = json_object();

		set(e, "file", json_string(f->srclines[j]->file));
		set(e, "line", mtr_json_u64(f->srclines[j]->line));
		json_array_append_new(a, e);
	}
	set(o, "source_lines", a);
	a = json_array();
	for (size_t j = 0; a && j < f->ncontexts; j++) {
		json_t *c = json_object();

		set(c, "stack", stack_json(r, f->contexts[j].stack));
		set(c, "count", mtr_json_u64(f->contexts[j].count));
		json_array_append_new(a, c);
	}
	set(o, "contexts", a);
	return o;
}

static void put_falseshare(struct mtr_jw *w, const struct mtr_run *r)
{
	unsigned long mixed = 0;
	char name[1024];
	json_t *j;

	for (size_t i = 0; i < r->nlines; i++)
		mixed += r->lines[i].verdict == MTR_MIXED;
	mtr_jw_object(w, "false_sharing");
	mtr_jw_uint(w, "lines", r->false_lines);
	mtr_jw_uint(w, "false_lines", r->false_lines - mixed);
	mtr_jw_uint(w, "mixed_lines", mixed);

	mtr_jw_array(w, "per_thread");
	for (size_t i = 0; i < r->nper_thread;) {
		long long tid = r->per_thread[i].tid;

		mtr_jw_object(w, NULL);
		mtr_jw_put(w, "tid", json_integer(tid));
		mtr_jw_array(w, "entries");
		for (; i < r->nper_thread && r->per_thread[i].tid == tid; i++)
			mtr_jw_put(w, NULL, entry_json(r, &r->per_thread[i]));
		mtr_jw_end(w);
		mtr_jw_end(w);
	}
	mtr_jw_end(w);

	mtr_jw_array(w, "global_all_threads_info");
	for (size_t i = 0; i < r->nglobal; i++)
		mtr_jw_put(w, NULL, entry_json(r, &r->global[i]));
	mtr_jw_end(w);

	mtr_jw_array(w, "global_all_threads_compact_info");
	for (size_t i = 0; i < r->nfobjs; i++) {
		const struct mtr_fobj *f = &r->fobjs[r->compact[i]];

		j = json_object();
		mtr_fobj_name(r, f, name, sizeof(name));
		set(j, "object", json_integer((json_int_t)r->compact[i] + 1));
		set(j, "name", json_string(name));
		set(j, "count", mtr_json_u64(f->count));
		mtr_jw_put(w, NULL, j);
	}
	mtr_jw_end(w);

	mtr_jw_array(w, "objects");
	for (size_t i = 0; i < r->nfobjs; i++)
		mtr_jw_put(w, NULL, fobj_json(r, i));
	mtr_jw_end(w);
	mtr_jw_end(w);

	mtr_jw_array(w, "true_sharing");
	for (size_t i = 0; i < r->ntrue; i++) {
		const struct mtr_line *l = &r->lines[r->true_lines[i]];
		json_t *lj;

		if (l->var != MTR_NONE) {
			lj = line_json(l, true, r->vars[l->var].addr);
			mtr_var_name(r, &r->vars[l->var], name, sizeof(name));
			set(lj, "name", json_string(name));
		} else {
			lj = line_json(l, false, 0);
		}
		mtr_jw_put(w, NULL, lj);
	}
	mtr_jw_end(w);
}

int mtr_write_json(const struct mtr_run *r, const struct ks_mtr_opts *o,
		   struct ks_rundir *rd, struct ks_err *err)
{
	struct mtr_out *out = calloc(1, sizeof(*out));
	struct ks_outfile of;
	struct mtr_jw w;
	int rc;

	if (!out)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = mtr_out_open(out, &of, NULL, rd, "report.json", err);
	if (rc)
		goto out;
	mtr_jw_init(&w, out);
	put_head(&w, r, o);
	if (r->start.analysis == MTR_MEMCHECK) {
		put_memcheck(&w, r);
	} else {
		put_contention(&w, r);
		if (r->start.analysis == MTR_FALSESHARE)
			put_falseshare(&w, r);
	}
	mtr_jw_finish(&w);
	rc = mtr_out_commit(out, err);
out:
	free(out);
	return rc;
}
