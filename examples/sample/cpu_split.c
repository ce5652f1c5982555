/*
 * A compute-bound program whose CPU time splits 3:1 between two
 * functions, heavy() and light(): each round runs heavy() on three times
 * the work light() gets.  A sampling profiler should find about 75% of
 * the samples in heavy() and 25% in light().  Runs for about 1.5 CPU
 * seconds, or argv[1] seconds.  Its output does not depend on timing, so
 * runs with and without a profiler can be compared.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile double sink;

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(long n)
{
	double x = sink;

	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	sink = x;
}

/* The empty asm after each call keeps the call out of tail position: a
 * tail call would become a jump, and heavy() and light() would not be on
 * the stack while spin() runs. */
__attribute__((noinline)) static void heavy(long n)
{
	spin(3 * n);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void light(long n)
{
	spin(n);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 1.5;
	double start = cpu_seconds();

	/* Rounds of about 20 ms: reading a CPU clock often makes the
	 * kernel's CPU-time timers fire late when threads compete for CPUs,
	 * which would distort what a profiler sees of this program. */
	while (cpu_seconds() - start < seconds) {
		/* Each call lasts longer than a kernel tick (4 ms at 250 Hz):
		 * the CPU-time sampler fires on ticks, and phases shorter
		 * than a tick can alias with them when the CPU is busy. */
		heavy(8000000);
		light(8000000);
	}
	printf("cpu_split: heavy:light = 3:1\n");
	return 0;
}
