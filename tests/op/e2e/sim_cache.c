/*
 * A known access pattern for kscope op --simulate's cache sets and lines
 * (tests/op/simulate_e2e.py, scenario "cache"), run with
 * --cache L1=32k:8:64,L2=1M:16:64,LL=8M:16:64:
 *
 *   strided()  loads 64 lines 64 KiB apart (the second level's sets x its
 *              line): all in one set of the second level, more lines than
 *              its 16 ways, so each load misses there;
 *   hot()      increments a counter, then touches 8 of 64 lines 4 KiB apart
 *              in the counter's first-level set: the 8-way set evicts the
 *              counter every round, which makes it the line with the most
 *              first-level misses (one per round), and a dirty one.
 *
 * It prints the strided array's and the counter's addresses for the test
 * to find in the 0x0B and 0x0E blocks.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define STRIDE (1024 * 64)
#define N 64
#define ROUNDS 200
#define HOT_ROUNDS 20000

static volatile long counter;
static char pool[65 * 4096];

static __attribute__((noinline)) long strided(const char *a)
{
	long s = 0;

	for (int r = 0; r < ROUNDS; r++)
		for (int i = 0; i < N; i++)
			s += a[(size_t)i * STRIDE];
	return s;
}

static __attribute__((noinline)) long hot(long n)
{
	/* pool lines in the counter's first-level set */
	size_t off = ((uintptr_t)&counter - (uintptr_t)pool) & 4095;
	volatile char *p = pool + off;
	long s = 0;

	for (long i = 0; i < n; i++) {
		counter = counter + 1; /* HOT LINE */
		for (int j = 0; j < 8; j++)
			s += p[(size_t)((i * 8 + j) % 64) * 4096];
	}
	return s;
}

int main(void)
{
	char *a = calloc((size_t)N * STRIDE, 1);

	printf("array %p\n", (void *)a);
	printf("strided %ld\n", strided(a));
	printf("hot %ld\n", hot(HOT_ROUNDS));
	printf("counter %p %ld\n", (void *)(uintptr_t)&counter, counter);
	free(a);
	return 0;
}
