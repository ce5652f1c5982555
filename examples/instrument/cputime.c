/*
 * Known CPU and wall times, for kscope instrument's CPU-time tests:
 * NTHREADS threads and main each call step() twice; step() spins (CPU
 * time) and then sleeps (wall time only).  With more threads than
 * cores, the spins are also preempted: their wall time exceeds their
 * CPU time.  Then a forked child calls step() once.  Each thread measures
 * its own spins with CLOCK_THREAD_CPUTIME_ID and says so on stderr
 * ("spin PID NS"); stdout gets one fixed line per process.
 * Usage: cputime [SPIN_ITERATIONS]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 3

static long iters = 20000000;

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) double spin(long n)
{
	volatile double x = 0;

	for (long i = 0; i < n; i++)
		x += (double)i;
	return x;
}

__attribute__((noinline)) void nap(int ms)
{
	usleep((useconds_t)ms * 1000);
}

/* Returns the CPU time of its spin, as the thread measured it. */
__attribute__((noinline)) long long step(void)
{
	long long c0 = cpu_ns(), c1;

	spin(iters);
	c1 = cpu_ns();
	nap(40);
	return c1 - c0;
}

static void *worker(void *arg)
{
	long long c = step() + step();

	fprintf(stderr, "spin %d %lld\n", (int)getpid(), c);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t[NTHREADS];
	long long c;
	pid_t child;

	if (argc > 1)
		iters = atol(argv[1]);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	c = step() + step();
	fprintf(stderr, "spin %d %lld\n", (int)getpid(), c);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	fflush(NULL);
	child = fork();
	if (child == 0) {
		c = step();
		fprintf(stderr, "spin %d %lld\n", (int)getpid(), c);
		printf("child done\n");
		return 0;
	}
	waitpid(child, NULL, 0);
	printf("parent done\n");
	return 0;
}
