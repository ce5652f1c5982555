/*
 * Running a program under kscope's Valgrind tool: the private Valgrind
 * library directory, the environment and argument vectors (vgrun.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "runprog.h"
#include "vgrun.h"

#ifndef KS_VG_LIBEXEC
#define KS_VG_LIBEXEC "/usr/libexec/valgrind"
#endif
#ifndef KS_VG_PLATFORM
#define KS_VG_PLATFORM "amd64-linux"
#endif

extern char **environ;

/* ------------------------------------------------------------------ */
/* The Valgrind library directory                                      */
/* ------------------------------------------------------------------ */

/* kscope's tool and preload library: in the build tree next to the
 * executable (build/lib/valgrind/), or <prefix>/lib/kscope/valgrind/. */
/* The directory holding kscope's Valgrind tool and preload library. */
static int find_tool_dir(char *out, size_t size, struct ks_err *err)
{
	char *slash;
	int rc = ks_find_own_file("valgrind/kscope-" KS_VG_PLATFORM, X_OK,
				  "kscope's Valgrind tool kscope-" KS_VG_PLATFORM, out, size, err);

	if (rc)
		return rc;
	slash = strrchr(out, '/');
	if (slash)
		*slash = '\0';
	return 0;
}

static int rm_tree_links(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
	return rmdir(dir) ? -errno : 0;
}

/* Whether Valgrind's core reads the file of its library directory named
 * name when it runs kscope's tool: its preload library, the default
 * suppressions, the TLS-offset helper and its debugger's descriptions of
 * this platform's registers.  Other tools' executables and preload
 * libraries (and other platforms' register descriptions) are left out:
 * linking all some 140 files costs more than the rest of the start. */
static bool vglib_wanted(const char *name)
{
	size_t n = strlen(name);

	if (!strcmp(name, "default.supp") || !strncmp(name, "vgpreload_core-", 15) ||
	    !strncmp(name, "getoff-", 7))
		return true;
	if (n < 4 || strcmp(name + n - 4, ".xml"))
		return false;
#if defined(__x86_64__)
	return !strncmp(name, "amd64-", 6) || !strncmp(name, "64bit-", 6);
#else
	return true;
#endif
}

/* A temporary directory with a link to each file of the system's
 * Valgrind library directory the core needs (vglib_wanted) and to
 * kscope's tool and preload library: what VALGRIND_LIB must point at for
 * `--tool=kscope`.  *out is malloc'd; remove it with rm_tree_links. */
static int make_vglib(const char *tooldir, char **out, struct ks_err *err)
{
	const char *tmp = getenv("TMPDIR");
	char *dir = NULL;
	DIR *d;
	int dfd;
	struct dirent *de;
	static const char *const own[] = { "kscope-" KS_VG_PLATFORM,
					   "vgpreload_kscope-" KS_VG_PLATFORM ".so" };

	if (!tmp || !*tmp || access(tmp, W_OK) != 0)
		tmp = "/tmp";
	if (asprintf(&dir, "%s/kscope-vglib-XXXXXX", tmp) < 0)
		return ks_err_set(err, -ENOMEM, "out of memory");
	if (!mkdtemp(dir)) {
		int e = errno;
		free(dir);
		return ks_err_set(err, -e, "cannot create a temporary directory in %s: %s",
				  tmp, strerror(e));
	}
	d = opendir(KS_VG_LIBEXEC);
	dfd = open(dir, O_DIRECTORY | O_RDONLY | O_CLOEXEC);
	if (!d || dfd < 0) {
		int e = errno;
		if (d)
			closedir(d);
		if (dfd >= 0)
			close(dfd);
		rm_tree_links(dir);
		free(dir);
		return ks_err_set(err, -e, "Valgrind's library directory %s cannot be "
				  "read (%s); install the valgrind package "
				  "(scripts/install-deps.sh)", KS_VG_LIBEXEC, strerror(e));
	}
	while ((de = readdir(d))) {
		char src[PATH_MAX];
		if (de->d_name[0] == '.' || !vglib_wanted(de->d_name))
			continue;
		snprintf(src, sizeof(src), "%s/%s", KS_VG_LIBEXEC, de->d_name);
		if (symlinkat(src, dfd, de->d_name) != 0) {
			int e = errno;
			closedir(d);
			close(dfd);
			rm_tree_links(dir);
			free(dir);
			return ks_err_set(err, -e, "cannot link %s into %s: %s", src, dir,
					  strerror(e));
		}
	}
	closedir(d);
	close(dfd);
	for (size_t i = 0; i < 2; i++) {
		char src[PATH_MAX + 64], dst[PATH_MAX + 64];
		snprintf(src, sizeof(src), "%s/%s", tooldir, own[i]);
		snprintf(dst, sizeof(dst), "%s/%s", dir, own[i]);
		if (symlink(src, dst) != 0) {
			int e = errno;
			rm_tree_links(dir);
			free(dir);
			return ks_err_set(err, -e, "cannot link %s into %s: %s", src, dir,
					  strerror(e));
		}
	}
	*out = dir;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Running                                                             */
/* ------------------------------------------------------------------ */

char *ks_vg_escape_percent(const char *path)
{
	size_t n = strlen(path), extra = 0;
	char *out, *o;
	for (size_t i = 0; i < n; i++)
		extra += path[i] == '%';
	out = malloc(n + extra + 1);
	if (!out)
		return NULL;
	o = out;
	for (size_t i = 0; i < n; i++) {
		*o++ = path[i];
		if (path[i] == '%')
			*o++ = '%';
	}
	*o = '\0';
	return out;
}

int ks_argv_add(struct ks_argv *a, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int rc;

	va_start(ap, fmt);
	rc = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (rc < 0)
		return -ENOMEM;
	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		char **v = realloc(a->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			return -ENOMEM;
		}
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
	return 0;
}

void ks_argv_free(struct ks_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	memset(a, 0, sizeof(*a));
}


char **ks_vg_env(const char *vglib, char **owned)
{
	size_t n = 0, k = 0;
	char **envp;

	while (environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(environ[i], "VALGRIND_LIB=", 13) ||
		    !strncmp(environ[i], "VALGRIND_OPTS=", 14))
			continue;
		envp[k++] = environ[i];
	}
	*owned = NULL;
	if (vglib) {
		if (asprintf(owned, "VALGRIND_LIB=%s", vglib) < 0) {
			free(envp);
			return NULL;
		}
		envp[k++] = *owned;
	}
	envp[k] = NULL;
	return envp;
}


int ks_vg_open(struct ks_vg *vg, struct ks_err *err)
{
	char tooldir[PATH_MAX];
	int rc;

	memset(vg, 0, sizeof(*vg));
	rc = ks_find_program("valgrind", &vg->valgrind, err);
	if (rc) {
		struct ks_err why = *err;

		ks_err_set(err, rc, "valgrind is not installed (it is in "
			   "scripts/install-deps.sh): %s", why.msg);
		goto fail;
	}
	if ((rc = find_tool_dir(tooldir, sizeof(tooldir), err)) ||
	    (rc = make_vglib(tooldir, &vg->vglib, err)))
		goto fail;
	if (!(vg->envp = ks_vg_env(vg->vglib, &vg->envvar))) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto fail;
	}
	return 0;
fail:
	ks_vg_close(vg);
	return rc;
}

void ks_vg_close(struct ks_vg *vg)
{
	if (vg->vglib)
		rm_tree_links(vg->vglib);
	free(vg->vglib);
	free(vg->envp);
	free(vg->envvar);
	free(vg->valgrind);
	memset(vg, 0, sizeof(*vg));
}

int ks_vg_check_program(const char *prog, const char *cmd)
{
	struct ks_err err;

	ks_err_clear(&err);
	if (!ks_check_dynamic(prog, cmd, "its malloc replacement", &err))
		return 0;
	if (strstr(err.msg, "statically linked"))
		ks_error("%s; Valgrind cannot replace malloc in a statically linked program, "
			 "so its heap %s: link it dynamically", err.msg,
			 !strcmp(cmd, "memcheck") ? "would go unchecked"
						  : "blocks would go unnamed");
	else
		ks_error("%s", err.msg);
	return KS_EXIT_USAGE;
}

bool ks_vg_log_too_many_threads(const char *log)
{
	return strstr(log, "Use --max-threads=") ||
	       strstr(log, "Max number of threads is too low");
}

void ks_vg_error_too_many_threads(long long max_threads, const char *rundir)
{
	ks_error("the program had more threads alive at once than --max-threads %lld "
		 "allows, and Valgrind stopped it; rerun with a larger --max-threads (up to "
		 "4000; see %s/valgrind.log)", max_threads, rundir);
}
