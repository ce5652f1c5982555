/*
 * A kernel with a result to check, for kscope tune's --verify test
 * (tests/tune/tune_e2e.py, scenario verify): it sums 1..100 and prints
 * "result=5050" and a planted time.  MODE 2 is the fastest and wrong (it
 * skips the work and prints 42); the verify command must keep it out of
 * the ranking.
 */
#include <stdio.h>

#define MODE 0 // tunable

int main(void)
{
	long sum = 0;

	for (int i = 1; i <= 100; i++)
		sum += i;
	if (MODE == 2)
		sum = 42;
	printf("result=%ld\n", sum);
	printf("KSCOPE_TIME_NS=%d\n", MODE == 2 ? 100 : MODE == 1 ? 500 : 900);
	return 0;
}
