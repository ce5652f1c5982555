/*
 * tl_query.c: kscope view's timeline measured in-process, without HTTP --
 * the load of a trace (kv_trace_load + kv_tl_finish), its peak memory,
 * jansson's json_loadb on the same text for comparison (-j), and N
 * unit/threadTraces requests through ks_view_request at random windows
 * and zoom levels.  bench/view.sh builds and runs it (its part (c)); it
 * separates the model's cost from the server's.
 *
 *   usage: tl_query TRACE.json [N] [-j]
 *
 * Built from the timeline's sources alone (the other handler tables are
 * empty here), so it does not depend on the rest of kscope view.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "view.h"
#include "view_tl_int.h"

const struct kv_command kv_source_commands[] = { { NULL, NULL, NULL } };
const struct kv_command kv_more_commands[] = { { NULL, NULL, NULL } };

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static long maxrss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss / 1024;
}

static int dcmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct ks_err err = { 0 };
	struct kv_timeline *tl;
	struct kv_card card = { 0 };
	struct ks_view view = { 0 };
	unsigned long n = 500;
	int jansson = 0;
	char *text;
	long size;
	FILE *f;
	double t0, *ms;
	uint64_t seed = 12345;
	size_t items_max = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: tl_query TRACE.json [N] [-j]\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "-j") == 0)
			jansson = 1;
		else
			n = strtoul(argv[i], NULL, 10);
	}
	f = fopen(argv[1], "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0 || (size = ftell(f)) < 0) {
		perror(argv[1]);
		return 1;
	}
	rewind(f);
	text = malloc((size_t)size + 1);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
		perror(argv[1]);
		return 1;
	}
	fclose(f);
	printf("text: %.1f MB, peak RSS %ld MB\n", (double)size / 1e6, maxrss_mb());
	if (jansson) {
		json_error_t jerr;
		json_t *j;

		t0 = now();
		j = json_loadb(text, (size_t)size, 0, &jerr);
		printf("jansson json_loadb: %.2f s, peak RSS %ld MB%s\n", now() - t0,
		       maxrss_mb(), j ? "" : " (failed)");
		t0 = now();
		json_decref(j);
		printf("jansson json_decref: %.2f s\n", now() - t0);
		return 0;
	}
	tl = kv_tl_new();
	t0 = now();
	if (kv_trace_load(tl, text, (size_t)size, argv[1], &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("kv_trace_load: %.2f s\n", now() - t0);
	t0 = now();
	if (kv_tl_finish(tl, &err) < 0) {
		fprintf(stderr, "%s\n", err.msg);
		return 1;
	}
	printf("kv_tl_finish: %.2f s; %" PRIu64 " slices, %" PRIu64 " flows, peak RSS %ld MB\n",
	       now() - t0, tl->nslices, tl->nflows, maxrss_mb());
	free(text);
	card.id = (char *)(uintptr_t)"c";
	card.kinds = KV_TIMELINE;
	card.tl = tl;
	view.cards = &card;
	view.ncards = 1;
	ms = calloc(n, sizeof(*ms));
	for (unsigned long i = 0; i < n; i++) {
		/* a random thread, zoom from the whole trace at 1500 px down to
		 * a window ~1000 slices wide, at a random place */
		uint32_t th;
		double full = (double)tl->last_end, per = full / (double)tl->nslices * 16;
		double w, z, start, tpp;
		char req[512];
		size_t len;
		char *out;

		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		th = (uint32_t)(seed >> 33) % tl->nthreads;
		z = (double)((seed >> 11) & 0xFFFF) / 65535.0;
		w = full * pow(per * 1000 / full, z);
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		start = (full - w) * (double)((seed >> 11) & 0xFFFFF) / 1048575.0;
		tpp = w / 1500.0;
		snprintf(req, sizeof(req), "{\"id\":%lu,\"moduleName\":\"timeline\",\"type\":"
			 "\"request\",\"command\":\"unit/threadTraces\",\"params\":{\"processId\":"
			 "\"%s\",\"threadId\":\"%s\",\"startTime\":%.0f,\"endTime\":%.0f,"
			 "\"timePerPx\":%.6f}}", i,
			 kv_tl_str(tl, tl->processes[tl->threads[th].process].pid),
			 kv_tl_str(tl, tl->threads[th].tid), start, start + w, tpp);
		t0 = now();
		out = ks_view_request(&view, req, strlen(req), &len);
		ms[i] = (now() - t0) * 1e3;
		if (!out || !strstr(out, "\"result\":true")) {
			fprintf(stderr, "request failed: %s\n%s\n", req, out ? out : "(null)");
			return 1;
		}
		if (len > items_max)
			items_max = len;
		free(out);
	}
	qsort(ms, n, sizeof(*ms), dcmp);
	printf("unit/threadTraces in-process (%lu requests): p50 %.2f ms, p95 %.2f ms, "
	       "max %.2f ms; largest response %zu bytes\n", n, ms[n / 2],
	       ms[(size_t)((double)n * 0.95)], ms[n - 1], items_max);
	free(ms);
	kv_tl_free(tl);
	return 0;
}
