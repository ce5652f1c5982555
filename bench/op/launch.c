/*
 * launch: starts a command and waits for it, nothing else; exits with the
 * command's status (128 + N after signal N, 127 if it could not start).
 *
 *   usage: launch COMMAND [ARGS...]
 *
 * bench/op.sh runs the program under it beside the native and the kscope
 * op runs: what it adds is what any process standing between the caller
 * and the program costs on the machine (its own start and exit, a spawn
 * and a wait), the part of kscope op's overhead that no launcher avoids.
 * It uses posix_spawn(), as kscope op does.
 */
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

extern char **environ;

int main(int argc, char **argv)
{
	pid_t pid;
	int status, e;

	if (argc < 2) {
		fputs("usage: launch COMMAND [ARGS...]\n", stderr);
		return 2;
	}
	e = posix_spawnp(&pid, argv[1], NULL, NULL, argv + 1, environ);
	if (e != 0) {
		fprintf(stderr, "launch: cannot start %s: %s\n", argv[1], strerror(e));
		return 127;
	}
	if (waitpid(pid, &status, 0) != pid)
		return 127;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
