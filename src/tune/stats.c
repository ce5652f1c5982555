/*
 * The statistics of kscope tune's measured runs: percentiles by linear
 * interpolation between the sorted samples (rank p/100 * (n - 1)), so
 * the median of an even number of runs is the mean of the middle two;
 * and the median's 95% confidence interval from the order statistics
 * (distribution-free: run times are skewed and rarely normal); and
 * Spearman's rank correlation, for --strategy model.
 */
#include <math.h>
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

/* ------------------------------------------------------------------ */
/* The median's confidence interval                                    */
/* ------------------------------------------------------------------ */

/* P(X <= j) for X binomial(n, 1/2). */
static double binom_cdf_half(size_t n, size_t j)
{
	double sum = 0;

	for (size_t i = 0; i <= j && i <= n; i++)
		sum += exp(lgamma((double)n + 1) - lgamma((double)i + 1) -
			   lgamma((double)(n - i) + 1) - (double)n * log(2.0));
	return sum;
}

void ks_tune_median_ci(const double *v, size_t n, double *lo, double *hi)
{
	double sorted[1000];
	size_t k = 0;

	if (n == 0) {
		*lo = *hi = -1;
		return;
	}
	if (n > sizeof(sorted) / sizeof(sorted[0]))
		n = sizeof(sorted) / sizeof(sorted[0]);
	memcpy(sorted, v, n * sizeof(*v));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	/* The largest k with P(X <= k - 1) <= 2.5%: the median lies between
	 * the k-th smallest and the k-th largest sample with probability at
	 * least 95%, whatever the distribution of the times. */
	while (k + 1 <= n / 2 && binom_cdf_half(n, k) <= 0.025)
		k++;
	if (k == 0) {
		/* Under 6 runs no pair of samples covers 95%: their range. */
		*lo = sorted[0];
		*hi = sorted[n - 1];
		return;
	}
	*lo = sorted[k - 1];
	*hi = sorted[n - k];
}

/* ------------------------------------------------------------------ */
/* Rank correlation                                                    */
/* ------------------------------------------------------------------ */

struct ranked {
	double v;
	size_t i;
};

static int by_value(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

/* The ranks of v (1-based; ties get their average rank) into r. */
static bool ranks(const double *v, size_t n, double *r)
{
	struct ranked *s = calloc(n, sizeof(*s));

	if (!s)
		return false;
	for (size_t i = 0; i < n; i++)
		s[i] = (struct ranked){ v[i], i };
	qsort(s, n, sizeof(*s), by_value);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		while (j + 1 < n && s[j + 1].v == s[i].v)
			j++;
		for (size_t k = i; k <= j; k++)
			r[s[k].i] = (double)(i + j) / 2 + 1;
		i = j + 1;
	}
	free(s);
	return true;
}

bool ks_tune_spearman(const double *x, const double *y, size_t n, double *rho)
{
	double *rx, *ry, mean = ((double)n + 1) / 2, sxy = 0, sxx = 0, syy = 0;
	bool ok = false;

	if (n < 3)
		return false;
	rx = calloc(n, sizeof(*rx));
	ry = calloc(n, sizeof(*ry));
	if (rx && ry && ranks(x, n, rx) && ranks(y, n, ry)) {
		/* Pearson's correlation of the ranks (right with ties too). */
		for (size_t i = 0; i < n; i++) {
			sxy += (rx[i] - mean) * (ry[i] - mean);
			sxx += (rx[i] - mean) * (rx[i] - mean);
			syy += (ry[i] - mean) * (ry[i] - mean);
		}
		if (sxx > 0 && syy > 0) {
			*rho = sxy / sqrt(sxx * syy);
			ok = true;
		}
	}
	free(rx);
	free(ry);
	return ok;
}
