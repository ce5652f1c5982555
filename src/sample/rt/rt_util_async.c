/*
 * Small helpers that signal handlers use, so they live in an _async file:
 * the clocks, the calling thread's id, and the lookup of the real
 * functions kscope wraps.  All async-signal-safe; ks_rt_real_get only if
 * the pointer was already resolved, which the constructor makes sure of
 * for every function a handler calls (ks_rt_real_resolve).
 */
#include <dlfcn.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

/* async-signal-safe: CLOCK_MONOTONIC in ns. */
uint64_t ks_rt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* async-signal-safe */
pid_t ks_rt_gettid(void)
{
	return gettid();
}

/* async-signal-safe */
uint64_t ks_rt_thread_cpu_ns(pid_t tid)
{
	clockid_t clk = ks_rt_thread_clock(tid);
	struct timespec ts;

	if (clock_gettime(clk, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* async-signal-safe */
bool ks_rt_fd_is(int fd, dev_t dev, ino_t ino)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* async-signal-safe: perf descriptors share one anonymous inode, so they
 * are told apart by event id; the ioctl number is reserved for perf, so
 * on any other descriptor it fails without effect. */
bool ks_rt_perf_fd_is(int fd, uint64_t id)
{
	uint64_t got = 0;

	return fd >= 0 && ioctl(fd, PERF_EVENT_IOC_ID, &got) == 0 && got == id;
}

/* async-signal-safe once resolved (dlsym is not). */
void *ks_rt_real_get(void *slot, const char *name)
{
	void *p;

	/* Copied as bytes: slot is a function pointer's storage. */
	memcpy(&p, slot, sizeof(p));
	if (!p) {
		p = dlsym(RTLD_NEXT, name);
		memcpy(slot, &p, sizeof(p));
	}
	return p;
}

/* async-signal-safe: a THREAD_END record for t, which may be another
 * thread (then its CPU time is read through its clock and its name is the
 * one it had at start). */
void ks_rt_thread_end_rec(const struct ks_rt_thread *t, struct ks_raw_thread_end *e,
			  bool self)
{
	memset(e, 0, sizeof(*e));
	e->h.type = KS_RAW_THREAD_END;
	e->h.size = sizeof(*e);
	e->ts = ks_rt_now();
	if (self) {
		struct timespec ts;

		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
		e->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		prctl(PR_GET_NAME, e->name, 0, 0, 0);
		e->name[sizeof(e->name) - 1] = '\0';
	} else {
		e->cpu_ns = ks_rt_thread_cpu_ns(t->tid);
		memcpy(e->name, t->name, sizeof(e->name));
	}
}
