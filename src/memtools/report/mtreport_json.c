/*
 * report.json: the memory tools' findings for programs to read, with the
 * same content as report.txt but every table complete and every stack
 * resolved inline.  Written as a stream (ks_mtr_jw): indent 2, keys in the
 * fixed order below, so the same findings always give the same bytes; a
 * stack frame and a list of word indexes are each one line.
 *
 * Layout (keys in this order; optional ones are left out when absent):
 *
 *   format "kscope-memtools-report", version 1, analysis, command (the
 *   kscope command line or null), program {exe, argv[], pid}, exit
 *   (EXIT of the program's last image), truncated (bool), incomplete?
 *   (memcheck: why the results are incomplete, e.g. Memcheck aborted),
 *   processes[]
 *   {pid, ppid (null for the program), image (0, or 1, 2... after each
 *   exec), exe, argv[], exit (EXIT), truncated}: every process image of
 *   the run, the program first, settings {line_size, word_size,
 *   front_end? (contention, falseshare: "valgrind" or "compiled"),
 *   redzone?, freelist_vol?, options{min_write?, pad_smu?,
 *   thread_isolation?}}, summary {...}, then per analysis:
 *
 *   memcheck: summary {contexts, occurrences, error_contexts, leaks,
 *     filtered (errors and leaks), suppressed, suppressed_reason?,
 *     definitely_lost{bytes,
 *     blocks}, possibly_lost, indirectly_lost, still_reachable{...}};
 *     errors[] {kind (the findings kind), xml_kind (Valgrind's), what,
 *     tid (null when not known), count, size?, addr?, access?, syscall?, param?, location?
 *     (the frame in the user's code), stack[], auxwhat? (the block
 *     sentence), aux[]? {what?, stack[]?} (Memcheck's auxiliary
 *     descriptions), heap_map? {status ("found", "none": no live block
 *     within 1 MiB, "unknown"), reason? (unknown: why), below?, above?
 *     NEAR} (kscope memcheck --heap-map, for an address Memcheck related to
 *     no block: the live blocks nearest to it at the moment of the error),
 *     hint? (without --heap-map, for such an address: the suggestion to
 *     use it), block? {addr, size, offset, state, alloc_stack[],
 *     free_stack[]?}}, in the file's order, filtered ones left out;
 *     NEAR is {addr, size, relation ("after", "before", "inside": of the
 *     error's address to the block), distance (bytes from the block's
 *     end after it, to its start before it, from its start inside),
 *     allocation (the process image's n-th allocation), function
 *     ("malloc", "operator new[]"...)};
 *     leaks[] {kind, xml_kind, what, bytes, blocks, counted_as_error,
 *     location?, stack[]}, smallest first, filtered ones left out; heap {allocs, frees, bytes_allocated, in_use_bytes,
 *     in_use_blocks} or null.
 *   contention and falseshare: summary {accesses, reads, writes,
 *     cold_misses, misses, invalidations, contention_accesses (null
 *     without a total record), contention_percent (null likewise, or
 *     with no accesses), stack_accesses?, quiet_lines? and min_accesses?
 *     (falseshare), read_mostly_lines? and min_writes? (falseshare: lines
 *     whose threads touched disjoint bytes but fewer than two of them
 *     wrote min_writes times; not among the false-sharing lines),
 *     near_lines_dropped? (falseshare: lines the layout prediction could
 *     not examine, past the front end's limit of 4096)}; threads[] {tid, counts}; sites[] {location
 *     (frame), stack[], counts, score = misses + invalidations}, by
 *     score; objects[] {name, variable (VAR), cold_misses, misses,
 *     invalidations, score}, by score; lines[] {addr, misses,
 *     invalidations, score, variables[VAR]} (the lines with the most
 *     misses + invalidations, at most 1000 per process), by score.
 *   falseshare adds false_sharing {lines, false_lines, mixed_lines,
 *     per_thread[] {tid, entries[ENTRY]}, global_all_threads_info
 *     [ENTRY], global_all_threads_compact_info[] {object, name, count},
 *     objects[] {object, name, variable (VAR or null), addr, size,
 *     verdict, potential_invalidations, misses, invalidations, count,
 *     lines[LINE], source_lines[] {file, line}, contexts[] {stack[],
 *     count}}}, true_sharing[LINE] and layout_prediction[] (mtreport_layout.c:
 *     the objects two threads came back to) {name, variable (VAR), align,
 *     latent, line_sizes[] {line_size (the run's, then twice it),
 *     start_offset (as laid out), false_sharing (as laid out), false_at[],
 *     clean_at[] (start offsets, multiples of align)}}.
 *
 *   Every error, leak, thread, site, object, per_thread entry and LINE
 *   also has the pid of its process.  EXIT is {how:"exit", code} |
 *   {how:"signal", signal} | {how:"exec"} (the image replaced itself) |
 *   {how:"signal", signal: null} (killed by a signal nobody could name)
 *   | null (the run ended early).
 *
 *   A frame is {ip, fn?, obj?, dir?, file?, line?}; a stack an array of
 *   frames, innermost first.  VAR is {id, kind, addr, size, name?, obj?,
 *   alloc_stack[]?, align? (the alignment its start is sure to have: a
 *   heap block's asked of aligned_alloc and friends, a global's from
 *   DWARF)}.  ENTRY is {object (1-based index into
 *   false_sharing.objects), name, context[] (stack), reads, writes,
 *   count}.  LINE is {addr, verdict, word_size, offset_in_object (line
 *   start - object start; absent without an object), misses,
 *   invalidations, potential_invalidations, parts[] (mtreport_parts.c)
 *   {name, variable (VAR's id or null), offset_in_variable (or null),
 *   offset_in_line, size, threads[] {tid, read_words[], write_words[]}},
 *   threads[] {tid, read_words[],
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

static void jw_frame(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_frame *f)
{
	ks_mtr_jw_object_flat(w, key);
	ks_mtr_jw_addr(w, "ip", f->ip);
	if (f->fn)
		ks_mtr_jw_str(w, "fn", f->fn);
	if (f->obj)
		ks_mtr_jw_str(w, "obj", f->obj);
	if (f->dir)
		ks_mtr_jw_str(w, "dir", f->dir);
	if (f->file)
		ks_mtr_jw_str(w, "file", f->file);
	if (f->line)
		ks_mtr_jw_uint(w, "line", f->line);
	ks_mtr_jw_end(w);
}

static void jw_stack(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_run *r,
		     uint32_t idx)
{
	const struct ks_mtr_stack *s = &r->stacks[idx];

	ks_mtr_jw_array(w, key);
	for (uint32_t i = 0; i < s->nframes; i++)
		jw_frame(w, NULL, &s->frames[i]);
	ks_mtr_jw_end(w);
}

static void jw_counts(struct ks_mtr_jw *w, const struct ks_mtr_counts *c)
{
	ks_mtr_jw_uint(w, "accesses", c->accesses);
	ks_mtr_jw_uint(w, "reads", c->reads);
	ks_mtr_jw_uint(w, "writes", c->writes);
	ks_mtr_jw_uint(w, "cold_misses", c->cold_misses);
	ks_mtr_jw_uint(w, "misses", c->misses);
	ks_mtr_jw_uint(w, "invalidations", c->invalidations);
}

static void jw_var(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_run *r,
		   const struct ks_mtr_var *v)
{
	ks_mtr_jw_object(w, key);
	ks_mtr_jw_int(w, "id", v->id);
	ks_mtr_jw_str(w, "kind", ks_mtr_vkind_names[v->kind]);
	ks_mtr_jw_addr(w, "addr", v->addr);
	ks_mtr_jw_uint(w, "size", v->size);
	if (v->name)
		ks_mtr_jw_str(w, "name", v->name);
	if (v->obj)
		ks_mtr_jw_str(w, "obj", v->obj);
	if (v->alloc_stack != MTR_NONE)
		jw_stack(w, "alloc_stack", r, v->alloc_stack);
	if (v->align)
		ks_mtr_jw_uint(w, "align", v->align);
	ks_mtr_jw_end(w);
}

/* "location": where the finding is in the user's code (see
 * ks_mtr_stack_user_frame), when a frame has a line. */
/* The heap map's word on an error (mtreport_int.h, enum ks_mtr_hm). */
static void jw_near(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_near *b,
		    uint64_t a)
{
	uint64_t d;
	const char *rel = ks_mtr_near_relation(b, a, &d);

	ks_mtr_jw_object(w, key);
	ks_mtr_jw_addr(w, "addr", b->addr);
	ks_mtr_jw_uint(w, "size", b->size);
	ks_mtr_jw_str(w, "relation", rel);
	ks_mtr_jw_uint(w, "distance", d);
	ks_mtr_jw_uint(w, "allocation", b->alloc_no);
	ks_mtr_jw_str(w, "function", b->fn);
	ks_mtr_jw_end(w);
}

static void jw_heap_map(struct ks_mtr_jw *w, const struct ks_mtr_error *e)
{
	static const char *const status[] = {
		[MTR_HM_FOUND] = "found", [MTR_HM_NOTHING] = "none", [MTR_HM_UNKNOWN] = "unknown",
	};
	char buf[1024];

	if (e->hm == MTR_HM_HINT && ks_mtr_heap_map_line(e, 0, buf, sizeof(buf))) {
		ks_mtr_jw_str(w, "hint", buf);
		return;
	}
	if (e->hm != MTR_HM_FOUND && e->hm != MTR_HM_NOTHING && e->hm != MTR_HM_UNKNOWN)
		return;
	ks_mtr_jw_object(w, "heap_map");
	ks_mtr_jw_str(w, "status", status[e->hm]);
	if (e->hm == MTR_HM_UNKNOWN)
		ks_mtr_jw_str(w, "reason", e->hm_why);
	if (e->hm_below.present)
		jw_near(w, "below", &e->hm_below, e->addr);
	if (e->hm_above.present)
		jw_near(w, "above", &e->hm_above, e->addr);
	ks_mtr_jw_end(w);
}

static void jw_location(struct ks_mtr_jw *w, const struct ks_mtr_stack *s)
{
	const struct ks_mtr_frame *f = ks_mtr_stack_user_frame(s);

	if (f)
		jw_frame(w, "location", f);
}

static void jw_lost(struct ks_mtr_jw *w, const char *key, uint64_t bytes, uint64_t blocks)
{
	ks_mtr_jw_object(w, key);
	ks_mtr_jw_uint(w, "bytes", bytes);
	ks_mtr_jw_uint(w, "blocks", blocks);
	ks_mtr_jw_end(w);
}

/* ------------------------------------------------------------------ */
/* Sections                                                            */
/* ------------------------------------------------------------------ */

static void jw_exit(struct ks_mtr_jw *w, const struct ks_mtr_end *e)
{
	if (!e->present) {
		ks_mtr_jw_put(w, "exit", json_null());
		return;
	}
	ks_mtr_jw_object(w, "exit");
	if (e->exec) {
		ks_mtr_jw_str(w, "how", "exec");
	} else if (e->no_code) {
		ks_mtr_jw_str(w, "how", "exit");
		ks_mtr_jw_put(w, "code", json_null());
	} else if (e->unknown) {
		ks_mtr_jw_str(w, "how", "signal");
		ks_mtr_jw_put(w, "signal", json_null());
	} else {
		ks_mtr_jw_str(w, "how", e->signaled ? "signal" : "exit");
		ks_mtr_jw_int(w, e->signaled ? "signal" : "code", e->code);
	}
	ks_mtr_jw_end(w);
}

static void jw_processes(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	ks_mtr_jw_array(w, "processes");
	for (size_t i = 0; i < r->nprocs; i++) {
		const struct ks_mtr_proc *p = &r->procs[i];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", p->start.pid);
		if (p->parent != MTR_NONE)
			ks_mtr_jw_int(w, "ppid", ks_mtr_pid(r, p->parent));
		else if (i == 0 || p->start.ppid < 0)
			ks_mtr_jw_put(w, "ppid", json_null());
		else
			ks_mtr_jw_int(w, "ppid", p->start.ppid);
		ks_mtr_jw_uint(w, "image", p->image);
		ks_mtr_jw_str(w, "exe", p->start.exe);
		ks_mtr_jw_array_flat(w, "argv");
		for (size_t k = 0; k < p->start.argc; k++)
			ks_mtr_jw_str(w, NULL, p->start.argv[k]);
		ks_mtr_jw_end(w);
		jw_exit(w, &p->end);
		ks_mtr_jw_bool(w, "truncated", p->truncated);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
}

static void put_head(struct ks_mtr_jw *w, const struct ks_mtr_run *r,
		     const struct ks_mtr_opts *o)
{
	const struct ks_mtr_start *s = &r->start;

	ks_mtr_jw_str(w, "format", "kscope-memtools-report");
	ks_mtr_jw_uint(w, "version", 1);
	ks_mtr_jw_str(w, "analysis", ks_mtr_analysis_names[s->analysis]);
	ks_mtr_jw_str(w, "command", o->command);
	ks_mtr_jw_object(w, "program");
	ks_mtr_jw_str(w, "exe", s->exe);
	ks_mtr_jw_array(w, "argv");
	for (size_t i = 0; i < s->argc; i++)
		ks_mtr_jw_str(w, NULL, s->argv[i]);
	ks_mtr_jw_end(w);
	ks_mtr_jw_int(w, "pid", s->pid);
	ks_mtr_jw_end(w);
	jw_exit(w, &r->end);
	ks_mtr_jw_bool(w, "truncated", r->truncated);
	if (r->incomplete)
		ks_mtr_jw_str(w, "incomplete", r->incomplete);
	jw_processes(w, r);
	ks_mtr_jw_object(w, "settings");
	ks_mtr_jw_uint(w, "line_size", s->line_size);
	ks_mtr_jw_uint(w, "word_size", s->word_size);
	if (s->analysis != MTR_MEMCHECK)
		ks_mtr_jw_str(w, "front_end", s->front_end);
	if (s->has_redzone)
		ks_mtr_jw_uint(w, "redzone", s->redzone);
	if (s->has_freelist)
		ks_mtr_jw_uint(w, "freelist_vol", s->freelist_vol);
	ks_mtr_jw_object(w, "options");
	if (s->min_write >= 0)
		ks_mtr_jw_bool(w, "min_write", s->min_write);
	if (s->pad_smu >= 0)
		ks_mtr_jw_bool(w, "pad_smu", s->pad_smu);
	if (s->thread_isolation >= 0)
		ks_mtr_jw_bool(w, "thread_isolation", s->thread_isolation);
	ks_mtr_jw_end(w);
	ks_mtr_jw_end(w);
}

static void put_memcheck(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	/* [definite, possible, indirect, reachable][bytes, blocks] */
	uint64_t lost[4][2] = { { 0 } };
	char buf[1024];

	for (size_t i = 0; i < r->nleaks_shown; i++) {
		const struct ks_mtr_leak *l = &r->leaks[r->leak_order[i]];
		int k = l->kind == MTR_E_LEAK_POSSIBLE   ? 1
			: l->kind == MTR_E_LEAK_INDIRECT  ? 2
			: l->kind == MTR_E_LEAK_REACHABLE ? 3
							  : 0;

		lost[k][0] += l->bytes;
		lost[k][1] += l->blocks;
	}
	ks_mtr_jw_object(w, "summary");
	ks_mtr_jw_uint(w, "contexts", r->nreported);
	ks_mtr_jw_uint(w, "occurrences", r->occurrences);
	ks_mtr_jw_uint(w, "error_contexts", r->nreported_errors);
	ks_mtr_jw_uint(w, "leaks", r->nleaks_shown);
	ks_mtr_jw_uint(w, "filtered", r->nfiltered);
	ks_mtr_jw_uint(w, "suppressed", r->suppressed.count);
	if (r->suppressed.reason)
		ks_mtr_jw_str(w, "suppressed_reason", r->suppressed.reason);
	jw_lost(w, "definitely_lost", lost[0][0], lost[0][1]);
	jw_lost(w, "possibly_lost", lost[1][0], lost[1][1]);
	jw_lost(w, "indirectly_lost", lost[2][0], lost[2][1]);
	jw_lost(w, "still_reachable", lost[3][0], lost[3][1]);
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "errors");
	for (size_t i = 0; i < r->nerrors; i++) {
		const struct ks_mtr_error *e = &r->errors[i];

		if (e->filtered)
			continue;
		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_str(w, "kind", ks_mtr_ekind_names[e->kind]);
		ks_mtr_jw_str(w, "xml_kind", ks_mtr_error_xml_kind(e));
		ks_mtr_error_what(e, buf, sizeof(buf));
		ks_mtr_jw_str(w, "what", buf);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, e->proc));
		if (e->tid > 0)
			ks_mtr_jw_int(w, "tid", e->tid);
		else /* not known */
			ks_mtr_jw_put(w, "tid", json_null());
		ks_mtr_jw_uint(w, "count", e->count);
		if (e->has_size)
			ks_mtr_jw_uint(w, "size", e->size);
		if (e->has_addr)
			ks_mtr_jw_addr(w, "addr", e->addr);
		if (e->kind == MTR_E_USE_AFTER_FREE)
			ks_mtr_jw_str(w, "access", e->write ? "write" : "read");
		if (e->syscall) {
			ks_mtr_jw_str(w, "syscall", e->syscall);
			ks_mtr_jw_str(w, "param", e->param);
		}
		jw_location(w, &r->stacks[e->stack]);
		jw_stack(w, "stack", r, e->stack);
		ks_mtr_error_where(e, buf, sizeof(buf));
		if (buf[0])
			ks_mtr_jw_str(w, "auxwhat", buf);
		if (e->naux) {
			ks_mtr_jw_array(w, "aux");
			for (uint32_t k = 0; k < e->naux; k++) {
				ks_mtr_jw_object(w, NULL);
				if (e->aux[k].what)
					ks_mtr_jw_str(w, "what", e->aux[k].what);
				if (e->aux[k].stack != MTR_NONE)
					jw_stack(w, "stack", r, e->aux[k].stack);
				ks_mtr_jw_end(w);
			}
			ks_mtr_jw_end(w);
		}
		jw_heap_map(w, e);
		if (e->has_block) {
			ks_mtr_jw_object(w, "block");
			ks_mtr_jw_addr(w, "addr", e->block.addr);
			ks_mtr_jw_uint(w, "size", e->block.size);
			ks_mtr_jw_int(w, "offset", e->block.offset);
			ks_mtr_jw_str(w, "state", e->block.freed ? "freed" : "alloc");
			jw_stack(w, "alloc_stack", r, e->block.alloc_stack);
			if (e->block.free_stack != MTR_NONE)
				jw_stack(w, "free_stack", r, e->block.free_stack);
			ks_mtr_jw_end(w);
		}
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "leaks");
	for (size_t i = 0; i < r->nleaks_shown; i++) {
		const struct ks_mtr_leak *l = &r->leaks[r->leak_order[i]];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, l->proc));
		ks_mtr_jw_str(w, "kind", ks_mtr_ekind_names[l->kind]);
		ks_mtr_jw_str(w, "xml_kind", ks_mtr_xml_kind(l->kind, false));
		ks_mtr_leak_what(l, buf, sizeof(buf));
		ks_mtr_jw_str(w, "what", buf);
		ks_mtr_jw_uint(w, "bytes", l->bytes);
		ks_mtr_jw_uint(w, "blocks", l->blocks);
		ks_mtr_jw_bool(w, "counted_as_error", !l->not_error);
		jw_location(w, &r->stacks[l->stack]);
		jw_stack(w, "stack", r, l->stack);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	if (r->end.has_heap) {
		ks_mtr_jw_object(w, "heap");
		ks_mtr_jw_uint(w, "allocs", r->end.allocs);
		ks_mtr_jw_uint(w, "frees", r->end.frees);
		ks_mtr_jw_uint(w, "bytes_allocated", r->end.bytes_allocated);
		ks_mtr_jw_uint(w, "in_use_bytes", r->end.in_use_bytes);
		ks_mtr_jw_uint(w, "in_use_blocks", r->end.in_use_blocks);
		ks_mtr_jw_end(w);
	} else {
		ks_mtr_jw_put(w, "heap", json_null());
	}
}

static void put_contention(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	char name[1024];

	ks_mtr_jw_object(w, "summary");
	jw_counts(w, &r->sum);
	if (r->has_contention)
		ks_mtr_jw_uint(w, "contention_accesses", r->contention_accesses);
	else
		ks_mtr_jw_put(w, "contention_accesses", json_null());
	ks_mtr_jw_put(w, "contention_percent",
		      r->has_contention && r->sum.accesses
			   ? json_real(100.0 * (double)r->contention_accesses /
				       (double)r->sum.accesses)
			   : json_null());
	if (r->total.has_stack)
		ks_mtr_jw_uint(w, "stack_accesses", r->total.stack_accesses);
	if (r->total.has_quiet) {
		ks_mtr_jw_uint(w, "quiet_lines", r->total.quiet_lines);
		ks_mtr_jw_uint(w, "min_accesses", r->total.min_accesses);
	}
	if (r->total.has_read_mostly) {
		ks_mtr_jw_uint(w, "read_mostly_lines", r->total.read_mostly_lines);
		ks_mtr_jw_uint(w, "min_writes", r->total.min_writes);
		ks_mtr_jw_uint(w, "near_lines_dropped", r->total.near_dropped);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "threads");
	for (size_t i = 0; i < r->nthreads; i++) {
		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, r->threads[i].proc));
		ks_mtr_jw_int(w, "tid", r->threads[i].tid);
		jw_counts(w, &r->threads[i].c);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "sites");
	for (size_t i = 0; i < r->nsites; i++) {
		const struct ks_mtr_site *s = &r->sites[r->site_order[i]];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, s->proc));
		jw_frame(w, "location", &r->stacks[s->stack].frames[0]);
		jw_stack(w, "stack", r, s->stack);
		jw_counts(w, &s->c);
		ks_mtr_jw_uint(w, "score", ks_mtr_score(&s->c));
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "objects");
	for (size_t i = 0; i < r->nobjects; i++) {
		const struct ks_mtr_object *ob = &r->objects[r->object_order[i]];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, ob->proc));
		ks_mtr_var_name(r, &r->vars[ob->var], name, sizeof(name));
		ks_mtr_jw_str(w, "name", name);
		jw_var(w, "variable", r, &r->vars[ob->var]);
		ks_mtr_jw_uint(w, "cold_misses", ob->cold_misses);
		ks_mtr_jw_uint(w, "misses", ob->misses);
		ks_mtr_jw_uint(w, "invalidations", ob->invalidations);
		ks_mtr_jw_uint(w, "score", ob->misses + ob->invalidations);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "lines");
	for (size_t i = 0; i < r->nclines; i++) {
		const struct ks_mtr_line *l = &r->clines[r->cline_order[i]];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, l->proc));
		ks_mtr_jw_addr(w, "addr", l->addr);
		ks_mtr_jw_uint(w, "misses", l->misses);
		ks_mtr_jw_uint(w, "invalidations", l->invalidations);
		ks_mtr_jw_uint(w, "score", l->misses + l->invalidations);
		ks_mtr_jw_array(w, "variables");
		for (uint32_t k = 0; k < l->nvars; k++)
			jw_var(w, NULL, r, &r->vars[l->vars[k]]);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
}

static void jw_words(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_line *l,
		     const uint64_t *m)
{
	ks_mtr_jw_array_flat(w, key);
	for (unsigned i = 0; i < l->nwords; i++)
		if (m[i / 64] >> (i % 64) & 1)
			ks_mtr_jw_uint(w, NULL, i);
	ks_mtr_jw_end(w);
}

/* The words of mask m in [first, first + n). */
static void jw_words_in(struct ks_mtr_jw *w, const char *key, const uint64_t *m,
			unsigned first, unsigned n)
{
	ks_mtr_jw_array_flat(w, key);
	for (unsigned i = first; i < first + n; i++)
		if (m[i / 64] >> (i % 64) & 1)
			ks_mtr_jw_uint(w, NULL, i);
	ks_mtr_jw_end(w);
}

static bool any_in(const uint64_t *m, unsigned first, unsigned n)
{
	for (unsigned i = first; i < first + n; i++)
		if (m[i / 64] >> (i % 64) & 1)
			return true;
	return false;
}

static void jw_parts(struct ks_mtr_jw *w, const struct ks_mtr_run *r,
		     const struct ks_mtr_line *l)
{
	ks_mtr_jw_array(w, "parts");
	for (uint32_t i = 0; i < l->nparts; i++) {
		const struct ks_mtr_part *p = &l->parts[i];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_str(w, "name", p->name);
		if (p->var != MTR_NONE) {
			ks_mtr_jw_int(w, "variable", r->vars[p->var].id);
			ks_mtr_jw_uint(w, "offset_in_variable", p->var_off);
		} else {
			ks_mtr_jw_put(w, "variable", json_null());
			ks_mtr_jw_put(w, "offset_in_variable", json_null());
		}
		ks_mtr_jw_uint(w, "offset_in_line", (uint64_t)p->first * l->word_size);
		ks_mtr_jw_uint(w, "size", (uint64_t)p->nwords * l->word_size);
		ks_mtr_jw_array(w, "threads");
		for (uint32_t t = 0; t < l->nthreads; t++) {
			const struct ks_mtr_lthread *lt = &l->threads[t];

			if (!any_in(lt->read, p->first, p->nwords) &&
			    !any_in(lt->write, p->first, p->nwords))
				continue;
			ks_mtr_jw_object_flat(w, NULL);
			ks_mtr_jw_int(w, "tid", lt->tid);
			jw_words_in(w, "read_words", lt->read, p->first, p->nwords);
			jw_words_in(w, "write_words", lt->write, p->first, p->nwords);
			ks_mtr_jw_end(w);
		}
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
}

/* A line; base is its object's start (has_base false: no object), name
 * the object's name for the true-sharing list (else NULL). */
static void jw_line(struct ks_mtr_jw *w, const struct ks_mtr_run *r,
		    const struct ks_mtr_line *l, bool has_base, uint64_t base, const char *name)
{
	ks_mtr_jw_object(w, NULL);
	ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, l->proc));
	ks_mtr_jw_addr(w, "addr", l->addr);
	ks_mtr_jw_str(w, "verdict", ks_mtr_verdict_names[l->verdict]);
	ks_mtr_jw_uint(w, "word_size", l->word_size);
	if (has_base)
		ks_mtr_jw_int(w, "offset_in_object", (long long)(l->addr - base));
	if (name)
		ks_mtr_jw_str(w, "name", name);
	ks_mtr_jw_uint(w, "misses", l->misses);
	ks_mtr_jw_uint(w, "invalidations", l->invalidations);
	ks_mtr_jw_uint(w, "potential_invalidations", l->potential);
	ks_mtr_jw_array(w, "threads");
	for (uint32_t t = 0; t < l->nthreads; t++) {
		const struct ks_mtr_lthread *lt = &l->threads[t];

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "tid", lt->tid);
		jw_words(w, "read_words", l, lt->read);
		jw_words(w, "write_words", l, lt->write);
		ks_mtr_jw_uint(w, "reads", lt->reads);
		ks_mtr_jw_uint(w, "writes", lt->writes);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
	jw_parts(w, r, l);
	ks_mtr_jw_end(w);
}

/* One object's layout prediction (mtreport_layout.c). */
static void jw_layout(struct ks_mtr_jw *w, const struct ks_mtr_run *r,
		      const struct ks_mtr_layout *lay)
{
	char name[1024];

	ks_mtr_var_name(r, &r->vars[lay->var], name, sizeof(name));
	ks_mtr_jw_object(w, NULL);
	ks_mtr_jw_str(w, "name", name);
	jw_var(w, "variable", r, &r->vars[lay->var]);
	ks_mtr_jw_uint(w, "align", lay->align);
	ks_mtr_jw_bool(w, "latent", lay->latent);
	ks_mtr_jw_array(w, "line_sizes");
	for (int k = 0; k < 2; k++) {
		uint64_t lz = (uint64_t)lay->line_size << k, step = ks_mtr_layout_step(lay, k);

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_uint(w, "line_size", lz);
		ks_mtr_jw_uint(w, "start_offset", lay->start[k]);
		ks_mtr_jw_bool(w, "false_sharing", lay->now[k]);
		ks_mtr_jw_array_flat(w, "false_at");
		for (uint64_t b = 0; b * step < lz; b++)
			if (lay->false_at[k][b / 64] >> (b % 64) & 1)
				ks_mtr_jw_uint(w, NULL, b * step);
		ks_mtr_jw_end(w);
		ks_mtr_jw_array_flat(w, "clean_at");
		for (uint64_t b = 0; b * step < lz; b++)
			if (!(lay->false_at[k][b / 64] >> (b % 64) & 1))
				ks_mtr_jw_uint(w, NULL, b * step);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
	ks_mtr_jw_end(w);
}

static void jw_entry(struct ks_mtr_jw *w, const struct ks_mtr_run *r, const struct ks_mtr_fentry *e)
{
	char name[1024];

	ks_mtr_fobj_name(r, &r->fobjs[e->fobj], name, sizeof(name));
	ks_mtr_jw_object(w, NULL);
	ks_mtr_jw_uint(w, "object", (uint64_t)e->fobj + 1);
	ks_mtr_jw_str(w, "name", name);
	jw_stack(w, "context", r, e->context);
	ks_mtr_jw_uint(w, "reads", e->reads);
	ks_mtr_jw_uint(w, "writes", e->writes);
	ks_mtr_jw_uint(w, "count", e->reads + e->writes);
	ks_mtr_jw_end(w);
}

static void jw_fobj(struct ks_mtr_jw *w, const struct ks_mtr_run *r, size_t idx)
{
	const struct ks_mtr_fobj *f = &r->fobjs[idx];
	uint64_t addr, size;
	char name[1024];

	ks_mtr_fobj_name(r, f, name, sizeof(name));
	ks_mtr_fobj_range(r, f, &addr, &size);
	ks_mtr_jw_object(w, NULL);
	ks_mtr_jw_uint(w, "object", (uint64_t)idx + 1);
	ks_mtr_jw_str(w, "name", name);
	if (f->var != MTR_NONE)
		jw_var(w, "variable", r, &r->vars[f->var]);
	else
		ks_mtr_jw_put(w, "variable", json_null());
	ks_mtr_jw_addr(w, "addr", addr);
	ks_mtr_jw_uint(w, "size", size);
	ks_mtr_jw_str(w, "verdict", ks_mtr_verdict_names[f->verdict]);
	ks_mtr_jw_uint(w, "potential_invalidations", f->potential);
	ks_mtr_jw_uint(w, "misses", f->misses);
	ks_mtr_jw_uint(w, "invalidations", f->invalidations);
	ks_mtr_jw_uint(w, "count", f->count);
	ks_mtr_jw_array(w, "lines");
	for (size_t j = 0; j < f->nlines; j++)
		jw_line(w, r, &r->lines[f->lines[j]], true, addr, NULL);
	ks_mtr_jw_end(w);
	ks_mtr_jw_array(w, "source_lines");
	for (size_t j = 0; j < f->nsrclines; j++) {
		ks_mtr_jw_object_flat(w, NULL);
		ks_mtr_jw_str(w, "file", f->srclines[j]->file);
		ks_mtr_jw_uint(w, "line", f->srclines[j]->line);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
	ks_mtr_jw_array(w, "contexts");
	for (size_t j = 0; j < f->ncontexts; j++) {
		ks_mtr_jw_object(w, NULL);
		jw_stack(w, "stack", r, f->contexts[j].stack);
		ks_mtr_jw_uint(w, "count", f->contexts[j].count);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
	ks_mtr_jw_end(w);
}

static void put_falseshare(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	unsigned long mixed = 0;
	char name[1024];

	for (size_t i = 0; i < r->nlines; i++)
		mixed += r->lines[i].verdict == MTR_MIXED;
	ks_mtr_jw_object(w, "false_sharing");
	ks_mtr_jw_uint(w, "lines", r->false_lines);
	ks_mtr_jw_uint(w, "false_lines", r->false_lines - mixed);
	ks_mtr_jw_uint(w, "mixed_lines", mixed);

	ks_mtr_jw_array(w, "per_thread");
	for (size_t i = 0; i < r->nper_thread;) {
		long long tid = r->per_thread[i].tid;
		uint32_t proc = r->per_thread[i].proc;

		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, proc));
		ks_mtr_jw_int(w, "tid", tid);
		ks_mtr_jw_array(w, "entries");
		for (; i < r->nper_thread && r->per_thread[i].tid == tid &&
		       r->per_thread[i].proc == proc; i++)
			jw_entry(w, r, &r->per_thread[i]);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "global_all_threads_info");
	for (size_t i = 0; i < r->nglobal; i++)
		jw_entry(w, r, &r->global[i]);
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "global_all_threads_compact_info");
	for (size_t i = 0; i < r->nfobjs; i++) {
		const struct ks_mtr_fobj *f = &r->fobjs[r->compact[i]];

		ks_mtr_fobj_name(r, f, name, sizeof(name));
		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_uint(w, "object", (uint64_t)r->compact[i] + 1);
		ks_mtr_jw_str(w, "name", name);
		ks_mtr_jw_uint(w, "count", f->count);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "objects");
	for (size_t i = 0; i < r->nfobjs; i++)
		jw_fobj(w, r, i);
	ks_mtr_jw_end(w);
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "true_sharing");
	for (size_t i = 0; i < r->ntrue; i++) {
		const struct ks_mtr_line *l = &r->lines[r->true_lines[i]];

		if (l->var != MTR_NONE) {
			ks_mtr_var_name(r, &r->vars[l->var], name, sizeof(name));
			jw_line(w, r, l, true, r->vars[l->var].addr, name);
		} else {
			jw_line(w, r, l, false, 0, NULL);
		}
	}
	ks_mtr_jw_end(w);

	ks_mtr_jw_array(w, "layout_prediction");
	for (size_t i = 0; i < r->nlayouts; i++)
		jw_layout(w, r, &r->layouts[i]);
	ks_mtr_jw_end(w);
}

int ks_mtr_write_json(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		      struct ks_rundir *rd, struct ks_err *err)
{
	struct ks_mtr_out *out = calloc(1, sizeof(*out)); /* 64 KiB: not on the stack */
	struct ks_outfile of;
	struct ks_mtr_jw w;
	int rc;

	if (!out)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = ks_mtr_out_open(out, &of, NULL, rd, "report.json", err);
	if (rc)
		goto out;
	ks_mtr_jw_init(&w, out);
	put_head(&w, r, o);
	if (r->start.analysis == MTR_MEMCHECK) {
		put_memcheck(&w, r);
	} else {
		put_contention(&w, r);
		if (r->start.analysis == MTR_FALSESHARE)
			put_falseshare(&w, r);
	}
	ks_mtr_jw_finish(&w);
	rc = ks_mtr_out_commit(out, err);
out:
	free(out);
	return rc;
}
