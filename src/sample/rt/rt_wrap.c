/*
 * Wrappers of the libc functions that start and end threads and
 * processes, so that the runtime follows the program through them:
 *
 *  - pthread_create: the new thread starts in a trampoline that begins
 *    its recording (THREAD_BEGIN, its timers) and ends it when the thread
 *    function returns; pthread_exit and cancellation end it through the
 *    thread-specific key's destructor (rt_main.c).
 *  - fork: the child starts clean: a new raw file for its pid with
 *    KS_RAW_F_FORKED, only the forking thread (now its main thread)
 *    recorded and timed, none of the parent's buffered records, and its
 *    own writer thread.  The runtime's locks are held across fork so the
 *    child's copy of them is consistent.
 *  - execve and the other exec functions: everything is flushed and END
 *    (reason EXEC) written before the exec; if the exec fails, END is
 *    removed and recording goes on.  The new image loads libkscope.so
 *    again from LD_PRELOAD and writes <pid>.<n>.ksraw.
 *  - _exit/_Exit: flush and END (exit() and return from main are caught
 *    by the on_exit hook in rt_main.c).
 *  - dlclose: records modules about to be unloaded (rt_module.c says why
 *    dlopen is not wrapped).
 *
 * Every wrapper leaves errno as the real function left it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dlfcn.h>

#include "rt_int.h"

/* ------------------------------------------------------------------ */
/* Threads                                                            */
/* ------------------------------------------------------------------ */

struct trampoline {
	void *(*fn)(void *);
	void *arg;
	pid_t creator;
	uint32_t index;
};

static void *thread_trampoline(void *p)
{
	struct trampoline tr = *(struct trampoline *)p;
	void *ret;

	free(p);
	ks_rt_thread_begin(tr.creator, tr.index);
	ret = tr.fn(tr.arg);
	ks_rt_thread_end();
	return ret;
}

KS_RT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
				void *(*fn)(void *), void *arg)
{
	struct trampoline *tr;
	struct ks_rt_thread *self;
	int saved = errno, rc;

	if (!ks_rt_on())
		return KS_RT_REAL(pthread_create)(th, attr, fn, arg);
	tr = malloc(sizeof(*tr));
	errno = saved;
	if (!tr)
		return KS_RT_REAL(pthread_create)(th, attr, fn, arg);
	self = ks_rt_self_get();
	tr->fn = fn;
	tr->arg = arg;
	tr->creator = self ? self->tid : ks_rt_gettid();
	tr->index = atomic_fetch_add(&ks_rt.next_index, 1);
	rc = KS_RT_REAL(pthread_create)(th, attr, thread_trampoline, tr);
	if (rc != 0) {
		saved = errno;
		free(tr);
		errno = saved;
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* fork                                                               */
/* ------------------------------------------------------------------ */

static void fork_child(void)
{
	ks_rt.pid = getpid();
	atomic_store(&ks_rt.file_owner, 0);
	pthread_mutex_init(&ks_rt.sig_lock, NULL);
	ks_rt_pool_atfork_child();
	ks_rt_modules_reset();
	ks_rt.mod_adds = 0;
	/* Closed only if still ours (see ks_rt_fd_is). */
	if (ks_rt_fd_is(ks_rt.fd, ks_rt.fd_dev, ks_rt.fd_ino))
		close(ks_rt.fd);
	if (ks_rt_fd_is(ks_rt.statm_fd, ks_rt.statm_dev, ks_rt.statm_ino))
		close(ks_rt.statm_fd);
	ks_rt.fd = ks_rt.statm_fd = -1;
	/* The parent's queued buffers stay with the parent: the child's
	 * copies are dropped (and their copy-on-write pages never touched). */
	atomic_store(&ks_rt.queue, NULL);
	atomic_store(&ks_rt.dropped, 0);
	sem_destroy(&ks_rt.wake);
	sem_init(&ks_rt.wake, 0, 0);
	atomic_fetch_and(&ks_rt.gate, ~(unsigned)KS_RT_GATE_STOPPED);
	ks_rt_windows_atfork_child();
	if (ks_rt_file_start(true) < 0) {
		atomic_store(&ks_rt.state, KS_RT_OFF);
		return;
	}
	atomic_store(&ks_rt.state, KS_RT_RUNNING);
	ks_rt_header_update();
	ks_rt_threads_atfork_child();
	ks_rt_writer_start();
}

KS_RT_EXPORT pid_t fork(void)
{
	int saved = errno, lk, err;
	pid_t pid;

	if (!ks_rt_on() || getpid() != ks_rt.pid)
		return KS_RT_REAL(fork)();
	/* Lock order: file, signals, pool, modules (as everywhere). */
	while ((lk = ks_rt_file_lock(100)) == 0)
		if (!ks_rt_on())
			break;
	pthread_mutex_lock(&ks_rt.sig_lock);
	ks_rt_pool_lock();
	pthread_mutex_lock(&ks_rt.mod_lock);
	errno = saved;
	pid = KS_RT_REAL(fork)();
	err = errno;
	if (pid == 0) {
		fork_child();
	} else {
		pthread_mutex_unlock(&ks_rt.mod_lock);
		ks_rt_pool_unlock();
		pthread_mutex_unlock(&ks_rt.sig_lock);
		if (lk == 1)
			ks_rt_file_unlock();
	}
	errno = err;
	return pid;
}

/* ------------------------------------------------------------------ */
/* exec                                                               */
/* ------------------------------------------------------------------ */

static void exec_before(void)
{
	int saved = errno;

	if (atomic_load(&ks_rt.state) == KS_RT_RUNNING)
		ks_rt_finish(KS_RAW_END_EXEC, 0, false);
	errno = saved;
}

static void exec_after(void)
{
	int saved = errno;

	ks_rt_exec_failed();
	errno = saved;
}

KS_RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	int rc;

	exec_before();
	rc = KS_RT_REAL(execve)(path, argv, envp);
	exec_after();
	return rc;
}

KS_RT_EXPORT int execv(const char *path, char *const argv[])
{
	int rc;

	exec_before();
	rc = KS_RT_REAL(execv)(path, argv);
	exec_after();
	return rc;
}

KS_RT_EXPORT int execvp(const char *file, char *const argv[])
{
	int rc;

	exec_before();
	rc = KS_RT_REAL(execvp)(file, argv);
	exec_after();
	return rc;
}

KS_RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	int rc;

	exec_before();
	rc = KS_RT_REAL(execvpe)(file, argv, envp);
	exec_after();
	return rc;
}

KS_RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	int rc;

	exec_before();
	rc = KS_RT_REAL(fexecve)(fd, argv, envp);
	exec_after();
	return rc;
}

/* The execl* argument lists as an argv array: on the stack when short,
 * else malloc'd (*heap set, for the caller to free).  NULL with errno set
 * if memory runs out.  with_env: an envp follows the terminating NULL. */
#define KS_RT_EXECL_STACK 64

static char **execl_args(const char *arg0, va_list ap, char **stack, char ***heap,
			 char ***envp)
{
	va_list count;
	size_t n = 1;
	char **argv = stack;

	*heap = NULL;
	va_copy(count, ap);
	if (arg0)
		while (va_arg(count, char *))
			n++;
	va_end(count);
	if (n + 1 > KS_RT_EXECL_STACK) {
		argv = malloc((n + 1) * sizeof(*argv));
		if (!argv)
			return NULL;
		*heap = argv;
	}
	argv[0] = (char *)(uintptr_t)arg0; /* exec's argv is not const */
	for (size_t i = 1; arg0 && i <= n; i++)
		argv[i] = va_arg(ap, char *);
	argv[arg0 ? n : 1] = NULL;
	if (envp)
		*envp = va_arg(ap, char **);
	return argv;
}

KS_RT_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *stack[KS_RT_EXECL_STACK], **heap, **argv;
	va_list ap;
	int rc;

	va_start(ap, arg);
	argv = execl_args(arg, ap, stack, &heap, NULL);
	va_end(ap);
	if (!argv)
		return -1;
	rc = execv(path, argv);
	free(heap);
	return rc;
}

KS_RT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *stack[KS_RT_EXECL_STACK], **heap, **argv;
	va_list ap;
	int rc;

	va_start(ap, arg);
	argv = execl_args(arg, ap, stack, &heap, NULL);
	va_end(ap);
	if (!argv)
		return -1;
	rc = execvp(file, argv);
	free(heap);
	return rc;
}

KS_RT_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *stack[KS_RT_EXECL_STACK], **heap, **argv, **envp;
	va_list ap;
	int rc;

	va_start(ap, arg);
	argv = execl_args(arg, ap, stack, &heap, &envp);
	va_end(ap);
	if (!argv)
		return -1;
	rc = execve(path, argv, envp);
	free(heap);
	return rc;
}

/* ------------------------------------------------------------------ */
/* _exit, dlclose                                                     */
/* ------------------------------------------------------------------ */

/* _exit is async-signal-safe and often called from handlers, so it ends
 * the file with the signal-safe flush. */
KS_RT_EXPORT void _exit(int status)
{
	ks_rt_finish(KS_RAW_END_EXIT, status & 0xff, true);
	KS_RT_REAL(_exit)(status);
	for (;;)
		;
}

KS_RT_EXPORT void _Exit(int status)
{
	ks_rt_finish(KS_RAW_END_EXIT, status & 0xff, true);
	KS_RT_REAL(_Exit)(status);
	for (;;)
		;
}

KS_RT_EXPORT int dlclose(void *handle)
{
	if (ks_rt_on()) {
		int saved = errno;

		ks_rt_modules_scan();
		errno = saved;
	}
	return KS_RT_REAL(dlclose)(handle);
}
