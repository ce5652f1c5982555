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
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "irt_int.h"

extern char **environ;

typedef int (*execve_fn)(const char *, char *const[], char *const[]);

/* The real execve or execvpe (w), between irt_exec_begin and, when it
 * returns (it failed), irt_exec_failed. */
static int exec_real(int w, const char *file, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)irt_real(w);
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

int irt_wrap_execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_real(IRT_W_EXECVE, path, argv, envp);
}

int irt_wrap_execv(const char *path, char *const argv[])
{
	return exec_real(IRT_W_EXECVE, path, argv, environ);
}

int irt_wrap_execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_real(IRT_W_EXECVPE, file, argv, envp);
}

int irt_wrap_execvp(const char *file, char *const argv[])
{
	return exec_real(IRT_W_EXECVPE, file, argv, environ);
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
 * vector (on the stack: the caller may be a child after vfork), then,
 * with_env, the environment after the NULL; execve or execvpe (w) of
 * them.  E2BIG past EXECL_MAX arguments. */
#define EXECL_MAX 4096

static int execl_common(int w, const char *file, const char *arg0, va_list ap, bool with_env)
{
	char *argv[EXECL_MAX], **envp = environ;
	int n = 0;

	argv[n++] = (char *)(uintptr_t)arg0;
	while (arg0) {
		char *a = va_arg(ap, char *);

		if (n == EXECL_MAX) {
			errno = E2BIG;
			return -1;
		}
		argv[n++] = a;
		if (!a)
			break;
	}
	if (with_env)
		envp = va_arg(ap, char **);
	return exec_real(w, file, argv, envp);
}

int irt_wrap_execl(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = execl_common(IRT_W_EXECVE, path, arg, ap, false);
	va_end(ap);
	return r;
}

int irt_wrap_execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = execl_common(IRT_W_EXECVPE, file, arg, ap, false);
	va_end(ap);
	return r;
}

int irt_wrap_execle(const char *path, const char *arg, ...)
{
	va_list ap;
	int r;

	va_start(ap, arg);
	r = execl_common(IRT_W_EXECVE, path, arg, ap, true);
	va_end(ap);
	return r;
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
