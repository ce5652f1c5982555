/*
 * libFuzzer target for kscope view's Trace Event reader and timeline
 * (kv_trace_load, kv_tl_finish, src/view): the input is a trace text.
 * When it loads, the timeline is put in a one-card view and queried
 * through ks_view_request the way the page does: the tracks, every
 * thread's slices over the whole time at a coarse and a fine pixel size,
 * each process's summary, and the detail and flows of the first slices.
 * Nothing may crash, read out of bounds or leak; a trace that does not
 * load must say why.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "fuzz_viewquery.h"
#include "view.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_err err;
	char id[] = "fuzz", title[] = "fuzz", path[] = "fuzz.json", command[] = "";
	struct kv_card card = { .id = id, .title = title, .path = path, .command = command,
				.kinds = KV_TIMELINE };
	struct ks_view v = { .path = path, .cards = &card, .ncards = 1 };

	if (!tl)
		abort();
	ks_err_clear(&err);
	if (kv_trace_load(tl, (const char *)data, size, "fuzz.json", &err) < 0 ||
	    kv_tl_finish(tl, &err) < 0) {
		if (!err.msg[0])
			abort(); /* a trace that does not load says why */
		kv_tl_free(tl);
		return 0;
	}
	card.tl = tl;
	kv_fuzz_query(&v);
	kv_tl_free(tl);
	return 0;
}
