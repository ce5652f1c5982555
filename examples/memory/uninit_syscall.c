/*
 * Defect example for `kscope memcheck`: write(2) of a 16-byte heap buffer
 * of which only the first 8 bytes were set.  The expected report is one
 * uninit-syscall (system call write, its buffer argument) at the
 * marked line.  The 8 undefined bytes go to stdout as they are.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char *buf = malloc(16);
	ssize_t n;

	if (!buf)
		return 1;
	memcpy(buf, "kscope!\n", 8);
	n = write(1, buf, 16); /* DEFECT: uninit-syscall */
	free(buf);
	return n == 16 ? 0 : 1;
}
