/*
 * The start and end of libkscope-op.so in a process: the constructor that
 * opens the channel to kscope op and reads its configuration, the fork
 * handler that leaves children unprofiled, the destructor that says `bye`;
 * and the small services every other file uses (the replay lock, the
 * clock, the test hook).  The backends are listed here (OpenCL, and CUDA
 * where the toolkit's headers were found at build time); a process uses
 * the first whose runtime it calls (ks_oprt_backend_use).
 *
 * Without KSCOPE_OP_CHANNEL, or when anything about the channel fails,
 * ks_oprt_on stays false and every wrapper only forwards: the program
 * behaves exactly as without the library.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "oprt_int.h"

atomic_bool ks_oprt_on;

/* Every backend built in; each one's init and fini run in every process
 * (they must be cheap: neither loads its runtime). */
static const struct ks_oprt_backend *const backends[] = {
	&ks_oprt_opencl_backend,
#ifdef KS_OPRT_HAVE_CUDA
	&ks_oprt_cuda_backend,
#endif
};
#define NBACKENDS (sizeof(backends) / sizeof(backends[0]))

struct ks_oprt_state ks_oprt = {
	.chan_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
	.replay_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP,
	.range_lock = PTHREAD_MUTEX_INITIALIZER,
	.next_range_id = 1,
};

uint64_t ks_oprt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* How deep this thread is in the replay lock: a runtime may call the
 * program back (an event callback) on a thread that holds it, and the
 * callback may call a wrapper; taking the lock again would deadlock
 * (shared behind a waiting writer, or under our own exclusive hold). */
static KS_OPRT_TLS unsigned lock_depth;

bool ks_oprt_shared_lock(void)
{
	if (lock_depth++ > 0)
		return false;
	pthread_rwlock_rdlock(&ks_oprt.replay_lock);
	return true;
}

void ks_oprt_shared_unlock(void)
{
	if (--lock_depth == 0)
		pthread_rwlock_unlock(&ks_oprt.replay_lock);
}

void ks_oprt_excl_lock(void)
{
	if (lock_depth++ == 0)
		pthread_rwlock_wrlock(&ks_oprt.replay_lock);
}

void ks_oprt_excl_unlock(void)
{
	if (--lock_depth == 0)
		pthread_rwlock_unlock(&ks_oprt.replay_lock);
}

/*
 * Test hook: KSCOPE_OP_TEST_FAIL_REPLAY=NAME makes every replay launch of
 * kernel NAME fail as if the runtime had returned CL_OUT_OF_RESOURCES, so
 * that tests can check that a failed replay restores memory, is reported
 * and lets the program's own launch go on.  It has no other use.
 */
bool ks_oprt_test_fail_replay(const char *kernel)
{
	return ks_oprt.fail_replay && strcmp(ks_oprt.fail_replay, kernel) == 0;
}

bool ks_oprt_profile_program_queues(void)
{
	return ks_oprt.cfg.mode == KS_OPRT_MODE_APPLICATION;
}

bool ks_oprt_backup_all(void)
{
	return ks_oprt.cfg.backup_all;
}

bool ks_oprt_backend_use(const struct ks_oprt_backend *be)
{
	const struct ks_oprt_backend *cur =
		atomic_load_explicit(&ks_oprt.be, memory_order_acquire);

	if (cur)
		return cur == be;
	return atomic_compare_exchange_strong(&ks_oprt.be, &cur, be) || cur == be;
}

/* At exit when nothing was launched: a backend whose runtime the program
 * tried and could not use says why (`unusable backend=B reason=R`), so
 * that kscope names the cause rather than "never used". */
static void oprt_report_unusable(void)
{
	char why[400];

	if (atomic_load(&ks_oprt.be) || atomic_load(&ks_oprt.next_index))
		return;
	for (size_t i = 0; i < NBACKENDS; i++) {
		struct ks_op_msg *m;

		if (!backends[i]->why_unusable || !backends[i]->why_unusable(why, sizeof(why)))
			continue;
		m = ks_oprt_chan_begin("unusable");
		if (!m)
			return;
		ks_op_msg_add(m, "backend", backends[i]->name);
		ks_op_msg_add(m, "reason", why);
		ks_oprt_chan_send();
	}
}

/* At exit: `note text=T` from the process's backend, when it has one. */
static void oprt_exit_note(void)
{
	const struct ks_oprt_backend *be = atomic_load(&ks_oprt.be);
	struct ks_op_msg *m;
	char text[400];

	if (!be || !be->exit_note || !be->exit_note(text, sizeof(text)))
		return;
	m = ks_oprt_chan_begin("note");
	if (!m)
		return;
	ks_op_msg_add(m, "text", text);
	ks_oprt_chan_send();
}

void ks_oprt_runtime_used(const char *platform, const char *device, const char *driver)
{
	struct ks_op_msg *m;

	if (atomic_exchange(&ks_oprt.runtime_announced, true))
		return;
	m = ks_oprt_chan_begin(ks_oprt_be()->name);
	if (!m)
		return;
	ks_op_msg_add(m, "platform", platform);
	ks_op_msg_add(m, "device", device);
	ks_op_msg_add(m, "driver", driver);
	ks_oprt_chan_send();
}

/* A forked child runs unprofiled: it closes its copy of the channel and
 * turns the runtime off.  Only this thread exists in the child, and the
 * locks may be held by threads that do not, so nothing here locks; with
 * the runtime off nothing takes those locks again. */
static void oprt_atfork_child(void)
{
	atomic_store(&ks_oprt_on, false);
	ks_oprt.child = true;
	if (ks_oprt.fd >= 0)
		close(ks_oprt.fd);
	ks_oprt.fd = -1;
}

__attribute__((constructor)) static void oprt_init(void)
{
	const char *hook = getenv("KSCOPE_OP_TEST_FAIL_REPLAY");
	struct ks_err err;
	int saved = errno;
	bool ok;

	if (hook && *hook)
		ks_oprt.fail_replay = strdup(hook);
	if (ks_oprt_chan_open(&err) != 0)
		goto out;
	ok = ks_oprt_config_parse(ks_oprt.in, &ks_oprt.cfg, &err) == 0;

	for (size_t i = 0; ok && i < NBACKENDS; i++)
		ok = backends[i]->init(&err) == 0;
	if (!ok) {
		pthread_mutex_lock(&ks_oprt.chan_lock);
		ks_oprt_chan_close_locked();
		pthread_mutex_unlock(&ks_oprt.chan_lock);
		goto out;
	}
	pthread_atfork(NULL, NULL, oprt_atfork_child);
	atomic_store(&ks_oprt_on, true);
out:
	errno = saved;
}

__attribute__((destructor)) static void oprt_fini(void)
{
	int saved = errno;

	if (!ks_oprt_active())
		return;
	ks_oprt_range_atexit();
	oprt_report_unusable();
	oprt_exit_note();
	if (ks_oprt_chan_begin("bye"))
		ks_oprt_chan_send();
	/* From here every wrapper only forwards (the program's own
	 * destructors may still release objects). */
	atomic_store(&ks_oprt_on, false);
	for (size_t i = 0; i < NBACKENDS; i++)
		backends[i]->fini();
	errno = saved;
}
