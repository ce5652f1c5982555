/*
 * One heap error, then exit with the status given (argv[1], default 0):
 * the program the exec tests (mt_forkexec, a shell script, a shim) end
 * up running.  It prints "mt_error <pid>" so the tests can tell which
 * process it was.  With more arguments, it then execs them (argv[2] is
 * the program's path): an image with an error that execs another.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int status = argc > 1 ? atoi(argv[1]) : 0;
	char *p = malloc(16);

	if (!p)
		return 1;
	p[16] = 'x'; /* EXEC ERROR: invalid-write */
	free(p);
	printf("mt_error %d\n", (int)getpid());
	if (argc > 2) {
		fflush(stdout);
		execv(argv[2], argv + 2);
		perror("mt_error: execv");
		return 127;
	}
	return status;
}
