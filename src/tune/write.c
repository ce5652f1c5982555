/*
 * kscope tune's deliverables: tune.csv (one row per configuration, in the
 * result's order, times in microseconds) and tune.json (the same rows
 * with every measured sample in nanoseconds, what was asked, and the best
 * configuration).  Both are written through ks_outfile: under a temporary
 * name, renamed when complete, never replacing a file.  JSON strings go
 * through ks_text_json_str, because a build's output may be any bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "outdir.h"
#include "textout.h"
#include "tune_int.h"

static double us(double ns)
{
	return ns < 0 ? -1 : ns / 1000.0;
}

/* A number of the CSV, empty when unknown (< 0). */
static void csv_num(struct ks_text *t, double v, int prec)
{
	if (v < 0)
		ks_text_puts(t, ",");
	else
		ks_csv_num(t, v, prec);
}

static void write_csv(struct ks_text *t, const struct ks_tune_result *r)
{
	size_t rank = 0;

	ks_csv_str(t, true, "rank");
	ks_csv_str(t, false, "config");
	for (size_t k = 0; k < r->nkeys; k++)
		ks_csv_str(t, false, r->keys[k]);
	ks_text_puts(t, ",status,median (us),p20 (us),p80 (us),runs,timing,"
		     "ci low (us),ci high (us),tie");
	if (r->predict)
		ks_text_puts(t, ",predicted (us),predicted rank");
	if (r->strategy == KS_TUNE_MODEL)
		ks_text_puts(t, ",sampled,spearman");
	ks_text_puts(t, ",cached,order,message,output");
	ks_csv_end(t);
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];

		if (ks_tune_row_measured(w))
			ks_text_u64(t, ++rank);
		ks_csv_u64(t, w->config);
		for (size_t k = 0; k < r->nkeys; k++)
			ks_csv_str(t, false, w->values[k]);
		ks_csv_str(t, false, ks_tune_status_name(w->status));
		csv_num(t, us(w->median_ns), 3);
		csv_num(t, us(w->p20_ns), 3);
		csv_num(t, us(w->p80_ns), 3);
		ks_csv_u64(t, w->runs);
		ks_csv_str(t, false, ks_tune_timing_name(w->timing));
		csv_num(t, us(w->ci_lo_ns), 3);
		csv_num(t, us(w->ci_hi_ns), 3);
		ks_csv_str(t, false, w->tie ? "yes" : "");
		if (r->predict) {
			csv_num(t, w->predicted_us, 3);
			ks_csv_u64(t, w->predicted_rank);
		}
		if (r->strategy == KS_TUNE_MODEL) {
			/* The run's correlation, on every row: a CSV has no
			 * other place for it. */
			ks_csv_str(t, false, w->sampled ? "yes" : "");
			if (r->has_spearman)
				ks_csv_num(t, r->spearman, 3);
			else
				ks_text_puts(t, ",");
		}
		ks_csv_str(t, false, w->cached ? "yes" : "");
		if (w->eval_order)
			ks_csv_u64(t, w->eval_order);
		else
			ks_text_puts(t, ",");
		ks_csv_str(t, false, w->message);
		ks_csv_str(t, false, w->output);
		ks_csv_end(t);
	}
}

static void json_value(struct ks_text *t, const char *v, bool is_int)
{
	if (is_int)
		ks_text_printf(t, "%lld", strtoll(v, NULL, 10)); /* no leading zeros */
	else
		ks_text_json_str(t, v);
}

static void json_values(struct ks_text *t, const struct ks_tune_result *r,
			const struct ks_tune_row *w)
{
	ks_text_puts(t, "{");
	for (size_t k = 0; k < r->nkeys; k++) {
		if (k)
			ks_text_puts(t, ", ");
		ks_text_json_str(t, r->keys[k]);
		ks_text_puts(t, ": ");
		json_value(t, w->values[k], w->is_int[k]);
	}
	ks_text_puts(t, "}");
}

static void json_ns(struct ks_text *t, double v)
{
	if (v < 0)
		ks_text_puts(t, "null");
	else
		ks_text_json_num(t, v, 1);
}

static const char *strategy_name(int s)
{
	switch (s) {
	case KS_TUNE_RANDOM: return "random";
	case KS_TUNE_ANNEAL: return "anneal";
	case KS_TUNE_MODEL: return "model";
	default: return "exhaustive";
	}
}

static void write_json(struct ks_text *t, const struct ks_tune_result *r)
{
	size_t rank = 0;

	ks_text_puts(t, "{\n  \"source\": ");
	ks_text_json_str(t, r->src);
	ks_text_puts(t, ",\n  \"build\": ");
	ks_text_json_str(t, r->build);
	ks_text_puts(t, ",\n  \"run\": ");
	ks_text_json_str(t, r->run);
	ks_text_printf(t, ",\n  \"warmup\": %d,\n  \"repeat\": %d,\n  \"jobs\": %d,\n"
		       "  \"run_timeout_s\": %g,\n  \"build_timeout_s\": %g,\n"
		       "  \"stop_factor\": %g,\n  \"predict\": ", r->warmup, r->repeat,
		       r->jobs, r->run_timeout_s, r->build_timeout_s, r->stop_factor);
	if (r->predict)
		ks_text_json_str(t, r->predict);
	else
		ks_text_puts(t, "null");
	if (r->predict)
		ks_text_printf(t, ",\n  \"top\": %zu", r->top);
	ks_text_puts(t, ",\n  \"verify\": ");
	if (r->verify)
		ks_text_json_str(t, r->verify);
	else
		ks_text_puts(t, "null");
	ks_text_printf(t, ",\n  \"precision_percent\": %g,\n  \"max_runs\": %d",
		       r->precision, r->max_runs);
	ks_text_printf(t, ",\n  \"strategy\": \"%s\",\n  \"max_evals\": %zu,\n"
		       "  \"seed\": %llu,\n  \"time_budget_s\": %g,\n"
		       "  \"budget_spent\": %s",
		       strategy_name(r->strategy),
		       r->max_evals, r->seed, r->time_budget_s,
		       r->budget_spent ? "true" : "false");
	if (r->strategy == KS_TUNE_MODEL) {
		ks_text_printf(t, ",\n  \"model_top\": %zu,\n  \"model_sample\": %zu,\n"
			       "  \"spearman\": ", r->model_top, r->model_sample);
		if (r->has_spearman)
			ks_text_json_num(t, r->spearman, 4);
		else
			ks_text_puts(t, "null");
		ks_text_printf(t, ",\n  \"spearman_n\": %zu,\n  \"model_agrees\": %s",
			       r->spearman_n, !r->has_spearman ? "null"
			       : r->spearman >= 0.5 ? "true" : "false");
	}
	ks_text_puts(t, ",\n  \"cache\": ");
	if (r->cache_dir)
		ks_text_json_str(t, r->cache_dir);
	else
		ks_text_puts(t, "null");
	ks_text_printf(t, ",\n  \"cached\": %zu", r->cached);
	ks_text_puts(t, ",\n  \"keys\": [");
	for (size_t k = 0; k < r->nkeys; k++) {
		if (k)
			ks_text_puts(t, ", ");
		ks_text_json_str(t, r->keys[k]);
	}
	ks_text_printf(t, "],\n  \"configurations\": %zu,\n  \"measured\": %zu,\n"
		       "  \"failed\": %zu,\n  \"not_selected\": %zu,\n"
		       "  \"interrupted\": %zu,\n  \"restricted\": %zu,\n"
		       "  \"verify_failed\": %zu,\n"
		       "  \"ties\": %zu,\n  \"search_stopped\": %s,\n  \"best\": ",
		       r->nrows, r->measured, r->failed, r->not_selected, r->interrupted,
		       r->restricted, r->verify_failed, r->ties, r->stopped_by_fd ? "true" : "false");
	if (r->best) {
		ks_text_printf(t, "{\"config\": %zu, \"values\": ", r->best->config);
		json_values(t, r, r->best);
		ks_text_puts(t, ", \"median_ns\": ");
		json_ns(t, r->best->median_ns);
		ks_text_puts(t, "}");
	} else {
		ks_text_puts(t, "null");
	}
	ks_text_puts(t, ",\n  \"rows\": [");
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ks_tune_row *w = &r->rows[i];

		ks_text_puts(t, i ? ",\n    {" : "\n    {");
		if (ks_tune_row_measured(w))
			ks_text_printf(t, "\"rank\": %zu", ++rank);
		else
			ks_text_puts(t, "\"rank\": null");
		ks_text_printf(t, ", \"config\": %zu, \"values\": ", w->config);
		json_values(t, r, w);
		ks_text_puts(t, ", \"status\": ");
		ks_text_json_str(t, ks_tune_status_name(w->status));
		ks_text_puts(t, ", \"median_ns\": ");
		json_ns(t, w->median_ns);
		ks_text_puts(t, ", \"p20_ns\": ");
		json_ns(t, w->p20_ns);
		ks_text_puts(t, ", \"p80_ns\": ");
		json_ns(t, w->p80_ns);
		ks_text_printf(t, ", \"runs\": %zu, \"samples_ns\": [", w->runs);
		for (size_t j = 0; j < w->runs; j++) {
			if (j)
				ks_text_puts(t, ", ");
			ks_text_json_num(t, w->samples_ns[j], 0);
		}
		ks_text_puts(t, "], \"timing\": ");
		ks_text_json_str(t, ks_tune_timing_name(w->timing));
		ks_text_puts(t, ", \"ci_low_ns\": ");
		json_ns(t, w->ci_lo_ns);
		ks_text_puts(t, ", \"ci_high_ns\": ");
		json_ns(t, w->ci_hi_ns);
		ks_text_printf(t, ", \"precise\": %s, \"tie\": %s",
			       w->precise ? "true" : "false", w->tie ? "true" : "false");
		if (r->predict) {
			ks_text_puts(t, ", \"predicted_us\": ");
			if (w->predicted_us < 0)
				ks_text_puts(t, "null");
			else
				ks_text_json_num(t, w->predicted_us, 3);
			ks_text_printf(t, ", \"predicted_rank\": %zu", w->predicted_rank);
		}
		if (r->strategy == KS_TUNE_MODEL)
			ks_text_printf(t, ", \"sampled\": %s", w->sampled ? "true" : "false");
		ks_text_printf(t, ", \"cached\": %s, \"order\": ",
			       w->cached ? "true" : "false");
		if (w->eval_order)
			ks_text_printf(t, "%zu", w->eval_order);
		else
			ks_text_puts(t, "null");
		ks_text_puts(t, ", \"message\": ");
		ks_text_json_str(t, w->message);
		ks_text_puts(t, ", \"output\": ");
		ks_text_json_str(t, w->output);
		ks_text_puts(t, "}");
	}
	ks_text_puts(t, "\n  ]\n}\n");
}

static int write_one(struct ks_rundir *rd, const char *name,
		     void (*fn)(struct ks_text *, const struct ks_tune_result *),
		     const struct ks_tune_result *r, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc;

	rc = ks_outfile_open(rd, name, &of, err);
	if (rc)
		return rc;
	if (ks_text_open_outfile(&t, &of) != 0) {
		ks_outfile_abort(&of);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	fn(&t, r);
	rc = ks_text_close(&t);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "cannot write '%s/%s': %s", rd->path, name,
				  strerror(-rc));
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

int ks_tune_write(const struct ks_tune_result *r, const char *dir, char *err,
		  size_t errsize)
{
	struct ks_rundir rd;
	struct ks_err e;
	int rc;

	ks_err_clear(&e);
	rd.path = strdup(dir);
	rd.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!rd.path || rd.dirfd < 0) {
		rc = rd.path ? ks_err_set(&e, -errno, "cannot open '%s': %s", dir,
					  strerror(errno))
			     : ks_err_set(&e, -ENOMEM, "out of memory");
		goto out;
	}
	rc = write_one(&rd, "tune.csv", write_csv, r, &e);
	if (rc == 0)
		rc = write_one(&rd, "tune.json", write_json, r, &e);
out:
	if (rc && err && errsize)
		snprintf(err, errsize, "%s", e.msg);
	if (rd.dirfd >= 0)
		close(rd.dirfd);
	free(rd.path);
	return rc;
}
