/*
 * Closes every descriptor it may have (close_range, or a loop up to 1024
 * where that is missing) as some daemons do at start, then makes one heap
 * error and exits 0.
 */
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

int main(void)
{
	char *p;

#ifdef SYS_close_range
	if (syscall(SYS_close_range, 0U, ~0U, 0U) != 0)
#endif
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
	p = malloc(32);
	if (!p)
		return 1;
	p[32] = 1; /* CLOSEFDS ERROR: invalid-write */
	free(p);
	return 0;
}
