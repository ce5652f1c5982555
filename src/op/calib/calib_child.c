/*
 * The short-lived child processes in which kscope calibrate talks to a
 * GPU driver (calib_ocl.c for OpenCL, calib_cuda.c for CUDA): started by
 * fork with a pipe back to the parent, the parent's signal handlers,
 * mask and descriptors dropped, and waited for with a time limit.
 *
 * A vendor driver starts threads as soon as its devices are listed, keeps
 * memory to the end, may crash or hang; in a child, none of that reaches
 * kscope: a crash or a hang becomes a note (ks_calib_child_failed says
 * which), and the child ends with _exit.  Messages are fixed-size structs
 * smaller than PIPE_BUF, so that each write arrives whole.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calib_int.h"

void ks_calib_child_write(int fd, const void *m, size_t size)
{
	/* A failed write shows as a missing answer in the parent. */
	while (write(fd, m, size) < 0 && errno == EINTR)
		;
}

/* Closes every descriptor above 2 but keep. */
static void close_other_fds(int keep)
{
	long max = sysconf(_SC_OPEN_MAX);

	if (keep > 3 && close_range(3, (unsigned)keep - 1, 0) != 0)
		for (int fd = 3; fd < keep; fd++)
			close(fd);
	if (close_range((unsigned)keep + 1, ~0u, 0) != 0)
		for (long fd = keep + 1; fd < (max > 0 ? max : 1024); fd++)
			close((int)fd);
}

/* Runs fn(arg, fd) in a child process that writes its answers to fd and
 * exits; *rfd is the read end of its pipe. */
int ks_calib_child_start(ks_calib_child_fn *fn, void *arg, pid_t *pid, int *rfd,
			 struct ks_err *err)
{
	int p[2];

	if (pipe2(p, O_CLOEXEC) != 0)
		return ks_err_set(err, -errno, "cannot create a pipe: %s",
				  strerror(errno));
	*pid = fork();
	if (*pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return ks_err_set(err, -e, "cannot fork: %s", strerror(e));
	}
	if (*pid == 0) {
		static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
					    SIGCHLD, SIGPIPE, SIGALRM };
		sigset_t none;

		/* The caller's handlers, blocked signals (kscope op takes
		 * signals through a signalfd) and descriptors (its channel)
		 * are not the child's business. */
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			signal(sigs[i], SIG_DFL);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		close(p[0]);
		close_other_fds(p[1]);
		fn(arg, p[1]);
		/* _exit: no atexit handlers, no stdio buffers of the parent's
		 * flushed twice, no leak check of the driver's memory. */
		_exit(0);
	}
	close(p[1]);
	*rfd = p[0];
	return 0;
}

/* Reads one whole message before deadline: 1, 0 at end of file, or a
 * negative code (-ETIMEDOUT). */
int ks_calib_child_read(int fd, void *buf, size_t size, double deadline)
{
	size_t got = 0;

	while (got < size) {
		double left = deadline - ks_calib_now();
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&pfd, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n <= 0)
			continue;
		n = read(fd, (char *)buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return got ? -EPROTO : 0;
		got += (size_t)n;
	}
	return 1;
}

/* Waits for the child, killing it first if asked; its wait status. */
int ks_calib_child_end(pid_t pid, int fd, bool kill_it)
{
	int status = 0;

	close(fd);
	if (kill_it)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* Why the measuring child ended without an answer. */
int ks_calib_child_failed(int rc, int status, int timeout, struct ks_err *err)
{
	if (rc == -ETIMEDOUT)
		return ks_err_set(err, -ETIMEDOUT, "the driver did not finish within "
				  "%d s; stopped", timeout);
	if (WIFSIGNALED(status))
		return ks_err_set(err, -EIO, "the driver crashed (%s)",
				  strsignal(WTERMSIG(status)));
	return ks_err_set(err, -EIO, "the measurement ended without an answer");
}
