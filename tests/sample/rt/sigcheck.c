/*
 * A test program for the runtime's signal and errno transparency: each
 * mode does something a program may do and prints what it observes, so
 * test_rt.sh can compare the output with and without libkscope.so.
 *
 *   own     installs its own handler on SIGRTMIN+4 (kscope's default
 *           CPU-time signal), raises it, and computes for a while
 *   all     installs handlers on every real-time signal, so kscope has
 *           none left
 *   query   asks for dispositions and masks kscope also touches
 *   errno   checks that wrapped functions keep errno
 *   sigwait blocks SIGRTMIN+4 and waits for it with sigwaitinfo, sent
 *           by its own POSIX timer
 *   closefds closes every descriptor it did not open, as daemons do, and
 *           puts a pipe on all the numbers: nothing may read its data
 *   sleep   blocking calls with timeouts: each must last its whole time,
 *           except the one the program's own SIGALRM interrupts
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/time.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got;
static volatile double sink;

static void on_sig(int sig)
{
	(void)sig;
	got++;
}

static void busy(double seconds)
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

static const char *disp(void (*h)(int))
{
	return h == SIG_DFL ? "default" : h == SIG_IGN ? "ignore" : h == on_sig ? "on_sig" : "other";
}

static int mode_own(void)
{
	struct sigaction sa, old;
	int sig = SIGRTMIN + 4;

	sigaction(sig, NULL, &old);
	printf("before: %s\n", disp(old.sa_handler));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, &old);
	printf("replaced: %s\n", disp(old.sa_handler));
	for (int i = 0; i < 3; i++)
		raise(sig);
	busy(0.6);
	sigaction(sig, NULL, &old);
	printf("after: %s, got %d\n", disp(old.sa_handler), (int)got);
	return 0;
}

static int mode_all(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		sigaction(s, &sa, NULL);
	busy(0.3);
	raise(SIGRTMIN + 4);
	raise(SIGRTMIN + 5);
	raise(SIGRTMAX - 2);
	printf("all: got %d\n", (int)got);
	return 0;
}

static int mode_query(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGSEGV, SIGHUP, SIGPIPE, SIGUSR1 };
	struct sigaction sa, old;
	sigset_t all, cur;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], NULL, &old);
		printf("signal %d: %s\n", sigs[i], disp(old.sa_handler));
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGTERM, NULL, &old);
	printf("SIGTERM now: %s restart=%d usr2-masked=%d\n", disp(old.sa_handler),
	       !!(old.sa_flags & SA_RESTART), sigismember(&old.sa_mask, SIGUSR2));
	printf("signal() returns previous: %s\n", disp(signal(SIGTERM, SIG_IGN)));
	printf("then: %s\n", disp(signal(SIGTERM, SIG_DFL)));
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	sigaction(SIGUSR1, NULL, &old);
	printf("SIGUSR1 after one-shot delivery: %s, got %d\n", disp(old.sa_handler), (int)got);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	sigprocmask(SIG_SETMASK, NULL, &cur);
	printf("blocked: SIGINT=%d SIGTERM=%d\n", sigismember(&cur, SIGINT),
	       sigismember(&cur, SIGTERM));
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	return 0;
}

static void *thread_fn(void *arg)
{
	return arg;
}

static int mode_errno(void)
{
	pthread_t th;
	struct sigaction old;
	pid_t pid;
	int status;

	errno = 1234;
	pthread_create(&th, NULL, thread_fn, NULL);
	printf("pthread_create: errno %s\n", errno == 1234 ? "kept" : "changed");
	pthread_join(th, NULL);
	errno = 1234;
	sigaction(SIGINT, NULL, &old);
	printf("sigaction: errno %s\n", errno == 1234 ? "kept" : "changed");
	errno = 1234;
	printf("sigaction(SIGKILL): %d errno=%s\n", sigaction(SIGKILL, &old, NULL),
	       errno == EINVAL ? "EINVAL" : "other");
	fflush(stdout);
	errno = 1234;
	pid = fork();
	if (pid == 0)
		_exit(errno == 1234 ? 0 : 1);
	printf("fork: parent errno %s\n", errno == 1234 ? "kept" : "changed");
	waitpid(pid, &status, 0);
	printf("fork: child errno %s\n", WEXITSTATUS(status) == 0 ? "kept" : "changed");
	errno = 1234;
	execl("/nonexistent/program", "x", (char *)NULL);
	printf("failed exec: errno %s\n", errno == ENOENT ? "ENOENT" : "other");
	busy(0.2);
	return 0;
}

static int mode_sigwait(void)
{
	struct sigevent sev;
	struct itimerspec its;
	siginfo_t info;
	sigset_t set;
	timer_t tm;
	int sig = SIGRTMIN + 4, r;

	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	busy(0.3);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = sig;
	sev.sigev_value.sival_int = 42;
	if (timer_create(CLOCK_MONOTONIC, &sev, &tm) != 0)
		return 1;
	memset(&its, 0, sizeof(its));
	its.it_value.tv_nsec = 50000000;
	timer_settime(tm, 0, &its, NULL);
	r = sigwaitinfo(&set, &info);
	printf("sigwaitinfo: %s value=%d\n", r == sig ? "SIGRTMIN+4" : "other",
	       info.si_value.sival_int);
	busy(0.3);
	return 0;
}

static int mode_closefds(void)
{
	struct rlimit rl;
	char buf[8] = { 0 };
	int p[2], lim;

	getrlimit(RLIMIT_NOFILE, &rl);
	lim = rl.rlim_cur > 4096 ? 4096 : (int)rl.rlim_cur;
	for (int fd = 3; fd < lim; fd++)
		close(fd);
	if (pipe(p) != 0)
		return 1;
	for (int fd = p[1] + 1; fd < lim; fd++)
		dup2(p[0], fd);
	if (write(p[1], "hello", 5) != 5)
		return 1;
	busy(0.5);
	printf("read %d %s\n", (int)read(p[0], buf, 5), buf);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Prints whether a call lasted at least `want` seconds. */
static void lasted(const char *what, int r, double t0, double want)
{
	printf("%s: %d errno=%s %s\n", what, r, r < 0 ? (errno == EINTR ? "EINTR" : "other") : "-",
	       now() - t0 >= want - 0.002 ? "full" : "short");
}

static int mode_sleep(void)
{
	struct timespec ts = { 0, 150000000 };
	struct timeval tv = { 0, 100000 };
	struct sigaction sa;
	sigset_t set;
	int ep, r;
	double t0;

	t0 = now();
	r = nanosleep(&ts, NULL);
	lasted("nanosleep", r, t0, 0.15);
	t0 = now();
	r = usleep(100000);
	lasted("usleep", r, t0, 0.1);
	t0 = now();
	r = (int)sleep(1);
	lasted("sleep", r, t0, 1.0);
	t0 = now();
	r = poll(NULL, 0, 120);
	lasted("poll", r, t0, 0.12);
	t0 = now();
	r = select(0, NULL, NULL, NULL, &tv);
	lasted("select", r, t0, 0.1);
	ep = epoll_create1(0);
	t0 = now();
	{
		struct epoll_event ev;

		r = epoll_wait(ep, &ev, 1, 100);
	}
	lasted("epoll_wait", r, t0, 0.1);
	close(ep);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	sigprocmask(SIG_BLOCK, &set, NULL);
	t0 = now();
	ts.tv_nsec = 100000000;
	r = sigtimedwait(&set, NULL, &ts);
	printf("sigtimedwait: %d errno=%s %s\n", r, errno == EAGAIN ? "EAGAIN" : "other",
	       now() - t0 >= 0.098 ? "full" : "short");

	/* The program's own signal still interrupts. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	ualarm(100000, 0);
	t0 = now();
	r = poll(NULL, 0, 2000);
	printf("poll with SIGALRM: %d errno=%s %s got=%d\n", r, errno == EINTR ? "EINTR" : "other",
	       now() - t0 < 1.5 ? "interrupted" : "slept", (int)got);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (strcmp(mode, "own") == 0)
		return mode_own();
	if (strcmp(mode, "all") == 0)
		return mode_all();
	if (strcmp(mode, "query") == 0)
		return mode_query();
	if (strcmp(mode, "errno") == 0)
		return mode_errno();
	if (strcmp(mode, "sleep") == 0)
		return mode_sleep();
	if (strcmp(mode, "sigwait") == 0)
		return mode_sigwait();
	if (strcmp(mode, "closefds") == 0)
		return mode_closefds();
	fprintf(stderr, "usage: sigcheck own|all|query|errno|sleep|sigwait|closefds\n");
	return 2;
}
