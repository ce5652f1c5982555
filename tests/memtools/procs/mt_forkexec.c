/*
 * fork, then exec the program named by argv[1] (with argv[2..]) in the
 * child; the parent makes its own heap error and exits with the child's
 * exit status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *p;
	int status;
	pid_t pid;

	if (argc < 2)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	p = malloc(10);
	if (!p)
		return 1;
	p[-1] = 1; /* FORKEXEC ERROR: invalid-write */
	free(p);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}
