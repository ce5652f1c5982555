/*
 * kscope view: imports one result (a run directory, a visualize_data.bin,
 * a Chrome trace JSON or a profile.db) and serves it with the viewer's page
 * on a local web server until Ctrl+C (docs/view.md).
 *
 * The import (ks_view_import) and the server (view_http.h) are src/view's;
 * this file checks the command line, finds the page's files next to the
 * executable, prints the URL and waits for SIGINT or SIGTERM in the main
 * thread with sigwait: the signals are blocked before the server's threads
 * start, so they inherit the mask and only the main thread ever takes them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "argcheck.h"
#include "cli.h"
#include "log.h"
#include "sharedir.h"
#include "view.h"
#include "view_http.h"

struct view_opts {
	struct ks_common_opts common;
	char *host;
	int64_t port;
};

#define OPT(f) .offset = offsetof(struct view_opts, f)

static const struct ks_opt view_opts[] = {
	{ .name = "host", .type = KS_OPT_STRING, .metavar = "ADDR", .def = "127.0.0.1",
	  .env = "KSCOPE_VIEW_HOST",
	  .help = "the IPv4 address to listen on (anything but a loopback address "
		  "lets others read the results)",
	  OPT(host), .max_len = 15 },
	{ .name = "port", .type = KS_OPT_INT, .metavar = "N", .def = "8080",
	  .env = "KSCOPE_VIEW_PORT", .help = "the port to listen on; 0 picks a free one",
	  OPT(port), .min = 0, .max = 65535 },
	KS_COMMON_OPTS(struct view_opts),
	KS_OPT_END
};

static const struct ks_opt view_path = {
	.name = "PATH", .type = KS_OPT_PATH, .metavar = "PATH", .flags = KS_PATH_READ,
};

/* The import's progress callback has no context argument (view.h), so its
 * pacing lives here: one line at most every second, and none at all for
 * data that imports within a second. */
static struct timespec progress_start, progress_last;

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress(const char *line)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (since(&progress_start, &now) < 1.0 || since(&progress_last, &now) < 1.0)
		return;
	progress_last = now;
	ks_info("view: %s", line);
}

/* The page's directory: KSCOPE_VIEW_PAGE_DIR (for working on the page),
 * else share/kscope/view next to the executable. */
static int page_dir(char *buf, size_t size)
{
	const char *env = getenv("KSCOPE_VIEW_PAGE_DIR");
	char tried[4096];

	if (env && *env) {
		if (!realpath(env, buf)) {
			char q[256];

			ks_quote(q, sizeof q, env, strlen(env));
			ks_error("environment KSCOPE_VIEW_PAGE_DIR: '%s': %s; accepted: the "
				 "directory of the viewer's page (share/kscope/view)", q,
				 strerror(errno));
			return KS_EXIT_USAGE;
		}
		return KS_EXIT_OK;
	}
	if (ks_share_find("view", "index.html", buf, size) != 0) {
		ks_share_find("view", "index.html", tried, sizeof tried);
		ks_error("the viewer's page is not installed: no index.html in %s "
			 "(reinstall kscope, or set KSCOPE_VIEW_PAGE_DIR)",
			 tried[0] ? tried : "share/kscope/view next to kscope");
		return KS_EXIT_FAIL;
	}
	return KS_EXIT_OK;
}

static int view_run(const struct ks_cmd *cmd, struct ks_parsed *p)
{
	const struct view_opts *o = p->opts;
	const char *path = p->positional[0];
	struct ks_view *v = NULL;
	struct ks_view_server *srv = NULL;
	struct ks_err err;
	struct in_addr addr;
	struct timespec t1;
	char dir[PATH_MAX];
	sigset_t set;
	int sig = 0, rc;

	(void)cmd;
	if (inet_pton(AF_INET, o->host, &addr) != 1) {
		char q[64];

		ks_quote(q, sizeof q, o->host, strlen(o->host));
		ks_error("option --host: '%s' is not an IPv4 address; accepted: an address "
			 "such as 127.0.0.1 (this machine only) or 0.0.0.0 (every "
			 "interface)", q);
		return KS_EXIT_USAGE;
	}
	rc = page_dir(dir, sizeof dir);
	if (rc != KS_EXIT_OK)
		return rc;

	ks_err_clear(&err);
	clock_gettime(CLOCK_MONOTONIC, &progress_start);
	progress_last = progress_start;
	if (ks_view_import(path, &v, progress, &err) != 0) {
		ks_error("%s", err.msg);
		return err.code == -ENOMEM || err.code == -EIO ? KS_EXIT_FAIL
							       : KS_EXIT_USAGE;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (since(&progress_start, &t1) >= 1.0)
		ks_info("view: %s imported in %.1f s (%zu card%s)", path,
			since(&progress_start, &t1), v->ncards, v->ncards == 1 ? "" : "s");

	/* Blocked before the server's threads exist: they inherit the mask. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (ks_view_serve_start(v, o->host, (int)o->port, dir, &srv, &err) != 0) {
		ks_error("%s", err.msg);
		ks_view_free(v);
		return err.code == -EINVAL ? KS_EXIT_USAGE : KS_EXIT_FAIL;
	}
	if (!ks_view_host_is_loopback(o->host))
		ks_warn("listening on %s, not on a loopback address: anyone who can reach "
			"this machine can read these results", o->host);
	ks_debug("view: %zu card%s, %zu page files from %s", v->ncards,
		 v->ncards == 1 ? "" : "s", ks_view_server_files(srv), dir);
	printf("kscope: view: http://%s:%d/ (Ctrl+C stops)\n", o->host,
	       ks_view_server_port(srv));
	fflush(stdout);
	ks_log_flush();

	while (sigwait(&set, &sig) != 0)
		;
	ks_debug("view: signal %d, stopping", sig);
	ks_view_server_stop(srv);
	ks_view_free(v);
	return KS_EXIT_OK;
}

const struct ks_cmd ks_cmd_view = {
	.name = "view",
	.summary = "show any kscope result in a web page served from this machine",
	.usage = "[--host ADDR] [--port N] PATH",
	.description =
		"Reads PATH once -- a run directory of any kscope command, a\n"
		"visualize_data.bin, a Chrome trace JSON (Trace Event Format), a\n"
		"profile.db or a memory tool's report.json -- and serves it, with the\n"
		"viewer's page, at http://ADDR:N/ until Ctrl+C or SIGTERM; prints the\n"
		"URL first.  The page shows the timeline, source hot spots, memory and\n"
		"compute details, the roofline, sampled profiles, memory findings and\n"
		"predictions, whichever the data has.  Nothing is written.\n"
		"docs/view.md has the page and the JSON API it uses (POST /api,\n"
		"WebSocket /ws).",
	.args = {
		.opts = view_opts,
		.opts_size = sizeof(struct view_opts),
		.positional = &view_path,
		.pos_min = 1,
		.pos_max = 1,
	},
	.run = view_run,
};
