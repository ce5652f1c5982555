/*
 * Busy until a signal ends it (the runtime tests send SIGINT after a
 * second).  Prints one line first, so a test can tell it started.  With
 * the argument "handler" it installs a SIGINT handler that exits with
 * status 3 instead.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile double sink;
static volatile sig_atomic_t stop;

static void on_int(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "handler") == 0)
		signal(SIGINT, on_int);
	printf("sigint: running\n");
	fflush(stdout);
	while (!stop)
		for (int i = 0; i < 1000000; i++)
			sink = sink * 1.0000001 + 1e-9;
	printf("sigint: handler ran\n");
	return 3;
}
