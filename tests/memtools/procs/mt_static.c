/*
 * A statically linked program (built with -static) with a heap error
 * that no malloc replacement can see.
 */
#include <stdlib.h>

int main(void)
{
	char *p = malloc(8);

	if (!p)
		return 1;
	p[8] = 1; /* STATIC ERROR: invalid-write */
	free(p);
	return 0;
}
