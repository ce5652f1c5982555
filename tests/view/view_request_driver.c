/*
 * view_request_driver.c: kscope view's import and request handling
 * without the HTTP server, for tests.
 *
 *   view_request_driver PATH < requests
 *
 * Imports PATH (progress lines on stderr), then reads one JSON request
 * per line of stdin and prints one response per line on stdout, as
 * ks_view_request gives it.  When the import fails it prints
 * "error: MESSAGE" on stdout and exits 1, so tests can compare the
 * message.  Test-only code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view.h"

static void progress(const char *line)
{
	fprintf(stderr, "progress: %s\n", line);
}

int main(int argc, char **argv)
{
	struct ks_view *v = NULL;
	struct ks_err err = { 0 };
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	struct ks_view_import_opts io = { 0 };

	if (argc < 2) {
		fprintf(stderr, "usage: view_request_driver PATH [SOURCE_DIR...] < requests\n");
		return 2;
	}
	io.source_dirs = (const char *const *)argv + 2;
	io.nsource_dirs = (size_t)argc - 2;
	if (ks_view_import(argv[1], &io, &v, progress, &err) < 0) {
		printf("error: %s\n", err.msg);
		return 1;
	}
	while ((n = getline(&line, &cap, stdin)) > 0) {
		size_t len = 0;
		char *r;

		if (line[n - 1] == '\n')
			line[--n] = '\0';
		r = ks_view_request(v, line, (size_t)n, &len);
		if (!r) {
			fprintf(stderr, "view_request_driver: out of memory\n");
			break;
		}
		fwrite(r, 1, len, stdout);
		putchar('\n');
		fflush(stdout);
		free(r);
	}
	free(line);
	ks_view_free(v);
	return 0;
}
