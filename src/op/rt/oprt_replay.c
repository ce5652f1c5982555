/*
 * Kernel replay and application replay of one launch, driven through the
 * backend's operations (oprt.h) with the replay lock held exclusively, so
 * that no other thread launches, finishes or releases anything meanwhile.
 *
 * Kernel replay (ks_oprt_collect, mode kernel):
 *   capture the launch into a replay (a fresh kernel with the recorded
 *     arguments: the program's own kernel object is never touched)
 *   quiesce (the launch's wait list, every queue drained)
 *   back up the buffers the kernel may write
 *   warm-ups: restore, run
 *   passes: restore, flush (when asked), counters on, run, counters off;
 *     after the first, count the bytes that differ from the backup
 *   restore, so the program's own launch sees the memory it expects
 *   context.json and the program file, then the program's own launch,
 *   timed, then measure.json and `collected`
 * If a step fails, memory is restored, measure.json says "failed" with the
 * runtime's error, `collected` says so too, and the program's launch goes
 * on as if kscope were not there.
 *
 * Range replay (ks_oprt_range_replay, at the end of a collected range
 * whose launches oprt_range.c captured, each buffer backed up when first
 * seen): the state after the range is backed up too, then warm-ups and
 * passes as above, each restoring the state before the range and running
 * every captured launch in order; finally the state after the range is
 * restored, so the program's results stand.
 *
 * Application replay, run 0 (ks_oprt_collect, mode application): the same
 * capture but no replay: the program's own launch is the one pass (flushed
 * before when asked, timed).  Later runs (ks_oprt_time_target): each
 * target launch is flushed before when asked, timed, and reported with
 * `timing`.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opraw.h"
#include "oprt_int.h"

#define PROGRESS_NS 250000000u   /* at most four progress messages a second */

void ks_oprt_send_collected(const char *rel, bool ok, const char *message)
{
	struct ks_op_msg *m = ks_oprt_chan_begin("collected");

	if (!m)
		return;
	ks_op_msg_add(m, "dir", rel);
	ks_op_msg_add(m, "status", ok ? "ok" : "failed");
	if (message && *message)
		ks_op_msg_add(m, "message", message);
	ks_oprt_chan_send();
}

static void progress(const char *rel, unsigned done, unsigned total, uint64_t *last)
{
	uint64_t now = ks_oprt_now();
	struct ks_op_msg *m;

	if (now - *last < PROGRESS_NS || done >= total)
		return;
	*last = now;
	m = ks_oprt_chan_begin("progress");
	if (!m)
		return;
	ks_op_msg_add(m, "dir", rel);
	ks_op_msg_addu(m, "done", done);
	ks_op_msg_addu(m, "total", total);
	ks_oprt_chan_send();
}

/* Prefixes err's message with the step that failed ("pass 3: ..."). */
static int where(struct ks_err *err, const char *step, unsigned i)
{
	char msg[KS_ERR_MSG_MAX];

	snprintf(msg, sizeof(msg), "%s", err->msg);
	ks_err_set(err, err->code ? err->code : -EIO, "%s %u: %s", step, i + 1, msg);
	return err->code;
}

/* The replay's warm-ups and passes into m. */
static int replay_passes(void *rep, struct ks_oprt_measure *m, const char *rel,
			 struct ks_err *err)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	unsigned total = m->warmup + m->passes;
	uint64_t last = ks_oprt_now();
	int rc;

	for (unsigned w = 0; w < m->warmup; w++) {
		if ((rc = be->rep_restore(rep, KS_OPRT_SLOT_BEFORE, err)) ||
		    (rc = be->rep_run(rep, &m->warm_start[w], &m->warm_ns[w], err)))
			return where(err, "warm-up", w);
		m->nwarm++;
		progress(rel, m->nwarm, total, &last);
	}
	for (unsigned p = 0; p < m->passes; p++) {
		if ((rc = be->rep_restore(rep, KS_OPRT_SLOT_BEFORE, err)) ||
		    (m->flush && (rc = be->rep_flush(rep, &m->flush_bytes, err))))
			return where(err, "pass", p);
		ks_oprt_counters_start(&m->ctr);
		rc = be->rep_run(rep, &m->pass_start[p], &m->pass_ns[p], err);
		ks_oprt_counters_stop(&m->ctr, m->ctr_values + (size_t)p * KS_OPRT_NCOUNTERS);
		if (rc)
			return where(err, "pass", p);
		m->npass++;
		if (p == 0 && (rc = be->rep_diff(rep, KS_OPRT_SLOT_BEFORE, err)))
			return where(err, "counting written bytes after pass", p);
		progress(rel, m->nwarm + m->npass, total, &last);
	}
	return 0;
}

/* Copies the replay's buffer figures into m (they outlive the replay). */
static void take_buffers(void *rep, struct ks_oprt_measure *m)
{
	size_t n = 0;
	struct ks_oprt_buf *b = ks_oprt_be()->rep_bufs(rep, &n);
	struct ks_oprt_buf *copy = n ? malloc(n * sizeof(*copy)) : NULL;

	m->bufs = copy;
	m->nbufs = copy ? n : 0;
	if (copy)
		memcpy(copy, b, n * sizeof(*copy));
	m->backup_bytes = 0;
	for (size_t i = 0; i < m->nbufs; i++) {
		if (copy[i].backed_up)
			m->backup_bytes += copy[i].bytes;
		if (strcmp(m->mode, "application") == 0 && copy[i].may_write)
			copy[i].write_basis = "not measured (application replay makes no backup)";
	}
}

static void fail(struct ks_oprt_measure *m, const char *what, const struct ks_err *err)
{
	if (m->failed)
		return;
	m->failed = true;
	ks_oprt_join(m->error, sizeof(m->error), what, *what ? ": " : "", err->msg);
}

static int write_measure(const char *dir, struct ks_oprt_measure *m, struct ks_err *err)
{
	struct ks_oprt_json j;
	int rc;

	ks_oprt_json_init(&j);
	ks_oprt_measure_json(m, &j);
	if (j.bad)
		rc = ks_err_set(err, -ENOMEM, "out of memory writing %s", KS_OP_MEASURE_FILE);
	else
		rc = ks_oprt_raw_write(dir, KS_OP_MEASURE_FILE, j.buf, j.len, err);
	ks_oprt_json_free(&j);
	return rc;
}

/* One more run of rep under the hardware counters, from the state before
 * the launch and with flushed caches, as the passes ran.  A failure is
 * the counters' own ("not available: why"), not the replay's. */
static void hardware(void *rep, struct ks_oprt_measure *m)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	struct ks_err err;
	uint64_t bytes;

	m->hw.tried = true;
	ks_err_clear(&err);
	if (be->rep_restore(rep, KS_OPRT_SLOT_BEFORE, &err) != 0 ||
	    (m->flush && be->rep_flush(rep, &bytes, &err) != 0)) {
		snprintf(m->hw.why, sizeof(m->hw.why), "preparing the run: %.300s", err.msg);
		return;
	}
	if (be->rep_hw(rep, &m->hw) != 0)
		m->hw.have = false;
}

int ks_oprt_collect(struct ks_oprt_launch *l, const char *rel)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	const struct ks_oprt_config *c = &ks_oprt.cfg;
	bool app = c->mode == KS_OPRT_MODE_APPLICATION;
	bool captured = false, backed_up = false, have = false;
	struct ks_oprt_measure m;
	struct ks_err err, werr;
	char dir[4608];
	void *rep = NULL;
	uint64_t t0, ns = 0;
	int status;

	ks_err_clear(&err);
	ks_err_clear(&werr);
	dir[0] = '\0';
	ks_oprt_excl_lock();
	t0 = ks_oprt_now();
	if (ks_oprt_measure_init(&m, app ? "application" : "kernel", app ? 0 : c->warmup,
				 app ? 1 : c->passes, c->flush) != 0) {
		status = be->launch_original(l->be, false, &ns, &have);
		ks_oprt_excl_unlock();
		ks_oprt_send_collected(rel, false, "out of memory");
		return status;
	}
	snprintf(m.ctr.reason, sizeof(m.ctr.reason), "not measured: the replay failed first");
	if (ks_oprt_raw_mkdir(rel, dir, sizeof(dir), &werr) != 0) {
		dir[0] = '\0';
		fail(&m, "", &werr);
		goto original;
	}
	rep = be->rep_new();
	if (!rep) {
		ks_err_set(&err, -ENOMEM, "out of memory");
		fail(&m, "", &err);
		goto original;
	}
	/* Capturing reads no memory, so it comes first: what was captured is
	 * described even when a later step (or capturing itself, part-way)
	 * fails. */
	captured = true;
	if (be->rep_add(rep, l->be, l->index, &err) != 0) {
		fail(&m, "capturing the launch", &err);
		goto original;
	}
	if (be->quiesce(l->be, &err) != 0) {
		fail(&m, "waiting for the program's commands", &err);
		goto original;
	}
	if (app) {
		ks_oprt_counters_open(&m.ctr);
		if (c->flush && be->flush(l->be, &m.flush_bytes, &err) != 0) {
			fail(&m, "flushing the caches", &err);
			goto original;
		}
		take_buffers(rep, &m);
		/* Written before the launch: the replay holds what it describes. */
		if (ks_oprt_raw_context(dir, rep, false, l->name->name, l->index, l->ordinal,
					l->range, &werr) != 0)
			fail(&m, "", &werr);
		be->rep_free(rep);
		rep = NULL;
		ks_oprt_counters_start(&m.ctr);
		status = be->launch_original(l->be, true, &ns, &have);
		ks_oprt_counters_stop(&m.ctr, m.ctr_values);
		m.replay_wall_ns = ks_oprt_now() - t0;
		if (status != 0) {
			ks_err_set(&err, -EIO, "the launch returned %s", be->status_name(status));
			fail(&m, "", &err);
		} else if (have) {
			m.pass_ns[0] = ns;
			m.npass = 1;
			m.have_original = true;
			m.original_ns = ns;
		} else {
			ks_err_set(&err, -EIO, "the launch's event gave no time");
			fail(&m, "", &err);
		}
		goto write;
	}
	if (be->rep_backup(rep, KS_OPRT_SLOT_BEFORE, &err) != 0) {
		fail(&m, "backing up the written buffers", &err);
		goto original;
	}
	backed_up = true;
	ks_oprt_counters_open(&m.ctr);
	if (replay_passes(rep, &m, rel, &err) != 0)
		fail(&m, "", &err);
	else if (be->rep_hw)
		hardware(rep, &m);

original:
	if (backed_up && be->rep_restore(rep, KS_OPRT_SLOT_BEFORE, &werr) != 0) {
		/* Nothing more kscope can do: the program's memory may differ. */
		fail(&m, "restoring the buffers", &werr);
	}
	m.replay_wall_ns = ks_oprt_now() - t0;
	if (captured) {
		take_buffers(rep, &m);
		if (ks_oprt_raw_context(dir, rep, false, l->name->name, l->index, l->ordinal,
					l->range, &werr) != 0)
			fail(&m, "", &werr);
	}
	if (rep)
		be->rep_free(rep);
	rep = NULL;
	/* The program's own launch: timed after a good replay, otherwise left
	 * exactly as the program made it. */
	status = be->launch_original(l->be, !m.failed, &ns, &have);
	if (!m.failed && status == 0 && have) {
		m.have_original = true;
		m.original_ns = ns;
	}
write:
	if (dir[0] && (captured || m.failed) && write_measure(dir, &m, &werr) != 0)
		fail(&m, "", &werr);
	ks_oprt_excl_unlock();
	ks_oprt_send_collected(rel, !m.failed, m.failed ? m.error : NULL);
	free(m.bufs);
	ks_oprt_measure_fini(&m);
	return status;
}

int ks_oprt_time_target(struct ks_oprt_launch *l)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	struct ks_err err;
	uint64_t ns = 0, bytes = 0;
	bool have = false, ok;
	int status;

	ks_oprt_excl_lock();
	ok = be->quiesce(l->be, &err) == 0 &&
	     (!ks_oprt.cfg.flush || be->flush(l->be, &bytes, &err) == 0);
	status = be->launch_original(l->be, ok, &ns, &have);
	ks_oprt_excl_unlock();
	if (ok && status == 0 && have) {
		struct ks_op_msg *m = ks_oprt_chan_begin("timing");
		char g[80];

		if (m) {
			ks_oprt_gsize_str(l->gsize, g, sizeof(g));
			ks_op_msg_addf(m, "target", "%s,%s,%" PRIu64, l->name->name, g, l->ordinal);
			ks_op_msg_addu(m, "ns", ns);
			ks_oprt_chan_send();
		}
	}
	return status;
}

void ks_oprt_range_replay(void *rep, const char *rel, const char *name, uint64_t index,
			  unsigned launches, const char *error)
{
	const struct ks_oprt_backend *be = ks_oprt_be();
	const struct ks_oprt_config *c = &ks_oprt.cfg;
	bool after = false;
	struct ks_oprt_measure m;
	struct ks_err err, werr;
	char dir[4608];
	uint64_t t0;

	ks_err_clear(&err);
	ks_err_clear(&werr);
	ks_oprt_excl_lock();
	if (!ks_oprt_active()) {
		/* kscope is gone: nothing to report to. */
		be->rep_free(rep);
		ks_oprt_excl_unlock();
		return;
	}
	t0 = ks_oprt_now();
	if (ks_oprt_measure_init(&m, "range", c->warmup, c->passes, c->flush) != 0) {
		be->rep_free(rep);
		ks_oprt_excl_unlock();
		ks_oprt_send_collected(rel, false, "out of memory");
		return;
	}
	m.range = true;
	snprintf(m.ctr.reason, sizeof(m.ctr.reason), "not measured: the replay failed first");
	if (ks_oprt_raw_mkdir(rel, dir, sizeof(dir), &werr) != 0) {
		dir[0] = '\0';
		fail(&m, "", &werr);
	} else if (error[0]) {
		ks_err_set(&err, -EIO, "%s", error);
		fail(&m, "", &err);
	} else if (launches == 0) {
		ks_err_set(&err, -ENOENT, "no kernel was launched in the range");
		fail(&m, "", &err);
	} else if (be->quiesce(NULL, &err) != 0) {
		fail(&m, "waiting for the program's commands", &err);
	} else if (be->rep_backup(rep, KS_OPRT_SLOT_AFTER, &err) != 0) {
		fail(&m, "backing up the state after the range", &err);
	} else {
		after = true;
		ks_oprt_counters_open(&m.ctr);
		if (replay_passes(rep, &m, rel, &err) != 0)
			fail(&m, "", &err);
	}
	if (after && be->rep_restore(rep, KS_OPRT_SLOT_AFTER, &werr) != 0)
		fail(&m, "restoring the state after the range", &werr);
	m.replay_wall_ns = ks_oprt_now() - t0;
	take_buffers(rep, &m);
	if (dir[0] && launches > 0 &&
	    ks_oprt_raw_context(dir, rep, true, name, index, 0, NULL, &werr) != 0)
		fail(&m, "", &werr);
	if (dir[0] && write_measure(dir, &m, &werr) != 0)
		fail(&m, "", &werr);
	be->rep_free(rep);
	ks_oprt_excl_unlock();
	ks_oprt_send_collected(rel, !m.failed, m.failed ? m.error : NULL);
	free(m.bufs);
	ks_oprt_measure_fini(&m);
}
