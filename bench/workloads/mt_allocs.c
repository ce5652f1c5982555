/*
 * Benchmark workload for bench/memtools.sh --heap-map: an allocation-heavy
 * program, where kscope memcheck --heap-map's wrapper on every allocation
 * call costs the most.  T threads (argv[2], default 4) each make K
 * thousand allocation calls (argv[1], default 250): malloc, calloc and
 * realloc of 8 to 4103 bytes into a window of 256 live blocks, each
 * block written, the one it replaces freed; a free per allocation.  Every
 * thread's sizes come from its own seed, so the checksum printed depends
 * on K and T only.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 256

struct worker {
	long calls;
	unsigned seed;
	uint64_t sum;
};

static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned char *live[WINDOW] = { NULL };
	size_t sizes[WINDOW] = { 0 };
	uint64_t x = 0x9e3779b97f4a7c15ULL ^ w->seed;

	for (long i = 0; i < w->calls; i++) {
		unsigned k = (unsigned)(i % WINDOW);
		size_t n;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		n = 8 + (size_t)(x % 4096);
		if (i % 7 == 3 && live[k]) {
			unsigned char *p = realloc(live[k], n);

			if (!p)
				abort();
			live[k] = p;
		} else {
			free(live[k]);
			live[k] = i % 5 == 1 ? calloc(1, n) : malloc(n);
			if (!live[k])
				abort();
		}
		memset(live[k], (int)(x & 0xff), n);
		sizes[k] = n;
		w->sum += live[k][n / 2] + n;
	}
	for (unsigned k = 0; k < WINDOW; k++) {
		w->sum += sizes[k];
		free(live[k]);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 250;
	int nt = argc > 2 ? atoi(argv[2]) : 4;
	pthread_t tid[64];
	struct worker w[64];
	uint64_t sum = 0;

	if (k <= 0 || nt <= 0 || nt > 64) {
		fprintf(stderr, "usage: mt_allocs [THOUSANDS [THREADS]]\n");
		return 2;
	}
	for (int t = 0; t < nt; t++) {
		w[t] = (struct worker){ .calls = k * 1000, .seed = (unsigned)t + 1 };
		if (pthread_create(&tid[t], NULL, run, &w[t]))
			return 1;
	}
	for (int t = 0; t < nt; t++) {
		pthread_join(tid[t], NULL);
		sum += w[t].sum;
	}
	printf("allocs %ld %llu\n", k * 1000 * nt, (unsigned long long)sum);
	return 0;
}
