/*
 * Defect example for `kscope memcheck`: a write 400 bytes past the end of
 * a 1 MiB heap block, far beyond any redzone.  Memcheck still sees it
 * (the address is in no live block); the expected report is one
 * invalid-write at the marked line.
 */
#include <stdlib.h>

int main(void)
{
	volatile size_t size = 1 << 20; /* volatile: the compiler keeps the store */
	char *big = malloc(size);

	if (!big)
		return 1;
	big[size + 400] = 7; /* DEFECT: invalid-write */
	free(big);
	return 0;
}
