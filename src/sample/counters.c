/*
 * The counter table of counters.h, its probe and the one way every part
 * of kscope opens a counter.
 */
#include "counters.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

const struct ks_counter_def ks_counter_defs[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "CPU cycles", false },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS,
	  "instructions retired", false },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES,
	  "last-level cache accesses", false },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES,
	  "last-level cache misses", false },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS,
	  "branches retired", false },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES,
	  "mispredicted branches", false },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
	  "thread CPU time, ns", true },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "page faults", true },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES,
	  "context switches", true },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS,
	  "moves to another CPU", true },
	{ NULL, 0, 0, NULL, false },
};

const struct ks_counter_def *ks_counter_find(const char *name)
{
	for (const struct ks_counter_def *c = ks_counter_defs; c->name; c++)
		if (strcmp(c->name, name) == 0)
			return c;
	return NULL;
}

void ks_counter_list(char *buf, size_t size)
{
	size_t used = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	for (const struct ks_counter_def *c = ks_counter_defs; c->name; c++) {
		int n = snprintf(buf + used, size - used, "%s%s",
				 c == ks_counter_defs ? "" : ", ", c->name);

		if (n < 0 || (size_t)n >= size - used)
			return;
		used += (size_t)n;
	}
}

int ks_counter_open(const struct ks_counter_def *c, bool disabled, unsigned long flags)
{
	struct perf_event_attr attr;
	long fd;

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = c->type;
	attr.config = c->config;
	attr.disabled = disabled;
	attr.exclude_kernel = !c->kernel_side;
	attr.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, flags);
	if (fd < 0)
		return -errno;
	return (int)fd;
}

int ks_counter_probe(const struct ks_counter_def *c)
{
	int fd = ks_counter_open(c, true, PERF_FLAG_FD_CLOEXEC);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

void ks_counter_why(const struct ks_counter_def *c, int err, char *buf, size_t size)
{
	char level[16] = "unknown";
	int fd;

	if (err < 0)
		err = -err;
	if (err == EACCES || err == EPERM) {
		fd = open("/proc/sys/kernel/perf_event_paranoid", O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t n = read(fd, level, sizeof(level) - 1);

			level[n > 0 ? n : 0] = '\0';
			level[strcspn(level, "\n")] = '\0';
			close(fd);
		}
		if (c && c->kernel_side)
			snprintf(buf, size, "not allowed: it counts in the kernel, and "
				 "kernel.perf_event_paranoid is %s; it needs 1 or less, "
				 "or CAP_PERFMON", level);
		else
			snprintf(buf, size, "not allowed: kernel.perf_event_paranoid is "
				 "%s; it needs 2 or less, or CAP_PERFMON", level);
	} else if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL) {
		snprintf(buf, size, "this machine has no such counter (%s)", strerror(err));
	} else if (err == ENOSYS) {
		snprintf(buf, size, "this kernel has no perf_event_open");
	} else {
		snprintf(buf, size, "%s", strerror(err));
	}
}
