/*
 * The start and end of libkscope.so in a process: the constructor that
 * reads the options, creates the raw file (<run>/raw/<pid>.ksraw, or
 * <pid>.<n>.ksraw when an exec'd image of the same pid already wrote one)
 * with its header and process records, installs the signal handlers,
 * starts recording the main thread and starts the writer thread; and the
 * exit hook that writes the last records and END.
 *
 * Without KSCOPE_RUN_DIR the library does nothing at all: every wrapper
 * passes straight through.
 *
 * The end: exit() and return from main run the on_exit hook registered
 * here, which receives the exit status.  It is registered before
 * __libc_start_main registers the loader's destructor pass (_dl_fini), so
 * it runs after every destructor and atexit handler of the program, and
 * what they do is still sampled.  _exit/_Exit, exec and fatal signals end
 * the file through rt_wrap.c and rt_signal_async.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "rt_int.h"

struct ks_rt ks_rt = {
	.pool_lock = PTHREAD_MUTEX_INITIALIZER,
	.sig_lock = PTHREAD_MUTEX_INITIALIZER,
	.mod_lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
	.statm_fd = -1,
	.rank = -1,
};

void ks_rt_real_resolve(void)
{
	(void)KS_RT_REAL(sigaction);
	(void)KS_RT_REAL(sigprocmask);
	(void)KS_RT_REAL(pthread_sigmask);
	(void)KS_RT_REAL(signal);
	(void)KS_RT_REAL(pthread_create);
	(void)KS_RT_REAL(fork);
	(void)KS_RT_REAL(execve);
	(void)KS_RT_REAL(execv);
	(void)KS_RT_REAL(execvp);
	(void)KS_RT_REAL(execvpe);
	(void)KS_RT_REAL(fexecve);
	(void)KS_RT_REAL(_exit);
	(void)KS_RT_REAL(_Exit);
	(void)KS_RT_REAL(dlclose);
}

int ks_rt_fd_high(int fd)
{
	struct rlimit rl;
	int base, nfd;

	if (fd < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur < 64)
		return fd;
	/* Far from the low numbers programs expect open() to return, below
	 * the limits of select() and of the soft limit. */
	base = rl.rlim_cur >= 2048 ? 1000 : (int)(rl.rlim_cur / 2);
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
	if (nfd < 0)
		return fd;
	close(fd);
	return nfd;
}

/* ------------------------------------------------------------------ */
/* The raw file                                                       */
/* ------------------------------------------------------------------ */

void ks_rt_header_update(void)
{
	int saved = errno;

	if (!ks_rt.fd_broken && ks_rt_fd_is(ks_rt.fd, ks_rt.fd_dev, ks_rt.fd_ino))
		(void)!pwrite(ks_rt.fd, &ks_rt.hdr, sizeof(ks_rt.hdr), 0);
	errno = saved;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void header_fill(bool forked)
{
	struct ks_raw_file_header *h = &ks_rt.hdr;

	memset(h, 0, sizeof(*h));
	memcpy(h->magic, KS_RAW_MAGIC, sizeof(h->magic));
	h->version = KS_RAW_VERSION;
	h->header_size = sizeof(*h);
	h->pid = getpid();
	h->ppid = getppid();
	h->rank = atomic_load(&ks_rt.rank);
	h->flags = (ks_rt.opts.unwind_fp ? KS_RAW_F_FRAME_POINTERS : 0) |
		   (forked ? KS_RAW_F_FORKED : 0);
	h->start_mono_ns = ks_rt_now();
	h->start_real_ns = realtime_ns();
	h->cputime_freq = ks_rt.opts.cputime_freq;
	h->realtime_freq = ks_rt.opts.realtime_freq;
	h->signal_cpu = atomic_load(&ks_rt.sampler_on[KS_RT_CPU])
				? (uint32_t)atomic_load(&ks_rt.sig[KS_RT_CPU]) : 0;
	h->signal_real = atomic_load(&ks_rt.sampler_on[KS_RT_REAL])
				 ? (uint32_t)atomic_load(&ks_rt.sig[KS_RT_REAL]) : 0;
	if (gethostname(h->hostname, sizeof(h->hostname) - 1) != 0)
		h->hostname[0] = '\0';
	h->hostname[sizeof(h->hostname) - 1] = '\0';
}

/* KS_RAW_CMDLINE from /proc/self/cmdline (file lock held). */
static void cmdline_write(void)
{
	enum { MAX = 65536 };
	struct ks_raw_cmdline *c = malloc(sizeof(*c) + MAX + 8);
	size_t len = 0;
	int fd;

	if (!c)
		return;
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n;

		while (len < MAX && (n = read(fd, c->args + len, MAX - len)) > 0)
			len += (size_t)n;
		close(fd);
	}
	if (len == MAX)  /* cut: end on a whole argument */
		while (len > 0 && c->args[len - 1] != '\0')
			len--;
	memset(c, 0, sizeof(*c));
	c->h.type = KS_RAW_CMDLINE;
	c->h.size = KS_RAW_ALIGN((uint32_t)(sizeof(*c) + len));
	for (size_t i = 0; i < len; i++)
		if (c->args[i] == '\0')
			c->argc++;
	memset(c->args + len, 0, c->h.size - sizeof(*c) - len);
	ks_rt_file_write(c, c->h.size);
	free(c);
}

static void counter_info_write(void)
{
	struct ks_raw_counter_info ci;

	if (ks_rt.opts.ncounters == 0)
		return;
	memset(&ci, 0, sizeof(ci));
	ci.h.type = KS_RAW_COUNTER_INFO;
	ci.h.size = sizeof(ci);
	ci.ncounters = ks_rt.opts.ncounters;
	ci.supported_mask = ks_rt.counter_mask;
	for (uint32_t i = 0; i < ks_rt.opts.ncounters; i++) {
		memcpy(ci.names[i], ks_rt.opts.counters[i], sizeof(ci.names[i]));
		ci.error[i] = ks_rt.counter_errno[i];
	}
	ks_rt_file_write(&ci, sizeof(ci));
}

/* Creates the file with O_EXCL: <pid>.ksraw, else <pid>.<n>.ksraw (an
 * earlier image of this pid, before exec, wrote the first). */
static int file_create(char *path, size_t size)
{
	char dir[sizeof(ks_rt.opts.run_dir) + 8];
	pid_t pid = getpid();
	int fd = -1;

	snprintf(dir, sizeof(dir), "%s/raw", ks_rt.opts.run_dir);
	if (mkdir(dir, 0750) == 0)
		chmod(dir, 0750);
	else if (errno != EEXIST)
		return -errno;
	for (int n = 0; n < 100000; n++) {
		if (n == 0)
			snprintf(path, size, "%s/%d.ksraw", dir, (int)pid);
		else
			snprintf(path, size, "%s/%d.%d.ksraw", dir, (int)pid, n);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	fchmod(fd, 0640);
	return ks_rt_fd_high(fd);
}

int ks_rt_file_start(bool forked)
{
	char path[sizeof(ks_rt.opts.run_dir) + 64];
	struct stat st;
	int fd, lk;

	fd = file_create(path, sizeof(path));
	if (fd < 0) {
		ks_rt_log(KS_RT_LOG_WARN, "cannot create a raw file in %s/raw: %s; not sampling",
			  ks_rt.opts.run_dir, strerror(-fd));
		return fd;
	}
	if (fstat(fd, &st) != 0) {
		close(fd);
		return -EIO;
	}
	ks_rt.fd = fd;
	snprintf(ks_rt.path, sizeof(ks_rt.path), "%s", path);
	ks_rt.fd_dev = st.st_dev;
	ks_rt.fd_ino = st.st_ino;
	ks_rt.fd_off = 0;
	ks_rt.fd_broken = false;
	ks_rt_log(KS_RT_LOG_DEBUG, "pid %d writes %s", (int)getpid(), path);

	lk = ks_rt_file_lock(-1);
	header_fill(forked);
	ks_rt_file_write(&ks_rt.hdr, sizeof(ks_rt.hdr));
	cmdline_write();
	counter_info_write();
	if (lk == 1)
		ks_rt_file_unlock();
	ks_rt_modules_reset();
	ks_rt_modules_scan();

	ks_rt.statm_fd = ks_rt_fd_high(open("/proc/self/statm", O_RDONLY | O_CLOEXEC));
	if (ks_rt.statm_fd >= 0 && fstat(ks_rt.statm_fd, &st) == 0) {
		ks_rt.statm_dev = st.st_dev;
		ks_rt.statm_ino = st.st_ino;
	} else if (ks_rt.statm_fd >= 0) {
		close(ks_rt.statm_fd);
		ks_rt.statm_fd = -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Start and end                                                      */
/* ------------------------------------------------------------------ */

static void key_destructor(void *p)
{
	(void)p;
	ks_rt_thread_end();
}

static void on_exit_hook(int status, void *arg)
{
	struct ks_rt_thread *t = ks_rt_self_get();

	(void)arg;
	/* The exiting thread's CPU-time periods since its last tick; the
	 * other threads still running lose at most one tick's worth. */
	if (t && ks_rt_on())
		ks_rt_timers_end(t);
	atomic_store(&ks_rt.exit_status, status & 0xff);
	ks_rt_finish(KS_RAW_END_EXIT, status & 0xff, false);
}

__attribute__((constructor)) static void ks_rt_start(void)
{
	int saved = errno;
	ssize_t n;

	ks_rt_real_resolve();
	ks_rt_opts_from_env(&ks_rt.opts);
	if (!ks_rt.opts.run_dir[0])
		goto out;
	ks_rt.pid = getpid();
	ks_rt.origin_ns = ks_rt_now();
	ks_rt_windows_init();
	atomic_store(&ks_rt.rank, ks_rt.opts.rank);
	atomic_store(&ks_rt.next_range, 1);
	atomic_store(&ks_rt.rt_mult, 1);
	atomic_store(&ks_rt.rt_mult_max, 1);
	atomic_store(&ks_rt.rt_mult_applied, 1);
	n = readlink("/proc/self/exe", ks_rt.exe_path, sizeof(ks_rt.exe_path) - 1);
	ks_rt.exe_path[n > 0 ? n : 0] = '\0';
	if (sem_init(&ks_rt.wake, 0, 0) != 0 ||
	    pthread_key_create(&ks_rt.key, key_destructor) != 0)
		goto out;
	if (ks_rt_pool_init() < 0) {
		ks_rt_log(KS_RT_LOG_WARN, "cannot map sample buffers; not sampling");
		goto out;
	}
	ks_rt_counters_init();
	if (!ks_rt.opts.unwind_fp)
		ks_rt_unwind_init();  /* before any thread has a timer */
	if (ks_rt_file_start(false) < 0)
		goto out;
	atomic_store(&ks_rt.state, KS_RT_RUNNING);
	ks_rt_signals_init();
	ks_rt_header_update();
	atomic_store(&ks_rt.next_index, 1);
	ks_rt_thread_begin(0, 0);
	if (ks_rt_writer_start() < 0)
		ks_rt_log(KS_RT_LOG_WARN, "cannot start the writer thread; samples are written at exit");
	on_exit(on_exit_hook, NULL);
out:
	errno = saved;
}
