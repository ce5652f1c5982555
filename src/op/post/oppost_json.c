/*
 * The JSON deliverables of one collected launch: trace.json (the warm-ups
 * and passes as slices on a timeline, Trace Event Format) and
 * visualize_data.bin with blocks 0x05 (basic info), 0x08 (memory heat
 * map), 0x09 (memory table) and, when FLOPs and a calibration are known,
 * 0x0D (roofline); docs/op.md gives their fields, docs/formats.md the
 * container.
 *
 * Built with jansson.  Strings from the raw files may hold bytes that are
 * not UTF-8 (a device name), which jansson refuses, so they go through
 * ks_json_text(); unknown numbers become null, never 0.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kscope/vizbin.h>

#include "jsontext.h"
#include "oppost_int.h"

/* ------------------------------------------------------------------ */
/* Values                                                              */
/* ------------------------------------------------------------------ */

/* v rounded to prec decimals, or null when unknown. */
static json_t *jnum(double v, int prec)
{
	double scale = pow(10, prec);

	if (!isfinite(v))
		return json_null();
	if (fabs(v) < 1e15)
		v = round(v * scale) / scale;
	return json_real(v);
}

static json_t *jint(long long v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* A count kept as a double (bytes, FLOPs): an integer while it is one. */
static json_t *jcount(double v)
{
	if (!isfinite(v) || v < 0)
		return json_null();
	if (v < 9007199254740992.0 && v == floor(v))
		return json_integer((json_int_t)v);
	return json_real(v);
}

/* Sets key on obj; a NULL value (out of memory) is recorded in *bad. */
static void put(json_t *obj, const char *key, json_t *v, bool *bad)
{
	if (!v || json_object_set_new(obj, key, v) != 0)
		*bad = true;
}

static void push(json_t *arr, json_t *v, bool *bad)
{
	if (!v || json_array_append_new(arr, v) != 0)
		*bad = true;
}

static int dump_cb(const char *buf, size_t size, void *data)
{
	return ks_outfile_write(data, buf, size) ? -1 : 0;
}

#define DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(12))

/* ------------------------------------------------------------------ */
/* trace.json                                                          */
/* ------------------------------------------------------------------ */

static json_t *meta_event(const char *what, long long pid, int tid, const char *name,
			  bool *bad)
{
	json_t *e = json_object(), *args = json_object();

	if (!e || !args) {
		json_decref(e);
		json_decref(args);
		*bad = true;
		return NULL;
	}
	put(e, "name", json_string(what), bad);
	put(e, "ph", json_string("M"), bad);
	put(e, "pid", json_integer(pid), bad);
	put(e, "tid", json_integer(tid), bad);
	put(args, "name", ks_json_text(name), bad);
	put(e, "args", args, bad);
	return e;
}

int ks_oppost_write_trace(struct ks_rundir *rd, const struct op_launch *l,
			  const struct ks_oppost_opts *o, struct ks_err *err)
{
	json_t *root = json_object(), *events = json_array(), *other = json_object();
	long long pid = l->pid >= 0 ? l->pid : 0;
	bool app = strcmp(l->mode, "application") == 0, bad = !root || !events || !other;
	const char *src = l->have_source ? l->program_file : "";
	char title[600], loc[400];
	unsigned maxrun = 0;
	struct ks_outfile of;
	int rc;

	if (bad)
		goto nomem;
	snprintf(title, sizeof(title), "kscope op: %s (launch %lld)%s%s", l->name, l->index,
		 l->device_name[0] ? " on " : "", l->device_name);
	snprintf(loc, sizeof(loc), "%s%s%s", l->name, src[0] ? " in " : "", src);
	push(events, meta_event("process_name", pid, 0, title, &bad), &bad);
	for (size_t i = 0; i < l->npass; i++)
		if (l->pass[i].run > maxrun)
			maxrun = l->pass[i].run;
	for (unsigned r = 0; r <= (app ? maxrun : 0); r++) {
		char tname[64];

		if (app)
			snprintf(tname, sizeof(tname), "application run %u", r);
		else
			snprintf(tname, sizeof(tname), "%s replay",
				 strcmp(l->kind, "range") == 0 ? "range" : "kernel");
		push(events, meta_event("thread_name", pid, (int)r + 1, tname, &bad), &bad);
	}
	for (size_t i = 0; i < l->npass && !bad; i++) {
		const struct op_pass *p = &l->pass[i];
		json_t *e = json_object(), *args = json_object();
		char name[300];

		if (!e || !args) {
			json_decref(e);
			json_decref(args);
			goto nomem;
		}
		if (!isfinite(p->dur_us)) {
			json_decref(e);
			json_decref(args);
			continue;
		}
		snprintf(name, sizeof(name), "%s %s %d", l->name,
			 p->warmup ? "warm-up" : "pass", p->number);
		put(e, "name", ks_json_text(name), &bad);
		put(e, "cat", json_string(p->warmup ? "warmup" : "measured"), &bad);
		put(e, "ph", json_string("X"), &bad);
		/* Application runs are separate processes: each on its own
		 * row, from 0. */
		put(e, "ts", jnum(isfinite(p->start_us) ? p->start_us : 0, 3), &bad);
		put(e, "dur", jnum(p->dur_us, 3), &bad);
		put(e, "pid", json_integer(pid), &bad);
		put(e, "tid", json_integer((json_int_t)p->run + 1), &bad);
		put(args, "pass", json_integer(p->number), &bad);
		put(args, "kind", json_string(p->warmup ? "warmup" : "measured"), &bad);
		if (app)
			put(args, "run", json_integer(p->run), &bad);
		put(args, "duration_us", jnum(p->dur_us, 3), &bad);
		put(args, "start", json_string(!isfinite(p->start_us) ? "not on a common timeline"
					       : p->start_estimated ? "estimated" : "measured"),
		    &bad);
		put(args, "kernel", ks_json_text(l->name), &bad);
		put(args, "source_file", src[0] ? ks_json_text(src) : json_null(), &bad);
		put(args, "code_location", ks_json_text(loc), &bad);
		put(e, "args", args, &bad);
		push(events, e, &bad);
	}
	put(root, "traceEvents", events, &bad);
	events = NULL;
	put(root, "displayTimeUnit", json_string("ns"), &bad);
	put(other, "kscope", json_string("op"), &bad);
	put(other, "kernel", ks_json_text(l->name), &bad);
	put(other, "device", ks_json_text(l->device_name), &bad);
	put(other, "clock_mhz", jint(l->sm_clock_mhz), &bad);
	put(other, "memory_clock_mhz", jint(l->mem_clock_mhz), &bad);
	put(other, "replay_mode", ks_json_text(l->mode), &bad);
	put(other, "median_us", jnum(l->median_us, 3), &bad);
	put(other, "original_us", jnum(l->original_us, 3), &bad);
	put(root, "otherData", other, &bad);
	other = NULL;
	if (bad)
		goto nomem;
	rc = ks_outfile_open(rd, "trace.json", &of, err);
	if (!rc) {
		json_dump_callback(root, dump_cb, &of, DUMP_FLAGS);
		ks_outfile_write(&of, "\n", 1);
		rc = ks_oppost_commit(rd, &of, o, err);
	}
	json_decref(root);
	return rc;
nomem:
	json_decref(root);
	json_decref(events);
	json_decref(other);
	return ks_err_set(err, -ENOMEM, "trace.json: out of memory");
}

/* ------------------------------------------------------------------ */
/* visualize_data.bin                                                  */
/* ------------------------------------------------------------------ */

static json_t *advice(const struct op_launch *l, bool *bad)
{
	json_t *a = json_array();
	char msg[800];

	if (!a) {
		*bad = true;
		return NULL;
	}
	if (strcmp(l->status, "ok") != 0) {
		snprintf(msg, sizeof(msg), "Status %s%s%s: the figures are partial or "
			 "missing.", l->status, l->message[0] ? ": " : "", l->message);
		push(a, ks_json_text(msg), bad);
	}
	if (l->roofline) {
		snprintf(msg, sizeof(msg), "Bound by %s: at %.3g FLOP/byte the roofline "
			 "allows %.3f GFLOP/s; the kernel attains %.3f GFLOP/s (%.1f%%).",
			 l->binding, l->intensity, l->attainable_gflops, l->gflops,
			 l->gflops / l->attainable_gflops * 100);
		push(a, ks_json_text(msg), bad);
	}
	if (isfinite(l->peak_ratio_pct) && l->peak_ratio_pct > 100) {
		snprintf(msg, sizeof(msg), "The bandwidth is %.0f%% of the calibrated %s "
			 "bandwidth: the buffers are served from cache, not memory.",
			 l->peak_ratio_pct, l->mem_ceiling_name);
		push(a, ks_json_text(msg), bad);
	}
	if (isfinite(l->spread_pct) && l->spread_pct > 20) {
		snprintf(msg, sizeof(msg), "The measured passes spread over %.0f%% of the "
			 "median: the machine was busy or the kernel is too short to time "
			 "well; use the median, or more passes.", l->spread_pct);
		push(a, ks_json_text(msg), bad);
	}
	if (strcmp(l->status, "noisy") == 0) {
		snprintf(msg, sizeof(msg), "The timing is noisy: the 80th percentile of the "
			 "passes is %.2f times the 20th (the bound is %.1f): raise "
			 "--replay-count, lock the clocks, or profile on an idle machine.",
			 l->p80_p20, KS_OPPOST_NOISY_RATIO);
		push(a, ks_json_text(msg), bad);
	}
	if (l->flush == 0) {
		snprintf(msg, sizeof(msg), "The cache was not flushed between passes: the "
			 "times are warm-cache times.");
		push(a, ks_json_text(msg), bad);
	}
	return a;
}

static json_t *basic_info(const struct op_launch *l, const struct ks_oppost_opts *o,
			  bool *bad)
{
	json_t *j = json_object();
	char buf[1200];

	if (!j) {
		*bad = true;
		return NULL;
	}
	put(j, "name", ks_json_text(l->name), bad);
	put(j, "soc", ks_json_text(l->device_name[0] ? l->device_name : "unknown device"),
	    bad);
	put(j, "op_type", json_string(ks_oppost_is_cuda(l) ? "cuda" : "opencl"), bad);
	put(j, "block_dim", jint(l->work_groups), bad);
	put(j, "mix_block_dim", json_integer(0), bad);
	put(j, "duration", jnum(l->median_us, 3), bad);
	put(j, "device_id", json_integer(0), bad);
	snprintf(buf, sizeof(buf), "%lld", l->pid);
	put(j, "pid", l->pid >= 0 ? json_string(buf) : json_null(), bad);
	put(j, "block_detail", json_array(), bad);
	put(j, "mix_block_detail", json_array(), bad);
	put(j, "advice", advice(l, bad), bad);
	/* kscope's own fields. */
	put(j, "kind", ks_json_text(l->kind[0] ? l->kind : "kernel"), bad);
	put(j, "launch_index", jint(l->index), bad);
	put(j, "driver", ks_json_text(l->driver_version), bad);
	put(j, "clock_mhz", jint(l->sm_clock_mhz), bad);
	put(j, "max_clock_mhz", jint(l->max_clock_mhz), bad);
	put(j, "memory_clock_mhz", jint(l->mem_clock_mhz), bad);
	put(j, "memory_max_clock_mhz", jint(l->mem_max_clock_mhz), bad);
	{
		char g[128];

		ks_oppost_sizes(g, sizeof(g), l->work.global, l->work.dim);
		put(j, "global_size", l->work.dim ? ks_json_text(g) : json_null(), bad);
		ks_oppost_sizes(g, sizeof(g), l->work.local, l->work.dim);
		put(j, "local_size",
		    l->work.dim && l->work.has_local ? ks_json_text(g) : json_null(), bad);
	}
	put(j, "replay_mode", ks_json_text(l->mode), bad);
	put(j, "warmups", jint(l->warmup), bad);
	put(j, "passes", json_integer((json_int_t)l->nmeasured), bad);
	put(j, "cache_flush", l->flush < 0 ? json_null() : json_boolean(l->flush), bad);
	put(j, "min_us", jnum(l->min_us, 3), bad);
	put(j, "mean_us", jnum(l->mean_us, 3), bad);
	put(j, "max_us", jnum(l->max_us, 3), bad);
	put(j, "spread_pct", jnum(l->spread_pct, 2), bad);
	put(j, "bandwidth_gbps", jnum(l->gbps, 3), bad);
	put(j, "flops", jcount(l->flops), bad);
	put(j, "flops_expression",
	    o->flops ? ks_json_text(ks_expr_text(o->flops)) : json_null(), bad);
	put(j, "gflops", jnum(l->gflops, 3), bad);
	put(j, "arithmetic_intensity", jnum(l->intensity, 6), bad);
	put(j, "gpu_time_us", jnum(l->hw_time_us, 3), bad);
	put(j, "achieved_occupancy_pct", jnum(l->hw_occupancy_pct, 2), bad);
	snprintf(buf, sizeof(buf), "no: %s", l->roofline_why);
	put(j, "roofline", ks_json_text(l->roofline ? "yes" : buf), bad);
	put(j, "status", ks_json_text(l->status), bad);
	return j;
}

static json_t *mem_unit(const char *path, double bytes, double median_us, double peak_gbps,
			bool *bad)
{
	json_t *u = json_object();
	double bw = isfinite(bytes) && median_us > 0 ? bytes / (median_us * 1e3) : NAN;

	if (!u) {
		*bad = true;
		return NULL;
	}
	put(u, "memory_path", json_string(path), bad);
	/* A request is a byte here; the design's -1 is "no peak ratio". */
	put(u, "request", jcount(bytes), bad);
	put(u, "request_per_byte", json_integer(1), bad);
	put(u, "bandwidth", jnum(bw, 3), bad);
	put(u, "peak_ratio", peak_gbps > 0 && isfinite(bw) ?
	    jnum(bw / peak_gbps * 100, 2) : json_integer(-1), bad);
	put(u, "display", json_true(), bad);
	return u;
}

static json_t *memory_graph(const struct op_launch *l, bool *bad)
{
	json_t *j = json_object(), *map = json_array(), *core = json_object(),
	       *units = json_array();

	if (!j || !map || !core || !units) {
		json_decref(j);
		json_decref(map);
		json_decref(core);
		json_decref(units);
		*bad = true;
		return NULL;
	}
	push(units, mem_unit("global memory -> kernel", l->bytes_read, l->median_us,
			     l->mem_ceiling_gbps, bad), bad);
	push(units, mem_unit("kernel -> global memory", l->bytes_written, l->median_us,
			     l->mem_ceiling_gbps, bad), bad);
	put(core, "core_no", json_integer(0), bad);
	put(core, "op_type", json_string(ks_oppost_is_cuda(l) ? "cuda" : "opencl"), bad);
	put(core, "soc",
	    ks_json_text(l->device_name[0] ? l->device_name : "unknown device"), bad);
	put(core, "memory_unit", units, bad);
	put(core, "advice", json_array(), bad);
	push(map, core, bad);
	put(j, "core_memory_map", map, bad);
	return j;
}

static const struct op_arg *arg_at(const struct op_launch *l, long long index)
{
	for (size_t i = 0; i < l->nargs; i++)
		if (l->args[i].index == index)
			return &l->args[i];
	return NULL;
}

static json_t *memory_table(const struct op_launch *l, bool *bad)
{
	/* The design's convention: one header per column, the first naming
	 * the rows' `name`; `size` counts that column, `value` does not. */
	static const char *const headers[] = {
		"buffer", "bytes", "flags", "backed up", "bytes read", "read basis",
		"bytes written", "write basis", "share of traffic (%)",
		"bandwidth (GB/s)", NULL
	};
	json_t *j = json_object(), *blocks = json_array(), *blk = json_object(),
	       *tables = json_array(), *t = json_object(), *hdr = json_array(),
	       *rows = json_array(), *size = json_array();
	double total = l->bytes_read + l->bytes_written;
	size_t ncols = 0;

	if (!j || !blocks || !blk || !tables || !t || !hdr || !rows || !size) {
		json_t *all[] = { j, blocks, blk, tables, t, hdr, rows, size };

		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			json_decref(all[i]);
		*bad = true;
		return NULL;
	}
	for (; headers[ncols]; ncols++)
		push(hdr, json_string(headers[ncols]), bad);
	for (size_t i = 0; i < l->nbufs; i++) {
		const struct op_buf *b = &l->bufs[i];
		const struct op_arg *a = arg_at(l, b->arg);
		json_t *row = json_object(), *v = json_array();
		double mine = b->read >= 0 && b->written >= 0 ?
			      (double)b->read + (double)b->written : NAN;
		char name[200];

		if (!row || !v) {
			json_decref(row);
			json_decref(v);
			*bad = true;
			break;
		}
		snprintf(name, sizeof(name), "arg %lld%s%s", b->arg,
			 a && a->name[0] ? " " : "", a ? a->name : "");
		put(row, "name", ks_json_text(name), bad);
		push(v, jint(b->bytes >= 0 ? b->bytes : a ? a->buf_bytes : -1), bad);
		push(v, ks_json_text(a ? a->flags : ""), bad);
		push(v, b->backed_up < 0 ? json_null() : json_boolean(b->backed_up), bad);
		push(v, jint(b->read), bad);
		push(v, ks_json_text(b->read_basis), bad);
		push(v, jint(b->written), bad);
		push(v, ks_json_text(b->write_basis), bad);
		push(v, jnum(total > 0 ? mine / total * 100 : NAN, 2), bad);
		push(v, jnum(l->median_us > 0 ? mine / (l->median_us * 1e3) : NAN, 3), bad);
		put(row, "value", v, bad);
		push(rows, row, bad);
	}
	push(size, json_integer((json_int_t)json_array_size(rows)), bad);
	push(size, json_integer((json_int_t)ncols), bad);
	put(t, "table_name", json_string("Buffers"), bad);
	put(t, "size", size, bad);
	put(t, "header_name", hdr, bad);
	put(t, "row", rows, bad);
	push(tables, t, bad);
	put(blk, "block_id", json_integer(0), bad);
	put(blk, "table_op_type", json_string(ks_oppost_is_cuda(l) ? "cuda" : "opencl"), bad);
	put(blk, "table_detail", tables, bad);
	put(blk, "advice", json_array(), bad);
	push(blocks, blk, bad);
	put(j, "table_per_block", blocks, bad);
	put(j, "advice", json_array(), bad);
	return j;
}

static json_t *roofline_entry(double bw_gbps, const char *bw_name, double gflops,
			      const char *cname, const struct op_launch *l, bool *bad)
{
	json_t *r = json_object(), *pt = json_array();

	if (!r || !pt) {
		json_decref(r);
		json_decref(pt);
		*bad = true;
		return NULL;
	}
	put(r, "bw", jnum(bw_gbps, 3), bad);
	put(r, "bw_name", ks_json_text(bw_name), bad);
	put(r, "computility", jnum(gflops, 3), bad);
	put(r, "computility_name", ks_json_text(cname), bad);
	push(pt, jnum(l->intensity, 6), bad);
	push(pt, jnum(l->gflops, 3), bad);
	put(r, "point", pt, bad);
	return r;
}

/* One chart for the launch's device: each memory ceiling under the
 * device's compute ceiling, and each other compute ceiling over the
 * memory ceiling that binds (DRAM). */
static json_t *roofline(const struct op_launch *l, const struct ks_calib *c, bool *bad)
{
	json_t *j = json_object(), *charts = json_array(), *chart = json_object(),
	       *lines = json_array();
	char title[400];

	if (!j || !charts || !chart || !lines) {
		json_decref(j);
		json_decref(charts);
		json_decref(chart);
		json_decref(lines);
		*bad = true;
		return NULL;
	}
	/* A CUDA kernel's chart has the GPU's DRAM and the GPU's compute
	 * ceilings only; a CPU or OpenCL kernel's never a CUDA device's. */
	bool cuda = ks_oppost_is_cuda(l);

	if (cuda)
		push(lines, roofline_entry(l->mem_ceiling_gbps, l->mem_ceiling_name,
					   l->compute_ceiling_gflops,
					   l->compute_ceiling_name, l, bad), bad);
	for (size_t i = 0; !cuda && i < c->nmem && i < KS_CALIB_MAX; i++)
		if (c->mem[i].per_s > 0)
			push(lines, roofline_entry(c->mem[i].per_s / 1e9, c->mem[i].name,
						   l->compute_ceiling_gflops,
						   l->compute_ceiling_name, l, bad), bad);
	for (size_t i = 0; i < c->ncompute && i < KS_CALIB_MAX; i++) {
		const char *name = c->compute[i].name;
		/* "CUDA FP16 FMA (NVIDIA H200)" belongs to "NVIDIA H200". */
		const char *open = strchr(name, '(');
		bool cuda_line = strncmp(name, "CUDA ", 5) == 0;
		bool this_device = cuda_line && open &&
				   strncmp(open + 1, l->device_name, strlen(l->device_name)) == 0 &&
				   strcmp(open + 1 + strlen(l->device_name), ")") == 0;

		if (c->compute[i].per_s > 0 && cuda_line == cuda && (!cuda || this_device) &&
		    strcmp(name, l->compute_ceiling_name) != 0)
			push(lines, roofline_entry(l->mem_ceiling_gbps, l->mem_ceiling_name,
						   c->compute[i].per_s / 1e9, name, l, bad),
			     bad);
	}
	snprintf(title, sizeof(title), "%s (%s)",
		 l->device_name[0] ? l->device_name : "unknown device",
		 cuda ? "CUDA" : "OpenCL");
	put(chart, "title", ks_json_text(title), bad);
	put(chart, "rooflines", lines, bad);
	put(chart, "binding", ks_json_text(l->binding), bad);
	push(charts, chart, bad);
	put(j, "multiple_rooflines", charts, bad);
	return j;
}

/* Appends block type with j's text; takes j. */
static int write_block(struct ks_vb_writer *w, unsigned type, json_t *j, bool bad,
		       struct ks_err *err)
{
	struct ks_vb_error verr;
	char *text = !bad && j ? json_dumps(j, DUMP_FLAGS) : NULL;
	int rc;

	json_decref(j);
	if (!text)
		return ks_err_set(err, -ENOMEM, "visualize_data.bin: out of memory");
	rc = ks_vb_write(w, type, KS_VB_VERSION, NULL, text, strlen(text), &verr);
	free(text);
	if (rc)
		return ks_err_set(err, rc, "visualize_data.bin: %s", verr.msg);
	return 0;
}

int ks_oppost_write_viz(struct ks_rundir *rd, const struct op_launch *l,
			const struct ks_oppost_opts *o, struct ks_err *err)
{
	struct ks_vb_writer *w = NULL;
	struct ks_vb_error verr;
	struct ks_outfile of;
	bool bad = false;
	int rc = ks_outfile_open(rd, "visualize_data.bin", &of, err);

	if (rc)
		return rc;
	rc = ks_vb_writer_open(of.fd, &w, &verr);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "visualize_data.bin: %s", verr.msg);
	}
	rc = write_block(w, KS_VB_BASE_INFO, basic_info(l, o, &bad), bad, err);
	if (!rc)
		rc = write_block(w, KS_VB_MEMORY_GRAPH, memory_graph(l, &bad), bad, err);
	if (!rc)
		rc = write_block(w, KS_VB_MEMORY_TABLE, memory_table(l, &bad), bad, err);
	if (!rc && l->roofline)
		rc = write_block(w, KS_VB_ROOFLINE, roofline(l, o->calib, &bad), bad, err);
	ks_vb_writer_free(w);
	if (rc) {
		ks_outfile_abort(&of);
		return rc;
	}
	return ks_oppost_commit(rd, &of, o, err);
}
