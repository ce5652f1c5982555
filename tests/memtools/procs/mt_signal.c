/*
 * One heap error, then death by the signal argv[1] names: "segv" (a
 * store through a null pointer) or "abrt" (abort()).
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char *p = malloc(8);

	if (!p)
		return 1;
	p[8] = 1; /* SIGNAL ERROR: invalid-write */
	free(p);
	if (argc > 1 && strcmp(argv[1], "abrt") == 0)
		abort();
	*(volatile int *)(argc > 5 ? (void *)argv : NULL) = 1;
	return 0;
}
