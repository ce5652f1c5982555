/*
 * Defect example for `kscope memcheck`: uninitialised values that travel
 * through the stack rather than the heap -- a local variable never set,
 * a value spilled to the stack and reloaded, one passed to printf
 * through its variable arguments, and a system call argument.  Each use
 * that matters is marked; the expected reports are uninit-cond at the
 * `if`, uninit-cond or uninit-value inside printf (located at the call:
 * the first frame in this program), and uninit-syscall at the write.
 */
#include <stdio.h>
#include <unistd.h>

/* noinline: the value really goes through a stack slot of the caller. */
static __attribute__((noinline)) int pass_through(int v)
{
	volatile int slot = v; /* spilled and reloaded */
	return slot;
}

int main(void)
{
	int never_set;
	int copy = pass_through(never_set);
	char byte;

	if (copy > 10) /* DEFECT: uninit-cond */
		puts("big");
	printf("value %d\n", never_set); /* DEFECT: uninit-value printf */
	fflush(stdout);
	/* write's count is uninitialised. */
	{
		volatile size_t len;
		size_t n = len;

		(void)!write(1, &byte, n & 1); /* DEFECT: uninit-syscall */
	}
	return 0;
}
