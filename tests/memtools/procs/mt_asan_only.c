/*
 * Defects AddressSanitizer finds and Valgrind's Memcheck does not: an
 * overflow of a stack array and of a global array (Memcheck checks heap
 * blocks only), and an overlapping memcpy (Valgrind 3.19 replaces
 * glibc's memcpy without its overlap check).  Each line with a defect is
 * marked with ASan's bug type.  Prints "done" on stdout, exits 3.
 */
#include <stdio.h>
#include <string.h>

int table[8];

static int sum_stack(int n)
{
	int local[8];
	int s = 0;

	for (int i = 0; i < 8; i++)
		local[i] = i;
	for (int i = 0; i <= n; i++)
		s += local[i]; /* ASAN: stack-buffer-overflow */
	return s;
}

int main(int argc, char **argv)
{
	char text[64] = "overlapping copies move bytes twice";
	int n = 8 + (argc > 5);
	volatile int sink;

	(void)argv;
	table[n] = 1; /* ASAN: global-buffer-overflow */
	memcpy(text + 4, text, 20); /* ASAN: memcpy-param-overlap */
	sink = sum_stack(n) + table[0] + text[0];
	(void)sink;
	puts("done");
	return 3;
}
