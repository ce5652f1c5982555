/*
 * Processes, signals and exits under the compiled front end, for
 * test_rt.py.  Each mode does some false sharing (two threads
 * incrementing adjacent ints of `pair`, the marked line) around what it
 * tests, and prints what it must print natively:
 *
 *   rt_procs work [N]        the false sharing alone; "work N"
 *   rt_procs fork            a parent, a child and a grandchild each do
 *                            the work; the child exits 7, which the
 *                            parent checks; "fork ok"
 *   rt_procs exec PROG ARGS  a child execs PROG; exits with its status
 *   rt_procs execself        execs itself as "work 1000" (same process)
 *   rt_procs signal          workers take 200 SIGUSR1 each, whose handler
 *                            writes memory too; "signal N handled"
 *   rt_procs thread-exit N   a worker calls exit(N) while the others
 *                            keep working and main waits
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static _Alignas(64) volatile int pair[2];
static long iterations = 200000;
/* A line of its own: the signal test finds it truly shared. */
static _Alignas(64) volatile sig_atomic_t handled[2];
static volatile int spin_forever;

static void *adder(void *arg)
{
	long id = (long)arg;

	for (long i = 0; i < iterations; i++)
		pair[id]++; /* PROCS SHARING */
	return NULL;
}

static int work(void)
{
	pthread_t t[2];

	pair[0] = pair[1] = 0;
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, adder, (void *)i) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return pair[0] == iterations && pair[1] == iterations ? 0 : 1;
}

static int do_fork(void)
{
	int status;
	pid_t pid;

	if (work())
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		pid_t g;

		if (work())
			_exit(1);
		g = fork();
		if (g == 0)
			exit(work());
		if (g < 0 || waitpid(g, &status, 0) != g || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			_exit(1);
		exit(7);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 7)
		return 2;
	printf("fork ok\n");
	return 0;
}

static int do_exec(char **argv)
{
	int status;
	pid_t pid;

	if (work())
		return 1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

/* Runs on the worker, interrupting its instrumented loop (and at times
 * the runtime under it): an instrumented write of its own. */
static void on_usr1(int sig)
{
	(void)sig;
	handled[0]++;
}

struct sig_job {
	pthread_t t;
	volatile int done;
};

static void *sig_worker(void *arg)
{
	struct sig_job *j = arg;

	for (long i = 0; i < iterations * 5 && !j->done; i++)
		pair[0]++;
	while (!j->done)
		pair[1]++;
	return NULL;
}

static int do_signal(void)
{
	struct sigaction sa;
	struct sig_job j;
	sigset_t set;
	int sent = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	/* Only the worker takes the signals. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	memset(&j, 0, sizeof(j));
	if (pthread_create(&j.t, NULL, sig_worker, &j) != 0)
		return 1;
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	for (int i = 0; i < 200; i++) {
		int before = handled[0];

		if (pthread_kill(j.t, SIGUSR1) == 0)
			sent++;
		while (handled[0] == before)
			usleep(100);
	}
	j.done = 1;
	pthread_join(j.t, NULL);
	printf("signal %d handled\n", (int)handled[0]);
	return handled[0] == sent ? 0 : 1;
}

static void *exiter(void *arg)
{
	long code = (long)arg;

	for (long i = 0; i < iterations; i++)
		pair[0]++;
	fflush(stdout);
	exit((int)code);
}

static void *spinner(void *arg)
{
	(void)arg;
	while (!spin_forever)
		pair[1]++;
	return NULL;
}

static int do_thread_exit(int code)
{
	pthread_t a, b;

	printf("thread-exit %d\n", code);
	fflush(stdout);
	if (pthread_create(&b, NULL, spinner, NULL) != 0 ||
	    pthread_create(&a, NULL, exiter, (void *)(long)code) != 0)
		return 1;
	pthread_join(a, NULL); /* never returns: the process exits first */
	return 1;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "work")) {
		if (argc > 2)
			iterations = atol(argv[2]);
		if (work())
			return 1;
		printf("work %ld\n", iterations);
		return 0;
	}
	if (!strcmp(argv[1], "fork"))
		return do_fork();
	if (!strcmp(argv[1], "exec") && argc > 2)
		return do_exec(argv + 2);
	if (!strcmp(argv[1], "execself")) {
		char *args[] = { argv[0], "work", "1000", NULL };

		if (work())
			return 1;
		fflush(stdout);
		execv("/proc/self/exe", args);
		return 127;
	}
	if (!strcmp(argv[1], "signal"))
		return do_signal();
	if (!strcmp(argv[1], "thread-exit") && argc > 2)
		return do_thread_exit(atoi(argv[2]));
	return 2;
}
