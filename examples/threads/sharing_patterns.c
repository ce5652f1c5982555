/*
 * Four ways for 4 threads to share one cache line, chosen by the first
 * argument, for the verdicts of `kscope falseshare` that depend on byte
 * granularity and on how often threads write (the second argument is N,
 * default 1000000):
 *   flags       each thread writes its own byte of `char flags[4]` N
 *               times: false sharing (no byte is shared);
 *   samebyte    every thread writes the one byte `shared_flag` N times:
 *               true sharing;
 *   readmostly  every thread reads the 4-long table of `lookup` N times
 *               and then stores its result once into `lookup.done`, in
 *               the same line: not false sharing (one store per thread);
 *   counters    each thread increments its own long of `slots[4]` N
 *               times: false sharing (the control).
 * Each variable is 64-byte aligned, so it has a line of its own and a
 * mode touches only its line.  The accesses go through volatile pointers
 * so that they stay in the loops at -O1; workers return their results,
 * so the main thread never touches the lines.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4

_Alignas(64) char flags[NTHREADS];
_Alignas(64) char shared_flag;
_Alignas(64) struct {
	long table[4];       /* read by every thread */
	long done[NTHREADS]; /* written once by each */
} lookup = { { 3, 5, 7, 11 }, { 0 } };
_Alignas(64) long slots[NTHREADS];

static long iterations = 1000000;

static void *flags_worker(void *arg)
{
	volatile char *f = &flags[(long)arg];

	for (long i = 0; i < iterations; i++)
		*f = (char)(i + 1); /* FALSE SHARING */
	return (void *)(long)*f;
}

static void *samebyte_worker(void *arg)
{
	volatile char *f = &shared_flag;

	(void)arg;
	for (long i = 0; i < iterations; i++)
		*f = (char)i; /* TRUE SHARING */
	return NULL;
}

static void *readmostly_worker(void *arg)
{
	volatile const long *tb = lookup.table;
	long sum = 0;

	for (long i = 0; i < iterations; i++)
		sum += tb[i & 3];
	((volatile long *)lookup.done)[(long)arg] = sum; /* READ MOSTLY */
	return (void *)sum;
}

static void *counters_worker(void *arg)
{
	volatile long *c = &slots[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*c)++; /* FALSE SHARING */
	return (void *)*c;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void *(*fn)(void *);
	} modes[] = {
		{ "flags", flags_worker },
		{ "samebyte", samebyte_worker },
		{ "readmostly", readmostly_worker },
		{ "counters", counters_worker },
	};
	void *(*fn)(void *) = NULL;
	pthread_t t[NTHREADS];

	for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i].name))
			fn = modes[i].fn;
	if (!fn) {
		fprintf(stderr, "usage: sharing_patterns flags|samebyte|readmostly|counters [N]\n");
		return 2;
	}
	if (argc > 2)
		iterations = atol(argv[2]);
	if (iterations < 1) {
		fprintf(stderr, "sharing_patterns: N must be a positive number\n");
		return 2;
	}
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, fn, (void *)i) != 0)
			return 1;
	printf("%s", argv[1]);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		printf(" %ld", (long)r);
	}
	printf("\n");
	return 0;
}
