/*
 * A kernel with noisy times, for kscope tune's noise test
 * (tests/tune/tune_e2e.py, scenario noise): each run prints BASE plus or
 * minus up to 20%, drawn from a generator seeded by BASE and the run's
 * number, which a file next to the executable counts.  So the outcome
 * is the same on every machine: BASE 1000 and 1010 are a tie, 3000 is
 * clearly slower.
 */
#include <stdio.h>

#define BASE 1000 // tunable

int main(int argc, char **argv)
{
	char path[4096];
	unsigned long n = 0, x;
	FILE *f;

	(void)argc;
	snprintf(path, sizeof(path), "%s.count", argv[0]);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%lu", &n) != 1)
			n = 0;
		fclose(f);
	}
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lu\n", n + 1);
	fclose(f);
	x = (n + 1) * 2654435761ul ^ (unsigned long)BASE * 40503ul;
	for (int i = 0; i < 4; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	/* -20% .. +20% of BASE */
	printf("KSCOPE_TIME_NS=%ld\n",
	       (long)BASE + (long)((x >> 33) % 401) * BASE / 1000 - BASE / 5);
	return 0;
}
