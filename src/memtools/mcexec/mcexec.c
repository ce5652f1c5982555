/*
 * libkscope-mcexec.so: preloaded by kscope memcheck into the program that
 * runs under Valgrind's Memcheck, it keeps what an image found when that
 * image execs another.
 *
 * Memcheck writes each process's XML to RUN/memcheck.<pid>.xml (and its
 * log to RUN/valgrind.<pid>.log; under --heap-map libkscope-mcheap.so
 * writes RUN/heapmap.<pid>.log).  An exec keeps the pid: the next image's
 * Valgrind opens the same names again and truncates them, and what the
 * image before found would be lost.  So each exec function of the C
 * library is wrapped here: just before the real exec, the image's files
 * are renamed to memcheck.<pid>.<k>.xml, valgrind.<pid>.<k>.log and
 * heapmap.<pid>.<k>.log (k the first number free for all three), which
 * their writers, whose descriptors or mappings stay open, keep writing
 * into until the exec happens.  If the exec fails, the
 * names are given back.  kscope memcheck reads the set-aside files as the
 * process's earlier images (src/cli/memcheck_mc.c).
 *
 * A child forked without exec is not checked (Valgrind 3.19 would write
 * its XML into its parent's file, so kscope runs Memcheck with
 * --child-silent-after-fork=yes): a fork handler leaves the mark
 * RUN/forked.<pid>.<ppid>, so that kscope can say which processes went
 * unchecked.
 *
 * KSCOPE_MC_RUNDIR names the run directory; without it nothing is done.
 * Nothing here allocates (Memcheck would count it), and errno is what the
 * real call left.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_ARGS 4096 /* execl's arguments, gathered on the stack */

struct aside {
	char xml[2][PATH_MAX], log[2][PATH_MAX]; /* [0] the name, [1] set aside */
	char heap[2][PATH_MAX];                  /* heapmap.<pid>.log (--heap-map) */
	int moved;                               /* bit 0: xml, bit 1: log, bit 2: heap */
};

/* Renames this image's files out of the next image's way. */
static void set_aside(struct aside *a)
{
	const char *dir = getenv("KSCOPE_MC_RUNDIR");
	int pid = (int)getpid(), saved = errno;

	a->moved = 0;
	if (!dir || dir[0] != '/')
		return;
	snprintf(a->xml[0], PATH_MAX, "%s/memcheck.%d.xml", dir, pid);
	snprintf(a->log[0], PATH_MAX, "%s/valgrind.%d.log", dir, pid);
	snprintf(a->heap[0], PATH_MAX, "%s/heapmap.%d.log", dir, pid);
	if (access(a->xml[0], F_OK) != 0) {
		errno = saved;
		return; /* a forked child: Memcheck writes nothing for it */
	}
	for (int k = 0; k < 10000; k++) {
		snprintf(a->xml[1], PATH_MAX, "%s/memcheck.%d.%d.xml", dir, pid, k);
		snprintf(a->log[1], PATH_MAX, "%s/valgrind.%d.%d.log", dir, pid, k);
		snprintf(a->heap[1], PATH_MAX, "%s/heapmap.%d.%d.log", dir, pid, k);
		if (access(a->xml[1], F_OK) != 0 && access(a->log[1], F_OK) != 0 &&
		    access(a->heap[1], F_OK) != 0)
			break;
	}
	if (rename(a->xml[0], a->xml[1]) == 0)
		a->moved |= 1;
	if (rename(a->log[0], a->log[1]) == 0)
		a->moved |= 2;
	/* Only under --heap-map is there one (libkscope-mcheap.so's). */
	if (rename(a->heap[0], a->heap[1]) == 0)
		a->moved |= 4;
	errno = saved;
}

/* The exec failed: the image goes on under its own names. */
static void give_back(const struct aside *a)
{
	int saved = errno;

	if (a->moved & 1)
		rename(a->xml[1], a->xml[0]);
	if (a->moved & 2)
		rename(a->log[1], a->log[0]);
	if (a->moved & 4)
		rename(a->heap[1], a->heap[0]);
	errno = saved;
}

/* In a forked child: the mark that it ran, unchecked until it execs. */
static void forked_child(void)
{
	const char *dir = getenv("KSCOPE_MC_RUNDIR");
	char path[PATH_MAX];
	int saved = errno, fd;

	if (!dir || dir[0] != '/')
		return;
	snprintf(path, sizeof(path), "%s/forked.%d.%d", dir, (int)getpid(), (int)getppid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	errno = saved;
}

__attribute__((constructor)) static void mcexec_init(void)
{
	pthread_atfork(NULL, NULL, forked_child);
}

static void *real(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

/* An exec function of the C library: its files set aside, the real call,
 * the files given back if it returns (it failed). */
#define WRAP_EXEC(name, params, args)                                  \
	EXPORT int name params                                         \
	{                                                              \
		int(*f) params = (int(*) params)real(#name);           \
		struct aside a;                                        \
		int rc;                                                \
									       \
		if (!f) {                                              \
			errno = ENOSYS;                                \
			return -1;                                     \
		}                                                      \
		set_aside(&a);                                         \
		rc = f args;                                           \
		give_back(&a);                                         \
		return rc;                                             \
	}

WRAP_EXEC(execve, (const char *path, char *const argv[], char *const envp[]),
	  (path, argv, envp))
WRAP_EXEC(execvpe, (const char *file, char *const argv[], char *const envp[]),
	  (file, argv, envp))
WRAP_EXEC(fexecve, (int fd, char *const argv[], char *const envp[]), (fd, argv, envp))
WRAP_EXEC(execveat, (int dirfd, const char *path, char *const argv[], char *const envp[],
		     int flags),
	  (dirfd, path, argv, envp, flags))

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

/* execl, execlp, execle: the arguments into an array on the stack. */
#define GATHER(first, ap, argv, n)                                         \
	do {                                                               \
		(argv)[0] = (char *)(uintptr_t)(first);                    \
		for ((n) = 1; (argv)[(n) - 1] && (n) < MAX_ARGS; (n)++)    \
			(argv)[(n)] = va_arg((ap), char *);                \
		if ((argv)[(n) - 1]) {                                     \
			va_end(ap);                                        \
			errno = E2BIG;                                     \
			return -1;                                         \
		}                                                          \
	} while (0)

EXPORT int execl(const char *path, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER(arg, ap, argv, n);
	va_end(ap);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER(arg, ap, argv, n);
	va_end(ap);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *argv[MAX_ARGS];
	char *const *envp;
	va_list ap;
	int n;

	va_start(ap, arg);
	GATHER(arg, ap, argv, n);
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}
