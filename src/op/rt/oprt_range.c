/*
 * The user API's ranges (include/kscope/user.h) under kscope op: the
 * preloaded library defines kscope_range_start and kscope_range_end, so
 * the program's calls reach these instead of libkscope-user.so's no-ops.
 *
 * Ranges matter with mstx=1.  In kernel replay they are a filter: a
 * launch passes only while a range that passes mstx_include is open (in
 * any thread: a range may end on another thread than the one that started
 * it).  In range replay they are what is collected: a range that passes
 * skip (kscope counts every range the program's processes start) and
 * mstx_include is announced
 * with `launch`; if kscope collects it, every kernel launched until it
 * ends is captured (oprt_replay.c replays them as a whole at its end).
 * One range is collected at a time; ranges that start meanwhile pass.
 *
 * The same ranges come from NVTX (oprt_nvtx.c), through the internal
 * ks_oprt_range_start/end that the user API's functions call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kscope/user.h"
#include "oprt_int.h"

bool ks_oprt_range_recording(void)
{
	return atomic_load_explicit(&ks_oprt.recording, memory_order_acquire);
}

void ks_oprt_range_innermost(char *out, size_t size)
{
	out[0] = '\0';
	pthread_mutex_lock(&ks_oprt.range_lock);
	for (const struct ks_oprt_open_range *r = ks_oprt.ranges_last; r; r = r->prev)
		if (r->included) {
			snprintf(out, size, "%s", r->name);
			break;
		}
	pthread_mutex_unlock(&ks_oprt.range_lock);
}

/* Asks kscope about range r, which passed the filters as the n-th (its
 * ordinal: among all ranges of its name); on collect, starts recording.
 * range_lock held. */
static void range_ask(const struct ks_oprt_open_range *r, uint64_t n, uint64_t ordinal)
{
	const struct ks_op_msg *a;
	struct ks_op_msg *m;
	char dir[512];
	void *rep;

	m = ks_oprt_chan_begin("launch");
	if (!m)
		return;
	ks_op_msg_add(m, "name", r->name);
	ks_op_msg_addu(m, "index", n);
	ks_op_msg_add(m, "gsize", "0:0:0");
	ks_op_msg_addu(m, "ordinal", ordinal);
	ks_op_msg_add(m, "range", r->name);
	a = ks_oprt_chan_request();
	if (!a) {
		ks_oprt_chan_end();
		return;
	}
	if (ks_op_msg_is(a, "pass")) {
		if (ks_op_msg_getu(a, "final", 0) == 1)
			atomic_store(&ks_oprt.final, true);
		ks_oprt_chan_end();
		return;
	}
	if (!ks_op_msg_is(a, "collect") || !ks_op_msg_get(a, "dir", NULL, dir, sizeof(dir)) ||
	    !ks_oprt_rel_ok(dir)) {
		ks_oprt_chan_end();
		return;
	}
	ks_oprt_chan_end();
	rep = ks_oprt_be()->rep_new();
	if (!rep) {
		ks_oprt_send_collected(dir, false, "out of memory");
		return;
	}
	ks_oprt.rec = rep;
	ks_oprt.rec_id = r->id;
	ks_oprt.rec_launches = 0;
	ks_oprt.rec_index = n;
	ks_oprt.rec_error[0] = '\0';
	snprintf(ks_oprt.rec_dir, sizeof(ks_oprt.rec_dir), "%s", dir);
	snprintf(ks_oprt.rec_name, sizeof(ks_oprt.rec_name), "%s", r->name);
	atomic_store(&ks_oprt.recording, true);
}

uint64_t ks_oprt_range_start(const char *name)
{
	const struct ks_oprt_config *c = &ks_oprt.cfg;
	struct ks_oprt_open_range *r;
	int saved = errno;
	uint64_t id = 0;

	if (!ks_oprt_active() || !name)
		goto out;
	pthread_mutex_lock(&ks_oprt.range_lock);
	id = ks_oprt.next_range_id++;
	ks_oprt.ranges_seen++;
	if (!c->mstx && c->mode != KS_OPRT_MODE_RANGE)
		goto unlock;             /* ranges mean nothing in this run */
	r = calloc(1, sizeof(*r));
	if (!r)
		goto unlock;
	r->id = id;
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->included = ks_op_filter_match(c->mstx_include, r->name);
	r->prev = ks_oprt.ranges_last;
	if (ks_oprt.ranges_last)
		ks_oprt.ranges_last->next = r;
	else
		ks_oprt.ranges = r;
	ks_oprt.ranges_last = r;
	if (r->included)
		atomic_fetch_add(&ks_oprt.open_included, 1);
	if (c->mode == KS_OPRT_MODE_RANGE) {
		static const uint64_t g0[3] = { 0, 0, 0 };
		struct ks_oprt_name *nm = ks_oprt_name_get(r->name);
		uint64_t ordinal = nm ? ks_oprt_ordinal(nm, g0) : 0;
		/* kscope counts the skip over every range the program's
		 * processes start. */
		bool skipped = ks_oprt_skip_ask();

		if (r->included && !skipped) {
			uint64_t n = ks_oprt.ranges_passed++;

			if (!ks_oprt.rec && !atomic_load(&ks_oprt.final))
				range_ask(r, n, ordinal);
		}
	}
unlock:
	pthread_mutex_unlock(&ks_oprt.range_lock);
out:
	errno = saved;
	return id;
}

void ks_oprt_range_fork_reset(void)
{
	struct ks_oprt_open_range *r = ks_oprt.ranges;

	while (r) {
		struct ks_oprt_open_range *next = r->next;

		free(r);
		r = next;
	}
	ks_oprt.ranges = ks_oprt.ranges_last = NULL;
	atomic_store(&ks_oprt.open_included, 0);
	/* A range the parent was recording is the parent's: its captured
	 * launches (the backend's objects) are left alone. */
	atomic_store(&ks_oprt.recording, false);
	ks_oprt.rec = NULL;
	ks_oprt.rec_id = 0;
	ks_oprt.rec_launches = 0;
	ks_oprt.ranges_seen = 0;
	ks_oprt.ranges_passed = 0;
}

void ks_oprt_range_end(uint64_t id)
{
	struct ks_oprt_open_range *r;
	void *rep = NULL;
	char dir[512], name[256], error[512];
	uint64_t index = 0;
	unsigned launches = 0;
	int saved = errno;

	/* Not after the runtime turned off in a forked child; otherwise yes,
	 * even when off: a range being collected must let go of what it
	 * holds. */
	if (id == 0 || ks_oprt.child)
		return;
	pthread_mutex_lock(&ks_oprt.range_lock);
	for (r = ks_oprt.ranges; r && r->id != id; r = r->next)
		;
	if (r) {
		if (r->prev)
			r->prev->next = r->next;
		else
			ks_oprt.ranges = r->next;
		if (r->next)
			r->next->prev = r->prev;
		else
			ks_oprt.ranges_last = r->prev;
		if (r->included)
			atomic_fetch_sub(&ks_oprt.open_included, 1);
		free(r);
	}
	if (ks_oprt.rec && ks_oprt.rec_id == id) {
		rep = ks_oprt.rec;
		ks_oprt.rec = NULL;
		atomic_store(&ks_oprt.recording, false);
		memcpy(dir, ks_oprt.rec_dir, sizeof(dir));
		memcpy(name, ks_oprt.rec_name, sizeof(name));
		memcpy(error, ks_oprt.rec_error, sizeof(error));
		index = ks_oprt.rec_index;
		launches = ks_oprt.rec_launches;
	}
	pthread_mutex_unlock(&ks_oprt.range_lock);
	if (rep)
		ks_oprt_range_replay(rep, dir, name, index, launches, error);
	errno = saved;
}

/* The user API's entry points (kscope/user.h). */
KS_OPRT_EXPORT uint64_t kscope_range_start(const char *name)
{
	return ks_oprt_range_start(name);
}

KS_OPRT_EXPORT void kscope_range_end(uint64_t id)
{
	ks_oprt_range_end(id);
}

int ks_oprt_range_record(struct ks_oprt_launch *l)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	struct ks_err err;
	uint64_t ns;
	bool have;
	int status;

	ks_oprt_excl_lock();
	pthread_mutex_lock(&ks_oprt.range_lock);
	/* The range may have ended since the decision; the lock order is
	 * replay lock, then range lock (kscope_range_end takes the range lock
	 * alone, then the replay lock in the replay). */
	if (ks_oprt.rec && !ks_oprt.rec_error[0]) {
		if (be->quiesce(l->be, &err) != 0 ||
		    be->rep_add(ks_oprt.rec, l->be, l->index, &err) != 0 ||
		    be->rep_backup(ks_oprt.rec, KS_OPRT_SLOT_BEFORE, &err) != 0) {
			char what[320];

			snprintf(what, sizeof(what), "capturing launch %u (%.256s): ",
				 ks_oprt.rec_launches + 1, l->name->name);
			ks_oprt_join(ks_oprt.rec_error, sizeof(ks_oprt.rec_error), what, "",
				     err.msg);
		} else
			ks_oprt.rec_launches++;
	}
	pthread_mutex_unlock(&ks_oprt.range_lock);
	status = be->launch_original(l->be, false, &ns, &have);
	ks_oprt_excl_unlock();
	return status;
}

void ks_oprt_range_atexit(void)
{
	char msg[600];

	pthread_mutex_lock(&ks_oprt.range_lock);
	if (ks_oprt.rec) {
		/* The runtime's state at exit is unknown: nothing is replayed
		 * or released, the range is only reported. */
		snprintf(msg, sizeof(msg), "range %s was still open when the program exited",
			 ks_oprt.rec_name);
		ks_oprt.rec = NULL;
		atomic_store(&ks_oprt.recording, false);
		pthread_mutex_unlock(&ks_oprt.range_lock);
		ks_oprt_send_collected(ks_oprt.rec_dir, false, msg);
		return;
	}
	pthread_mutex_unlock(&ks_oprt.range_lock);
}
