/*
 * fuzz_viewquery.h: the timeline queries the view fuzz targets share.
 */
#ifndef KS_FUZZ_VIEWQUERY_H
#define KS_FUZZ_VIEWQUERY_H

#include "view.h"

/* Asks the one card "fuzz" of v for its tracks, every thread's slices over
 * the whole time at a coarse and a fine pixel size, each process's
 * summary, and the detail and flows of the first slices, through
 * ks_view_request.  Aborts when an answer is not one JSON object, or a
 * refusal does not say why. */
void kv_fuzz_query(const struct ks_view *v);

#endif
