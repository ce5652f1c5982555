/*
 * The per-thread CSV files of kscope op --simulate: thread<TID>/
 * instr_exe.csv (one row per instruction the thread executed, by address)
 * and thread<TID>/code_exe.csv (one row per source line, by file and
 * line), the code_exe.csv and instr_exe.csv of the MindStudio design with
 * a thread in place of a core.
 *
 * Columns shared by both, after their own first ones:
 *   Instructions Executed, Cycles, Process Bytes (= Load + Store Bytes),
 *   Load Bytes, Store Bytes, Flops (executions x FLOPs per execution),
 *   L2Cache Hit Rate (the design's column: sim_l2_level() says which
 *   level), then per data-cache level "<NAME> Accesses", "<NAME> Misses",
 *   "<NAME> Hit Rate", then ICache Misses, Stall Cycles, GPR Count and
 *   Vector Utilization (%) (lanes used / lanes of a 256-bit vector at the
 *   element size, over the VECTOR instructions with lanes; empty without).
 * Hit rates are fractions with 4 decimals, empty without accesses.
 * instr_exe.csv ends with Function, File, Line; code_exe.csv starts with
 * File, Line, Address Range: the line's instructions as merged address
 * ranges "0xSTART-0xEND" (END exclusive: the byte after the last
 * instruction), ';' between ranges.  Instructions without a source line
 * are one row, File "??", Line 0.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "simpost_int.h"

static void header(struct ks_text *t, const struct sim *s)
{
	ks_text_puts(t, "Instructions Executed,Cycles,Process Bytes,Load Bytes,Store Bytes,"
		     "Flops,L2Cache Hit Rate");
	for (unsigned k = 0; k < s->levels; k++) {
		char col[64];

		snprintf(col, sizeof(col), "%s Accesses", s->cache[k].name);
		ks_csv_str(t, false, col);
		snprintf(col, sizeof(col), "%s Misses", s->cache[k].name);
		ks_csv_str(t, false, col);
		snprintf(col, sizeof(col), "%s Hit Rate", s->cache[k].name);
		ks_csv_str(t, false, col);
	}
	ks_text_puts(t, ",ICache Misses,Stall Cycles,GPR Count,Vector Utilization (%)");
}

/* The shared columns, each after a comma. */
static void figures(struct ks_text *t, const struct sim *s, const struct sim_acc *a)
{
	int l2 = sim_l2_level(s);

	ks_csv_u64(t, a->execs);
	ks_csv_u64(t, a->cycles);
	ks_csv_u64(t, a->loadb + a->storeb);
	ks_csv_u64(t, a->loadb);
	ks_csv_u64(t, a->storeb);
	ks_csv_u64(t, a->flops);
	ks_csv_num(t, l2 < 0 ? NAN : sim_hit_rate(a, (unsigned)l2), 4);
	for (unsigned k = 0; k < s->levels; k++) {
		ks_csv_u64(t, a->acc[k]);
		ks_csv_u64(t, a->miss[k]);
		ks_csv_num(t, sim_hit_rate(a, k), 4);
	}
	ks_csv_u64(t, a->imiss);
	ks_csv_u64(t, sim_stall(a));
	ks_csv_u64(t, (uint64_t)__builtin_popcount(a->gprs));
	ks_csv_num(t, sim_vector_util(a), 2);
}

/* Writes the merged address ranges of instructions seen in address
 * order: call with each, then with NULL to finish. */
struct ranges {
	uint64_t start, end;
	bool open, any;
};

static void range_add(struct ks_text *t, struct ranges *r, const struct sim_ins *in)
{
	if (in && r->open && in->addr <= r->end) {
		if (in->addr + in->len > r->end)
			r->end = in->addr + in->len;
		return;
	}
	if (r->open) {
		ks_text_printf(t, "%s0x%llx-0x%llx", r->any ? ";" : "",
			       (unsigned long long)r->start, (unsigned long long)r->end);
		r->any = true;
	}
	r->open = in != NULL;
	if (in) {
		r->start = in->addr;
		r->end = in->addr + in->len;
	}
}

/* [*i, end of the core's run) of idx: the records of core c. */
static size_t core_end(const struct sim *s, const uint32_t *idx, size_t i, uint32_t c)
{
	while (i < s->nx && s->threads[s->x[idx[i]].th].core == c)
		i++;
	return i;
}

static int write_instr(struct ks_rundir *d, const struct sim *s, const uint32_t *idx,
		       size_t from, size_t to, struct ks_err *err)
{
	static const char *const pipes[] = KS_SIM_PIPE_NAMES;
	struct ks_outfile of;
	struct ks_text t;
	int rc = sim_open(d, "instr_exe.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_text_puts(&t, "Address,Source,Pipe,");
	header(&t, s);
	ks_text_puts(&t, ",Function,File,Line\n");
	for (size_t i = from; i < to;) {
		uint32_t ins = s->x[idx[i]].ins;
		const struct sim_ins *in = &s->ins[ins];
		struct sim_acc a = { 0 };

		/* A repeated (thread, instruction) pair is summed. */
		for (; i < to && s->x[idx[i]].ins == ins; i++)
			sim_acc_add(s, &a, idx[i]);
		ks_text_printf(&t, "0x%llx", (unsigned long long)in->addr);
		ks_csv_str(&t, false, sim_dis(s, in));
		ks_csv_str(&t, false, pipes[in->pipe]);
		figures(&t, s, &a);
		ks_csv_str(&t, false, sim_fn_name(s, in->fn));
		ks_csv_str(&t, false, in->file >= 0 ? sim_file_name(s, in->file) : "??");
		ks_csv_u64(&t, in->file >= 0 ? in->line : 0);
		ks_csv_end(&t);
	}
	return sim_commit(&of, &t, err);
}

static int write_code(struct ks_rundir *d, const struct sim *s, const uint32_t *idx,
		      size_t from, size_t to, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = sim_open(d, "code_exe.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_text_puts(&t, "File,Line,Address Range,");
	header(&t, s);
	ks_csv_end(&t);
	for (size_t i = from; i < to;) {
		uint32_t l = s->ins[s->x[idx[i]].ins].lineid;
		const struct sim_line *ln = &s->lines[l];
		struct ranges r = { 0 };
		struct sim_acc a = { 0 };

		ks_csv_str(&t, true, sim_file_name(s, ln->file));
		ks_csv_u64(&t, ln->line);
		ks_text_put(&t, ",", 1);
		for (; i < to && s->ins[s->x[idx[i]].ins].lineid == l; i++) {
			range_add(&t, &r, &s->ins[s->x[idx[i]].ins]);
			sim_acc_add(s, &a, idx[i]);
		}
		range_add(&t, &r, NULL);
		figures(&t, s, &a);
		ks_csv_end(&t);
	}
	return sim_commit(&of, &t, err);
}

/* Creates <run>/thread<TID>/ (0750) and opens it as d. */
static int thread_dir(struct ks_rundir *run, uint32_t tid, struct ks_rundir *d,
		      struct ks_err *err)
{
	char name[32];

	snprintf(name, sizeof(name), "thread%u", tid);
	if (mkdirat(run->dirfd, name, KS_DIR_MODE) != 0)
		return ks_err_set(err, -errno, "cannot create %s/%s: %s", run->path, name,
				  strerror(errno));
	d->dirfd = openat(run->dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (d->dirfd < 0 || fchmod(d->dirfd, KS_DIR_MODE) != 0) {
		int e = errno;

		if (d->dirfd >= 0)
			close(d->dirfd);
		d->dirfd = -1;
		return ks_err_set(err, -e, "cannot open %s/%s: %s", run->path, name,
				  strerror(e));
	}
	if (asprintf(&d->path, "%s/%s", run->path, name) < 0) {
		d->path = NULL;
		close(d->dirfd);
		d->dirfd = -1;
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	return 0;
}

/* pipe_utilization.csv: per thread, then over all ("total"), each pipe
 * class's instructions and cycles and its share of the thread's cycles
 * (every pipe, 0 when it ran nothing; the share is empty without
 * cycles). */
static int write_pipes(struct ks_rundir *run, const struct sim *s, struct ks_err *err)
{
	static const char *const pipes[] = KS_SIM_PIPE_NAMES;
	struct sim_acc *a = NULL;
	struct ks_outfile of;
	struct ks_text t;
	int rc = sim_pipe_acc(s, &a, err);

	if (!rc)
		rc = sim_open(run, "pipe_utilization.csv", &of, &t, err);
	if (rc) {
		free(a);
		return rc;
	}
	ks_text_puts(&t, "Thread,Pipe,Instructions,Cycles,Cycle Share (%)\n");
	for (size_t c = 0; c <= s->ncores; c++) {
		const struct sim_acc *row = &a[c * KS_SIM_PIPE_COUNT];
		uint64_t total = 0;
		char th[32];

		if (c < s->ncores)
			snprintf(th, sizeof(th), "%u", s->threads[s->cores[c]].tid);
		else
			snprintf(th, sizeof(th), "total");
		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++)
			total += row[p].cycles;
		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			ks_csv_str(&t, true, th);
			ks_csv_str(&t, false, pipes[p]);
			ks_csv_u64(&t, row[p].execs);
			ks_csv_u64(&t, row[p].cycles);
			ks_csv_num(&t, total ? 100.0 * (double)row[p].cycles / (double)total : NAN,
				   4);
			ks_csv_end(&t);
		}
	}
	free(a);
	return sim_commit(&of, &t, err);
}

int sim_write_csv(struct ks_rundir *run, const struct sim *s, struct ks_err *err)
{
	uint32_t *by_addr = NULL, *by_line = NULL;
	size_t ia = 0, il = 0;
	int rc;

	/* The hot-spot map's CSVs with --aic-metrics Source, pipe
	 * utilisation with PipeUtilization. */
	if (!(s->metrics & KS_SIM_METRIC_SOURCE))
		return s->metrics & KS_SIM_METRIC_PIPE ? write_pipes(run, s, err) : 0;
	rc = sim_sort_x(s, SIM_BY_CORE_ADDR, &by_addr, err);
	if (!rc)
		rc = sim_sort_x(s, SIM_BY_CORE_LINE, &by_line, err);
	for (uint32_t c = 0; c < s->ncores && !rc; c++) {
		struct ks_rundir d = { .path = NULL, .dirfd = -1 };
		size_t ea = core_end(s, by_addr, ia, c), el = core_end(s, by_line, il, c);

		rc = thread_dir(run, s->threads[s->cores[c]].tid, &d, err);
		if (!rc)
			rc = write_instr(&d, s, by_addr, ia, ea, err);
		if (!rc)
			rc = write_code(&d, s, by_line, il, el, err);
		if (d.dirfd >= 0)
			ks_rundir_close(&d);
		ia = ea;
		il = el;
	}
	free(by_addr);
	free(by_line);
	if (!rc && (s->metrics & KS_SIM_METRIC_PIPE))
		rc = write_pipes(run, s, err);
	return rc;
}
