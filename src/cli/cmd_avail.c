/*
 * kscope avail: what this machine offers kscope, each item marked
 * available or not, tested here and now: components (samplers, stack
 * walkers, wrappers), every command's options with their environment
 * variables and defaults (read from the option tables, the same ones the
 * parser and --help use), and the counters perf_event_open accepts.
 */
#include <dlfcn.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "counters.h"
#include "log.h"
#include "runprog.h"

struct avail_opts {
	struct ks_common_opts common;
	bool components, options, counters;
	int format;
};

static const char *const format_choices[] = { "text", "json", NULL };

static const struct ks_opt avail_opts[] = {
	{ .name = "components", .short_name = 'c', .type = KS_OPT_FLAG,
	  .env = "KSCOPE_AVAIL_COMPONENTS", .help = "list the components",
	  .offset = offsetof(struct avail_opts, components) },
	{ .name = "options", .short_name = 'O', .type = KS_OPT_FLAG,
	  .env = "KSCOPE_AVAIL_OPTIONS",
	  .help = "list every command's options, environment variables and defaults",
	  .offset = offsetof(struct avail_opts, options) },
	{ .name = "counters", .short_name = 'C', .type = KS_OPT_FLAG,
	  .env = "KSCOPE_AVAIL_COUNTERS",
	  .help = "list the counters and whether this machine has them",
	  .offset = offsetof(struct avail_opts, counters) },
	{ .name = "format", .type = KS_OPT_ENUM, .metavar = "FMT", .def = "text",
	  .env = "KSCOPE_AVAIL_FORMAT", .help = "text or JSON",
	  .offset = offsetof(struct avail_opts, format), .choices = format_choices },
	KS_COMMON_OPTS(struct avail_opts),
	KS_OPT_END
};

/* One line of the listing. */
struct item {
	const char *group, *name;
	bool available;
	char detail[4352];
};

/* ------------------------------------------------------------------ */
/* Probes                                                              */
/* ------------------------------------------------------------------ */

static bool probe_timer(clockid_t clock, char *why, size_t size)
{
	struct sigevent sev;
	timer_t t;

	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_NONE;
	if (timer_create(clock, &sev, &t) != 0) {
		snprintf(why, size, "timer_create: %s", strerror(errno));
		return false;
	}
	timer_delete(t);
	snprintf(why, size, "per-thread POSIX timer");
	return true;
}

static bool probe_library(const char *const *names, char *why, size_t size)
{
	for (int i = 0; names[i]; i++) {
		void *h = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);

		if (h) {
			dlclose(h);
			snprintf(why, size, "%s found", names[i]);
			return true;
		}
	}
	snprintf(why, size, "%s not found", names[0]);
	return false;
}

static size_t components(struct item *it, size_t max)
{
	static const char *const unwind[] = { "libunwind.so.8", NULL };
	static const char *const mpi[] = { "libmpi.so.40", "libmpi.so.12", "libmpi.so", NULL };
	static const char *const dw[] = { "libdw.so.1", NULL };
	char rt[PATH_MAX];
	size_t k = 0;

	it[k] = (struct item){ "sampler", "cputime", false, "" };
	it[k].available = probe_timer(CLOCK_THREAD_CPUTIME_ID, it[k].detail,
				      sizeof(it[k].detail));
	k++;
	it[k] = (struct item){ "sampler", "realtime", false, "" };
	it[k].available = probe_timer(CLOCK_MONOTONIC, it[k].detail, sizeof(it[k].detail));
	k++;
	it[k] = (struct item){ "unwinder", "libunwind", false, "" };
	it[k].available = probe_library(unwind, it[k].detail, sizeof(it[k].detail));
	k++;
	it[k] = (struct item){ "unwinder", "fp", true,
			       "frame pointers (programs built with -fno-omit-frame-pointer)" };
	k++;
	it[k] = (struct item){ "symbolizer", "libdw", false, "" };
	it[k].available = probe_library(dw, it[k].detail, sizeof(it[k].detail));
	k++;
	it[k] = (struct item){ "wrapper", "pthread", true, "pthread_create: timers for new threads" };
	k++;
	it[k] = (struct item){ "wrapper", "process", true,
			       "fork, exec, exit: a child starts clean, data flushed" };
	k++;
	it[k] = (struct item){ "wrapper", "mpi", false, "" };
	it[k].available = probe_library(mpi, it[k].detail, sizeof(it[k].detail));
	k++;
	it[k] = (struct item){ "runtime", "libkscope.so", false, "" };
	it[k].available = ks_find_own_file("libkscope.so", R_OK, "libkscope.so", rt, sizeof(rt),
					   NULL) == 0;
	snprintf(it[k].detail, sizeof(it[k].detail), "%s", rt);
	k++;
	(void)max;
	return k;
}

static size_t counters(struct item *it, size_t max)
{
	size_t k = 0;

	for (const struct ks_counter_def *c = ks_counter_defs; c->name && k < max; c++, k++) {
		int rc = ks_counter_probe(c);

		it[k].group = c->type == 0 ? "hardware" : "software";
		it[k].name = c->name;
		it[k].available = rc == 0;
		if (rc == 0) {
			snprintf(it[k].detail, sizeof(it[k].detail), "%s", c->help);
		} else {
			char why[256];

			ks_counter_why(c, rc, why, sizeof(why));
			snprintf(it[k].detail, sizeof(it[k].detail), "%s; not supported "
				 "here: %s", c->help, why);
		}
	}
	return k;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static void print_items(const char *title, const struct item *it, size_t n)
{
	printf("%s:\n", title);
	for (size_t i = 0; i < n; i++)
		printf("  %-3s %-10s %-20s %s\n", it[i].available ? "yes" : "no",
		       it[i].group, it[i].name, it[i].detail);
}

static json_t *items_json(const struct item *it, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:s, s:b, s:s}", "group",
						   it[i].group, "name", it[i].name,
						   "available", it[i].available,
						   "detail", it[i].detail));
	return a;
}

static json_t *options_json(void)
{
	json_t *a = json_array();
	char accepted[512];

	for (int i = 0; ks_commands[i]; i++)
		for (const struct ks_opt *o = ks_commands[i]->args.opts; o->name; o++) {
			ks_opt_describe(o, accepted, sizeof(accepted));
			json_array_append_new(a, json_pack("{s:s, s:s, s:s?, s:s?, s:s, s:s}",
				"command", ks_commands[i]->name, "option", o->name,
				"env", (o->flags & KS_OPT_HIDDEN_ENV) ? NULL : o->env,
				"default", o->def, "accepts", accepted, "help", o->help));
		}
	return a;
}

static void print_options(void)
{
	printf("options (command, option, environment variable, default):\n");
	for (int i = 0; ks_commands[i]; i++)
		for (const struct ks_opt *o = ks_commands[i]->args.opts; o->name; o++) {
			if (o->flags & KS_OPT_HIDDEN_ENV)
				continue;
			printf("  %-8s --%-17s %-28s %s\n", ks_commands[i]->name, o->name,
			       o->env, o->def ? o->def : "-");
		}
}

static int avail_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct avail_opts *o = p->opts;
	bool all = !o->components && !o->options && !o->counters;
	static struct item comp[16], cnt[32]; /* large: not on the stack */
	size_t ncomp = 0, ncnt = 0;

	(void)cmd;
	if (all || o->components)
		ncomp = components(comp, 16);
	if (all || o->counters)
		ncnt = counters(cnt, 32);
	if (o->format == 1) {
		json_t *root = json_object();
		char *text;

		if (all || o->components)
			json_object_set_new(root, "components", items_json(comp, ncomp));
		if (all || o->options)
			json_object_set_new(root, "options", options_json());
		if (all || o->counters)
			json_object_set_new(root, "counters", items_json(cnt, ncnt));
		text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		json_decref(root);
		if (!text) {
			ks_error("out of memory");
			return KS_EXIT_FAIL;
		}
		puts(text);
		free(text);
		return KS_EXIT_OK;
	}
	if (ncomp)
		print_items("components", comp, ncomp);
	if (all || o->options)
		print_options();
	if (ncnt)
		print_items("counters (perf_event_open)", cnt, ncnt);
	return KS_EXIT_OK;
}

const struct ks_cmd ks_cmd_avail = {
	.name = "avail",
	.summary = "list what this machine offers: components, options, counters",
	.usage = "[--components] [--options] [--counters] [--format FMT]",
	.description =
		"Lists, each marked available (yes) or not (no) on this machine:\n"
		"the components kscope sample uses (samplers, stack walkers,\n"
		"symbolizer, wrappers), every command's options with their\n"
		"environment variables and defaults, and the hardware and software\n"
		"counters perf_event_open accepts here.  Without a selection, all.",
	.args = {
		.opts = avail_opts,
		.opts_size = sizeof(struct avail_opts),
	},
	.run = avail_run,
};
