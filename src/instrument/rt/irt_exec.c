/*
 * The program replacing itself: the exec family, which this preloaded
 * library interposes on, so that the results of the program before the
 * exec are written first (irt_exec_begin), and removed again when the
 * exec fails.  The program after the exec is patched afresh: the runtime
 * stays in LD_PRELOAD, and writes instr.<pid>.txt at its own end.
 *
 * glibc's execv, execvp and the execl family call execve inside the C
 * library, where no interposition reaches; so each is wrapped here, the
 * execl ones by building their argument vector and calling the execv
 * wrappers.  Attached (--pid), irt_got.c points the GOT entries at them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "irt_int.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

int irt_wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)irt_real(IRT_W_EXECVE);
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	irt_exec_begin();
	r = real(path, argv, envp);
	irt_exec_failed();
	return r;
}

int irt_wrap_execv(const char *path, char *const argv[])
{
	return irt_wrap_execve(path, argv, environ);
}

int irt_wrap_execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)irt_real(IRT_W_EXECVPE);
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	irt_exec_begin();
	r = real(file, argv, envp);
	irt_exec_failed();
	return r;
}

int irt_wrap_execvp(const char *file, char *const argv[])
{
	return irt_wrap_execvpe(file, argv, environ);
}

int irt_wrap_fexecve(int fd, char *const argv[], char *const envp[])
{
	int (*real)(int, char *const[], char *const[]) =
		(int (*)(int, char *const[], char *const[]))irt_real(IRT_W_FEXECVE);
	int r;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	irt_exec_begin();
	r = real(fd, argv, envp);
	irt_exec_failed();
	return r;
}

/* The arguments of an execl call after arg0, up to its NULL, as a
 * vector (on the stack: the caller may be a child after vfork); *envp
 * taken after the NULL when with_env.  Returns the count, or -1 past max. */
#define EXECL_MAX 4096

static int collect(const char *arg0, va_list ap, char **argv, char ***envp, int with_env)
{
	int n = 0;

	argv[n++] = (char *)(uintptr_t)arg0;
	while (arg0) {
		char *a = va_arg(ap, char *);

		if (n == EXECL_MAX)
			return -1;
		argv[n++] = a;
		if (!a)
			break;
	}
	if (with_env)
		*envp = va_arg(ap, char **);
	return n;
}

int irt_wrap_execl(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX];
	va_list ap;
	int n;

	va_start(ap, arg);
	n = collect(arg, ap, argv, NULL, 0);
	va_end(ap);
	if (n < 0) {
		errno = E2BIG;
		return -1;
	}
	return irt_wrap_execve(path, argv, environ);
}

int irt_wrap_execlp(const char *file, const char *arg, ...)
{
	char *argv[EXECL_MAX];
	va_list ap;
	int n;

	va_start(ap, arg);
	n = collect(arg, ap, argv, NULL, 0);
	va_end(ap);
	if (n < 0) {
		errno = E2BIG;
		return -1;
	}
	return irt_wrap_execvpe(file, argv, environ);
}

int irt_wrap_execle(const char *path, const char *arg, ...)
{
	char *argv[EXECL_MAX], **envp = NULL;
	va_list ap;
	int n;

	va_start(ap, arg);
	n = collect(arg, ap, argv, &envp, 1);
	va_end(ap);
	if (n < 0) {
		errno = E2BIG;
		return -1;
	}
	return irt_wrap_execve(path, argv, envp);
}

/* Preloaded, the program's calls find these first. */
#define EXPORT(name, wrapper) \
	__attribute__((visibility("default"), alias(#wrapper))) __typeof__(wrapper) name

EXPORT(execve, irt_wrap_execve);
EXPORT(execv, irt_wrap_execv);
EXPORT(execvpe, irt_wrap_execvpe);
EXPORT(execvp, irt_wrap_execvp);
EXPORT(fexecve, irt_wrap_fexecve);
EXPORT(execl, irt_wrap_execl);
EXPORT(execlp, irt_wrap_execlp);
EXPORT(execle, irt_wrap_execle);
