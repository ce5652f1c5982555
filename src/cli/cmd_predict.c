/*
 * kscope predict: reads a model (docs/predict.md), schedules it on the
 * chip's pipes, writes the outputs into a run directory and prints the
 * predicted time.  The work is ks_predict's (include/kscope/predict.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "kscope/predict.h"
#include "log.h"
#include "outdir.h"
#include "pred_int.h"

struct predict_opts {
	struct ks_common_opts common;
	char *chip;
	struct ks_strlist defs;
	char *measured;
	char *output;
	bool no_trace, no_metrics;
};

#define OPT(f) .offset = offsetof(struct predict_opts, f)

static const struct ks_opt predict_opts[] = {
	{ .name = "chip", .type = KS_OPT_STRING, .metavar = "NAME|FILE",
	  .env = "KSCOPE_PREDICT_CHIP",
	  .help = "the chip model (a name such as ascend910b or host, or a chip file); "
		  "replaces the model's chip statement",
	  OPT(chip), .max_len = 4095 },
	{ .name = "define", .short_name = 'D', .type = KS_OPT_STRING, .metavar = "KEY=VALUE",
	  .env = "KSCOPE_PREDICT_DEFINE",
	  .help = "set the model's param KEY to the integer VALUE",
	  OPT(defs), .flags = KS_OPT_REPEAT | KS_OPT_HIDDEN_ENV, .max_len = 200 },
	{ .name = "measured", .type = KS_OPT_PATH, .metavar = "FILE",
	  .env = "KSCOPE_PREDICT_MEASURED",
	  .help = "measured times to compare with: a kscope op launch directory or its "
		  "Timing.csv, a CSV with the columns Pipe,Time (us), or msprof's "
		  "op_summary or PipeUtilization CSV",
	  OPT(measured), .flags = KS_PATH_READ },
	{ .name = "no-trace", .type = KS_OPT_FLAG, .env = "KSCOPE_PREDICT_NO_TRACE",
	  .help = "do not write the pipeline chart (trace.json, visualize_data.bin): "
		  "most of a large model's time goes into writing it", OPT(no_trace) },
	{ .name = "no-metrics", .type = KS_OPT_FLAG, .env = "KSCOPE_PREDICT_NO_METRICS",
	  .help = "do not write the statistics (Pipe_statistic.csv, "
		  "Instruction_statistic.csv, instruction_time.svg)", OPT(no_metrics) },
	{ .name = "output", .short_name = 'o', .type = KS_OPT_OUTPUT, .metavar = "DIR",
	  .def = "kscope-out", .env = "KSCOPE_OUTPUT",
	  .help = "where the run directory is created", OPT(output) },
	KS_COMMON_OPTS(struct predict_opts),
	KS_OPT_END
};

static const struct ks_opt predict_model = {
	.name = "MODEL", .type = KS_OPT_PATH, .metavar = "MODEL.kpp",
	.flags = KS_PATH_FILE | KS_PATH_READ,
};

/* Splits the -D values into keys and values (pointing into the strings). */
static int split_defs(struct ks_strlist *d, const char ***keys, const char ***vals)
{
	*keys = calloc(d->n + 1, sizeof(char *));
	*vals = calloc(d->n + 1, sizeof(char *));
	if (!*keys || !*vals) {
		ks_error("out of memory");
		return -1;
	}
	for (size_t i = 0; i < d->n; i++) {
		char *eq = strchr(d->v[i], '=');

		if (!eq || eq == d->v[i] || !eq[1]) {
			ks_error("option -D: '%s' is not KEY=VALUE; accepted: a param's name, "
				 "'=', and an integer (e.g. -D N=4096)", d->v[i]);
			return -1;
		}
		*eq = '\0';
		(*keys)[i] = d->v[i];
		(*vals)[i] = eq + 1;
	}
	return 0;
}

static double secs(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void print_warnings(const char *w)
{
	while (*w) {
		const char *nl = strchr(w, '\n');
		int len = nl ? (int)(nl - w) : (int)strlen(w);

		ks_warn("%.*s", len, w);
		w += len + (nl ? 1 : 0);
	}
}

static int predict_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	struct predict_opts *o = p->opts;
	const char **keys = NULL, **vals = NULL;
	struct ks_pred_model *m = NULL;
	struct ks_rundir rd = { .path = NULL, .dirfd = -1 };
	struct ks_err err;
	char msg[2048];
	double cycles = 0, us;
	struct timespec t0, t1, t2, t3;
	int rc = KS_EXIT_USAGE;

	(void)cmd;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (split_defs(&o->defs, &keys, &vals))
		goto out;
	m = ks_pred_parse_file(p->positional[0], o->chip, keys, vals, o->defs.n, 0, msg,
			       sizeof(msg));
	if (!m) {
		ks_error("%s", msg);
		goto out;
	}
	print_warnings(ks_pred_warnings(m));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ks_pred_run(m, &cycles)) {
		ks_error("%s: %s", p->positional[0], ks_pred_error(m));
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t2);
	/* --measured is read before anything is written. */
	if (o->measured) {
		struct pred_measured *meas = calloc(1, sizeof(*meas));

		if (!meas || pred_measured_load(o->measured, meas, &err) ||
		    pred_measured_check(&m->chip, meas, &err)) {
			ks_error("%s", meas ? err.msg : "out of memory");
			free(meas);
			goto out;
		}
		free(meas);
	}
	rc = KS_EXIT_FAIL;
	ks_pred_set_outputs(m, (o->no_trace ? 0u : KS_PRED_OUT_TRACE) |
			       (o->no_metrics ? 0u : KS_PRED_OUT_METRICS));
	/* Neither: nothing to write, no run directory. */
	if (!(o->no_trace && o->no_metrics)) {
		if (ks_rundir_create(o->output, "predict", 0, &rd, &err)) {
			ks_error("%s", err.msg);
			goto out;
		}
		if (pred_write_rundir(m, &rd, o->measured, &err)) {
			ks_error("%s", err.msg);
			ks_rundir_discard(&rd);
			goto out;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t3);
	us = cycles / ks_pred_chip_clock_hz(m) * 1e6;
	printf("predicted time: %.3f us (%.0f cycles at %.3f GHz on %s; %zu instructions)\n",
	       us, cycles, ks_pred_chip_clock_hz(m) / 1e9, ks_pred_chip_name(m),
	       ks_pred_count(m));
	if (o->measured) {
		struct pred_measured meas;

		if (pred_measured_load(o->measured, &meas, &err) == 0 && meas.total_us >= 0)
			printf("measured: %.3f us (measured/predicted %.3f)\n", meas.total_us,
			       us > 0 ? meas.total_us / us : 0.0);
	}
	if (rd.path)
		printf("outputs: %s\n", rd.path);
	else
		printf("outputs: none (--no-trace --no-metrics)\n");
	ks_info("read and built in %.3f s, scheduled in %.3f s (%.0f instructions/s), "
		"outputs written in %.3f s; %.3f s in all", secs(&t0, &t1), secs(&t1, &t2),
		secs(&t1, &t2) > 0 ? (double)ks_pred_count(m) / secs(&t1, &t2) : 0.0,
		secs(&t2, &t3), secs(&t0, &t3));
	ks_rundir_close(&rd);
	rc = KS_EXIT_OK;
out:
	ks_pred_model_free(m);
	free(keys);
	free(vals);
	return rc;
}

const struct ks_cmd ks_cmd_predict = {
	.name = "predict",
	.summary = "predict a kernel's time from a model of its tensors and instructions",
	.usage = "[--chip NAME|FILE] [-D KEY=VALUE]... [--measured FILE] [-o DIR] MODEL.kpp",
	.description =
		"Reads MODEL.kpp, a kernel described as tensors (where they live, their\n"
		"type and shape) and instructions (loads between memory spaces, vector\n"
		"and matrix instructions, scalar work), and schedules the instructions on\n"
		"the chip's pipes with a discrete-event model whose costs come from the\n"
		"chip file's measured throughput tables.  Prints the predicted time and\n"
		"writes trace.json (the pipeline chart), Pipe_statistic.csv,\n"
		"Instruction_statistic.csv, instruction_time.svg and visualize_data.bin\n"
		"into a new run directory (--no-trace, --no-metrics leave parts out).  Chips: ascend910b (from public figures) and\n"
		"host (written by kscope calibrate).  docs/predict.md has the language,\n"
		"the chip files and the scheduler.",
	.args = { .opts = predict_opts, .opts_size = sizeof(struct predict_opts),
		  .positional = &predict_model, .pos_min = 1, .pos_max = 1 },
	.run = predict_run,
};
