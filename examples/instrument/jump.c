/*
 * setjmp/longjmp out of a deep recursion, for kscope instrument's tests:
 * JUMPS times, dive() recurses DEPTH levels below its first call and the
 * deepest call longjmps back to main; afterwards leaf() runs LEAVES
 * times normally.  dive makes JUMPS*(DEPTH+1) calls, leaf LEAVES.
 * Usage: jump [JUMPS [DEPTH [LEAVES]]]
 */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

static jmp_buf back;
static volatile long sink;

__attribute__((noinline)) void dive(int level, int depth)
{
	sink += level;
	if (level == depth)
		longjmp(back, 1);
	dive(level + 1, depth);
	sink -= 1; /* not a tail call */
}

__attribute__((noinline)) long leaf(long x)
{
	sink += x;
	return x * 3;
}

int main(int argc, char **argv)
{
	int jumps = argc > 1 ? atoi(argv[1]) : 10;
	int depth = argc > 2 ? atoi(argv[2]) : 1000;
	int leaves = argc > 3 ? atoi(argv[3]) : 50;
	volatile int done = 0;
	long acc = 0;

	setjmp(back);
	if (done < jumps) {
		done++;
		dive(0, depth);
	}
	for (int i = 0; i < leaves; i++)
		acc += leaf(i);
	printf("jumps %d depth %d leaves %ld\n", (int)done, depth, acc);
	return 0;
}
