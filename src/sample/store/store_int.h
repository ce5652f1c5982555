/*
 * Private to src/sample/store: the consistency check that both the
 * database code (db.c) and the reports (report.c) run before they index
 * the profile's arrays with the ids it holds, so that a hand-built or
 * damaged profile is reported instead of read out of bounds; and the
 * reports' sample filters, which the exports (export.c) share.
 */
#ifndef KS_SAMPLE_STORE_INT_H
#define KS_SAMPLE_STORE_INT_H

#include <stdbool.h>

#include "err.h"
#include "profile.h"
#include "store.h"

/* Checks every reference in p: string, frame, node, process and thread
 * ids are in range (or KS_NONE where profile.h allows it), every node's
 * parent comes before it (ks_profile_node_counts and the reports rely on
 * that), and each sample's first counter value lies inside
 * counter_values.
 * Returns 0 or -EINVAL with err naming the first bad element. */
int ks_store_check_profile(const struct ks_profile *p, struct ks_err *err);

/* The filters of the reports (report.c), for the exports (export.c):
 * *pass (malloc'd for the caller, n_samples entries) tells which samples
 * count under o->thread, o->region and o->clock, as the reports count
 * them (KS_REPORT_CLOCK_ALL passes the samples of every timer).  Checks
 * the profile first; -ENOENT for a region the profile does not have,
 * -EINVAL for a bad profile or thread, -ENOMEM. */
int ks_report_select(const struct ks_profile *p, const struct ks_report_opts *o,
		     bool **pass, struct ks_err *err);

#endif
