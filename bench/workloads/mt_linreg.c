/*
 * Benchmark workload for bench/memtools.sh, with false sharing: linear
 * regression over S MiB of (x, y) byte pairs (argv[1], default 256),
 * split among T threads (argv[2], default 4), as in the Phoenix suite's
 * linear_regression, made P times over (argv[3], default 3) so the sums
 * outweigh generating the points.  Each thread adds into its own accumulator struct
 * (sx, sy, sxx, syy, sxy), and the structs are packed next to each other
 * in one array, so neighbouring threads' accumulators share cache lines.
 * The sums are updated through a volatile pointer, so every iteration
 * loads and stores them (as Phoenix's build did, the points being chars
 * that may alias the sums; GCC 12 instead checks the aliasing at run time
 * and keeps the sums in registers, which would hide the false sharing
 * this workload exists for), and the lines ping-pong between cores.  The
 * points are seeded per MiB, so the printed sums depend on S and P only,
 * not on T.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define MIB (1024L * 1024L)

struct point {
	char x, y;
};

/* Deliberately not padded to a cache line: this is the false sharing. */
struct lreg_args {
	struct point *points;	/* all points, shared */
	long first_mib, n_mib;	/* this thread's slice, in MiB */
	int passes;
	long long sx, sy, sxx, syy, sxy;
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

/* y = x / 2 + 10 plus noise, x in [0, 100). */
static void fill(struct point *p, long mib)
{
	uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(mib + 1);
	long n = MIB / (long)sizeof(struct point);

	for (long i = 0; i < n; i++) {
		uint64_t r = xorshift64(&s);
		int x = (int)(r % 100);

		p[i].x = (char)x;
		p[i].y = (char)(x / 2 + 10 + (int)((r >> 32) % 9) - 4);
	}
}

static void *worker(void *arg)
{
	struct lreg_args *args = arg;
	volatile struct lreg_args *acc = args;	/* the falsely shared sums */
	const struct point *p = args->points;
	long per_mib = MIB / (long)sizeof(struct point);
	long first = args->first_mib * per_mib, n = args->n_mib * per_mib;

	for (long m = 0; m < args->n_mib; m++)
		fill(args->points + first + m * per_mib, args->first_mib + m);
	pthread_barrier_wait(&filled);
	for (int pass = 0; pass < args->passes; pass++)
		for (long i = first; i < first + n; i++) {
			acc->sx += p[i].x;
			acc->sxx += p[i].x * p[i].x;
			acc->sy += p[i].y;
			acc->syy += p[i].y * p[i].y;
			acc->sxy += p[i].x * p[i].y;
		}
	return NULL;
}

int main(int argc, char **argv)
{
	long mib = argc > 1 ? atol(argv[1]) : 256;
	int nthreads = argc > 2 ? atoi(argv[2]) : 4;
	int passes = argc > 3 ? atoi(argv[3]) : 3;
	long long sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
	struct lreg_args *args;
	struct point *points;
	pthread_t *t;
	double n, a, b;

	if (mib < 1 || nthreads < 1 || passes < 1) {
		fprintf(stderr, "usage: mt_linreg [MIB] [THREADS] [PASSES]\n");
		return 2;
	}
	points = malloc((size_t)(mib * MIB));
	args = calloc((size_t)nthreads, sizeof(*args));
	t = calloc((size_t)nthreads, sizeof(*t));
	if (!points || !args || !t ||
	    pthread_barrier_init(&filled, NULL, (unsigned)nthreads) != 0)
		return 1;
	for (int i = 0; i < nthreads; i++) {
		args[i].points = points;
		args[i].first_mib = mib * i / nthreads;
		args[i].n_mib = mib * (i + 1) / nthreads - args[i].first_mib;
		args[i].passes = passes;
		if (pthread_create(&t[i], NULL, worker, &args[i]) != 0)
			return 1;
	}
	for (int i = 0; i < nthreads; i++) {
		pthread_join(t[i], NULL);
		sx += args[i].sx;
		sy += args[i].sy;
		sxx += args[i].sxx;
		syy += args[i].syy;
		sxy += args[i].sxy;
	}
	n = (double)(mib * MIB / (long)sizeof(struct point)) * passes;
	b = ((double)sxy * n - (double)sx * (double)sy) /
	    ((double)sxx * n - (double)sx * (double)sx);
	a = ((double)sy - b * (double)sx) / n;
	printf("linreg %ld MiB x %d: y = %.4f x + %.4f, sums %lld %lld %lld %lld %lld\n",
	       mib, passes, b, a, sx, sy, sxx, syy, sxy);
	pthread_barrier_destroy(&filled);
	free(t);
	free(args);
	free(points);
	return 0;
}
