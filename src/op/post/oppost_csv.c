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
#include "textout.h"

/* ------------------------------------------------------------------ */
/* Files                                                               */
/* ------------------------------------------------------------------ */

/* Opens name in rd with a buffered writer on it (the CSV fields and their
 * quoting are textout.h's). */
static int csv_open(struct ks_rundir *rd, const char *name, struct ks_outfile *of,
		    struct ks_text *t, struct ks_err *err)
{
	int rc = ks_outfile_open(rd, name, of, err);

	if (rc)
		return rc;
	if (ks_text_open_outfile(t, of)) {
		ks_outfile_abort(of);
		return ks_err_set(err, -ENOMEM, "%s: out of memory", name);
	}
	return 0;
}

/* Flushes t and commits of; a failure of either is reported by commit. */
static int csv_commit(struct ks_rundir *rd, struct ks_outfile *of, struct ks_text *t,
		      const struct ks_oppost_opts *o, struct ks_err *err)
{
	int rc = ks_text_close(t);

	if (rc && !of->error)
		of->error = rc;
	return ks_oppost_commit(rd, of, o, err);
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
	"device_vendor", "driver", "platform", "compute_units", "clock_mhz",
	"max_clock_mhz", "memory_clock_mhz", "memory_max_clock_mhz", "global_size",
	"local_size", "global_offset", "work_groups", "program", "source_file",
	"build_options", "replay_mode", "warmups", "passes", "cache_flush",
	"flush_bytes", "min_us", "median_us", "mean_us", "max_us", "spread_pct",
	"original_us", "replay_wall_ms", "backup_bytes", "bytes_read",
	"bytes_written", "bytes_changed", "bytes_basis", "bandwidth_gbps", "flops",
	"flops_expression", "gflops", "arithmetic_intensity", "memory_ceiling",
	"memory_ceiling_gbps", "compute_ceiling", "compute_ceiling_gflops",
	"binding_ceiling", "attainable_gflops", "peak_bandwidth_pct", "roofline",
	"gpu_time_us", "achieved_occupancy_pct", "counters", "status", "message", NULL
};

int ks_oppost_write_basic(struct ks_rundir *rd, const struct op_launch *l,
			  const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	char buf[1200];
	int rc = csv_open(rd, "OpBasicInfo.csv", &of, &t, err);

	if (rc)
		return rc;
	for (int i = 0; basic_columns[i]; i++)
		ks_csv_str(&t, i == 0, basic_columns[i]);
	ks_csv_end(&t);

	ks_csv_str(&t, true, l->name);
	ks_csv_str(&t, false, l->kind[0] ? l->kind : "");
	ks_csv_int(&t, l->index);
	ks_csv_int(&t, l->pid);
	ks_csv_int(&t, l->tid);
	ks_csv_str(&t, false, l->device_name);
	ks_csv_str(&t, false, l->device_type);
	ks_csv_str(&t, false, l->device_vendor);
	ks_csv_str(&t, false, l->driver_version);
	ks_csv_str(&t, false, l->platform_name);
	ks_csv_int(&t, l->compute_units);
	ks_csv_int(&t, l->sm_clock_mhz);
	ks_csv_int(&t, l->max_clock_mhz);
	ks_csv_int(&t, l->mem_clock_mhz);
	ks_csv_int(&t, l->mem_max_clock_mhz);
	sizes(buf, sizeof(buf), &l->work, l->work.global, true);
	ks_csv_str(&t, false, buf);
	sizes(buf, sizeof(buf), &l->work, l->work.local, l->work.has_local);
	ks_csv_str(&t, false, buf);
	sizes(buf, sizeof(buf), &l->work, l->work.offset, l->work.has_offset);
	ks_csv_str(&t, false, buf);
	ks_csv_int(&t, l->work_groups);
	ks_csv_str(&t, false, l->program_origin);
	ks_csv_str(&t, false, l->have_source ? l->program_file : "");
	ks_csv_str(&t, false, l->build_options);
	ks_csv_str(&t, false, l->mode);
	ks_csv_int(&t, l->warmup);
	ks_text_printf(&t, ",%zu", l->nmeasured);
	ks_csv_str(&t, false, l->flush < 0 ? "" : l->flush ? "on" : "off");
	ks_csv_int(&t, l->flush_bytes);
	ks_csv_num(&t, l->min_us, 3);
	ks_csv_num(&t, l->median_us, 3);
	ks_csv_num(&t, l->mean_us, 3);
	ks_csv_num(&t, l->max_us, 3);
	ks_csv_num(&t, l->spread_pct, 2);
	ks_csv_num(&t, l->original_us, 3);
	ks_csv_num(&t, l->replay_wall_ms, 3);
	ks_csv_int(&t, l->backup_bytes);
	ks_csv_num(&t, l->bytes_read, 0);
	ks_csv_num(&t, l->bytes_written, 0);
	ks_csv_num(&t, l->bytes_changed, 0);
	ks_csv_str(&t, false, !isfinite(l->bytes_read) ? "" : l->bytes_measured ?
		"measured: DRAM bytes from the hardware counters (CUPTI)" : l->bytes_partial ?
		"partial: some buffers' counts are unknown" : l->bytes_extent ?
		"extent: every byte of the buffers the kernel may read, and of those it may "
		"write (per buffer in Memory.csv)" :
		"bytes written are those the first pass changed (per buffer in Memory.csv)");
	ks_csv_num(&t, l->gbps, 3);
	ks_csv_num(&t, l->flops, 0);
	ks_csv_str(&t, false, o->flops ? ks_expr_text(o->flops) : "");
	ks_csv_num(&t, l->gflops, 3);
	if (isfinite(l->intensity))
		ks_text_printf(&t, ",%.6g", l->intensity);
	else
		ks_text_put(&t, ",", 1);
	ks_csv_str(&t, false, isfinite(l->mem_ceiling_gbps) ? l->mem_ceiling_name : "");
	ks_csv_num(&t, l->mem_ceiling_gbps, 3);
	ks_csv_str(&t, false, isfinite(l->compute_ceiling_gflops) ? l->compute_ceiling_name : "");
	ks_csv_num(&t, l->compute_ceiling_gflops, 3);
	ks_csv_str(&t, false, l->binding);
	ks_csv_num(&t, l->attainable_gflops, 3);
	ks_csv_num(&t, l->peak_ratio_pct, 2);
	if (l->roofline)
		snprintf(buf, sizeof(buf), "yes");
	else
		snprintf(buf, sizeof(buf), "no: %s", l->roofline_why);
	ks_csv_str(&t, false, buf);
	ks_csv_num(&t, l->hw_time_us, 3);
	ks_csv_num(&t, l->hw_occupancy_pct, 2);
	if (l->counters_supported == 1)
		snprintf(buf, sizeof(buf), "supported");
	else if (l->counters_supported == 0)
		snprintf(buf, sizeof(buf), "not supported: %s",
			 l->counters_reason[0] ? l->counters_reason : "no reason given");
	else
		snprintf(buf, sizeof(buf), "unknown");
	ks_csv_str(&t, false, buf);
	ks_csv_str(&t, false, l->status);
	ks_csv_str(&t, false, l->message);
	ks_csv_end(&t);
	return csv_commit(rd, &of, &t, o, err);
}

/* ------------------------------------------------------------------ */
/* Timing.csv                                                          */
/* ------------------------------------------------------------------ */

int ks_oppost_write_timing(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = csv_open(rd, "Timing.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_text_printf(&t, "pass,kind,run,start_us,start_basis,duration_us");
	for (size_t k = 0; k < l->ncounter_names; k++)
		ks_csv_str(&t, false, l->counter_names[k]);
	ks_csv_end(&t);
	for (size_t i = 0; i < l->npass; i++) {
		const struct op_pass *p = &l->pass[i];

		ks_text_printf(&t, "%d,%s,%u", p->number, p->warmup ? "warmup" : "measured",
				  p->run);
		ks_csv_num(&t, p->start_us, 3);
		ks_csv_str(&t, false, !isfinite(p->start_us) ? ""
			: p->start_estimated ? "estimated" : "measured");
		ks_csv_num(&t, p->dur_us, 3);
		for (size_t k = 0; k < l->ncounter_names; k++) {
			json_t *v = p->counters ? json_object_get(p->counters,
								  l->counter_names[k]) : NULL;

			ks_csv_int(&t, json_is_integer(v) ? json_integer_value(v) : -1);
		}
		ks_csv_end(&t);
	}
	return csv_commit(rd, &of, &t, o, err);
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

static void memory_row(struct ks_text *t, const struct op_launch *l,
		       const struct op_arg *a, const struct op_buf *b)
{
	double total = l->bytes_read + l->bytes_written;
	double mine = NAN;
	long long bytes = b && b->bytes >= 0 ? b->bytes : a ? a->buf_bytes : -1;
	long long written;

	/* A buffer no argument reaches (--backup all): no index, its
	 * address. */
	bool other = b && b->arg < 0;

	if (!other)
		ks_text_printf(t, "%lld", b ? b->arg : a->index);
	ks_csv_str(t, false, other ? "(not an argument)" : a ? a->name : "");
	ks_csv_str(t, false, a ? a->type_name : "");
	ks_csv_str(t, false, other ? b->base : a ? a->address : "");
	ks_csv_int(t, bytes);
	ks_csv_str(t, false, a ? a->flags : "");
	ks_csv_str(t, false, !b || b->backed_up < 0 ? "" : b->backed_up ? "yes" : "no");
	ks_csv_int(t, b ? b->read : -1);
	ks_csv_str(t, false, b ? b->read_basis : "");
	if (b && l->bytes_extent) {
		/* The extent: the whole buffer if the kernel may write it. */
		written = b->may_write ? b->bytes : 0;
		ks_csv_int(t, written);
		ks_csv_str(t, false, b->may_write ? "whole buffer (the kernel may write it)"
				   : b->write_basis);
	} else {
		written = b ? b->written : -1;
		ks_csv_int(t, written);
		ks_csv_str(t, false, b ? b->write_basis : "");
	}
	ks_csv_int(t, b && b->may_write != 0 ? b->written : b ? 0 : -1);
	if (b && b->read >= 0 && written >= 0)
		mine = (double)b->read + (double)written;
	ks_csv_num(t, total > 0 ? mine / total * 100 : NAN, 2);
	ks_csv_num(t, isfinite(l->median_us) && l->median_us > 0 ? mine / (l->median_us * 1e3)
		: NAN, 3);
	ks_csv_end(t);
}

int ks_oppost_write_memory(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = csv_open(rd, "Memory.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_text_printf(&t, "arg,name,type,address,bytes,flags,backed_up,bytes_read,"
			  "read_basis,bytes_written,write_basis,bytes_changed,traffic_share_pct,"
			  "bandwidth_gbps\n");
	for (size_t i = 0; i < l->nbufs; i++)
		memory_row(&t, l, arg_at(l, l->bufs[i].arg), &l->bufs[i]);
	/* Buffer arguments the measurement does not list (a failed replay,
	 * no measure.json): their size and flags at least. */
	for (size_t i = 0; i < l->nargs; i++) {
		bool listed = false;

		if (!l->args[i].is_buffer)
			continue;
		for (size_t k = 0; k < l->nbufs; k++)
			listed |= l->bufs[k].arg == l->args[i].index;
		if (!listed)
			memory_row(&t, l, &l->args[i], NULL);
	}
	return csv_commit(rd, &of, &t, o, err);
}

/* ------------------------------------------------------------------ */
/* summary.csv                                                         */
/* ------------------------------------------------------------------ */

int ks_oppost_summary(struct ks_rundir *run, const struct ks_oppost_result *r,
		      size_t n, struct ks_err *err)
{
	struct ks_oppost_opts none = { 0 };
	struct ks_outfile of;
	struct ks_text t;
	int rc = csv_open(run, "summary.csv", &of, &t, err);

	if (rc)
		return rc;
	ks_text_printf(&t, "#,pid,kernel,launch_index,directory,global_size,"
			  "replay_mode,passes,median_us,min_us,max_us,mean_us,spread_pct,"
			  "p80_p20,bandwidth_gbps,gflops,gpu_time_us,status\n");
	for (size_t i = 0; i < n; i++) {
		ks_text_printf(&t, "%zu", i + 1);
		ks_csv_int(&t, r[i].pid);
		ks_csv_str(&t, false, r[i].name);
		ks_csv_int(&t, r[i].index);
		ks_csv_str(&t, false, r[i].dir);
		ks_csv_str(&t, false, strcmp(r[i].global, "-") ? r[i].global : "");
		ks_csv_str(&t, false, strcmp(r[i].mode, "-") ? r[i].mode : "");
		ks_text_printf(&t, ",%zu", r[i].passes);
		ks_csv_num(&t, r[i].median_us, 3);
		ks_csv_num(&t, r[i].min_us, 3);
		ks_csv_num(&t, r[i].max_us, 3);
		ks_csv_num(&t, r[i].mean_us, 3);
		ks_csv_num(&t, r[i].spread_pct, 2);
		ks_csv_num(&t, r[i].p80_p20, 3);
		ks_csv_num(&t, r[i].gbps, 3);
		ks_csv_num(&t, r[i].gflops, 3);
		ks_csv_num(&t, r[i].gpu_us, 3);
		ks_csv_str(&t, false, r[i].status);
		ks_csv_end(&t);
	}
	return csv_commit(run, &of, &t, &none, err);
}
