/*
 * Many waiting threads and one busy one: starts argv[1] threads (default
 * 2000) that wait on a condition variable, computes for argv[2]
 * CPU-seconds on the main thread (default 0.4), then wakes and joins
 * them.  A wall-clock sampler that interrupts every thread at its full
 * rate would wake each waiting thread hundreds of times a second; this is
 * the program that shows what that costs (the real-time sampler's budget,
 * docs/sample.md).  Prints "ok" and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int go;
static volatile double sink;

static void *waiter(void *arg)
{
	pthread_mutex_lock(&lock);
	while (!go)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return arg;
}

static double thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void compute(double secs)
{
	double end = thread_cpu() + secs;

	while (thread_cpu() < end)
		for (int i = 0; i < 100000; i++)
			sink = sink * 1.0000001 + 1e-9;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	double secs = argc > 2 ? atof(argv[2]) : 0.4;
	pthread_t *th = calloc((size_t)(n > 0 ? n : 1), sizeof(*th));
	pthread_attr_t attr;
	int started = 0;

	if (!th || n < 0)
		return 1;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (; started < n; started++)
		if (pthread_create(&th[started], &attr, waiter, NULL) != 0)
			break;
	compute(secs);
	pthread_mutex_lock(&lock);
	go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	free(th);
	printf(started == n ? "ok\n" : "only %d threads\n", started);
	return started == n ? 0 : 1;
}
