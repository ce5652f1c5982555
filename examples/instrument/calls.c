/*
 * Mutual recursion and calls through function pointers, with call counts
 * known in advance (kscope instrument's tests):
 *   is_even(N) and is_odd alternate down to 0: N+1 calls together,
 *     is_even (N/2+1 for even N) and is_odd (N/2);
 *   apply() calls one of add1, twice, negate through a table, ROUNDS
 *     times each: apply 3*ROUNDS calls, each target ROUNDS.
 * Usage: calls [N [ROUNDS]]
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int is_odd(int n);

__attribute__((noinline)) int is_even(int n)
{
	if (n == 0)
		return 1;
	return is_odd(n - 1);
}

__attribute__((noinline)) int is_odd(int n)
{
	if (n == 0)
		return 0;
	return is_even(n - 1);
}

__attribute__((noinline)) long add1(long x)
{
	return x + 1;
}

__attribute__((noinline)) long twice(long x)
{
	return 2 * x;
}

__attribute__((noinline)) long negate(long x)
{
	return -x;
}

/* volatile: the compiler cannot turn the indirect calls into direct ones. */
static long (*volatile table[3])(long) = { add1, twice, negate };

__attribute__((noinline)) long apply(int k, long x)
{
	return table[k](x) + 0 * k;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	int rounds = argc > 2 ? atoi(argv[2]) : 100;
	long acc = 0;

	printf("is_even(%d) = %d\n", n, is_even(n));
	for (int r = 0; r < rounds; r++)
		for (int k = 0; k < 3; k++)
			acc += apply(k, r);
	printf("acc = %ld\n", acc);
	return 0;
}
