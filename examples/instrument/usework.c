/*
 * The program of libwork.c (kscope instrument --modules tests): links
 * libwork.so (found through its rpath, $ORIGIN) and prints
 * 2 * (0 + 1 + ... + n-1) and work_add(1, 2).
 * Usage: usework [N]
 */
#include <stdio.h>
#include <stdlib.h>

long work_sum(long n);
long work_add(long a, long b);

__attribute__((noinline)) long twice(long n)
{
	return work_sum(n) + work_sum(n);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100;

	printf("%ld %ld\n", twice(n), work_add(1, 2));
	return 0;
}
