/*
 * The cost model of planted.c, in a header of its own so that the
 * variants' builds need -I{srcdir} to find it (docs/tune.md, "Includes").
 */
#ifndef PLANTED_H
#define PLANTED_H

#include <stdlib.h>

/* Nanoseconds a configuration "takes": least at TILE 32, UNROLL 4. */
static inline long planted_cost(long tile, long unroll)
{
	return 1000 + 100 * labs(tile - 32) + 500 * labs(unroll - 4);
}

#endif
