/*
 * A kernel with a planted best configuration, for kscope tune's tests and
 * docs.  It prints KSCOPE_TIME_NS from a cost model of its tunables
 * (planted.h), so the ranking is the same on every machine: TILE 32 with
 * UNROLL 4 is the fastest.  Some values misbehave on purpose: TILE 13
 * does not build, TILE 7 never ends, TILE 5 crashes (SIGABRT) and TILE 3
 * exits with status 3.
 *
 *     kscope tune --src planted.c --space planted.json \
 *         --build "cc -O2 -I{srcdir} {src} -o {exe}" --run "{exe}"
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "planted.h"

#define TILE 8 // tunable
static const long UNROLL = 1; // tunable: loop unrolling
#define VERBOSE 0 // tunable (not in the spaces of the tests: keeps its value)

#if TILE == 13
#error "TILE 13 does not build"
#endif

int main(void)
{
	if (TILE == 7)
		for (;;)
			pause();
	if (TILE == 5)
		abort();
	if (TILE == 3) {
		fprintf(stderr, "planted: TILE 3 is not supported\n");
		return 3;
	}
	if (VERBOSE)
		fprintf(stderr, "planted: TILE %d UNROLL %ld\n", TILE, UNROLL);
	printf("KSCOPE_TIME_NS=%ld\n", planted_cost(TILE, UNROLL));
	return 0;
}
