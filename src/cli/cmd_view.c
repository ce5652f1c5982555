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
#include <sys/random.h>
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
	char *token;
	bool no_token;
	struct ks_strlist source_dirs;
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
	{ .name = "token", .type = KS_OPT_STRING, .metavar = "TOKEN",
	  .env = "KSCOPE_VIEW_TOKEN",
	  .help = "the secret every request must carry (default: a random one, in "
		  "the printed URL): 16 to 128 letters, digits, '-', '_', '.', '~'",
	  OPT(token), .max_len = KS_VIEW_TOKEN_MAX },
	{ .name = "no-token", .type = KS_OPT_FLAG, .env = "KSCOPE_VIEW_NO_TOKEN",
	  .help = "ask no token: anyone on this machine can read the results "
		  "(loopback --host only)", OPT(no_token) },
	{ .name = "source-dir", .type = KS_OPT_PATH, .metavar = "DIR",
	  .env = "KSCOPE_VIEW_SOURCE_DIR",
	  .flags = KS_OPT_REPEAT | KS_PATH_DIR | KS_PATH_READ,
	  .help = "also serve source files the results name under DIR (PATH's own "
		  "directory always)", OPT(source_dirs) },
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

/* A token from the command line: 16 to 128 characters that need no
 * escaping in a URL or a cookie. */
static bool token_valid(const char *t)
{
	size_t n = strlen(t);

	if (n < 16 || n > KS_VIEW_TOKEN_MAX)
		return false;
	for (const char *c = t; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || strchr("-_.~", *c)))
			return false;
	return true;
}

/* 24 random bytes from the kernel, in hex: buf holds 49 bytes. */
static int random_token(char *buf)
{
	unsigned char r[24];
	size_t got = 0;

	while (got < sizeof r) {
		ssize_t n = getrandom(r + got, sizeof r - got, 0);

		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(buf + 2 * i, 3, "%02x", r[i]);
	return 0;
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
	char dir[PATH_MAX], token[KS_VIEW_TOKEN_MAX + 1] = "";
	struct ks_view_import_opts io = { 0 };
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
	if (o->no_token && o->token) {
		ks_error("options --no-token and --token contradict each other: give one");
		return KS_EXIT_USAGE;
	}
	if (o->no_token && !ks_view_host_is_loopback(o->host)) {
		ks_error("option --no-token: only with a loopback --host (127.0.0.1): on %s "
			 "anyone who reaches this machine could read the results", o->host);
		return KS_EXIT_USAGE;
	}
	if (o->token && !token_valid(o->token)) {
		ks_error("option --token: not a token kscope view takes; accepted: 16 to %d "
			 "characters among letters, digits, '-', '_', '.' and '~'",
			 KS_VIEW_TOKEN_MAX);
		return KS_EXIT_USAGE;
	}
	if (o->token)
		snprintf(token, sizeof token, "%s", o->token);
	else if (!o->no_token && (rc = random_token(token)) < 0) {
		ks_error("cannot make a token: getrandom: %s", strerror(-rc));
		return KS_EXIT_FAIL;
	}
	rc = page_dir(dir, sizeof dir);
	if (rc != KS_EXIT_OK)
		return rc;
	io.source_dirs = (const char *const *)o->source_dirs.v;
	io.nsource_dirs = o->source_dirs.n;

	ks_err_clear(&err);
	clock_gettime(CLOCK_MONOTONIC, &progress_start);
	progress_last = progress_start;
	if (ks_view_import(path, &io, &v, progress, &err) != 0) {
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

	if (ks_view_serve_start(v, o->host, (int)o->port, dir, token, &srv, &err) != 0) {
		ks_error("%s", err.msg);
		ks_view_free(v);
		return err.code == -EINVAL ? KS_EXIT_USAGE : KS_EXIT_FAIL;
	}
	if (!ks_view_host_is_loopback(o->host))
		ks_warn("listening on %s, not on a loopback address: anyone who can reach "
			"this machine can read these results", o->host);
	ks_debug("view: %zu card%s, %zu page files from %s", v->ncards,
		 v->ncards == 1 ? "" : "s", ks_view_server_files(srv), dir);
	if (o->no_token)
		ks_warn("--no-token: every user of this machine can read these results "
			"at this address");
	/* 0.0.0.0 is no address to open: this machine's own is. */
	printf("kscope: view: http://%s:%d/%s%s (Ctrl+C stops)\n",
	       strcmp(o->host, "0.0.0.0") ? o->host : "127.0.0.1", ks_view_server_port(srv),
	       token[0] ? "?token=" : "", token);
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
	.usage = "[--host ADDR] [--port N] [--token TOKEN] [--source-dir DIR]... PATH",
	.description =
		"Reads PATH once -- a run directory of any kscope command, a\n"
		"visualize_data.bin, a Chrome trace JSON (Trace Event Format), a\n"
		"profile.db or a memory tool's report.json -- and serves it, with the\n"
		"viewer's page, at http://ADDR:N/ until Ctrl+C or SIGTERM; prints the\n"
		"URL first, with the run's secret token: only who has it can read the\n"
		"results.  Source files are served from PATH's directory and\n"
		"--source-dir only.  The page shows the timeline, source hot spots,\n"
		"memory and compute details, the roofline, sampled profiles, memory\n"
		"findings, predictions and causal speedup curves, whichever the data\n"
		"has.  Nothing is written.\n"
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
