/*
 * fork without exec: the parent and the child each make one heap error
 * of their own, after the fork, and a second child made by the first
 * one makes a third (a process tree of three).  The child exits with 7,
 * which the parent checks; the parent exits 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void grandchild_error(void)
{
	int *q = malloc(4 * sizeof(int));

	if (q)
		q[4] = 3; /* GRANDCHILD ERROR: invalid-write */
	free(q);
}

int main(void)
{
	int *p = malloc(8 * sizeof(int));
	int status;
	pid_t pid;

	if (!p)
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		pid_t g = fork();

		if (g == 0) {
			grandchild_error();
			exit(0);
		}
		printf("child %d\n", p[8]); /* CHILD ERROR: invalid-read */
		if (g > 0)
			waitpid(g, NULL, 0);
		exit(7);
	}
	free(p);
	p[1] = 2; /* PARENT ERROR: use-after-free */
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 7)
		return 2;
	printf("parent done\n");
	return 0;
}
