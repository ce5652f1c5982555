/*
 * The start and end of libkscope-op.so in a process: the constructor that
 * opens the channel to kscope op and reads its configuration, the fork
 * handler that leaves children unprofiled, the destructor that says `bye`;
 * and the small services every other file uses (the replay lock, the
 * clock, the test hook).  The backend table is chosen here: one backend,
 * OpenCL.
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

struct ks_oprt_state ks_oprt = {
	.be = &ks_oprt_opencl_backend,
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

void ks_oprt_runtime_used(const char *platform, const char *device, const char *driver)
{
	struct ks_op_msg *m;

	if (atomic_exchange(&ks_oprt.runtime_announced, true))
		return;
	m = ks_oprt_chan_begin(ks_oprt.be->name);
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

	if (hook && *hook)
		ks_oprt.fail_replay = strdup(hook);
	if (ks_oprt_chan_open(&err) != 0)
		goto out;
	if (ks_oprt_config_parse(ks_oprt.in, &ks_oprt.cfg, &err) != 0 ||
	    ks_oprt.be->init(&err) != 0) {
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
	if (ks_oprt_chan_begin("bye"))
		ks_oprt_chan_send();
	/* From here every wrapper only forwards (the program's own
	 * destructors may still release objects). */
	atomic_store(&ks_oprt_on, false);
	ks_oprt.be->fini();
	errno = saved;
}
