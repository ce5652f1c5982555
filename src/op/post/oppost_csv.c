/*
 * The CSV deliverables of one collected launch: OpBasicInfo.csv (one row
 * of key facts), Timing.csv (one row per pass) and Memory.csv (one row per
 * buffer argument).  docs/op.md lists every column.
 *
 * CSV as RFC 4180 has it: a header row, comma separators, fields with a
 * comma, quote or line break quoted.  An unknown number is an empty field,
 * never a zero.  Sizes are written "1024x1024" so that they need no
 * quoting.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "oppost_int.h"

/* ------------------------------------------------------------------ */
/* Fields                                                              */
/* ------------------------------------------------------------------ */

static void csv_str(struct ks_outfile *of, bool first, const char *s)
{
	bool quote = strpbrk(s, ",\"\r\n") != NULL;

	if (!first)
		ks_outfile_write(of, ",", 1);
	if (!quote) {
		ks_outfile_write(of, s, strlen(s));
		return;
	}
	ks_outfile_write(of, "\"", 1);
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			ks_outfile_write(of, "\"", 1);
		ks_outfile_write(of, p, 1);
	}
	ks_outfile_write(of, "\"", 1);
}

/* A number with prec decimals; empty when unknown. */
static void csv_num(struct ks_outfile *of, double v, int prec)
{
	if (isfinite(v))
		ks_outfile_printf(of, ",%.*f", prec, v);
	else
		ks_outfile_write(of, ",", 1);
}

/* An integer; empty when negative (unknown). */
static void csv_int(struct ks_outfile *of, long long v)
{
	if (v >= 0)
		ks_outfile_printf(of, ",%lld", v);
	else
		ks_outfile_write(of, ",", 1);
}

static void csv_end(struct ks_outfile *of)
{
	ks_outfile_write(of, "\n", 1);
}

int ks_oppost_commit(struct ks_rundir *rd, struct ks_outfile *of,
		     const struct ks_oppost_opts *o, struct ks_err *err)
{
	/* The window without a file is the unlink-to-rename moment only;
	 * ks_outfile_commit never replaces a file by itself. */
	if (o->replace && unlinkat(rd->dirfd, of->name, 0) != 0 && errno != ENOENT) {
		int e = errno;

		ks_outfile_abort(of);
		return ks_err_set(err, -e, "cannot replace %s: %s", of->name, strerror(e));
	}
	return ks_outfile_commit(of, KS_DELIVERABLE_MODE, err);
}

static void sizes(char *out, size_t size, const struct op_work *w, const uint64_t *v,
		  bool known)
{
	if (!w->dim || !known)
		out[0] = '\0';
	else
		ks_oppost_sizes(out, size, v, w->dim);
}

/* ------------------------------------------------------------------ */
/* OpBasicInfo.csv                                                     */
/* ------------------------------------------------------------------ */

static const char *const basic_columns[] = {
	"name", "kind", "launch_index", "pid", "tid", "device", "device_type",
	"device_vendor", "driver", "platform", "compute_units", "global_size",
	"local_size", "global_offset", "work_groups", "program", "source_file",
	"build_options", "replay_mode", "warmups", "passes", "cache_flush",
	"flush_bytes", "min_us", "median_us", "mean_us", "max_us", "spread_pct",
	"original_us", "replay_wall_ms", "backup_bytes", "bytes_read",
	"bytes_written", "bytes_basis", "bandwidth_gbps", "flops",
	"flops_expression", "gflops", "arithmetic_intensity", "memory_ceiling",
	"memory_ceiling_gbps", "compute_ceiling", "compute_ceiling_gflops",
	"binding_ceiling", "attainable_gflops", "peak_bandwidth_pct", "roofline",
	"counters", "status", "message", NULL
};

int ks_oppost_write_basic(struct ks_rundir *rd, const struct op_launch *l,
			  const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	char buf[1200];
	int rc = ks_outfile_open(rd, "OpBasicInfo.csv", &of, err);

	if (rc)
		return rc;
	for (int i = 0; basic_columns[i]; i++)
		csv_str(&of, i == 0, basic_columns[i]);
	csv_end(&of);

	csv_str(&of, true, l->name);
	csv_str(&of, false, l->kind[0] ? l->kind : "");
	csv_int(&of, l->index);
	csv_int(&of, l->pid);
	csv_int(&of, l->tid);
	csv_str(&of, false, l->device_name);
	csv_str(&of, false, l->device_type);
	csv_str(&of, false, l->device_vendor);
	csv_str(&of, false, l->driver_version);
	csv_str(&of, false, l->platform_name);
	csv_int(&of, l->compute_units);
	sizes(buf, sizeof(buf), &l->work, l->work.global, true);
	csv_str(&of, false, buf);
	sizes(buf, sizeof(buf), &l->work, l->work.local, l->work.has_local);
	csv_str(&of, false, buf);
	sizes(buf, sizeof(buf), &l->work, l->work.offset, l->work.has_offset);
	csv_str(&of, false, buf);
	csv_int(&of, l->work_groups);
	csv_str(&of, false, l->program_origin);
	csv_str(&of, false, l->have_source ? l->program_file : "");
	csv_str(&of, false, l->build_options);
	csv_str(&of, false, l->mode);
	csv_int(&of, l->warmup);
	ks_outfile_printf(&of, ",%zu", l->nmeasured);
	csv_str(&of, false, l->flush < 0 ? "" : l->flush ? "on" : "off");
	csv_int(&of, l->flush_bytes);
	csv_num(&of, l->min_us, 3);
	csv_num(&of, l->median_us, 3);
	csv_num(&of, l->mean_us, 3);
	csv_num(&of, l->max_us, 3);
	csv_num(&of, l->spread_pct, 2);
	csv_num(&of, l->original_us, 3);
	csv_num(&of, l->replay_wall_ms, 3);
	csv_int(&of, l->backup_bytes);
	csv_num(&of, l->bytes_read, 0);
	csv_num(&of, l->bytes_written, 0);
	csv_str(&of, false, !isfinite(l->bytes_read) ? "" : l->bytes_partial ?
		"partial: some buffers' counts are unknown" : "per buffer, see Memory.csv");
	csv_num(&of, l->gbps, 3);
	csv_num(&of, l->flops, 0);
	csv_str(&of, false, o->flops ? ks_op_flops_text(o->flops) : "");
	csv_num(&of, l->gflops, 3);
	if (isfinite(l->intensity))
		ks_outfile_printf(&of, ",%.6g", l->intensity);
	else
		ks_outfile_write(&of, ",", 1);
	csv_str(&of, false, isfinite(l->mem_ceiling_gbps) ? l->mem_ceiling_name : "");
	csv_num(&of, l->mem_ceiling_gbps, 3);
	csv_str(&of, false, isfinite(l->compute_ceiling_gflops) ? l->compute_ceiling_name : "");
	csv_num(&of, l->compute_ceiling_gflops, 3);
	csv_str(&of, false, l->binding);
	csv_num(&of, l->attainable_gflops, 3);
	csv_num(&of, l->peak_ratio_pct, 2);
	if (l->roofline)
		snprintf(buf, sizeof(buf), "yes");
	else
		snprintf(buf, sizeof(buf), "no: %s", l->roofline_why);
	csv_str(&of, false, buf);
	if (l->counters_supported == 1)
		snprintf(buf, sizeof(buf), "supported");
	else if (l->counters_supported == 0)
		snprintf(buf, sizeof(buf), "not supported: %s",
			 l->counters_reason[0] ? l->counters_reason : "no reason given");
	else
		snprintf(buf, sizeof(buf), "unknown");
	csv_str(&of, false, buf);
	csv_str(&of, false, l->status);
	csv_str(&of, false, l->message);
	csv_end(&of);
	return ks_oppost_commit(rd, &of, o, err);
}

/* ------------------------------------------------------------------ */
/* Timing.csv                                                          */
/* ------------------------------------------------------------------ */

int ks_oppost_write_timing(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, "Timing.csv", &of, err);

	if (rc)
		return rc;
	ks_outfile_printf(&of, "pass,kind,run,start_us,start_basis,duration_us");
	for (size_t k = 0; k < l->ncounter_names; k++)
		csv_str(&of, false, l->counter_names[k]);
	csv_end(&of);
	for (size_t i = 0; i < l->npass; i++) {
		const struct op_pass *p = &l->pass[i];

		ks_outfile_printf(&of, "%d,%s,%u", p->number, p->warmup ? "warmup" : "measured",
				  p->run);
		csv_num(&of, p->start_us, 3);
		csv_str(&of, false, !isfinite(p->start_us) ? ""
			: p->start_estimated ? "estimated" : "measured");
		csv_num(&of, p->dur_us, 3);
		for (size_t k = 0; k < l->ncounter_names; k++) {
			json_t *v = p->counters ? json_object_get(p->counters,
								  l->counter_names[k]) : NULL;

			csv_int(&of, json_is_integer(v) ? json_integer_value(v) : -1);
		}
		csv_end(&of);
	}
	return ks_oppost_commit(rd, &of, o, err);
}

/* ------------------------------------------------------------------ */
/* Memory.csv                                                          */
/* ------------------------------------------------------------------ */

static const struct op_arg *arg_at(const struct op_launch *l, long long index)
{
	for (size_t i = 0; i < l->nargs; i++)
		if (l->args[i].index == index)
			return &l->args[i];
	return NULL;
}

static void memory_row(struct ks_outfile *of, const struct op_launch *l,
		       const struct op_arg *a, const struct op_buf *b)
{
	double total = l->bytes_read + l->bytes_written;
	double mine = NAN;
	long long bytes = b && b->bytes >= 0 ? b->bytes : a ? a->buf_bytes : -1;

	ks_outfile_printf(of, "%lld", b ? b->arg : a->index);
	csv_str(of, false, a ? a->name : "");
	csv_str(of, false, a ? a->type_name : "");
	csv_str(of, false, a ? a->address : "");
	csv_int(of, bytes);
	csv_str(of, false, a ? a->flags : "");
	csv_str(of, false, !b || b->backed_up < 0 ? "" : b->backed_up ? "yes" : "no");
	csv_int(of, b ? b->read : -1);
	csv_str(of, false, b ? b->read_basis : "");
	csv_int(of, b ? b->written : -1);
	csv_str(of, false, b ? b->write_basis : "");
	if (b && b->read >= 0 && b->written >= 0)
		mine = (double)b->read + (double)b->written;
	csv_num(of, total > 0 ? mine / total * 100 : NAN, 2);
	csv_num(of, isfinite(l->median_us) && l->median_us > 0 ? mine / (l->median_us * 1e3)
		: NAN, 3);
	csv_end(of);
}

int ks_oppost_write_memory(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, "Memory.csv", &of, err);

	if (rc)
		return rc;
	ks_outfile_printf(&of, "arg,name,type,address,bytes,flags,backed_up,bytes_read,"
			  "read_basis,bytes_written,write_basis,traffic_share_pct,"
			  "bandwidth_gbps\n");
	for (size_t i = 0; i < l->nbufs; i++)
		memory_row(&of, l, arg_at(l, l->bufs[i].arg), &l->bufs[i]);
	/* Buffer arguments the measurement does not list (a failed replay,
	 * no measure.json): their size and flags at least. */
	for (size_t i = 0; i < l->nargs; i++) {
		bool listed = false;

		if (!l->args[i].is_buffer)
			continue;
		for (size_t k = 0; k < l->nbufs; k++)
			listed |= l->bufs[k].arg == l->args[i].index;
		if (!listed)
			memory_row(&of, l, &l->args[i], NULL);
	}
	return ks_oppost_commit(rd, &of, o, err);
}

/* ------------------------------------------------------------------ */
/* summary.csv                                                         */
/* ------------------------------------------------------------------ */

int ks_oppost_summary(struct ks_rundir *run, const struct ks_oppost_result *r,
		      size_t n, struct ks_err *err)
{
	struct ks_oppost_opts none = { 0 };
	struct ks_outfile of;
	int rc = ks_outfile_open(run, "summary.csv", &of, err);

	if (rc)
		return rc;
	ks_outfile_printf(&of, "#,pid,kernel,launch_index,directory,global_size,"
			  "replay_mode,passes,median_us,min_us,max_us,mean_us,spread_pct,"
			  "bandwidth_gbps,gflops,status\n");
	for (size_t i = 0; i < n; i++) {
		ks_outfile_printf(&of, "%zu", i + 1);
		csv_int(&of, r[i].pid);
		csv_str(&of, false, r[i].name);
		csv_int(&of, r[i].index);
		csv_str(&of, false, r[i].dir);
		csv_str(&of, false, strcmp(r[i].global, "-") ? r[i].global : "");
		csv_str(&of, false, strcmp(r[i].mode, "-") ? r[i].mode : "");
		ks_outfile_printf(&of, ",%zu", r[i].passes);
		csv_num(&of, r[i].median_us, 3);
		csv_num(&of, r[i].min_us, 3);
		csv_num(&of, r[i].max_us, 3);
		csv_num(&of, r[i].mean_us, 3);
		csv_num(&of, r[i].spread_pct, 2);
		csv_num(&of, r[i].gbps, 3);
		csv_num(&of, r[i].gflops, 3);
		csv_str(&of, false, r[i].status);
		csv_end(&of);
	}
	return ks_oppost_commit(run, &of, &none, err);
}
