/*
 * The Details page's blocks of kscope op --simulate, in the MindStudio
 * design's schemas (docs/formats.md) with a simulated thread as a "core"
 * (block_id and core_no are the core index, 0 for the lowest TID, as
 * 0x03's "Cores"; block_type, core_type and op_type are "cpu"):
 *
 *   0x05 basic info   the program (or the --kernel-name region), the
 *                     simulated machine as "soc", the longest thread's
 *                     simulated time, one block_detail per core
 *   0x06 compute graph   per core, each pipe class's share of the cycles
 *                     (%), and the vector utilisation (%) when VECTOR
 *                     instructions had lanes
 *   0x07 compute table   per core and pipe class: time (us), instructions,
 *                     bytes loaded and bytes stored
 *   0x08 memory heat map   per core, a memory_unit per boundary of the
 *                     cache hierarchy (simbw.c's paths), the second
 *                     level's hits (L2cache), the VECTOR pipe's cycles
 *   0x09 memory table  per core, one "Caches" table: a row per level
 *
 * Streamed through textout.h (sim_vb_begin), as simviz.c's blocks are: names and paths
 * from the program need not be UTF-8, which jansson would refuse.
 * docs/simulate.md says what each field holds.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "simpost_int.h"

static const char *const pipe_names[] = KS_SIM_PIPE_NAMES;

/* ------------------------------------------------------------------ */
/* Shared                                                              */
/* ------------------------------------------------------------------ */

/* A size in bytes as "32 KiB", "2 MiB" or "96 B". */
static void size_text(char *out, size_t n, uint64_t v)
{
	if (v >= (1u << 30) && v % (1u << 30) == 0)
		snprintf(out, n, "%llu GiB", (unsigned long long)(v >> 30));
	else if (v >= (1u << 20) && v % (1u << 20) == 0)
		snprintf(out, n, "%llu MiB", (unsigned long long)(v >> 20));
	else if (v >= 1024 && v % 1024 == 0)
		snprintf(out, n, "%llu KiB", (unsigned long long)(v >> 10));
	else
		snprintf(out, n, "%llu B", (unsigned long long)v);
}

/* The simulated machine, the blocks' "soc": "simulated x86-64 at 2 GHz:
 * L1 32 KiB 8-way 64 B lines, LL 2 MiB 16-way 64 B lines", after the
 * --soc-version preset's name when there is one ("skylake, simulated
 * ..."). */
static void soc_text(const struct sim *s, const struct ks_simpost_opts *o, char *out,
		     size_t n)
{
	size_t len = (size_t)snprintf(out, n, "%s%ssimulated x86-64 at %g GHz",
				      o && o->soc ? o->soc : "", o && o->soc ? ", " : "",
				      s->clock_hz / 1e9);

	for (unsigned k = 0; k < s->levels && len < n; k++) {
		char size[32];

		size_text(size, sizeof(size), s->cache[k].size);
		len += (size_t)snprintf(out + len, n - len, "%s%s %s %llu-way %llu B lines",
					k ? ", " : ": ", s->cache[k].name, size,
					(unsigned long long)s->cache[k].assoc,
					(unsigned long long)s->cache[k].line);
	}
}

/* The cycles of core c's row of sim_pipe_acc(). */
static uint64_t row_cycles(const struct sim_acc *row)
{
	uint64_t total = 0;

	for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++)
		total += row[p].cycles;
	return total;
}

/* One subblock_detail entry (0x06, 0x07). */
static void entry(struct ks_text *t, bool *first, size_t core, const char *name,
		  const char *unit, double value, int prec, double origin)
{
	ks_text_puts(t, *first ? "\n{\"block_id\":" : ",\n{\"block_id\":");
	*first = false;
	ks_text_u64(t, core);
	ks_text_puts(t, ",\"block_type\":\"cpu\",\"name\":");
	ks_text_json_str(t, name);
	ks_text_puts(t, ",\"unit\":");
	ks_text_json_str(t, unit);
	ks_text_puts(t, ",\"value\":");
	ks_text_json_num(t, value, prec);
	ks_text_puts(t, ",\"origin_value\":");
	ks_text_json_num(t, origin, prec);
	ks_text_puts(t, "}");
}

/* ------------------------------------------------------------------ */
/* 0x05 basic info                                                     */
/* ------------------------------------------------------------------ */

int sim_write_base_info(struct ks_vb_writer *w, const struct sim *s,
			const struct ks_simpost_opts *o, const struct ks_simpost_summary *sum,
			struct ks_err *err)
{
	struct sim_vb v = { .w = w };
	struct ks_text t;
	char soc[512], pid[32];
	const char *name = s->region && strcmp(s->region, "*") ? s->region
			   : s->exe ? s->exe : "";
	int rc = sim_vb_begin(&v, &t, KS_VB_BASE_INFO, KS_VB_VERSION, err);

	if (rc)
		return rc;
	/* The program by its file name, as a kernel is named. */
	if (name == s->exe && strrchr(name, '/'))
		name = strrchr(name, '/') + 1;
	soc_text(s, o, soc, sizeof(soc));
	snprintf(pid, sizeof(pid), "%lld", s->pid);
	ks_text_puts(&t, "{\"name\":");
	ks_text_json_str(&t, name);
	ks_text_puts(&t, ",\"soc\":");
	ks_text_json_str(&t, soc);
	ks_text_puts(&t, ",\"op_type\":\"cpu\",\"block_dim\":");
	ks_text_u64(&t, s->ncores);
	ks_text_puts(&t, ",\"mix_block_dim\":0,\"duration\":");
	ks_text_json_num(&t, sum->sim_seconds * 1e6, 3);
	ks_text_puts(&t, ",\"device_id\":0,\"pid\":");
	if (s->pid >= 0)
		ks_text_json_str(&t, pid);
	else
		ks_text_puts(&t, "null");
	ks_text_puts(&t, ",\"block_detail\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		const struct sim_thread *th = &s->threads[s->cores[c]];

		ks_text_puts(&t, c ? ",{\"block_id\":" : "{\"block_id\":");
		ks_text_u64(&t, c);
		ks_text_puts(&t, ",\"core_type\":\"cpu\",\"duration\":");
		ks_text_json_num(&t, sim_us(s, (double)th->cycles), 3);
		ks_text_printf(&t, ",\"thread\":\"thread%u\"}", th->tid);
	}
	ks_text_puts(&t, "],\"mix_block_detail\":[],\"advice\":[]");
	/* kscope's own fields, as the on-board run adds its own. */
	ks_text_puts(&t, ",\"exe\":");
	ks_text_json_str(&t, s->exe ? s->exe : "");
	ks_text_puts(&t, ",\"clock_hz\":");
	ks_text_json_num(&t, s->clock_hz, 0);
	ks_text_puts(&t, ",\"cycles\":");
	ks_text_u64(&t, sum->cycles);
	ks_text_puts(&t, ",\"instructions\":");
	ks_text_u64(&t, sum->instrs);
	ks_text_puts(&t, "}\n");
	return sim_vb_end(&v, &t, err);
}

/* The opening of a block written from the per-core pipe sums: *a those
 * sums (the caller frees them), the block begun.  On failure nothing is
 * left to free. */
static int pipe_block_begin(const struct sim *s, struct sim_vb *v, struct ks_text *t,
			    unsigned type, struct sim_acc **a, struct ks_err *err)
{
	int rc = sim_pipe_acc(s, a, err);

	if (!rc)
		rc = sim_vb_begin(v, t, type, KS_VB_VERSION, err);
	if (rc) {
		free(*a);
		*a = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* 0x06 and 0x07 compute workload                                      */
/* ------------------------------------------------------------------ */

int sim_write_compute_graph(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err)
{
	struct sim_acc *a = NULL;
	struct sim_vb v = { .w = w };
	struct ks_text t;
	bool first = true;
	int rc = pipe_block_begin(s, &v, &t, KS_VB_COMPUTE_GRAPH, &a, err);

	if (rc)
		return rc;
	ks_text_puts(&t, "{\"subblock_detail\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		const struct sim_acc *row = &a[c * KS_SIM_PIPE_COUNT];
		uint64_t total = row_cycles(row);

		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			char name[48];

			snprintf(name, sizeof(name), "%s pipe", pipe_names[p]);
			entry(&t, &first, c, name, "%",
			      total ? 100.0 * (double)row[p].cycles / (double)total : 0, 2,
			      (double)row[p].cycles);
		}
		if (row[KS_SIM_PIPE_VECTOR].vavail)
			entry(&t, &first, c, "Vector Utilization", "%",
			      sim_vector_util(&row[KS_SIM_PIPE_VECTOR]), 2,
			      (double)row[KS_SIM_PIPE_VECTOR].vused);
	}
	ks_text_puts(&t, "\n],\"advice\":[]}\n");
	free(a);
	return sim_vb_end(&v, &t, err);
}

int sim_write_compute_table(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err)
{
	struct sim_acc *a = NULL;
	struct sim_vb v = { .w = w };
	struct ks_text t;
	bool first = true;
	int rc = pipe_block_begin(s, &v, &t, KS_VB_COMPUTE_TABLE, &a, err);

	if (rc)
		return rc;
	ks_text_puts(&t, "{\"subblock_detail\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			const struct sim_acc *x = &a[c * KS_SIM_PIPE_COUNT + p];
			char name[64];

			snprintf(name, sizeof(name), "%s time", pipe_names[p]);
			entry(&t, &first, c, name, "us", sim_us(s, (double)x->cycles), 6,
			      (double)x->cycles);
			snprintf(name, sizeof(name), "%s instructions", pipe_names[p]);
			entry(&t, &first, c, name, "instructions", (double)x->execs, 0,
			      (double)x->execs);
			snprintf(name, sizeof(name), "%s load bytes", pipe_names[p]);
			entry(&t, &first, c, name, "Byte", (double)x->loadb, 0,
			      (double)x->loadb);
			snprintf(name, sizeof(name), "%s store bytes", pipe_names[p]);
			entry(&t, &first, c, name, "Byte", (double)x->storeb, 0,
			      (double)x->storeb);
		}
	}
	ks_text_puts(&t, "\n],\"advice\":[]}\n");
	free(a);
	return sim_vb_end(&v, &t, err);
}

/* ------------------------------------------------------------------ */
/* 0x08 memory heat map                                                */
/* ------------------------------------------------------------------ */

/* The calibrated bandwidth of memory ceiling name ("L1", "DRAM"), 0 when
 * there is none; the lookup write_roofline (simviz.c) makes. */
static double calib_bw(const struct ks_calib *c, const char *name)
{
	for (size_t i = 0; c && i < c->nmem && i < KS_CALIB_MAX; i++)
		if (c->mem[i].per_s > 0 && strcmp(c->mem[i].name, name) == 0)
			return c->mem[i].per_s;
	return 0;
}

/* Bytes across each boundary, read + write, per core: out[c * (levels +
 * 1) + k]. */
static uint64_t *core_bytes(const struct sim *s)
{
	size_t nb = (size_t)s->levels + 1;
	uint64_t *out = calloc((s->ncores ? s->ncores : 1) * nb, sizeof(*out));

	if (!out)
		return NULL;
	for (size_t i = 0; i < s->nbw; i++) {
		uint32_t c = s->threads[s->bw[i].th].core;

		if (c == SIM_NONE)
			continue;
		for (unsigned k = 0; k < nb; k++)
			out[c * nb + k] += sim_bwv(s, i)[2 * k] + sim_bwv(s, i)[2 * k + 1];
	}
	return out;
}

int sim_write_memory_graph(struct ks_vb_writer *w, const struct sim *s,
			   const struct ks_simpost_opts *o, struct ks_err *err)
{
	struct sim_acc *a = NULL;
	uint64_t *bytes = NULL;
	struct sim_vb v = { .w = w };
	struct ks_text t;
	char soc[512];
	int l2 = sim_l2_level(s);
	int rc = sim_pipe_acc(s, &a, err);

	if (!rc && !(bytes = core_bytes(s)))
		rc = ks_err_set(err, -ENOMEM, "out of memory");
	if (!rc)
		rc = sim_vb_begin(&v, &t, KS_VB_MEMORY_GRAPH, KS_VB_VERSION, err);
	if (rc) {
		free(a);
		free(bytes);
		return rc;
	}
	soc_text(s, o, soc, sizeof(soc));
	ks_text_puts(&t, "{\"core_memory_map\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		const struct sim_acc *row = &a[c * KS_SIM_PIPE_COUNT];
		struct sim_acc all = { 0 };
		double secs = (double)s->threads[s->cores[c]].cycles / s->clock_hz;

		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++)
			for (unsigned k = 0; k < s->levels; k++) {
				all.acc[k] += row[p].acc[k];
				all.miss[k] += row[p].miss[k];
			}
		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			all.loadb += row[p].loadb;
			all.storeb += row[p].storeb;
			all.cycles += row[p].cycles;
		}
		ks_text_puts(&t, c ? ",\n{\"core_no\":" : "\n{\"core_no\":");
		ks_text_u64(&t, c);
		ks_text_puts(&t, ",\"op_type\":\"cpu\",\"soc\":");
		ks_text_json_str(&t, soc);
		ks_text_puts(&t, ",\"memory_unit\":[");
		for (unsigned k = 0; k <= s->levels; k++) {
			uint64_t moved = bytes[c * (s->levels + 1) + k];
			/* Requests: the data accesses of the first level, the
			 * accesses level k got from the misses above it, and
			 * the last level's misses for memory. */
			uint64_t req = k < s->levels ? all.acc[k]
				       : s->levels ? all.miss[s->levels - 1] : 0;
			uint64_t line = s->levels ? s->cache[k ? k - 1 : 0].line : 0;
			double gbs, peak;
			char path[64], want[16];

			if (k == 0 && !moved)
				moved = all.loadb + all.storeb;
			gbs = secs > 0 ? (double)moved / secs / 1e9 : 0;
			if (k < s->levels)
				snprintf(want, sizeof(want), "L%u", k + 1);
			else
				snprintf(want, sizeof(want), "DRAM");
			peak = calib_bw(o->calib, want);
			sim_path_name(s, k, path, sizeof(path));
			ks_text_puts(&t, k ? ",{\"memory_path\":" : "{\"memory_path\":");
			ks_text_json_str(&t, path);
			ks_text_puts(&t, ",\"request\":");
			ks_text_u64(&t, req);
			ks_text_puts(&t, ",\"request_per_byte\":");
			ks_text_u64(&t, line);
			ks_text_puts(&t, ",\"bandwidth\":");
			ks_text_json_num(&t, gbs, 6);
			ks_text_puts(&t, ",\"peak_ratio\":");
			ks_text_json_num(&t, peak > 0 ? gbs / (peak / 1e9) * 100 : -1, 2);
			ks_text_puts(&t, ",\"bytes\":");
			ks_text_u64(&t, moved);
			ks_text_puts(&t, ",\"display\":true}");
		}
		ks_text_puts(&t, "],\"L2cache\":{\"hit\":");
		if (l2 >= 0) {
			uint64_t acc = all.acc[l2], miss = all.miss[l2];

			ks_text_u64(&t, acc - miss);
			ks_text_puts(&t, ",\"miss\":");
			ks_text_u64(&t, miss);
			ks_text_puts(&t, ",\"total_request\":");
			ks_text_u64(&t, acc);
			ks_text_puts(&t, ",\"hit_ratio\":");
			ks_text_json_num(&t, acc ? 100.0 * (double)(acc - miss) / (double)acc
					 : -1, 2);
			ks_text_puts(&t, ",\"level\":");
			ks_text_json_str(&t, s->cache[l2].name);
		} else {
			ks_text_puts(&t, "0,\"miss\":0,\"total_request\":0,\"hit_ratio\":-1");
		}
		ks_text_puts(&t, "},\"Vector\":{\"ratio\":");
		ks_text_json_num(&t, all.cycles ? 100.0 * (double)row[KS_SIM_PIPE_VECTOR].cycles /
				 (double)all.cycles : 0, 2);
		ks_text_puts(&t, ",\"cycle\":");
		ks_text_u64(&t, row[KS_SIM_PIPE_VECTOR].cycles);
		ks_text_puts(&t, ",\"total_cycles\":");
		ks_text_u64(&t, all.cycles);
		ks_text_puts(&t, "},\"advice\":[]}");
	}
	ks_text_puts(&t, "\n]}\n");
	free(a);
	free(bytes);
	return sim_vb_end(&v, &t, err);
}

/* ------------------------------------------------------------------ */
/* 0x09 memory table                                                   */
/* ------------------------------------------------------------------ */

int sim_write_memory_table(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err)
{
	/* The design's convention: one header per column, the first naming
	 * the rows' `name`; `size` counts that column, `value` does not. */
	static const char *const header[] = {
		"Cache", "Accesses", "Hits", "Misses", "Hit Rate (%)", "Bytes Filled",
		"Bytes Written Back",
	};
	const size_t ncols = sizeof(header) / sizeof(header[0]);
	struct sim_acc *a = NULL;
	uint64_t *rd = NULL, *wr = NULL;
	struct sim_vb v = { .w = w };
	struct ks_text t;
	size_t nb = (size_t)s->levels + 1;
	int rc = sim_pipe_acc(s, &a, err);

	if (!rc) {
		rd = calloc((s->ncores ? s->ncores : 1) * nb, sizeof(*rd));
		wr = calloc((s->ncores ? s->ncores : 1) * nb, sizeof(*wr));
		if (!rd || !wr)
			rc = ks_err_set(err, -ENOMEM, "out of memory");
	}
	if (!rc)
		rc = sim_vb_begin(&v, &t, KS_VB_MEMORY_TABLE, KS_VB_VERSION, err);
	if (rc) {
		free(a);
		free(rd);
		free(wr);
		return rc;
	}
	for (size_t i = 0; i < s->nbw; i++) {
		uint32_t c = s->threads[s->bw[i].th].core;

		if (c == SIM_NONE)
			continue;
		for (unsigned k = 0; k < nb; k++) {
			rd[c * nb + k] += sim_bwv(s, i)[2 * k];
			wr[c * nb + k] += sim_bwv(s, i)[2 * k + 1];
		}
	}
	ks_text_puts(&t, "{\"table_per_block\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		ks_text_puts(&t, c ? ",\n{\"block_id\":" : "\n{\"block_id\":");
		ks_text_u64(&t, c);
		ks_text_puts(&t, ",\"table_op_type\":\"cpu\",\"table_detail\":[{"
			     "\"table_name\":\"Caches\",\"size\":[");
		ks_text_u64(&t, s->levels);
		ks_text_puts(&t, ",");
		ks_text_u64(&t, ncols);
		ks_text_puts(&t, "],\"header_name\":[");
		for (size_t h = 0; h < ncols; h++) {
			if (h)
				ks_text_puts(&t, ",");
			ks_text_json_str(&t, header[h]);
		}
		ks_text_puts(&t, "],\"row\":[");
		for (unsigned k = 0; k < s->levels; k++) {
			uint64_t acc = 0, miss = 0;

			for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
				acc += a[c * KS_SIM_PIPE_COUNT + p].acc[k];
				miss += a[c * KS_SIM_PIPE_COUNT + p].miss[k];
			}
			ks_text_puts(&t, k ? ",{\"name\":" : "{\"name\":");
			ks_text_json_str(&t, s->cache[k].name);
			ks_text_puts(&t, ",\"value\":[");
			ks_text_u64(&t, acc);
			ks_text_puts(&t, ",");
			ks_text_u64(&t, acc - miss);
			ks_text_puts(&t, ",");
			ks_text_u64(&t, miss);
			ks_text_puts(&t, ",");
			ks_text_json_num(&t, acc ? 100.0 * (double)(acc - miss) / (double)acc
					 : NAN, 2);
			/* Filled from below: boundary k + 1's reads; written
			 * back below: its writes. */
			ks_text_puts(&t, ",");
			ks_text_u64(&t, rd[c * nb + k + 1]);
			ks_text_puts(&t, ",");
			ks_text_u64(&t, wr[c * nb + k + 1]);
			ks_text_puts(&t, "]}");
		}
		ks_text_puts(&t, "]}],\"advice\":[]}");
	}
	ks_text_puts(&t, "\n],\"advice\":[]}\n");
	free(a);
	free(rd);
	free(wr);
	return sim_vb_end(&v, &t, err);
}

/* ------------------------------------------------------------------ */
/* 0x0C inter-core load                                                */
/* ------------------------------------------------------------------ */

int sim_write_core_load(struct ks_vb_writer *w, const struct sim *s,
			const struct ks_simpost_opts *o, struct ks_err *err)
{
	struct sim_acc *a = NULL;
	struct sim_vb v = { .w = w };
	struct ks_text t;
	char soc[512], advice[256] = "";
	int l2 = sim_l2_level(s), rc = pipe_block_begin(s, &v, &t, KS_VB_CORE_LOAD, &a, err);
	size_t most = 0, least = 0;

	if (rc)
		return rc;
	/* The design writes these figures as text, as its example does. */
	ks_text_puts(&t, "{\"op_detail\":[");
	for (size_t c = 0; c < s->ncores; c++) {
		const struct sim_acc *row = &a[c * KS_SIM_PIPE_COUNT];
		uint64_t bytes = 0, acc = 0, miss = 0, cyc = row_cycles(row);

		for (unsigned p = 0; p < KS_SIM_PIPE_COUNT; p++) {
			bytes += row[p].loadb + row[p].storeb;
			if (l2 >= 0) {
				acc += row[p].acc[l2];
				miss += row[p].miss[l2];
			}
		}
		if (cyc > row_cycles(&a[most * KS_SIM_PIPE_COUNT]))
			most = c;
		if (cyc < row_cycles(&a[least * KS_SIM_PIPE_COUNT]))
			least = c;
		ks_text_puts(&t, c ? ",\n{\"core_id\":" : "\n{\"core_id\":");
		ks_text_u64(&t, c);
		ks_text_puts(&t, ",\"core_detail\":[{\"L2cache_hit_rate\":\"");
		if (acc)
			ks_text_json_num(&t, 100.0 * (double)(acc - miss) / (double)acc, 6);
		else
			ks_text_puts(&t, "-1");
		ks_text_puts(&t, "\",\"cycles\":\"");
		ks_text_u64(&t, cyc);
		ks_text_printf(&t, "\",\"subcore_id\":\"0\",\"subcore_type\":\"cpu\","
			       "\"throughput\":\"");
		ks_text_u64(&t, bytes);
		ks_text_printf(&t, "\",\"thread\":\"thread%u\"}]}",
			       s->threads[s->cores[c]].tid);
	}
	if (s->ncores > 1) {
		uint64_t hi = row_cycles(&a[most * KS_SIM_PIPE_COUNT]);
		uint64_t lo = row_cycles(&a[least * KS_SIM_PIPE_COUNT]);

		/* More than a fifth apart: say which threads. */
		if (lo ? (double)hi > 1.2 * (double)lo : hi > 0)
			snprintf(advice, sizeof(advice), "1) thread%u took %.2fx the cycles "
				 "of thread%u, the least busy: the work is unevenly spread.",
				 s->threads[s->cores[most]].tid,
				 lo ? (double)hi / (double)lo : INFINITY,
				 s->threads[s->cores[least]].tid);
	}
	soc_text(s, o, soc, sizeof(soc));
	ks_text_puts(&t, "\n],\"op_type\":\"cpu\",\"soc\":");
	ks_text_json_str(&t, soc);
	ks_text_puts(&t, ",\"advice\":");
	ks_text_json_str(&t, advice);
	ks_text_puts(&t, "}\n");
	free(a);
	return sim_vb_end(&v, &t, err);
}
