/*
 * The start and end of libkscope-op.so in a process: the constructor that
 * reads where kscope op listens, the connection on the process's first use
 * of the runtime (hello, then kscope's configuration), the fork handlers
 * that let a forked child connect afresh, the destructor that says `bye`;
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
atomic_bool ks_oprt_pending;

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
	.conn_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.names_lock = PTHREAD_MUTEX_INITIALIZER,
	.replay_lock = KS_RWL_INITIALIZER,
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
	ks_rwl_rdlock(&ks_oprt.replay_lock);
	return true;
}

void ks_oprt_shared_unlock(void)
{
	if (--lock_depth == 0)
		ks_rwl_rdunlock(&ks_oprt.replay_lock);
}

void ks_oprt_excl_lock(void)
{
	if (lock_depth++ == 0)
		ks_rwl_wrlock(&ks_oprt.replay_lock);
}

void ks_oprt_excl_unlock(void)
{
	if (--lock_depth == 0)
		ks_rwl_wrunlock(&ks_oprt.replay_lock);
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

_Atomic(const struct ks_oprt_backend *) ks_oprt_cur_be;

bool ks_oprt_backend_choose(const struct ks_oprt_backend *be)
{
	const struct ks_oprt_backend *cur = NULL;

	return atomic_compare_exchange_strong(&ks_oprt_cur_be, &cur, be) || cur == be;
}

/* At exit when nothing was launched: a backend whose runtime the program
 * tried and could not use says why (`unusable backend=B reason=R`), so
 * that kscope names the cause rather than "never used". */
static void oprt_report_unusable(void)
{
	char why[400];

	if (atomic_load(&ks_oprt_cur_be) || atomic_load(&ks_oprt_launch_index))
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

/* Whether a backend says the program tried its runtime and could not use
 * it (before connecting: nothing was launched). */
static bool oprt_any_unusable(void)
{
	char why[400];

	for (size_t i = 0; i < NBACKENDS; i++)
		if (backends[i]->why_unusable && backends[i]->why_unusable(why, sizeof(why)))
			return true;
	return false;
}

/* At exit: `note text=T` from the process's backend, when it has one. */
static void oprt_exit_note(void)
{
	const struct ks_oprt_backend *be = atomic_load(&ks_oprt_cur_be);
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

/* ------------------------------------------------------------------ */
/* Connecting                                                          */
/* ------------------------------------------------------------------ */

/* Connects, says hello and, the first time in this process's line (a
 * forked child keeps its parent's), reads the configuration and starts
 * the backends.  conn_lock held.  0, or -errno: the runtime stays off. */
static int oprt_connect_locked(void)
{
	struct ks_err err;
	bool ok = true;
	int rc;

	ks_err_clear(&err);
	rc = ks_oprt_chan_connect(&err);
	if (rc)
		return rc;
	if (!ks_oprt.configured) {
		ok = ks_oprt_config_parse(ks_oprt.in, &ks_oprt.cfg, &err) == 0;
		if (ok)
			ks_oprt_launch_configured();
		for (size_t i = 0; ok && i < NBACKENDS; i++)
			ok = backends[i]->init(&err) == 0;
		ks_oprt.configured = ok;
	}
	if (!ok) {
		pthread_mutex_lock(&ks_oprt.chan_lock);
		ks_oprt_chan_close_locked();
		pthread_mutex_unlock(&ks_oprt.chan_lock);
		return -EINVAL;
	}
	atomic_store(&ks_oprt_on, true);
	return 0;
}

bool ks_oprt_connect(void)
{
	int saved = errno;

	pthread_mutex_lock(&ks_oprt.conn_lock);
	/* Another thread may have connected (or failed) meanwhile. */
	if (atomic_load(&ks_oprt_pending)) {
		oprt_connect_locked();
		atomic_store(&ks_oprt_pending, false);
	}
	pthread_mutex_unlock(&ks_oprt.conn_lock);
	errno = saved;
	return atomic_load_explicit(&ks_oprt_on, memory_order_acquire);
}

/* ------------------------------------------------------------------ */
/* fork()                                                              */
/* ------------------------------------------------------------------ */

/*
 * A child forked without exec has one thread, the one that called fork(),
 * and a copy of memory in which the parent's other threads may have been
 * in the middle of anything, holding the library's locks.  So the prepare
 * handler takes every lock of the library's (and of the backend the
 * process uses) in the parent, without waiting on any: it tries them all,
 * and when one is busy lets them all go and tries again 1 ms later, for
 * at most FORK_TRIES times.  Once it has them, no other thread is inside
 * the library's state; the child then makes the locks new (glibc's
 * rwlock cannot be unlocked by the child's thread, which has another
 * id), resets what is per process and connects afresh on its first use
 * of the runtime, while the parent simply unlocks.  When they could not
 * all be taken (a replay running in another thread, or fork() called from
 * inside the library, from a runtime callback), or the process's backend
 * has no fork handlers (CUDA: the driver does not work in a forked child
 * anyway), the child runs unprofiled, as an unprofiled program would.
 * Waiting with trylock rather than lock also keeps fork() from
 * deadlocking against a thread that holds one lock and waits for another.
 */
#define FORK_TRIES 200

static pthread_mutex_t *const fork_mutexes[] = {
	&ks_oprt.conn_lock, &ks_oprt.chan_lock, &ks_oprt.names_lock, &ks_oprt.range_lock,
};
#define NFORK_MUTEXES (sizeof(fork_mutexes) / sizeof(fork_mutexes[0]))

/* Set by the prepare handler, read by the others: only the thread that
 * forks runs them, one fork at a time per thread. */
static KS_OPRT_TLS bool fork_locked;
/* The backend whose locks prepare took (another thread may choose one
 * between the handlers). */
static KS_OPRT_TLS const struct ks_oprt_backend *fork_be;

/* Unlocks the first nmutex mutexes and the replay lock. */
static void fork_unlock_all(size_t nmutex)
{
	while (nmutex > 0)
		pthread_mutex_unlock(fork_mutexes[--nmutex]);
	ks_rwl_wrunlock(&ks_oprt.replay_lock);
}

/* Tries every lock once; true with all of them held. */
static bool fork_try_all(const struct ks_oprt_backend *be)
{
	size_t i;

	if (!ks_rwl_trywrlock(&ks_oprt.replay_lock))
		return false;
	for (i = 0; i < NFORK_MUTEXES; i++)
		if (pthread_mutex_trylock(fork_mutexes[i]) != 0)
			break;
	if (i == NFORK_MUTEXES && (!be || be->fork_prepare()))
		return true;
	fork_unlock_all(i);
	return false;
}

static void oprt_atfork_prepare(void)
{
	const struct ks_oprt_backend *be = atomic_load(&ks_oprt_cur_be);

	fork_locked = false;
	/* Nothing to hand on: the child stays off. */
	if (!atomic_load(&ks_oprt_on) && !atomic_load(&ks_oprt_pending))
		return;
	if (lock_depth > 0 || ks_oprt.child || (be && (!be->fork_prepare || !be->fork_release)))
		return;
	for (int t = 0; t < FORK_TRIES; t++) {
		struct timespec ms = { 0, 1000000 };

		if (fork_try_all(be)) {
			fork_locked = true;
			fork_be = be;
			return;
		}
		nanosleep(&ms, NULL);
	}
}

static void oprt_atfork_parent(void)
{
	if (!fork_locked)
		return;
	if (fork_be)
		fork_be->fork_release(false);
	fork_unlock_all(NFORK_MUTEXES);
	fork_locked = false;
}

/* In the child: one thread; nothing here waits on a lock. */
static void oprt_atfork_child(void)
{
	bool was = atomic_load(&ks_oprt_on) || atomic_load(&ks_oprt_pending);

	atomic_store(&ks_oprt_on, false);
	atomic_store(&ks_oprt_pending, false);
	/* The parent's connection is the parent's. */
	if (ks_oprt.fd >= 0)
		close(ks_oprt.fd);
	ks_oprt.fd = -1;
	/* Another thread chose the backend after prepare: its locks were
	 * not taken. */
	if (!fork_locked || atomic_load(&ks_oprt_cur_be) != fork_be) {
		ks_oprt.child = true;
		fork_locked = false;
		return;
	}
	fork_locked = false;
	for (size_t i = 0; i < NFORK_MUTEXES; i++)
		pthread_mutex_init(fork_mutexes[i], NULL);
	ks_rwl_reinit(&ks_oprt.replay_lock);
	if (fork_be)
		fork_be->fork_release(true);
	/* What is counted per process starts again. */
	atomic_store(&ks_oprt_launch_index, 0);
	atomic_store(&ks_oprt.final, false);
	atomic_store(&ks_oprt.skip_done, false);
	atomic_store(&ks_oprt.runtime_announced, false);
	ks_oprt_names_fork_reset();
	ks_oprt_range_fork_reset();
	atomic_store(&ks_oprt_pending, was);
}

__attribute__((constructor)) static void oprt_init(void)
{
	const char *hook = getenv("KSCOPE_OP_TEST_FAIL_REPLAY");
	struct ks_err err;
	int saved = errno;

	if (hook && *hook)
		ks_oprt.fail_replay = strdup(hook);
	ks_err_clear(&err);
	if (ks_oprt_chan_setup(&err) != 0)
		goto out;
	pthread_atfork(oprt_atfork_prepare, oprt_atfork_parent, oprt_atfork_child);
	atomic_store(&ks_oprt_pending, true);
out:
	errno = saved;
}

__attribute__((destructor)) static void oprt_fini(void)
{
	int saved = errno;

	/* Not ks_oprt_active(): a process that never used the runtime has
	 * nothing to say and does not connect now, unless it tried a
	 * runtime it could not use (a CUDA program without a driver never
	 * reaches a wrapper): then it connects to say why. */
	if (!atomic_load(&ks_oprt_on) &&
	    (!atomic_load(&ks_oprt_pending) || !oprt_any_unusable() || !ks_oprt_connect())) {
		errno = saved;
		return;
	}
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
