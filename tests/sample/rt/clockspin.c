/*
 * A test program for the CPU-time sampler under contention: computes for
 * argv[1] CPU seconds (default 1) and reads its own CPU clock after every
 * 2.5 ms of work, as a program timing itself does.  Sharing a CPU
 * with busy processes, such a thread gets its CPU-time timer checked
 * late, and the kernel folds several timer periods into one signal
 * (test_rt.sh, scenario starved).  Prints "done" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void work(long n)
{
	double x = sink;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.0;
	double start = cpu_seconds(), t;
	long n;

	/* How much work takes 2.5 ms of CPU on this machine. */
	work(1000000);
	t = cpu_seconds() - start;
	n = t > 0 ? (long)(1000000 * 0.0025 / t) : 1000000;
	if (n < 1)
		n = 1;
	while (cpu_seconds() - start < seconds)
		work(n);
	puts("done");
	return 0;
}
