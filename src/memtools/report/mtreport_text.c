/*
 * report.txt, the text report of kscope's memory tools, also handed to
 * the caller's FILE* (kscope prints it on stderr).  memcheck reads like
 * Valgrind's Memcheck, which its users know: one block per error context
 * ("Invalid read of size 4", "   at 0x...: main (oob.c:12)", " Address
 * ... is 4 bytes after a block of size 40 alloc'd" and the allocation
 * stack), the leaks, then HEAP, LEAK and ERROR SUMMARY.  contention gives
 * the program-wide contention rate (contention accesses / all accesses,
 * the paper's Table 3 figure), a table per thread and the top sites and
 * data objects.  falseshare gives the paper's three views (per thread,
 * global-all-threads-info, global-all-threads-compact-info), then each
 * falsely shared object with the words each thread touched, and true
 * sharing apart.  Tables show the first MTR_TOP_TEXT rows; report.json
 * has them all.  Every string from the program (function, file and
 * variable names) goes out with control characters escaped.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Common parts                                                        */
/* ------------------------------------------------------------------ */

static void put_stack(struct ks_mtr_out *o, const struct ks_mtr_stack *s, unsigned max)
{
	char where[1024], ip[19];

	for (uint32_t i = 0; i < s->nframes && i < max; i++) {
		ks_mtr_hex(ip, s->frames[i].ip);
		ks_mtr_frame_where(&s->frames[i], where, sizeof(where));
		ks_mtr_printf(o, "   %s %s: ", i == 0 ? "at" : "by", ip);
		ks_mtr_put_text(o, where);
		ks_mtr_puts(o, "\n");
	}
}

/* The process tree, when the program forked or exec'd: each image
 * indented under its parent, with its command and how it ended. */
static void put_proc_tree(struct ks_mtr_out *o, const struct ks_mtr_run *r, uint32_t i,
			  unsigned depth)
{
	const struct ks_mtr_proc *p = &r->procs[i];
	char how[200];

	if (depth > 32)
		return; /* a malformed tree; every process is still listed once */
	ks_mtr_proc_exit_text(r, i, how, sizeof(how));
	ks_mtr_printf(o, "  %*s%s %lld:", (int)depth * 2, "",
		      p->image ? "exec'd as" : "process", p->start.pid);
	for (size_t k = 0; k < p->start.argc; k++) {
		ks_mtr_puts(o, " ");
		ks_mtr_put_text(o, p->start.argv[k]);
	}
	if (!p->start.argc) {
		ks_mtr_puts(o, " ");
		ks_mtr_put_text(o, p->start.exe);
	}
	ks_mtr_printf(o, " -- %s\n", how);
	for (size_t c = 0; c < r->nprocs; c++)
		if (r->procs[c].parent == i)
			put_proc_tree(o, r, (uint32_t)c, depth + !r->procs[c].image);
}

static void put_processes(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	if (r->nprocs < 2)
		return;
	ks_mtr_printf(o, "Processes (%zu images; the findings below name theirs):\n",
		      r->nprocs);
	for (size_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].parent == MTR_NONE)
			put_proc_tree(o, r, (uint32_t)i, 0);
}

static void put_header(struct ks_mtr_out *o, const struct ks_mtr_run *r,
		       const struct ks_mtr_opts *opts)
{
	char buf[256];

	ks_mtr_printf(o, "kscope %s report\n", ks_mtr_analysis_names[r->start.analysis]);
	ks_mtr_puts(o, "Command:");
	if (!r->start.argc) {
		ks_mtr_puts(o, " ");
		ks_mtr_put_text(o, r->start.exe);
	}
	for (size_t i = 0; i < r->start.argc; i++) {
		ks_mtr_puts(o, " ");
		ks_mtr_put_text(o, r->start.argv[i]);
	}
	ks_mtr_puts(o, "\n");
	if (opts->command) {
		ks_mtr_puts(o, "kscope command: ");
		ks_mtr_put_text(o, opts->command);
		ks_mtr_puts(o, "\n");
	}
	ks_mtr_exit_text(r, buf, sizeof(buf));
	ks_mtr_printf(o, "%s\n", buf);
	put_processes(o, r);
	if (r->partial_last)
		ks_mtr_puts(o, "The last line of findings.jsonl was cut off and is ignored.\n");
	if (r->start.analysis != MTR_MEMCHECK) {
		ks_mtr_printf(o, "Front end: %s\n",
			      r->start.front_end && !strcmp(r->start.front_end, "compiled")
				      ? "compiled (-fsanitize=thread, libkscope-mt.so): threads ran in parallel"
				      : "Valgrind (kscope's tool): threads ran one at a time");
		ks_mtr_printf(o, "Cache lines of %u bytes, words of %u byte%s\n", r->start.line_size,
			      r->start.word_size, r->start.word_size == 1 ? "" : "s");
	}
	ks_mtr_puts(o, "\n");
}

static void put_truncated(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	if (r->incomplete)
		ks_mtr_printf(o, "\nThe run is incomplete: %s\n", r->incomplete);
	else if (r->truncated)
		ks_mtr_puts(o, "\nThe run ended early (findings.jsonl has no end record): the "
			    "results above are incomplete.\n");
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* ------------------------------------------------------------------ */
/* memcheck                                                            */
/* ------------------------------------------------------------------ */

/* " Location: main (t.c:12)", last in a report, when the frame in the
 * user's code is not the first one (the first is Valgrind's malloc, the C
 * library's write). */
static void put_location(struct ks_mtr_out *o, const struct ks_mtr_stack *s)
{
	const struct ks_mtr_frame *f = ks_mtr_stack_user_frame(s);
	char where[1024];

	if (!f || f == &s->frames[0])
		return;
	ks_mtr_frame_where(f, where, sizeof(where));
	ks_mtr_puts(o, " Location: ");
	ks_mtr_put_text(o, where);
	ks_mtr_puts(o, "\n");
}

/* " Heap map: address ... is 3,000 bytes after the block of 50 bytes..."
 * (kscope memcheck --heap-map), or the hint to use it. */
static void put_heap_map(struct ks_mtr_out *o, const struct ks_mtr_error *e)
{
	char buf[1024];

	for (int k = 0; ks_mtr_heap_map_line(e, k, buf, sizeof(buf)); k++) {
		ks_mtr_puts(o, " ");
		ks_mtr_put_text(o, buf);
		ks_mtr_puts(o, "\n");
	}
}

static void put_error(struct ks_mtr_out *o, const struct ks_mtr_run *r,
		      const struct ks_mtr_error *e, unsigned max)
{
	char buf[1024];

	ks_mtr_error_what(e, buf, sizeof(buf));
	ks_mtr_put_text(o, buf);
	if (e->count > 1)
		ks_mtr_printf(o, " (%" PRIu64 " times)", e->count);
	ks_mtr_puts(o, "\n");
	put_stack(o, &r->stacks[e->stack], max);
	if (e->naux) {
		/* Memcheck's own descriptions and stacks, in its order. */
		for (uint32_t k = 0; k < e->naux; k++) {
			if (e->aux[k].what) {
				ks_mtr_puts(o, " ");
				ks_mtr_put_text(o, e->aux[k].what);
				ks_mtr_puts(o, "\n");
			}
			if (e->aux[k].stack != MTR_NONE)
				put_stack(o, &r->stacks[e->aux[k].stack], max);
		}
		put_heap_map(o, e);
		put_location(o, &r->stacks[e->stack]);
		return;
	}
	ks_mtr_error_where(e, buf, sizeof(buf));
	if (buf[0])
		ks_mtr_printf(o, " %s\n", buf);
	if (e->has_block) {
		if (e->block.freed && e->block.free_stack != MTR_NONE) {
			put_stack(o, &r->stacks[e->block.free_stack], max);
			ks_mtr_puts(o, " Block was alloc'd at\n");
		} else if (e->block.freed) {
			ks_mtr_puts(o, " Block was alloc'd at\n");
		}
		put_stack(o, &r->stacks[e->block.alloc_stack], max);
	}
	put_heap_map(o, e);
	put_location(o, &r->stacks[e->stack]);
}

static void write_memcheck(struct ks_mtr_out *o, const struct ks_mtr_run *r,
			   const struct ks_mtr_opts *opts)
{
	unsigned max = opts->max_stack ? opts->max_stack : 1;
	long long last_tid = 1;
	uint32_t last_proc = 0;
	/* [definite, possible, indirect, reachable][bytes, blocks] */
	uint64_t lost[4][2] = { { 0 } };
	char buf[256];

	for (size_t i = 0; i < r->nerrors; i++) {
		const struct ks_mtr_error *e = &r->errors[i];

		if (e->filtered)
			continue;
		/* Valgrind names the thread when it changes; kscope the
		 * process too, when there are several.
		 * A thread of 0 is not known (ASan does not name it for
		 * every report). */
		if (e->proc != last_proc && e->tid > 0) {
			ks_mtr_printf(o, "Process %lld, thread %lld:\n", ks_mtr_pid(r, e->proc),
				      e->tid);
		} else if (e->proc != last_proc) {
			ks_mtr_printf(o, "Process %lld:\n", ks_mtr_pid(r, e->proc));
		} else if (e->tid > 0 && e->tid != last_tid) {
			ks_mtr_printf(o, "Thread %lld:\n", e->tid);
		}
		if (e->tid > 0)
			last_tid = e->tid;
		last_proc = e->proc;
		put_error(o, r, e, max);
		ks_mtr_puts(o, "\n");
	}
	if (r->end.has_heap)
		ks_mtr_printf(o, "HEAP SUMMARY:\n"
			      "    in use at exit: %" PRIu64 " bytes in %" PRIu64 " blocks\n"
			      "  total heap usage: %" PRIu64 " allocs, %" PRIu64 " frees, %" PRIu64
			      " bytes allocated\n\n",
			      r->end.in_use_bytes, r->end.in_use_blocks, r->end.allocs,
			      r->end.frees, r->end.bytes_allocated);
	for (size_t i = 0; i < r->nleaks_shown; i++) {
		const struct ks_mtr_leak *l = &r->leaks[r->leak_order[i]];
		int k = l->kind == MTR_E_LEAK_POSSIBLE   ? 1
			: l->kind == MTR_E_LEAK_INDIRECT  ? 2
			: l->kind == MTR_E_LEAK_REACHABLE ? 3
							  : 0;

		ks_mtr_leak_what(l, buf, sizeof(buf));
		ks_mtr_printf(o, "%s in loss record %zu of %zu", buf, i + 1, r->nleaks_shown);
		if (r->nprocs > 1)
			ks_mtr_printf(o, " (process %lld)", ks_mtr_pid(r, l->proc));
		ks_mtr_puts(o, "\n");
		put_stack(o, &r->stacks[l->stack], max);
		put_location(o, &r->stacks[l->stack]);
		ks_mtr_puts(o, "\n");
		lost[k][0] += l->bytes;
		lost[k][1] += l->blocks;
	}
	if (r->nleaks_shown || r->end.has_heap) {
		ks_mtr_printf(o, "LEAK SUMMARY:\n"
			      "   definitely lost: %" PRIu64 " bytes in %" PRIu64 " blocks\n",
			      lost[0][0], lost[0][1]);
		/* Listed only by Memcheck, and only the kinds it was asked for. */
		if (lost[2][1])
			ks_mtr_printf(o, "   indirectly lost: %" PRIu64 " bytes in %" PRIu64
				      " blocks\n", lost[2][0], lost[2][1]);
		ks_mtr_printf(o, "     possibly lost: %" PRIu64 " bytes in %" PRIu64 " blocks\n",
			      lost[1][0], lost[1][1]);
		if (lost[3][1])
			ks_mtr_printf(o, "   still reachable: %" PRIu64 " bytes in %" PRIu64
				      " blocks\n", lost[3][0], lost[3][1]);
		ks_mtr_puts(o, "\n");
	}
	if (r->suppressed.count) {
		ks_mtr_printf(o, "Not reported: %" PRIu64 " %s", r->suppressed.count,
			      plural(r->suppressed.count, "error", "errors"));
		if (r->suppressed.reason) {
			ks_mtr_puts(o, " (");
			ks_mtr_put_text(o, r->suppressed.reason);
			ks_mtr_puts(o, ")");
		}
		ks_mtr_puts(o, "\n");
	}
	if (!r->nreported)
		ks_mtr_puts(o, "No heap memory errors found.\n");
	ks_mtr_printf(o, "ERROR SUMMARY: %" PRIu64 " %s from %lu %s", r->occurrences,
		      plural(r->occurrences, "error", "errors"), r->nreported,
		      plural(r->nreported, "context", "contexts"));
	if (r->nfiltered)
		ks_mtr_printf(o, " (filtered: %lu %s without a line number in the top "
			      "three frames)", r->nfiltered,
			      plural(r->nfiltered, "context", "contexts"));
	ks_mtr_puts(o, "\n");
}

/* ------------------------------------------------------------------ */
/* contention                                                          */
/* ------------------------------------------------------------------ */

static void put_totals(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	const struct ks_mtr_counts *c = &r->sum;

	if (r->has_contention && c->accesses) {
		double pct = 100.0 * (double)r->contention_accesses / (double)c->accesses;

		/* Two decimals, or two significant digits below 0.01%. */
		ks_mtr_printf(o, pct > 0 && pct < 0.01 ? "Contention: %.2g%%" : "Contention: %.2f%%",
			      pct);
		ks_mtr_printf(o, " of memory accesses (%" PRIu64 " contention accesses / %" PRIu64
			      " memory accesses)\n", r->contention_accesses, c->accesses);
	}
	else if (r->has_contention)
		ks_mtr_puts(o, "Contention: no memory accesses were seen\n");
	else
		ks_mtr_puts(o, "Contention: unknown (no total record; the figures below are "
			    "the threads' sums)\n");
	ks_mtr_printf(o, "Accesses: %" PRIu64 " (%" PRIu64 " reads, %" PRIu64 " writes); cold "
		      "misses %" PRIu64 ", misses %" PRIu64 ", invalidations %" PRIu64 "\n",
		      c->accesses, c->reads, c->writes, c->cold_misses, c->misses,
		      c->invalidations);
	if (r->total.has_stack)
		ks_mtr_printf(o, "Stack accesses: %" PRIu64 " (counted, not simulated)\n",
			      r->total.stack_accesses);
	if (r->total.has_quiet && r->start.analysis == MTR_FALSESHARE)
		ks_mtr_printf(o, "Quiet lines: %" PRIu64 " shared %s left out (not two threads "
			      "with %" PRIu64 " accesses or more)\n", r->total.quiet_lines,
			      plural(r->total.quiet_lines, "line", "lines"),
			      r->total.min_accesses);
	if (r->total.has_read_mostly && r->total.min_writes > 0 &&
	    r->start.analysis == MTR_FALSESHARE)
		ks_mtr_printf(o, "Read-mostly lines: %" PRIu64 " %s with threads on different "
			      "bytes left out (not two threads with %" PRIu64 " writes or more)\n",
			      r->total.read_mostly_lines,
			      plural(r->total.read_mostly_lines, "line", "lines"),
			      r->total.min_writes);
	ks_mtr_puts(o, "\n");
}

static void put_threads(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	ks_mtr_puts(o, "Per thread:\n");
	if (!r->nthreads) {
		ks_mtr_puts(o, "  (no thread records)\n\n");
		return;
	}
	ks_mtr_printf(o, "  %8s %12s %12s %12s %12s %12s %13s\n", "thread", "accesses", "reads",
		      "writes", "cold misses", "misses", "invalidations");
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct ks_mtr_thread *t = &r->threads[i];

		/* Threads come grouped by process, in file order. */
		if (r->nprocs > 1 && (i == 0 || r->threads[i - 1].proc != t->proc))
			ks_mtr_printf(o, "  process %lld:\n", ks_mtr_pid(r, t->proc));
		ks_mtr_printf(o, "  %8lld %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64
			      " %12" PRIu64 " %13" PRIu64 "\n", t->tid, t->c.accesses, t->c.reads,
			      t->c.writes, t->c.cold_misses, t->c.misses, t->c.invalidations);
	}
	ks_mtr_puts(o, "\n");
}

static void put_shown(struct ks_mtr_out *o, size_t n)
{
	if (n > MTR_TOP_TEXT)
		ks_mtr_printf(o, " (top %d of %zu; report.json has all)", MTR_TOP_TEXT, n);
	ks_mtr_puts(o, ":\n");
}

static void write_contention(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	char where[1024], ip[19];

	put_totals(o, r);
	put_threads(o, r);
	ks_mtr_puts(o, "Top sites by misses + invalidations");
	put_shown(o, r->nsites);
	if (!r->nsites)
		ks_mtr_puts(o, "  (none: no access missed or invalidated a line)\n");
	else
		ks_mtr_printf(o, "  %12s %12s %13s %12s  %s\n", "misses+inv", "misses",
			      "invalidations", "accesses", "site");
	for (size_t i = 0; i < r->nsites && i < MTR_TOP_TEXT; i++) {
		const struct ks_mtr_site *s = &r->sites[r->site_order[i]];
		const struct ks_mtr_stack *st = &r->stacks[s->stack];

		ks_mtr_hex(ip, st->frames[0].ip);
		ks_mtr_frame_where(&st->frames[0], where, sizeof(where));
		ks_mtr_printf(o, "  %12" PRIu64 " %12" PRIu64 " %13" PRIu64 " %12" PRIu64 "  %s: ",
			      ks_mtr_score(&s->c), s->c.misses, s->c.invalidations,
			      s->c.accesses, ip);
		ks_mtr_put_text(o, where);
		ks_mtr_puts(o, "\n");
	}
	ks_mtr_puts(o, "\nTop data objects by misses + invalidations");
	put_shown(o, r->nobjects);
	if (!r->nobjects)
		ks_mtr_puts(o, "  (none)\n");
	else
		ks_mtr_printf(o, "  %12s %12s %13s %12s  %s\n", "misses+inv", "misses",
			      "invalidations", "cold misses", "object");
	for (size_t i = 0; i < r->nobjects && i < MTR_TOP_TEXT; i++) {
		const struct ks_mtr_object *ob = &r->objects[r->object_order[i]];

		ks_mtr_var_name(r, &r->vars[ob->var], where, sizeof(where));
		ks_mtr_printf(o, "  %12" PRIu64 " %12" PRIu64 " %13" PRIu64 " %12" PRIu64 "  ",
			      ob->misses + ob->invalidations, ob->misses, ob->invalidations,
			      ob->cold_misses);
		ks_mtr_put_text(o, where);
		ks_mtr_puts(o, "\n");
	}
	if (!r->nclines)
		return;
	ks_mtr_puts(o, "\nTop cache lines by misses + invalidations");
	put_shown(o, r->nclines);
	ks_mtr_printf(o, "  %12s %12s %13s  %-18s  %s\n", "misses+inv", "misses", "invalidations",
		      "line", "variables");
	for (size_t i = 0; i < r->nclines && i < MTR_TOP_TEXT; i++) {
		const struct ks_mtr_line *l = &r->clines[r->cline_order[i]];

		ks_mtr_printf(o, "  %12" PRIu64 " %12" PRIu64 " %13" PRIu64 "  0x%-16" PRIx64 "  ",
			      l->misses + l->invalidations, l->misses, l->invalidations, l->addr);
		if (!l->nvars)
			ks_mtr_puts(o, "(no known variable)");
		for (uint32_t k = 0; k < l->nvars && k < 4; k++) {
			const struct ks_mtr_var *v = &r->vars[l->vars[k]];

			ks_mtr_var_name(r, v, where, sizeof(where));
			ks_mtr_puts(o, k ? "; " : "");
			ks_mtr_put_text(o, where);
		}
		if (l->nvars > 4)
			ks_mtr_printf(o, "; and %u more", l->nvars - 4);
		ks_mtr_puts(o, "\n");
	}
}

/* ------------------------------------------------------------------ */
/* falseshare                                                          */
/* ------------------------------------------------------------------ */

static bool mask_bit(const uint64_t *m, unsigned i)
{
	return m[i / 64] >> (i % 64) & 1;
}

/* "words 0-1,4 (bytes 0-15, 32-39)": the words set in m, and where they
 * are relative to base (the object's start). */
static void put_words(struct ks_mtr_out *o, const struct ks_mtr_line *l, const uint64_t *m,
		      uint64_t base)
{
	unsigned i = 0;
	bool first = true;
	char bytes[512];
	size_t bl = 0;

	ks_mtr_puts(o, "words ");
	bytes[0] = '\0';
	while (i < l->nwords) {
		unsigned j;

		if (!mask_bit(m, i)) {
			i++;
			continue;
		}
		for (j = i; j + 1 < l->nwords && mask_bit(m, j + 1); j++)
			;
		if (j > i)
			ks_mtr_printf(o, "%s%u-%u", first ? "" : ",", i, j);
		else
			ks_mtr_printf(o, "%s%u", first ? "" : ",", i);
		long long a = (long long)(l->addr + (uint64_t)i * l->word_size - base);
		long long b = (long long)(l->addr + (uint64_t)(j + 1) * l->word_size - 1 - base);

		if (bl < sizeof(bytes) - 64)
			bl += (size_t)snprintf(bytes + bl, sizeof(bytes) - bl,
					       a < 0 ? "%s%lld..%lld" : "%s%lld-%lld",
					       first ? "" : ", ", a, b);
		first = false;
		i = j + 1;
	}
	ks_mtr_printf(o, " (bytes %s)", bytes);
}

/* One line's threads: who read and wrote which words. */
static void put_line_threads(struct ks_mtr_out *o, const struct ks_mtr_line *l, uint64_t base,
			     const char *indent)
{
	for (uint32_t t = 0; t < l->nthreads; t++) {
		const struct ks_mtr_lthread *lt = &l->threads[t];
		bool any_w = false, any_r = false;

		for (unsigned k = 0; k < l->nmask; k++) {
			any_w |= lt->write[k] != 0;
			any_r |= lt->read[k] != 0;
		}
		ks_mtr_printf(o, "%sthread %lld: ", indent, lt->tid);
		if (any_w) {
			ks_mtr_puts(o, "writes ");
			put_words(o, l, lt->write, base);
		}
		if (any_r) {
			ks_mtr_puts(o, any_w ? "; reads " : "reads ");
			put_words(o, l, lt->read, base);
		}
		if (!any_r && !any_w)
			ks_mtr_puts(o, "no words");
		ks_mtr_printf(o, "; %" PRIu64 " reads, %" PRIu64 " writes\n", lt->reads,
			      lt->writes);
	}
}

/* The threads with a bit of mask set among a part's words, ", "-joined
 * after what ("written by"); false when there are none. */
static bool put_part_threads(struct ks_mtr_out *o, const struct ks_mtr_line *l,
			     const struct ks_mtr_part *p, bool write, const char *what)
{
	bool any = false;

	for (uint32_t t = 0; t < l->nthreads; t++) {
		const uint64_t *m = write ? l->threads[t].write : l->threads[t].read;
		bool in = false;

		for (unsigned w = p->first; w < p->first + p->nwords && !in; w++)
			in = mask_bit(m, w);
		if (!in)
			continue;
		ks_mtr_printf(o, "%s%lld", any ? ", " : what, l->threads[t].tid);
		any = true;
	}
	return any;
}

/* Whether a line's parts tell more than its threads' words: it holds
 * several variables, or members and elements named from DWARF. */
static bool parts_say_more(const struct ks_mtr_line *l)
{
	for (uint32_t i = 0; i < l->nparts; i++)
		if (l->parts[i].dwarf || l->parts[i].var != l->parts[0].var)
			return true;
	return false;
}

/* A line's parts, one a row: "st.b: bytes 8-15 of the line, written by
 * thread 2; read by threads 3". */
static void put_line_parts(struct ks_mtr_out *o, const struct ks_mtr_line *l, const char *indent)
{
	for (uint32_t i = 0; i < l->nparts; i++) {
		const struct ks_mtr_part *p = &l->parts[i];
		bool w;

		ks_mtr_puts(o, indent);
		ks_mtr_put_text(o, p->name);
		ks_mtr_printf(o, ": bytes %u-%u of the line", p->first * l->word_size,
			      (p->first + p->nwords) * l->word_size - 1);
		w = put_part_threads(o, l, p, true, ", written by thread ");
		if (put_part_threads(o, l, p, false, w ? "; read by thread " : ", read by thread "))
			w = true;
		ks_mtr_puts(o, "\n");
	}
}

static void put_entry(struct ks_mtr_out *o, const struct ks_mtr_run *r,
		      const struct ks_mtr_fentry *e)
{
	char name[1024], where[1024];

	ks_mtr_fobj_name(r, &r->fobjs[e->fobj], name, sizeof(name));
	ks_mtr_context_where(r, e->context, where, sizeof(where));
	ks_mtr_printf(o, "    %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "  ", e->reads + e->writes,
		      e->reads, e->writes);
	ks_mtr_put_text(o, name);
	ks_mtr_puts(o, " @ ");
	ks_mtr_put_text(o, where);
	ks_mtr_puts(o, "\n");
}

static void put_entry_head(struct ks_mtr_out *o)
{
	ks_mtr_printf(o, "    %12s %12s %12s  %s\n", "count", "reads", "writes",
		      "variable @ context");
}

static void put_views(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	char name[1024];

	ks_mtr_puts(o, "Per thread (accesses to falsely shared lines, by count):\n");
	for (size_t i = 0; i < r->nper_thread;) {
		long long tid = r->per_thread[i].tid;
		uint32_t proc = r->per_thread[i].proc;
		size_t n = 0, shown = 0;

		while (i + n < r->nper_thread && r->per_thread[i + n].tid == tid &&
		       r->per_thread[i + n].proc == proc)
			n++;
		if (r->nprocs > 1)
			ks_mtr_printf(o, "  process %lld, thread %lld", ks_mtr_pid(r, proc), tid);
		else
			ks_mtr_printf(o, "  thread %lld", tid);
		if (n > MTR_TOP_TEXT)
			ks_mtr_printf(o, " (top %d of %zu)", MTR_TOP_TEXT, n);
		ks_mtr_puts(o, ":\n");
		put_entry_head(o);
		for (; shown < n && shown < MTR_TOP_TEXT; shown++)
			put_entry(o, r, &r->per_thread[i + shown]);
		i += n;
	}
	ks_mtr_puts(o, "\nglobal-all-threads-info (variable, context), by count");
	put_shown(o, r->nglobal);
	put_entry_head(o);
	for (size_t i = 0; i < r->nglobal && i < MTR_TOP_TEXT; i++)
		put_entry(o, r, &r->global[i]);
	ks_mtr_puts(o, "\nglobal-all-threads-compact-info (per variable), by count");
	put_shown(o, r->nfobjs);
	ks_mtr_printf(o, "    %12s  %s\n", "count", "variable");
	for (size_t i = 0; i < r->nfobjs && i < MTR_TOP_TEXT; i++) {
		const struct ks_mtr_fobj *f = &r->fobjs[r->compact[i]];

		ks_mtr_fobj_name(r, f, name, sizeof(name));
		ks_mtr_printf(o, "    %12" PRIu64 "  ", f->count);
		ks_mtr_put_text(o, name);
		ks_mtr_puts(o, "\n");
	}
}

static void put_fobj(struct ks_mtr_out *o, const struct ks_mtr_run *r, size_t idx)
{
	const struct ks_mtr_fobj *f = &r->fobjs[idx];
	char name[1024], where[1024];
	uint64_t addr, size;

	ks_mtr_fobj_name(r, f, name, sizeof(name));
	ks_mtr_fobj_range(r, f, &addr, &size);
	ks_mtr_printf(o, "%zu. ", idx + 1);
	ks_mtr_put_text(o, name);
	if (f->var != MTR_NONE && r->vars[f->var].obj) {
		ks_mtr_puts(o, " in ");
		ks_mtr_put_text(o, r->vars[f->var].obj);
	}
	ks_mtr_puts(o, "\n");
	if (size)
		ks_mtr_printf(o, "   address 0x%" PRIx64 "-0x%" PRIx64 " (%" PRIu64 " bytes), ",
			      addr, addr + size - 1, size);
	else
		ks_mtr_printf(o, "   address 0x%" PRIx64 " (0 bytes), ", addr);
	ks_mtr_printf(o, "verdict %s\n", ks_mtr_verdict_names[f->verdict]);
	ks_mtr_printf(o, "   potential invalidations %" PRIu64 "; misses %" PRIu64
		      ", invalidations %" PRIu64 "; %" PRIu64 " accesses from %zu %s\n",
		      f->potential, f->misses, f->invalidations, f->count, f->ncontexts,
		      plural(f->ncontexts, "context", "contexts"));
	for (size_t j = 0; j < f->nlines; j++) {
		const struct ks_mtr_line *l = &r->lines[f->lines[j]];

		ks_mtr_printf(o, "   line 0x%" PRIx64 " (%s sharing, words of %u byte%s; misses %"
			      PRIu64 ", invalidations %" PRIu64 ", potential invalidations %"
			      PRIu64 "):\n", l->addr, ks_mtr_verdict_names[l->verdict],
			      l->word_size, l->word_size == 1 ? "" : "s", l->misses,
			      l->invalidations, l->potential);
		put_line_threads(o, l, addr, "     ");
		if (parts_say_more(l)) {
			ks_mtr_printf(o, "     its %u %s:\n", l->nparts,
				      plural(l->nparts, "part", "parts"));
			put_line_parts(o, l, "       ");
		}
	}
	ks_mtr_puts(o, "   source lines:");
	if (!f->nsrclines)
		ks_mtr_puts(o, f->ncontexts ? " (no line information)" : " (no access records)");
	for (size_t j = 0; j < f->nsrclines; j++) {
		snprintf(where, sizeof(where), "%s:%lu", f->srclines[j]->file,
			 f->srclines[j]->line);
		ks_mtr_puts(o, j ? ", " : " ");
		ks_mtr_put_text(o, where);
	}
	ks_mtr_puts(o, "\n\n");
}

/* The start offsets of lines k whose bit in the layout's false_at is
 * `set`: "16, 32 or 48". */
static void put_offsets(struct ks_mtr_out *o, const struct ks_mtr_layout *lay, int k, bool set)
{
	uint64_t lz = (uint64_t)lay->line_size << k, step = ks_mtr_layout_step(lay, k), n = 0, i = 0;

	for (uint64_t b = 0; b * step < lz; b++)
		n += (lay->false_at[k][b / 64] >> (b % 64) & 1) == set;
	for (uint64_t b = 0; b * step < lz; b++) {
		if ((lay->false_at[k][b / 64] >> (b % 64) & 1) != set)
			continue;
		ks_mtr_printf(o, "%s%" PRIu64, i == 0 ? "" : i + 1 == n ? " or " : ", ", b * step);
		i++;
	}
}

/* The layout prediction: the objects with latent false sharing. */
static void put_layouts(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	size_t latent = 0;
	char name[1024];

	for (size_t i = 0; i < r->nlayouts; i++)
		latent += r->layouts[i].latent;
	if (!r->nlayouts)
		return;
	ks_mtr_printf(o, "Layout prediction (%zu %s two threads came back to, each at every "
		      "start offset its alignment allows, in lines of %u and %u bytes): ",
		      r->nlayouts, plural(r->nlayouts, "object", "objects"),
		      r->layouts[0].line_size, 2 * r->layouts[0].line_size);
	if (!latent)
		ks_mtr_puts(o, "no latent false sharing\n");
	else
		ks_mtr_printf(o, "latent false sharing in %zu\n", latent);
	if (r->total.near_dropped)
		ks_mtr_printf(o, "  (%" PRIu64 " lines next to another thread's were past the front "
			      "end's limit of 4096 and not examined)\n", r->total.near_dropped);
	ks_mtr_puts(o, "\n");
	if (!latent)
		return;
	for (size_t i = 0, n = 0; i < r->nlayouts; i++) {
		const struct ks_mtr_layout *lay = &r->layouts[i];
		bool at64 = lay->false_at[0][0] | lay->false_at[0][1];
		bool at128 = lay->false_at[1][0] | lay->false_at[1][1];

		if (!lay->latent)
			continue;
		ks_mtr_var_name(r, &r->vars[lay->var], name, sizeof(name));
		ks_mtr_printf(o, "%zu. ", ++n);
		ks_mtr_put_text(o, name);
		ks_mtr_printf(o, "\n   no false sharing as laid out: it starts at byte %u of a "
			      "%u-byte line (aligned to %" PRIu64 " bytes)\n", lay->start[0],
			      lay->line_size, lay->align);
		if (at64) {
			ks_mtr_printf(o, "   latent false sharing: appears if it starts at byte ");
			put_offsets(o, lay, 0, true);
			ks_mtr_printf(o, " of a %u-byte line\n", lay->line_size);
		}
		if (at128) {
			ks_mtr_printf(o, "   with %u-byte lines: false sharing if it starts at byte ",
				      2 * lay->line_size);
			put_offsets(o, lay, 1, true);
			ks_mtr_printf(o, " of a line (it starts at byte %u)\n", lay->start[1]);
		}
	}
	ks_mtr_puts(o, "\n");
}

static void write_falseshare(struct ks_mtr_out *o, const struct ks_mtr_run *r)
{
	unsigned long mixed = 0;
	char name[1024];

	for (size_t i = 0; i < r->nlines; i++)
		mixed += r->lines[i].verdict == MTR_MIXED;
	if (r->false_lines)
		ks_mtr_printf(o, "False sharing: %lu %s (%lu false, %lu mixed) in %zu %s",
			      r->false_lines, plural(r->false_lines, "line", "lines"),
			      r->false_lines - mixed, mixed, r->nfobjs,
			      plural(r->nfobjs, "object", "objects"));
	else
		ks_mtr_puts(o, "False sharing: no false sharing found");
	ks_mtr_printf(o, "; %zu %s with true sharing\n", r->ntrue,
		      plural(r->ntrue, "line", "lines"));
	put_totals(o, r);
	if (r->false_lines) {
		put_views(o, r);
		ks_mtr_puts(o, "\nFalsely shared objects:\n\n");
		for (size_t i = 0; i < r->nfobjs; i++)
			put_fobj(o, r, i);
	}
	put_layouts(o, r);
	ks_mtr_puts(o, "True sharing (threads share the same words; not false sharing):\n");
	if (!r->ntrue)
		ks_mtr_puts(o, "  (none)\n");
	for (size_t i = 0; i < r->ntrue; i++) {
		const struct ks_mtr_line *l = &r->lines[r->true_lines[i]];
		uint64_t base = l->addr;

		ks_mtr_printf(o, "  line 0x%" PRIx64, l->addr);
		if (l->var != MTR_NONE) {
			ks_mtr_var_name(r, &r->vars[l->var], name, sizeof(name));
			ks_mtr_puts(o, " in ");
			ks_mtr_put_text(o, name);
			base = r->vars[l->var].addr;
		}
		ks_mtr_printf(o, ": misses %" PRIu64 ", invalidations %" PRIu64 "\n", l->misses,
			      l->invalidations);
		put_line_threads(o, l, base, "    ");
	}
}

/* ------------------------------------------------------------------ */
/* Entry                                                               */
/* ------------------------------------------------------------------ */

int ks_mtr_write_text(const struct ks_mtr_run *r, const struct ks_mtr_opts *opts,
		      struct ks_rundir *rd, FILE *text, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_mtr_out *o = calloc(1, sizeof(*o)); /* 64 KiB: not on the stack */
	int rc;

	if (!o)
		return ks_err_set(err, -ENOMEM, "out of memory");
	/* A failing tee (stderr closed) does not fail the report: the file
	 * is the deliverable. */
	rc = ks_mtr_out_open(o, &of, text, rd, "report.txt", err);
	if (rc)
		goto out;
	put_header(o, r, opts);
	switch (r->start.analysis) {
	case MTR_MEMCHECK:
		write_memcheck(o, r, opts);
		break;
	case MTR_CONTENTION:
		write_contention(o, r);
		break;
	case MTR_FALSESHARE:
		write_falseshare(o, r);
		break;
	}
	put_truncated(o, r);
	rc = ks_mtr_out_commit(o, err);
out:
	free(o);
	return rc;
}
