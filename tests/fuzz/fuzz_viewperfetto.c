/*
 * libFuzzer target for kscope view's reader of the Perfetto traces kscope
 * writes (kv_perfetto_load, src/view/view_perfetto.c): the input is a
 * trace file.  When it loads, its timeline is put in a one-card view and
 * queried through ks_view_request as fuzz_viewtrace.c does, and its
 * profile (the samples and their call stacks) is reported as kscope view's
 * profile commands report it.  Nothing may crash, read out of bounds or
 * leak; a trace that does not load must say why.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_viewquery.h"
#include "profile.h"
#include "store.h"
#include "view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reports kscope view's profile commands give, to /dev/null. */
static void report(const struct ks_profile *p)
{
	struct ks_report_opts o = { .json = true, .thread = KS_NONE, .min_pct = 0 };
	FILE *null = fopen("/dev/null", "w");
	struct ks_err err;

	if (!null)
		abort();
	if (ks_report_flat(null, p, &o, &err) < 0 || ks_report_tree(null, p, &o, &err) < 0 ||
	    ks_report_threads(null, p, &o, &err) < 0)
		abort(); /* the reader built a profile the reports refuse */
	fclose(null);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_profile p;
	struct ks_err err;
	char id[] = "fuzz", title[] = "fuzz", path[] = "fuzz.perfetto-trace", command[] = "";
	struct kv_card card = { .id = id, .title = title, .path = path, .command = command,
				.kinds = KV_TIMELINE };
	struct ks_view v = { .path = path, .cards = &card, .ncards = 1 };

	if (!tl || ks_profile_init(&p, &err) < 0)
		abort();
	ks_err_clear(&err);
	if (kv_perfetto_load(tl, &p, data, size, path, &err) < 0 ||
	    kv_tl_finish(tl, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a trace that does not load says why */
		kv_tl_free(tl);
		ks_profile_free(&p);
		return 0;
	}
	card.tl = tl;
	kv_fuzz_query(&v);
	report(&p);
	kv_tl_free(tl);
	ks_profile_free(&p);
	return 0;
}
