/*
 * A program that never ends, for the signal test of the hotspot
 * analysis (test_hotspot.py): it says "ready" once it runs its own code,
 * then counts until a signal ends it.
 */
#include <stdio.h>

#if defined(__clang__)
#define KS_NOINLINE __attribute__((noinline))
#else
#define KS_NOINLINE __attribute__((noinline, noclone))
#endif

static volatile unsigned long counter;

KS_NOINLINE static void spin(void)
{
	for (;;)
		counter++;
}

int main(void)
{
	printf("ready\n");
	fflush(stdout);
	spin();
	return 0;
}
