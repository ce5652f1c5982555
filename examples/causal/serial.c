/*
 * A batch program without progress points: one thread, two loops per
 * pass, loop X three fifths of the time and loop Y two fifths.  Measured
 * end to end (kscope causal --end-to-end), the known answer (Amdahl's
 * law) is: speeding X up by s speeds the program up by 0.6 s, Y by 0.4 s.
 * The test builds it with X's work cut to 50% (-DX_PERCENT=50) to
 * measure the real speedup.
 *
 *   serial [PASSES]      (default 100)
 */
#include <stdio.h>
#include <stdlib.h>

#ifndef WORK
#define WORK 1000000L              /* iterations of Y's line per pass */
#endif
#ifndef X_PERCENT
#define X_PERCENT 100
#endif
#define X_WORK (3 * WORK * X_PERCENT / 200)
#define Y_WORK WORK

static volatile double sink;

int main(int argc, char **argv)
{
	int passes = argc > 1 ? atoi(argv[1]) : 100;
	double x = 1.0, y = 1.0;

	if (passes < 1) {
		fprintf(stderr, "usage: serial [PASSES]  (PASSES >= 1)\n");
		return 2;
	}
	for (int p = 0; p < passes; p++) {
		for (long i = 0; i < X_WORK; i++) x = x * 1.0000001 + 1e-9; /* loop X */
		for (long i = 0; i < Y_WORK; i++) y = y * 1.0000001 + 1e-9; /* loop Y */
	}
	sink = x + y;
	printf("serial: %d passes\n", passes);
	return 0;
}
