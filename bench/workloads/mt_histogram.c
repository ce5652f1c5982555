/*
 * Benchmark workload for bench/memtools.sh: T threads (argv[2], default
 * 4) fill a random byte array of S MiB (argv[1], default 256) and then
 * histogram it, each its own slice into a private 256-bin histogram, P
 * times over (argv[3], default 8) so the work outweighs the fill; the
 * main thread merges the histograms and prints a checksum.  The array is
 * the native footprint the memory tools' peak-RSS ratios are measured
 * against.  The data is seeded per MiB, so the checksum depends on S and
 * P only, not on T.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB (1024L * 1024L)

struct slice {
	unsigned char *data;	/* the whole array, shared */
	long first_mib, n_mib;	/* this thread's slice, in MiB */
	int passes;
	unsigned long hist[256];	/* private: only this thread writes it */
};

static pthread_barrier_t filled;

static uint64_t xorshift64(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void fill(unsigned char *p, long mib)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(mib + 1);

	for (long i = 0; i < MIB; i += 8) {
		uint64_t r = xorshift64(&s);

		for (int b = 0; b < 8; b++)
			p[i + b] = (unsigned char)(r >> (8 * b));
	}
}

static void *worker(void *arg)
{
	struct slice *sl = arg;
	const unsigned char *p = sl->data + sl->first_mib * MIB;
	long len = sl->n_mib * MIB;

	for (long m = 0; m < sl->n_mib; m++)
		fill(sl->data + (sl->first_mib + m) * MIB, sl->first_mib + m);
	pthread_barrier_wait(&filled);
	for (int pass = 0; pass < sl->passes; pass++)
		for (long i = 0; i < len; i++)
			sl->hist[p[i]]++;
	return NULL;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 256;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	int passes = argc > 3 ? atoi(argv[3]) : 8;
	unsigned long hist[256] = {0}, checksum = 0;
	struct slice *sl;
	pthread_t *t;
	unsigned char *data;

	if (mib < 1 || nthreads < 1 || passes < 1) {
		fprintf(stderr, "usage: mt_histogram [MIB] [THREADS] [PASSES]\n");
		return 2;
	}
	data = malloc((size_t)(mib * MIB));
	sl = calloc((size_t)nthreads, sizeof(*sl));
	t = calloc((size_t)nthreads, sizeof(*t));
	if (!data || !sl || !t ||
	    pthread_barrier_init(&filled, NULL, (unsigned)nthreads) != 0)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		sl[i].data = data;
		sl[i].first_mib = mib * i / nthreads;
		sl[i].n_mib = mib * (i + 1) / nthreads - sl[i].first_mib;
		sl[i].passes = passes;
		if (pthread_create(&t[i], NULL, worker, &sl[i]) != 0)
			return 1;
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		for (int b = 0; b < 256; b++)
			hist[b] += sl[i].hist[b];
	}
	for (int b = 0; b < 256; b++)
		checksum = checksum * 31 + hist[b];
	printf("histogram %ld MiB x %d: checksum %lu\n", mib, passes, checksum);
	pthread_barrier_destroy(&filled);
	free(t);
	free(sl);
	free(data);
	return 0;
}
