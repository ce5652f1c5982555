/*
 * kscope instrument's reference workload: recursive fib.  fib(n) makes
 * fib_calls(n) = 2*fib(n+1) - 1 calls of fib (21,891 for n = 20), which
 * the tests check exactly.  noinline keeps fib a real function at -O2,
 * and the empty asm hides the second call's result from the compiler,
 * which would otherwise turn that call into a loop (tail recursion with
 * an accumulator) and make fewer calls than the source says.
 * Usage: fib [N [REPEAT]]
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long fib(int n)
{
	if (n < 2)
		return n;
	long a = fib(n - 1), b = fib(n - 2);

	__asm__ volatile("" : "+r"(b));
	return a + b;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	int repeat = argc > 2 ? atoi(argv[2]) : 1;
	long r = 0;

	for (int i = 0; i < repeat; i++)
		r += fib(n);
	printf("fib(%d) x %d = %ld\n", n, repeat, r);
	return 0;
}
