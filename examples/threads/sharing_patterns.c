/*
 * Ways for 4 threads to share (or not share) cache lines, chosen by the
 * first argument, for the verdicts of `kscope falseshare` (the second
 * argument is N, default 1000000: how many times each thread runs its
 * loop).  The first four depend on byte granularity and on how often
 * threads write:
 *   flags       each thread writes its own byte of `char flags[4]` N
 *               times: false sharing (no byte is shared);
 *   samebyte    every thread writes the one byte `shared_flag` N times:
 *               true sharing;
 *   readmostly  every thread reads the 4-long table of `lookup` N times
 *               and then stores its result once into `lookup.done`, in
 *               the same line: not false sharing (one store per thread);
 *   counters    each thread increments its own long of `slots[4]` N
 *               times: false sharing (the control).
 * Then a suite of false-sharing bugs, each with its fix (MODE_fixed: the
 * same work with each thread's data on lines of its own, so nothing is
 * falsely shared):
 *   counters_fixed  `counters` on `padded_slots[4]`, a 64-byte-aligned
 *               struct per thread;
 *   fields      thread i increments field i of the struct `st` {a, b,
 *               c, d}; fixed: `st_padded`, each field on its own line;
 *   statics     thread i increments the i-th of four file-scope statics
 *               `hits_a`..`hits_d`, which sit in one line; fixed:
 *               `hits_aligned_a`..`hits_aligned_d`, each `_Alignas(64)`;
 *   calloc_structs  thread i adds to `sum` and `count` of the i-th
 *               16-byte struct of an array from calloc: the 64 bytes of
 *               the array lie in one or two lines wherever the allocator
 *               puts them, so some line always has two writers or more;
 *               fixed: the structs padded to 64 bytes, from aligned_alloc;
 *   heap_split  a malloc'd int array of SPLIT_LEN elements split into 4
 *               contiguous chunks whose boundaries are not multiples of 16
 *               ints; each thread zeroes its chunk, then increments its
 *               elements in turn, N increments in all: the three boundary
 *               lines are falsely shared, wherever the allocator puts the
 *               block; fixed: boundaries rounded down to 16 ints, the
 *               array from aligned_alloc(64);
 *   histogram   `long hist[BINS][4]`, bin-major: thread t increments
 *               hist[b][t] for b = 0, 1, ..., BINS - 1, 0, ..., so the
 *               threads' counters alternate in every line; fixed:
 *               `hist_rows`, thread-major, each row padded to whole lines;
 *   atomic_counter  every thread atomically increments the one
 *               `_Atomic long atomic_total` N times: true sharing;
 *   readonly    every thread reads the 16-long `ro_table` N times and
 *               writes nothing: neither false nor true sharing.
 * Each global a mode writes is 64-byte aligned (the statics' group as a
 * whole: see there), so it has lines of its own and a mode touches only
 * its lines.  The accesses go through volatile pointers or atomics so
 * that they stay in the loops at -O1; the workers start their loops
 * together (a barrier) and return their results, so the main thread
 * never touches the lines; every result is a count that does not depend
 * on scheduling, so the output is the same with and without kscope.
 * The hot store of each bug carries a `FALSE SHARING: MODE` comment,
 * each allocation an `ALLOC: MODE` one, for the tests
 * (tests/memtools/fs_patterns.py).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define LINE 64
#define BINS 10			/* a bin-major row of 4 longs: 2 bins a line */
#define SPLIT_LEN (4 * 100 + 10)	/* heap_split's ints: chunks of 102-103 */

_Alignas(64) char flags[NTHREADS];
_Alignas(64) char shared_flag;
_Alignas(64) struct {
	long table[4];       /* read by every thread */
	long done[NTHREADS]; /* written once by each */
} lookup = { { 3, 5, 7, 11 }, { 0 } };
_Alignas(64) long slots[NTHREADS];

/* counters_fixed: one line per thread. */
struct padded_slot {
	_Alignas(64) long n;
};
struct padded_slot padded_slots[NTHREADS];

/* fields: four fields in 32 bytes of one line. */
_Alignas(64) struct stats {
	long a, b, c, d;
} st;
struct stats_padded {
	_Alignas(64) long a;
	_Alignas(64) long b;
	_Alignas(64) long c;
	_Alignas(64) long d;
} st_padded;

/*
 * statics: four separate symbols that must share one line, and with
 * nothing else.  Compilers order a translation unit's statics as they
 * please (gcc 12 -O1 emits them in reverse, clang 14 in order) and the
 * linker places .bss among other variables: left alone, the four landed
 * in one line by chance, next to hits_aligned_a with gcc and atomic_total
 * with clang.  So the group gets an input section of its own,
 * ".data.ks_hits", holding the four 8-byte longs and hits_group_pad, 32
 * bytes never touched that ask for 64-byte alignment, so the section
 * starts on a line (a section is aligned like its most aligned member).
 * The pad first (clang): it and the longs fill the line exactly; the pad
 * last (gcc): the longs fill the first 32 bytes and the pad starts the
 * next line.  Either way the line holds the four longs and nothing else
 * any mode touches, and they stay four symbols as in any program.  The
 * name starts with ".data." so that the linker puts the section inside
 * .data: Valgrind names no variable of a section it does not know (with
 * "ks_hits" the line was an unknown object).  statics_setup() checks the
 * layout before the mode runs.
 */
#define KS_HITS __attribute__((section(".data.ks_hits")))
__attribute__((used)) _Alignas(64) static char hits_group_pad[LINE - 32] KS_HITS;
static long hits_a KS_HITS;
static long hits_b KS_HITS;
static long hits_c KS_HITS;
static long hits_d KS_HITS;
_Alignas(64) static long hits_aligned_a;
_Alignas(64) static long hits_aligned_b;
_Alignas(64) static long hits_aligned_c;
_Alignas(64) static long hits_aligned_d;

/* calloc_structs: 16 bytes a thread; fixed: 64. */
struct tally {
	long sum;
	long count;
};
struct tally_padded {
	_Alignas(64) long sum;
	long count;
};
static struct tally *tallies;
static struct tally_padded *tallies_padded;

/* heap_split: the array and each thread's chunk [split_lo[t], split_lo[t+1]). */
static int *split;
static long split_lo[NTHREADS + 1];

/* histogram: bin-major (bug) and thread-major with padded rows (fix). */
_Alignas(64) long hist[BINS][NTHREADS];
struct hist_row {
	_Alignas(64) long bin[BINS]; /* 80 bytes, padded to 128 */
};
struct hist_row hist_rows[NTHREADS];

_Alignas(64) _Atomic long atomic_total;
_Alignas(64) const long ro_table[16] = {
	1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597
};

static long iterations = 1000000;

/*
 * How the workers start: they wait for each other before their loops, so
 * that under the compiled front end (threads really in parallel) the
 * loops overlap and the invalidations a bug costs show whatever the
 * delays between thread starts.  The barrier has a line of its own (with
 * the mode's worker, which main() chooses before any thread exists, a
 * global for the same reason as `iterations`): every thread writes the
 * barrier, so next to a mode's variable it would make that line truly
 * shared.
 */
static struct {
	_Alignas(64) pthread_barrier_t barrier;
	void *(*worker)(void *);
} start;

/* ---------------------------------------------------------------------
 * The first four modes
 * ------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------
 * Bugs and their fixes
 * ------------------------------------------------------------------- */

static void *counters_fixed_worker(void *arg)
{
	volatile long *c = &padded_slots[(long)arg].n;

	for (long i = 0; i < iterations; i++)
		(*c)++;
	return (void *)*c;
}

static void *fields_worker(void *arg)
{
	long *const field[NTHREADS] = { &st.a, &st.b, &st.c, &st.d };
	volatile long *f = field[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*f)++; /* FALSE SHARING: fields */
	return (void *)*f;
}

static void *fields_fixed_worker(void *arg)
{
	long *const field[NTHREADS] = { &st_padded.a, &st_padded.b, &st_padded.c,
					&st_padded.d };
	volatile long *f = field[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*f)++;
	return (void *)*f;
}

static void *statics_worker(void *arg)
{
	long *const hits[NTHREADS] = { &hits_a, &hits_b, &hits_c, &hits_d };
	volatile long *h = hits[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*h)++; /* FALSE SHARING: statics */
	return (void *)*h;
}

static void *statics_fixed_worker(void *arg)
{
	long *const hits[NTHREADS] = { &hits_aligned_a, &hits_aligned_b, &hits_aligned_c,
				       &hits_aligned_d };
	volatile long *h = hits[(long)arg];

	for (long i = 0; i < iterations; i++)
		(*h)++;
	return (void *)*h;
}

static void *calloc_structs_worker(void *arg)
{
	volatile struct tally *t = &tallies[(long)arg];

	for (long i = 0; i < iterations; i++) {
		t->sum += i & 7; /* FALSE SHARING: calloc_structs */
		t->count++;
	}
	return (void *)(t->sum + t->count);
}

static void *calloc_structs_fixed_worker(void *arg)
{
	volatile struct tally_padded *t = &tallies_padded[(long)arg];

	for (long i = 0; i < iterations; i++) {
		t->sum += i & 7;
		t->count++;
	}
	return (void *)(t->sum + t->count);
}

/*
 * Both heap_split modes: the thread zeroes its own chunk (so the main
 * thread never touches the array), then makes N increments over it.
 */
static void *split_worker(void *arg)
{
	long id = (long)arg, lo = split_lo[id], len = split_lo[id + 1] - lo;
	volatile int *a = split + lo;
	long sum = 0;

	for (long j = 0; j < len; j++)
		a[j] = 0;
	for (long i = 0, j = 0; i < iterations; i++, j = j + 1 == len ? 0 : j + 1)
		a[j]++; /* FALSE SHARING: heap_split */
	for (long j = 0; j < len; j++)
		sum += a[j];
	return (void *)sum;
}

static void *histogram_worker(void *arg)
{
	long t = (long)arg, sum = 0;
	volatile long (*h)[NTHREADS] = hist;

	for (long i = 0, b = 0; i < iterations; i++, b = b + 1 == BINS ? 0 : b + 1)
		h[b][t]++; /* FALSE SHARING: histogram */
	for (long b = 0; b < BINS; b++)
		sum += h[b][t] * (b + 1);
	return (void *)sum;
}

static void *histogram_fixed_worker(void *arg)
{
	long t = (long)arg, sum = 0;
	volatile long *row = hist_rows[t].bin;

	for (long i = 0, b = 0; i < iterations; i++, b = b + 1 == BINS ? 0 : b + 1)
		row[b]++;
	for (long b = 0; b < BINS; b++)
		sum += row[b] * (b + 1);
	return (void *)sum;
}

static void *atomic_counter_worker(void *arg)
{
	long mine = 0;

	(void)arg;
	for (long i = 0; i < iterations; i++, mine++)
		atomic_fetch_add(&atomic_total, 1); /* TRUE SHARING: atomic_counter */
	return (void *)mine;
}

static void *readonly_worker(void *arg)
{
	volatile const long *tb = ro_table;
	long sum = 0;

	(void)arg;
	for (long i = 0; i < iterations; i++)
		sum += tb[i & 15];
	return (void *)sum;
}

static void *start_worker(void *arg)
{
	pthread_barrier_wait(&start.barrier);
	return start.worker(arg);
}

/* ---------------------------------------------------------------------
 * Set-up before the threads start: 0, or -1 when out of memory or the
 * layout is not the one the mode needs
 * ------------------------------------------------------------------- */

static int calloc_structs_setup(void)
{
	tallies = calloc(NTHREADS, sizeof(*tallies)); /* ALLOC: calloc_structs */
	return tallies ? 0 : -1;
}

static int calloc_structs_fixed_setup(void)
{
	_Static_assert(sizeof(struct tally_padded) == LINE, "one line per thread");
	tallies_padded = aligned_alloc(LINE, NTHREADS * sizeof(*tallies_padded));
	if (!tallies_padded)
		return -1;
	memset(tallies_padded, 0, NTHREADS * sizeof(*tallies_padded));
	return 0;
}

static int heap_split_setup(void)
{
	split = malloc(SPLIT_LEN * sizeof(int)); /* ALLOC: heap_split */
	if (!split)
		return -1;
	/* 0, 102, 205, 307, 410: no inner boundary is a multiple of 16. */
	for (long t = 0; t <= NTHREADS; t++)
		split_lo[t] = t * SPLIT_LEN / NTHREADS;
	return 0;
}

static int heap_split_fixed_setup(void)
{
	size_t bytes = (SPLIT_LEN * sizeof(int) + LINE - 1) / LINE * LINE;
	long per_line = LINE / sizeof(int);

	split = aligned_alloc(LINE, bytes);
	if (!split)
		return -1;
	/* 0, 96, 192, 304, 410: each chunk starts a line. */
	for (long t = 0; t <= NTHREADS; t++)
		split_lo[t] = t == NTHREADS ? SPLIT_LEN
					    : t * SPLIT_LEN / NTHREADS / per_line * per_line;
	return 0;
}

/* The statics' group must lie in one line (see their definition). */
static int statics_setup(void)
{
	uintptr_t a[NTHREADS] = { (uintptr_t)&hits_a, (uintptr_t)&hits_b,
				  (uintptr_t)&hits_c, (uintptr_t)&hits_d };

	for (int i = 1; i < NTHREADS; i++)
		if (a[i] / LINE != a[0] / LINE) {
			fprintf(stderr, "sharing_patterns: hits_a..hits_d are not in one line\n");
			return -1;
		}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void *(*fn)(void *);
		int (*setup)(void); /* or NULL */
	} modes[] = {
		{ "flags", flags_worker, NULL },
		{ "samebyte", samebyte_worker, NULL },
		{ "readmostly", readmostly_worker, NULL },
		{ "counters", counters_worker, NULL },
		{ "counters_fixed", counters_fixed_worker, NULL },
		{ "fields", fields_worker, NULL },
		{ "fields_fixed", fields_fixed_worker, NULL },
		{ "statics", statics_worker, statics_setup },
		{ "statics_fixed", statics_fixed_worker, NULL },
		{ "calloc_structs", calloc_structs_worker, calloc_structs_setup },
		{ "calloc_structs_fixed", calloc_structs_fixed_worker, calloc_structs_fixed_setup },
		{ "heap_split", split_worker, heap_split_setup },
		{ "heap_split_fixed", split_worker, heap_split_fixed_setup },
		{ "histogram", histogram_worker, NULL },
		{ "histogram_fixed", histogram_fixed_worker, NULL },
		{ "atomic_counter", atomic_counter_worker, NULL },
		{ "readonly", readonly_worker, NULL },
	};
	int (*setup)(void) = NULL;
	pthread_t t[NTHREADS];

	for (size_t i = 0; argc > 1 && i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(argv[1], modes[i].name)) {
			start.worker = modes[i].fn;
			setup = modes[i].setup;
		}
	if (!start.worker) {
		fprintf(stderr, "usage: sharing_patterns MODE [N]\n"
			"  MODE: flags|samebyte|readmostly|counters|counters_fixed|\n"
			"        fields|fields_fixed|statics|statics_fixed|\n"
			"        calloc_structs|calloc_structs_fixed|heap_split|heap_split_fixed|\n"
			"        histogram|histogram_fixed|atomic_counter|readonly\n");
		return 2;
	}
	if (argc > 2)
		iterations = atol(argv[2]);
	if (iterations < 1) {
		fprintf(stderr, "sharing_patterns: N must be a positive number\n");
		return 2;
	}
	if ((setup && setup() != 0) ||
	    pthread_barrier_init(&start.barrier, NULL, NTHREADS) != 0)
		return 1;
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, start_worker, (void *)i) != 0)
			return 1;
	printf("%s", argv[1]);
	for (int i = 0; i < NTHREADS; i++) {
		void *r;

		pthread_join(t[i], &r);
		printf(" %ld", (long)r);
	}
	printf("\n");
	free(tallies);
	free(tallies_padded);
	free(split);
	return 0;
}
