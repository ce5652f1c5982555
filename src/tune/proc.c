/*
 * Running one build or run of kscope tune: fork and execvp, never a
 * shell.  The child gets a process group of its own (so a timeout or an
 * interrupt kills everything it started, and the terminal's Ctrl+C
 * reaches kscope only), stdin from /dev/null, an empty signal mask and
 * the default action for SIGINT, SIGTERM, SIGQUIT and SIGPIPE.  Its
 * stdout is scanned for KSCOPE_TIME_NS=<n> lines (runs) and the last
 * bytes of its error output are kept for the report.
 *
 * The end of a process is seen through a pidfd, polled with the pipes
 * and the caller's stop descriptor, so nothing here needs SIGCHLD or a
 * signal handler; where pidfd_open is missing (Linux before 5.3), the
 * wait polls every 10 ms instead.  A process is reaped only after its
 * process group was killed: until then its pid, which is the group's id,
 * cannot be reused.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argcheck.h"
#include "tune_int.h"

#define TIME_PREFIX "KSCOPE_TIME_NS="
#define NO_PIDFD_POLL_MS 10

double ks_tune_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ */
/* Output                                                              */
/* ------------------------------------------------------------------ */

static void tail_put(struct ks_tune_proc *p, const char *buf, size_t len)
{
	if (len >= KS_TUNE_TAIL) {
		memcpy(p->tail, buf + len - KS_TUNE_TAIL, KS_TUNE_TAIL);
		p->tail_pos = 0;
		p->tail_full = true;
		return;
	}
	while (len > 0) {
		size_t n = KS_TUNE_TAIL - p->tail_pos;

		if (n > len)
			n = len;
		memcpy(p->tail + p->tail_pos, buf, n);
		p->tail_pos += n;
		buf += n;
		len -= n;
		if (p->tail_pos == KS_TUNE_TAIL) {
			p->tail_pos = 0;
			p->tail_full = true;
		}
	}
}

/* A complete stdout line: a KSCOPE_TIME_NS line is digits after the
 * '=', then optional blanks (and a '\r'). */
static void end_line(struct ks_tune_proc *p)
{
	size_t plen = sizeof(TIME_PREFIX) - 1, i = plen;
	uint64_t v = 0;
	bool ok;

	if (p->linelen < plen || memcmp(p->line, TIME_PREFIX, plen) != 0)
		goto reset;
	ok = !p->line_long && i < p->linelen && p->line[i] >= '0' && p->line[i] <= '9';
	for (; ok && i < p->linelen && p->line[i] >= '0' && p->line[i] <= '9'; i++) {
		unsigned d = (unsigned)(p->line[i] - '0');

		if (v > (UINT64_MAX / 2 - d) / 10)
			ok = false;
		else
			v = v * 10 + d;
	}
	for (; ok && i < p->linelen; i++)
		if (p->line[i] != ' ' && p->line[i] != '\t' && p->line[i] != '\r')
			ok = false;
	if (ok) {
		p->have_time = true;
		p->time_ns = v;
	} else if (!p->bad_time) {
		p->bad_time = true;
		ks_quote(p->bad_line, sizeof(p->bad_line), p->line, p->linelen);
	}
reset:
	p->linelen = 0;
	p->line_long = false;
}

static void scan_stdout(struct ks_tune_proc *p, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n')
			end_line(p);
		else if (p->linelen < sizeof(p->line))
			p->line[p->linelen++] = buf[i];
		else
			p->line_long = true;
	}
}

void ks_tune_proc_feed(struct ks_tune_proc *p, bool is_stdout, const char *buf,
		       size_t len)
{
	if (is_stdout && p->save && !p->save_failed) {
		/* A copy for --verify; a failed write fails the verification
		 * (tune.c), never the run. */
		size_t off = 0;

		while (off < len) {
			ssize_t n = write(p->save_fd, buf + off, len - off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				p->save_failed = true;
				break;
			}
			off += (size_t)n;
		}
	}
	if (is_stdout && p->want_time)
		scan_stdout(p, buf, len);
	else
		tail_put(p, buf, len);
}

/* Reads what fd has now; closes it at its end. */
static void drain(struct ks_tune_proc *p, int *fd, bool is_stdout)
{
	char buf[16384];

	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof(buf));

		if (n > 0) {
			ks_tune_proc_feed(p, is_stdout, buf, (size_t)n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		/* End of file, or an error that will not go away. */
		if (is_stdout && p->want_time && p->linelen > 0)
			end_line(p);
		close(*fd);
		*fd = -1;
	}
}

/* ------------------------------------------------------------------ */
/* Starting                                                            */
/* ------------------------------------------------------------------ */

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* In the child, between fork and exec: async-signal-safe calls only. */
static void child(char *const *argv, char *const *envp, int devnull, int out,
		  int errw, int report)
{
	struct sigaction sa;
	sigset_t none;
	int e;

	setpgid(0, 0);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	sigaction(SIGPIPE, &sa, NULL);
	if (dup2(devnull, 0) < 0 || dup2(out, 1) < 0 || dup2(errw, 2) < 0)
		goto fail;
	/* dup2 onto the same number keeps close-on-exec: clear it. */
	for (int fd = 0; fd < 3; fd++)
		fcntl(fd, F_SETFD, 0);
	if (envp)
		execvpe(argv[0], argv, envp);
	else
		execvp(argv[0], argv);
fail:
	e = errno;
	if (write(report, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int ks_tune_proc_start(struct ks_tune_proc *p, char *const *argv, bool merge,
		       double timeout_s, struct ks_err *err)
{
	return ks_tune_proc_start_env(p, argv, merge, timeout_s, NULL, -1, err);
}

int ks_tune_proc_start_env(struct ks_tune_proc *p, char *const *argv, bool merge,
			   double timeout_s, char *const *envp, int save_fd,
			   struct ks_err *err)
{
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int devnull = -1, e = 0, rc = 0;
	ssize_t n;
	pid_t pid;

	memset(p, 0, sizeof(*p));
	p->pidfd = p->outfd = p->errfd = -1;
	p->save = save_fd >= 0;
	p->save_fd = save_fd;
	p->want_time = !merge;
	if (pipe2(out, O_CLOEXEC) != 0 || (!merge && pipe2(errp, O_CLOEXEC) != 0) ||
	    pipe2(rep, O_CLOEXEC) != 0 ||
	    (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
		rc = ks_err_set(err, -errno, "cannot start '%s': %s", argv[0],
				strerror(errno));
		goto out;
	}
	p->started = ks_tune_now();
	pid = fork();
	if (pid == 0)
		child(argv, envp, devnull, out[1], merge ? out[1] : errp[1], rep[1]);
	if (pid < 0) {
		rc = ks_err_set(err, -errno, "cannot start '%s': %s", argv[0],
				strerror(errno));
		goto out;
	}
	/* Also here, so that the group exists whichever side runs first. */
	setpgid(pid, pid);
	close_fd(&rep[1]);
	close_fd(&out[1]);
	close_fd(&errp[1]);
	p->pid = pid;
	p->outfd = out[0];
	p->errfd = errp[0];
	out[0] = errp[0] = -1;
	do
		n = read(rep[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)sizeof(e)) {
		/* execvp failed: the child exits at once. */
		while (waitpid(pid, &p->status, 0) < 0 && errno == EINTR)
			;
		p->pid = 0;
		p->exec_errno = e;
		p->done = true;
		p->ended = ks_tune_now();
		close_fd(&p->outfd);
		close_fd(&p->errfd);
		goto out;
	}
	p->deadline = p->started + timeout_s;
	p->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (p->pidfd < 0)
		p->pidfd = -1;
	fcntl(p->outfd, F_SETFL, O_NONBLOCK);
	if (p->errfd >= 0)
		fcntl(p->errfd, F_SETFL, O_NONBLOCK);
out:
	close_fd(&out[0]);
	close_fd(&out[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	close_fd(&rep[0]);
	close_fd(&rep[1]);
	close_fd(&devnull);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Waiting                                                             */
/* ------------------------------------------------------------------ */

static bool active(const struct ks_tune_proc *p)
{
	return p && p->pid > 0 && !p->done;
}

/* If p's main process has ended: kills what is left of its group, reads
 * the rest of its output and reaps it. */
static bool check_end(struct ks_tune_proc *p)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
	    si.si_pid != p->pid)
		return false;
	p->ended = ks_tune_now();
	kill(-p->pid, SIGKILL);
	drain(p, &p->outfd, true);
	drain(p, &p->errfd, false);
	/* Whatever a killed descendant still held open: not ours to wait for. */
	if (p->outfd >= 0 && p->want_time && p->linelen > 0)
		end_line(p);
	close_fd(&p->outfd);
	close_fd(&p->errfd);
	while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR)
		;
	close_fd(&p->pidfd);
	p->pid = 0;
	p->done = true;
	return true;
}

#define MAX_POLL (1 + 3 * 1024)

void ks_tune_proc_wait(struct ks_tune_proc *const *procs, size_t n, int stop_fd,
		       bool *stopped)
{
	struct pollfd pf[MAX_POLL];
	struct {
		size_t proc;
		int kind;      /* 0 pidfd, 1 stdout, 2 stderr */
	} who[MAX_POLL];

	*stopped = false;
	if (n > (MAX_POLL - 1) / 3)
		n = (MAX_POLL - 1) / 3;
	for (;;) {
		size_t np = 0;
		bool any = false, any_done = false, no_pidfd = false;
		double t = ks_tune_now(), next = -1;
		int timeout_ms;

		if (stop_fd >= 0) {
			pf[np] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
			who[np].kind = -1;
			np++;
		}
		for (size_t i = 0; i < n; i++) {
			struct ks_tune_proc *p = procs[i];
			int fds[3];

			if (!active(p))
				continue;
			any = true;
			fds[0] = p->pidfd;
			fds[1] = p->outfd;
			fds[2] = p->errfd;
			for (int k = 0; k < 3; k++) {
				if (fds[k] < 0)
					continue;
				pf[np] = (struct pollfd){ .fd = fds[k], .events = POLLIN };
				who[np].proc = i;
				who[np].kind = k;
				np++;
			}
			if (p->pidfd < 0)
				no_pidfd = true;
			if (!p->timed_out && (next < 0 || p->deadline < next))
				next = p->deadline;
		}
		if (!any)
			return;
		if (next < 0)
			timeout_ms = -1;
		else if (next <= t)
			timeout_ms = 0;
		else if (next - t > 3600)
			timeout_ms = 3600 * 1000;
		else
			timeout_ms = (int)((next - t) * 1000.0) + 1;
		if (no_pidfd && (timeout_ms < 0 || timeout_ms > NO_PIDFD_POLL_MS))
			timeout_ms = NO_PIDFD_POLL_MS;
		if (poll(pf, np, timeout_ms) < 0 && errno != EINTR)
			timeout_ms = NO_PIDFD_POLL_MS; /* nothing to do but look again */
		for (size_t k = 0; k < np; k++) {
			struct ks_tune_proc *p;

			if (!pf[k].revents)
				continue;
			if (who[k].kind < 0) {
				*stopped = true;
				continue;
			}
			p = procs[who[k].proc];
			if (who[k].kind == 1)
				drain(p, &p->outfd, true);
			else if (who[k].kind == 2)
				drain(p, &p->errfd, false);
		}
		if (*stopped)
			return;
		t = ks_tune_now();
		for (size_t i = 0; i < n; i++) {
			struct ks_tune_proc *p = procs[i];

			if (!active(p))
				continue;
			if (check_end(p)) {
				any_done = true;
				continue;
			}
			if (!p->timed_out && t >= p->deadline) {
				p->timed_out = true;
				kill(-p->pid, SIGKILL);
				kill(p->pid, SIGKILL);
			}
		}
		if (any_done)
			return;
	}
}

void ks_tune_proc_kill(struct ks_tune_proc *p)
{
	if (!active(p))
		return;
	kill(-p->pid, SIGKILL);
	kill(p->pid, SIGKILL);
	while (waitpid(p->pid, &p->status, 0) < 0 && errno == EINTR)
		;
	p->ended = ks_tune_now();
	close_fd(&p->outfd);
	close_fd(&p->errfd);
	close_fd(&p->pidfd);
	p->pid = 0;
	p->done = true;
}

/* ------------------------------------------------------------------ */
/* Reporting                                                           */
/* ------------------------------------------------------------------ */

static bool blank_range(const char *s, size_t a, size_t b)
{
	for (size_t i = a; i < b; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	return true;
}

void ks_tune_proc_tail(const struct ks_tune_proc *p, int maxlines, char *buf,
		       size_t size)
{
	char lin[KS_TUNE_TAIL];
	size_t len, ls[32], le[32], o = 0, end;
	int n = 0;

	if (size == 0)
		return;
	buf[0] = '\0';
	if (maxlines > 32)
		maxlines = 32;
	if (p->tail_full) {
		memcpy(lin, p->tail + p->tail_pos, KS_TUNE_TAIL - p->tail_pos);
		memcpy(lin + KS_TUNE_TAIL - p->tail_pos, p->tail, p->tail_pos);
		len = KS_TUNE_TAIL;
	} else {
		memcpy(lin, p->tail, p->tail_pos);
		len = p->tail_pos;
	}
	/* The last maxlines lines that are not blank, from the end. */
	end = len;
	while (end > 0 && n < maxlines) {
		size_t start = end;

		while (start > 0 && lin[start - 1] != '\n')
			start--;
		if (!blank_range(lin, start, end)) {
			ls[n] = start;
			le[n] = end;
			n++;
		}
		end = start > 0 ? start - 1 : 0;
	}
	while (n-- > 0) {
		for (size_t i = ls[n]; i < le[n] && o + 1 < size; i++)
			if (lin[i] != '\r')
				buf[o++] = lin[i];
		if (n > 0 && o + 1 < size)
			buf[o++] = '\n';
	}
	buf[o] = '\0';
}

void ks_tune_proc_describe(const struct ks_tune_proc *p, const char *prog,
			   double timeout_s, char *buf, size_t size)
{
	char q[160];

	if (p->exec_errno) {
		ks_quote(q, sizeof(q), prog, strlen(prog));
		snprintf(buf, size, "cannot run '%s': %s", q, strerror(p->exec_errno));
	} else if (p->timed_out) {
		snprintf(buf, size, "timed out after %g s", timeout_s);
	} else if (WIFEXITED(p->status)) {
		snprintf(buf, size, "exit status %d", WEXITSTATUS(p->status));
	} else if (WIFSIGNALED(p->status)) {
		snprintf(buf, size, "killed by signal %d (%s)", WTERMSIG(p->status),
			 strsignal(WTERMSIG(p->status)));
	} else {
		snprintf(buf, size, "ended with wait status %#x", (unsigned)p->status);
	}
}

bool ks_tune_proc_ok(const struct ks_tune_proc *p)
{
	return p->done && !p->timed_out && !p->exec_errno && WIFEXITED(p->status) &&
	       WEXITSTATUS(p->status) == 0;
}
