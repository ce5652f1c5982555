/*
 * Forks; the child execs this program again with the argument "child"
 * (which does a little work and exits 0), and the parent waits for it.
 * With `fork_exec true` the child execs /bin/true instead.  Under kscope
 * sample this makes three processes' worth of raw files: the parent, the
 * child before exec, and the child after exec.
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static void work(double seconds)
{
	struct timespec ts;
	double start, now;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	start = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	do {
		for (int i = 0; i < 1000000; i++)
			sink = sink * 1.0000001 + 1e-9;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	} while (now - start < seconds);
}

int main(int argc, char **argv)
{
	pid_t pid;
	int status;

	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		work(0.1);
		printf("child: done\n");
		return 0;
	}
	work(0.1);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		work(0.05);
		if (argc > 1 && strcmp(argv[1], "true") == 0)
			execl("/bin/true", "true", (char *)NULL);
		else
			execl("/proc/self/exe", argv[0], "child", (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return 1;
	printf("parent: child exited with %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}
