/*
 * Starts many short-lived threads, each burning a fixed amount of its own
 * CPU time: argv[1] threads in all (default 2000), each spinning for
 * argv[2] microseconds of thread CPU time (default 800, less than one
 * period of the default 300 Hz sampler), at most argv[3] alive at once
 * (default 2).  The main thread only creates and joins them.
 *
 * It exists to check that the CPU-time sampler sees threads that use
 * less than one sampling period each: their samples, counted in timer
 * periods, must add up to the CPU time the threads used
 * (tests/sample/post, scenario short_threads).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long spin_ns = 800000;
static volatile unsigned long sink;

static long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000L + ts.tv_nsec;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	long start = thread_cpu_ns();
	unsigned long x = (unsigned long)arg;

	while (thread_cpu_ns() - start < spin_ns)
		for (int i = 0; i < 1000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
	sink = x;
	return NULL;
}

int main(int argc, char **argv)
{
	int total = argc > 1 ? atoi(argv[1]) : 2000;
	int batch = argc > 3 ? atoi(argv[3]) : 2;
	pthread_t *th;
	int done = 0;

	if (argc > 2)
		spin_ns = atol(argv[2]) * 1000L;
	if (total < 0 || spin_ns < 0) {
		fprintf(stderr, "usage: short_threads [THREADS [MICROSECONDS [BATCH]]]\n");
		return 2;
	}
	if (batch < 1)
		batch = 1;
	th = calloc((size_t)batch, sizeof(*th));
	if (!th)
		return 1;
	while (done < total) {
		int n = total - done < batch ? total - done : batch;

		for (int i = 0; i < n; i++)
			if (pthread_create(&th[i], NULL, worker, (void *)(long)(done + i)) != 0) {
				fprintf(stderr, "short_threads: pthread_create failed\n");
				return 1;
			}
		for (int i = 0; i < n; i++)
			pthread_join(th[i], NULL);
		done += n;
	}
	printf("short_threads: %d threads of %ld us\n", total, spin_ns / 1000);
	free(th);
	return 0;
}
