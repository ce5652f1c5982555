/*
 * The statistics of kscope tune's measured runs: percentiles by linear
 * interpolation between the sorted samples (rank p/100 * (n - 1)), so
 * the median of an even number of runs is the mean of the middle two.
 */
#include <stdlib.h>
#include <string.h>

#include "tune_int.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double ks_tune_percentile(const double *v, size_t n, double p)
{
	double sorted[1000], rank, frac;
	size_t lo;

	/* Runs per configuration are at most 1000 (tune.h). */
	if (n == 0)
		return -1;
	if (n > sizeof(sorted) / sizeof(sorted[0]))
		n = sizeof(sorted) / sizeof(sorted[0]);
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	rank = p / 100.0 * (double)(n - 1);
	lo = (size_t)rank;
	frac = rank - (double)lo;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}
