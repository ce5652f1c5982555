/*
 * A program that runs until told to stop, for kscope instrument --pid's
 * tests: NTHREADS threads and main call tick() in a loop, each tick
 * calling work() 100 times and sleeping a millisecond.  It says "ready"
 * on stderr once every thread runs; SIGUSR1 (or SIGTERM) ends it, and
 * it prints on stdout whether every tick's result was right (a patched
 * function that computed wrongly would show).
 * Usage: running
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define NTHREADS 3

static volatile sig_atomic_t done;
static pthread_barrier_t started;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

__attribute__((noinline)) long work(long x)
{
	volatile long s = x;

	for (int i = 0; i < 1000; i++)
		s += i;
	return s;
}

/* work(0..n-1) summed: n * 499500 + n * (n - 1) / 2. */
__attribute__((noinline)) long tick(long n)
{
	long a = 0;

	for (long i = 0; i < n; i++)
		a += work(i);
	return a;
}

/* The number of ticks whose result was wrong. */
static long loop(void)
{
	long bad = 0;

	while (!done) {
		if (tick(100) != 100 * 499500L + 100 * 99 / 2)
			bad++;
		usleep(1000);
	}
	return bad;
}

static void *worker(void *arg)
{
	pthread_barrier_wait(&started);
	return (void *)loop() + (long)arg;
}

int main(void)
{
	pthread_t t[NTHREADS];
	long bad;

	signal(SIGUSR1, on_signal);
	signal(SIGTERM, on_signal);
	pthread_barrier_init(&started, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	pthread_barrier_wait(&started);
	fprintf(stderr, "ready\n");
	bad = loop();
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		bad += (long)r;
	}
	printf("%s\n", bad ? "wrong results" : "all results right");
	return bad != 0;
}
