/*
 * A shared library for kscope instrument --modules (its tests): work_sum(n)
 * calls work_add n times.  Built with usework.c, which calls work_sum
 * twice through twice() and work_add once itself: work_sum 2 calls,
 * work_add 2n + 1.
 */
__attribute__((noinline)) long work_add(long a, long b)
{
	return a + b;
}

__attribute__((noinline)) long work_sum(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s = work_add(s, i);
	return s;
}
