/*
 * Host hardware counters around one replay pass: instructions, cycles and
 * cache misses, counted with perf_event_open on every thread of the
 * process (/proc/self/task) and summed, because a CPU device runs kernels
 * on the runtime's worker threads, not on the thread that launches them.
 * Counting is user-space only, so that it works at perf_event_paranoid 2.
 *
 * Where the machine has no such counters (a virtual machine without a
 * virtual PMU, a locked-down kernel), the measurement says "not supported"
 * and why, never zero.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/perf_event.h>

#include "oprt_int.h"

const char *const ks_oprt_counter_names[KS_OPRT_NCOUNTERS] = {
	"instructions", "cycles", "cache_misses",
};

static const uint64_t counter_config[KS_OPRT_NCOUNTERS] = {
	PERF_COUNT_HW_INSTRUCTIONS, PERF_COUNT_HW_CPU_CYCLES, PERF_COUNT_HW_CACHE_MISSES,
};

static int perf_open(pid_t tid, uint64_t config, int group)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	a.disabled = group < 0;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return (int)syscall(SYS_perf_event_open, &a, tid, -1, group, PERF_FLAG_FD_CLOEXEC);
}

static const char *errno_hint(int e)
{
	switch (e) {
	case ENOENT:
	case EOPNOTSUPP:
		return "the kernel has no hardware counters for this CPU "
		       "(typical in a virtual machine)";
	case EACCES:
	case EPERM:
		return "not permitted (see /proc/sys/kernel/perf_event_paranoid)";
	case ENOSYS:
		return "the kernel has no perf_event_open";
	case EMFILE:
		return "too many open files";
	default:
		return "";
	}
}

void ks_oprt_counters_open(struct ks_oprt_counters *c)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	size_t cap = 0;

	memset(c, 0, sizeof(*c));
	if (!d) {
		snprintf(c->reason, sizeof(c->reason), "cannot list /proc/self/task: %s",
			 strerror(errno));
		return;
	}
	while ((e = readdir(d))) {
		pid_t tid = (pid_t)atoi(e->d_name);
		int fds[KS_OPRT_NCOUNTERS];

		if (tid <= 0)
			continue;
		for (int i = 0; i < KS_OPRT_NCOUNTERS; i++) {
			fds[i] = perf_open(tid, counter_config[i], i ? fds[0] : -1);
			int err;

			if (fds[i] >= 0)
				continue;
			err = errno;
			if (err == ESRCH) {
				/* The thread ended meanwhile: not counted, no loss. */
				for (int k = 0; k < i; k++)
					close(fds[k]);
				goto next;
			}
			snprintf(c->reason, sizeof(c->reason),
				 "perf_event_open(%s) on thread %d failed: %s%s%s",
				 ks_oprt_counter_names[i], (int)tid, strerror(err),
				 *errno_hint(err) ? ": " : "", errno_hint(err));
			for (int k = 0; k < i; k++)
				close(fds[k]);
			goto fail;
		}
		if (c->nthreads == cap) {
			int *n = realloc(c->fd, (cap ? cap * 2 : 16) * KS_OPRT_NCOUNTERS * sizeof(int));

			if (!n) {
				for (int k = 0; k < KS_OPRT_NCOUNTERS; k++)
					close(fds[k]);
				snprintf(c->reason, sizeof(c->reason), "out of memory");
				goto fail;
			}
			c->fd = n;
			cap = cap ? cap * 2 : 16;
		}
		memcpy(c->fd + c->nthreads * KS_OPRT_NCOUNTERS, fds, sizeof(fds));
		c->nthreads++;
next:;
	}
	closedir(d);
	if (c->nthreads == 0) {
		snprintf(c->reason, sizeof(c->reason), "no thread could be counted");
		return;
	}
	c->supported = true;
	return;
fail:
	closedir(d);
	ks_oprt_counters_close(c);
}

void ks_oprt_counters_start(struct ks_oprt_counters *c)
{
	for (size_t t = 0; c->supported && t < c->nthreads; t++) {
		int lead = c->fd[t * KS_OPRT_NCOUNTERS];

		ioctl(lead, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
		ioctl(lead, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
	}
}

void ks_oprt_counters_stop(struct ks_oprt_counters *c, uint64_t *v)
{
	memset(v, 0, KS_OPRT_NCOUNTERS * sizeof(*v));
	for (size_t t = 0; c->supported && t < c->nthreads; t++)
		ioctl(c->fd[t * KS_OPRT_NCOUNTERS], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
	for (size_t t = 0; c->supported && t < c->nthreads; t++)
		for (int i = 0; i < KS_OPRT_NCOUNTERS; i++) {
			uint64_t r[3]; /* value, time enabled, time running */

			if (read(c->fd[t * KS_OPRT_NCOUNTERS + i], r, sizeof(r)) != sizeof(r) ||
			    r[2] == 0)
				continue;
			/* Scaled when the counters had to share the PMU. */
			v[i] += r[2] < r[1] ? (uint64_t)((double)r[0] * r[1] / r[2]) : r[0];
		}
}

void ks_oprt_counters_close(struct ks_oprt_counters *c)
{
	for (size_t t = 0; t < c->nthreads * KS_OPRT_NCOUNTERS; t++)
		close(c->fd[t]);
	free(c->fd);
	c->fd = NULL;
	c->nthreads = 0;
}
