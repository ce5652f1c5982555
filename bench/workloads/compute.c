/*
 * Benchmark workload: one compute-bound thread doing a fixed amount of
 * work (argv[1] million iterations, default 400), so that any overhead
 * shows as longer wall time.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile double sink;

__attribute__((noinline)) static double step(double x, long n)
{
	for (long i = 0; i < n; i++)
		x = x * 1.0000001 + 1e-9;
	return x;
}

int main(int argc, char **argv)
{
	long millions = argc > 1 ? atol(argv[1]) : 400;
	double x = 1.0;

	for (long m = 0; m < millions; m++)
		x = step(x, 1000000);
	sink = x;
	printf("%.6f\n", x);
	return 0;
}
