/*
 * The timing harness the kernels of kscope predict's accuracy benchmark
 * share: each program calls its kernel in batches of at least
 * KSCOPE_BATCH_S seconds (one call when a call is longer), for at least
 * KSCOPE_MIN_S seconds and at least three batches (one when a call takes
 * KSCOPE_LONG_S or more), after warm-up calls, and prints the median
 * batch's nanoseconds per call as KSCOPE_TIME_NS=<ns> (the line kscope
 * tune reads).
 */
#ifndef KSCOPE_KERNEL_TIME_H
#define KSCOPE_KERNEL_TIME_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define KSCOPE_BATCH_S 0.01
#define KSCOPE_MIN_S 0.2
#define KSCOPE_LONG_S 0.5
#define KSCOPE_MAX_BATCHES 1000

static double kt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int kt_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Times call(arg) and prints KSCOPE_TIME_NS. */
static void kt_measure(void (*call)(void *), void *arg)
{
	static double ns[KSCOPE_MAX_BATCHES];
	double t0, t, start;
	long calls = 1;
	int n = 0;

	/* Warm-up: the data into the caches, the pages mapped; and the
	 * number of calls that makes a batch. */
	t0 = kt_now();
	call(arg);
	t = kt_now() - t0;
	while (t < KSCOPE_BATCH_S && calls < (1L << 30)) {
		calls = t > 0 ? (long)(calls * 1.5 * KSCOPE_BATCH_S / t) + 1 : calls * 16;
		t0 = kt_now();
		for (long i = 0; i < calls; i++)
			call(arg);
		t = kt_now() - t0;
	}
	start = kt_now();
	while (n < KSCOPE_MAX_BATCHES &&
	       (n < (t >= KSCOPE_LONG_S ? 1 : 3) || kt_now() - start < KSCOPE_MIN_S)) {
		t0 = kt_now();
		for (long i = 0; i < calls; i++)
			call(arg);
		ns[n++] = (kt_now() - t0) * 1e9 / (double)calls;
	}
	qsort(ns, (size_t)n, sizeof(ns[0]), kt_cmp);
	printf("KSCOPE_TIME_NS=%.1f\n", ns[n / 2]);
}

/* A positive size from argv, or a usage message and exit status 2. */
static long kt_size(const char *arg, const char *usage)
{
	char *end;
	long v = strtol(arg, &end, 10);

	if (end == arg || *end || v < 1 || v > (1L << 31)) {
		fprintf(stderr, "%s\n", usage);
		exit(2);
	}
	return v;
}

#endif
