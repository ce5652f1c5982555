/*
 * Running the program under test, shared by the commands that launch one
 * (sample, op, memcheck, contention, falseshare): finding it like execvp
 * does, checking that a preloaded runtime can reach it, starting it with
 * a given environment, forwarding SIGINT and SIGTERM sent to kscope
 * alone, and waiting for it.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "argcheck.h"
#include "log.h"
#include "runprog.h"

extern char **environ;

/* Finds prog like execvp does; *path is malloc'd. */
int ks_find_program(const char *prog, char **path, struct ks_err *err)
{
	char note[KS_NOTE_MAX];
	const char *env = getenv("PATH");
	char *dirs, *save = NULL, *d;
	int rc;

	if (strchr(prog, '/')) {
		rc = ks_check_path(prog, strlen(prog), KS_PATH_FILE | KS_PATH_EXEC, path,
				   note, sizeof(note), err);
		if (rc) {
			char why[sizeof(err->msg)];

			/* err->msg is both the argument and the destination. */
			snprintf(why, sizeof(why), "%s", err->msg);
			return ks_err_set(err, rc, "program: %s; accepted: an executable "
					  "file", why);
		}
		return 0;
	}
	dirs = strdup(env ? env : "/usr/local/bin:/usr/bin:/bin");
	if (!dirs)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		char cand[PATH_MAX];
		struct ks_err e;

		snprintf(cand, sizeof(cand), "%s/%s", *d ? d : ".", prog);
		if (ks_check_path(cand, strlen(cand), KS_PATH_FILE | KS_PATH_EXEC, path,
				  note, sizeof(note), &e) == 0) {
			free(dirs);
			return 0;
		}
	}
	free(dirs);
	return ks_err_set(err, -ENOENT, "program: '%s' was not found in PATH; "
			  "accepted: an executable file", prog);
}

int ks_check_dynamic(const char *path, const char *cmd, const char *why,
		     struct ks_err *err)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool interp = false;

	if (fd < 0)
		return ks_err_set(err, -errno, "program: cannot read '%s': %s", path,
				  strerror(errno));
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
		close(fd);
		return 0; /* a script: its interpreter is what runs */
	}
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr)) {
		close(fd);
		return ks_err_set(err, -EINVAL, "program: '%s' is not a 64-bit ELF "
				  "program; %s runs this machine's 64-bit programs",
				  path, cmd);
	}
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) !=
		    (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP)
			interp = true;
	}
	close(fd);
	if (!interp)
		return ks_err_set(err, -EINVAL, "program: '%s' is statically linked; "
				  "%s needs a dynamically linked program (it loads %s "
				  "with LD_PRELOAD)", path, cmd, why);
	return 0;
}

/* The child being profiled, for the signal handler (the only global: a
 * signal handler has no other way to find it). */
static volatile pid_t child_pid;

/* Forwards SIGINT/SIGTERM sent to kscope by another process; the
 * terminal's own Ctrl+C (SI_KERNEL) already reaches the whole foreground
 * process group, program included.  Async-signal-safe. */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;

	(void)uc;
	if (child_pid > 0 && si->si_code != SI_KERNEL)
		kill(child_pid, sig);
	errno = saved;
}

void ks_run_program_signal(int sig)
{
	int saved = errno;

	if (child_pid > 0)
		kill(child_pid, sig);
	errno = saved;
}

int ks_run_program(char **argv, char **envp, pid_t *pid_out, struct ks_err *err)
{
	return ks_run_program_tied(argv, envp, pid_out, false, err);
}

int ks_run_program_tied(char **argv, char **envp, pid_t *pid_out, bool die_with_kscope,
			struct ks_err *err)
{
	pid_t parent = getpid();
	struct sigaction sa, old_int, old_term;
	struct timespec t0, t1;
	struct rusage ru;
	int pipefd[2], status = 0, child_errno = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return ks_err_set(err, -errno, "cannot start the program: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(pipefd[0]);
		close(pipefd[1]);
		return ks_err_set(err, -e, "cannot start the program: %s", strerror(e));
	}
	if (pid == 0) {
		int e;

		/* The program gets the dispositions kscope inherited. */
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		close(pipefd[0]);
		/* The death signal is tied to the parent as it is now: if
		 * kscope died between fork and prctl, the child has already
		 * been re-parented, and must not start the program. */
		if (die_with_kscope && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0)
			goto failed;
		if (die_with_kscope && getppid() != parent)
			_exit(127);
		execvpe(argv[0], argv, envp);
failed:
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	child_pid = pid;
	if (pid_out)
		*pid_out = pid;
	close(pipefd[1]);
	n = read(pipefd[0], &child_errno, sizeof(child_errno));
	close(pipefd[0]);
	while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	child_pid = 0;
	ks_debug("program ran for %.6f s, cpu %.6f s",
		 (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9,
		 (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
		 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (n == (ssize_t)sizeof(child_errno))
		return ks_err_set(err, -child_errno, "cannot run '%s': %s", argv[0],
				  strerror(child_errno));
	return status;
}

int ks_find_own_file(const char *rel, int mode, const char *what, char *out,
		     size_t size, struct ks_err *err)
{
	static const char *const places[] = { "lib", "../lib/kscope" };
	char self[PATH_MAX], cand[2][PATH_MAX + 64], *slash;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (size)
		out[0] = '\0';
	if (n <= 0)
		return ks_err_set(err, -errno, "cannot find kscope's own path to look for %s", what);
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	for (size_t i = 0; i < 2; i++) {
		char real[PATH_MAX];

		snprintf(cand[i], sizeof(cand[i]), "%s/%s/%s", self, places[i], rel);
		if (access(cand[i], mode) == 0 && realpath(cand[i], real) && strlen(real) < size) {
			memcpy(out, real, strlen(real) + 1);
			return 0;
		}
	}
	snprintf(out, size, "%s", cand[1]);
	return ks_err_set(err, -ENOENT, "%s is missing (looked for %s and %s): reinstall kscope, "
			  "whose <prefix>/bin/kscope uses <prefix>/lib/kscope/", what, cand[0],
			  cand[1]);
}

int ks_exit_status(int status)
{
	return WIFEXITED(status) ? WEXITSTATUS(status)
	       : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
}

/* ------------------------------------------------------------------ */
/* The program's environment                                           */
/* ------------------------------------------------------------------ */

int ks_env_init(struct ks_env *e)
{
	memset(e, 0, sizeof(*e));
	while (environ[e->n])
		e->n++;
	e->envp = malloc((e->n + 1) * sizeof(*e->envp));
	if (!e->envp)
		return -ENOMEM;
	memcpy(e->envp, environ, (e->n + 1) * sizeof(*e->envp));
	return 0;
}

int ks_env_set(struct ks_env *e, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *entry, **v;

	v = realloc(e->owned, (e->nowned + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	e->owned = v;
	if (asprintf(&entry, "%s=%s", name, value) < 0)
		return -ENOMEM;
	e->owned[e->nowned++] = entry;
	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->envp[i], name, len) == 0 && e->envp[i][len] == '=') {
			e->envp[i] = entry;
			return 0;
		}
	v = realloc(e->envp, (e->n + 2) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	v[e->n++] = entry;
	v[e->n] = NULL;
	e->envp = v;
	return 0;
}

void ks_env_unset(struct ks_env *e, const char *name)
{
	size_t len = strlen(name), k = 0;

	for (size_t i = 0; i < e->n; i++)
		if (strncmp(e->envp[i], name, len) != 0 || e->envp[i][len] != '=')
			e->envp[k++] = e->envp[i];
	e->n = k;
	if (e->envp)
		e->envp[k] = NULL;
}

void ks_env_free(struct ks_env *e)
{
	for (size_t i = 0; i < e->nowned; i++)
		free(e->owned[i]);
	free(e->owned);
	free(e->envp);
	memset(e, 0, sizeof(*e));
}
