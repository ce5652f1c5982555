/*
 * A test program whose time goes to the vdso: reads CLOCK_MONOTONIC in a
 * tight loop (the vdso answers it without a system call) for argv[1]
 * million calls (default 20).  test_sample.sh, scenario vdso, checks that
 * the profile names the vdso's function rather than "[vdso]".  Prints
 * "done" and exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv)
{
	long n = (argc > 1 ? atol(argv[1]) : 20) * 1000000L;
	struct timespec ts;
	unsigned long sum = 0;

	for (long i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sum += (unsigned long)ts.tv_nsec;
	}
	printf("done%s\n", sum == 1 ? " " : "");
	return 0;
}
