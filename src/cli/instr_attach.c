/*
 * kscope instrument --pid (instr_attach.h; docs/instrument.md,
 * "Attaching").
 *
 * Every thread of the process is seized and interrupted with ptrace.
 * One thread, preferably one waiting in a system call (it holds no lock
 * of the C library then), is borrowed to call functions of the process:
 * its registers and vector state are saved, the arguments go on its
 * stack below the red zone, the return address pushed is 0, and the call
 * ends in the SIGSEGV at address 0 that the tracer catches; then its
 * registers are put back, orig_rax included, so that a system call it
 * was in restarts as after any signal.  The calls, in order:
 *   dlopen(runtime)                     the other threads running: the
 *   kscope_instr_attach_setup(settings) loader and the analysis allocate
 *   kscope_instr_attach_patch(pcs)      every thread stopped, their stop
 *                                       addresses handed over
 * and, to detach before the process ends:
 *   kscope_instr_detach_unpatch()       every thread stopped, none inside
 *                                       the runtime (let out first)
 *   kscope_instr_detach_write()         the other threads running
 * Between the two, every thread is detached and the process runs
 * untraced; kscope waits on a pidfd.
 */
#include "instr_attach.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "instr.h"

#define MSG_CAP 512            /* the runtime's error message buffer */
#define XSTATE_CAP 16384       /* the vector registers, XSAVE layout */
#define CALL_TIMEOUT_S 60.0    /* a call into the process, at most */
#define STEP_ROUNDS 2000       /* runs and stops to leave the runtime */

struct thr {
	pid_t tid;
	int sig;                   /* a signal it stopped with, to deliver */
	bool gone;
	bool resumed;              /* let run by step_out this round */
};

struct ks_attach {
	pid_t pid;
	int mem;                   /* /proc/PID/mem */
	int pidfd;
	struct thr *t;
	size_t n, cap;
	char lib[PATH_MAX];        /* the runtime's path */
	uint64_t fn_setup, fn_patch, fn_unpatch, fn_write;
	uint64_t lib_base;         /* where the runtime is loaded */
	uint64_t text_lo, text_hi; /* the runtime's code in the process */
	uint64_t pcs_buf;          /* the runtime's buffer for stop addresses */
	size_t pcs_max;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------------------ */
/* /proc                                                               */
/* ------------------------------------------------------------------ */

/* The value of "Key:" in /proc/PID/status (first number), or -1. */
static long status_field(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t n = strlen(key);
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			v = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int ks_attach_check(pid_t pid, char **exe, uid_t *uid, gid_t *gid, struct ks_err *err)
{
	char path[64], buf[PATH_MAX];
	ssize_t n;
	long tracer;

	*exe = NULL;
	if (pid == getpid())
		return ks_err_set(err, -EINVAL, "--pid %d: that is kscope itself", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return ks_err_set(err, -ESRCH, "--pid %d: no such process", (int)pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return ks_err_set(err, errno == ENOENT ? -ESRCH : -EPERM,
				  "--pid %d: cannot read %s: %s (a process of another user needs "
				  "kscope to run as root)", (int)pid, path, strerror(errno));
	buf[n] = '\0';
	tracer = status_field(pid, "TracerPid");
	if (tracer > 0)
		return ks_err_set(err, -EBUSY, "--pid %d: the process is traced already, by "
				  "process %ld (a debugger or strace); only one tracer at a time",
				  (int)pid, tracer);
	*uid = (uid_t)status_field(pid, "Uid");
	*gid = (gid_t)status_field(pid, "Gid");
	if (!(*exe = strdup(buf)))
		return ks_err_set(err, -ENOMEM, "out of memory");
	return 0;
}

/* The first mapping of the object whose path satisfies match, in
 * /proc/PID/maps: its load address (the mapping of file offset 0) and,
 * with text_lo/text_hi not NULL, the extent of its executable mappings;
 * its path in *path.  -ENOENT when none. */
static int maps_find(pid_t pid, bool (*match)(const char *path, const void *arg),
		     const void *arg, uint64_t *base, uint64_t *text_lo, uint64_t *text_hi,
		     char *path, size_t cap)
{
	char fn[64], line[PATH_MAX + 128];
	FILE *f;
	int rc = -ENOENT;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	if (!(f = fopen(fn, "re")))
		return -errno;
	if (text_lo) {
		*text_lo = UINT64_MAX;
		*text_hi = 0;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		char perms[8];
		int at = 0;
		char *p, *nl;

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %n", &lo, &hi, perms, &off, &at) < 4 ||
		    !at)
			continue;
		p = line + at;
		if ((nl = strchr(p, '\n')))
			*nl = '\0';
		if (p[0] != '/' || !match(p, arg))
			continue;
		if (rc && off == 0) {
			*base = lo;
			snprintf(path, cap, "%s", p);
			rc = 0;
		}
		if (text_lo && strchr(perms, 'x') && !strcmp(p, path)) {
			if (lo < *text_lo)
				*text_lo = lo;
			if (hi > *text_hi)
				*text_hi = hi;
		}
	}
	fclose(f);
	return rc;
}

static bool match_libc(const char *path, const void *arg)
{
	const char *b = strrchr(path, '/');

	(void)arg;
	b = b ? b + 1 : path;
	return !strncmp(b, "libc.so.", 8) || (!strncmp(b, "libc-", 5) && strstr(b, ".so"));
}

static bool match_path(const char *path, const void *arg)
{
	return !strcmp(path, arg);
}

/* The address of function name of the object mapped at base from file
 * (read through /proc/PID/root), or 0. */
static uint64_t sym_addr(pid_t pid, const char *file, uint64_t base, const char *name)
{
	char path[PATH_MAX + 32];
	struct ks_instr_elf *e = NULL;
	struct ks_instr_sym *syms = NULL;
	size_t n = 0;
	uint64_t a = 0;
	struct ks_err err;

	snprintf(path, sizeof(path), "/proc/%d/root%s", (int)pid, file);
	if (ks_instr_elf_open(path, &e, &err) || ks_instr_elf_funcs(e, &syms, &n, &err)) {
		ks_instr_elf_close(e);
		return 0;
	}
	for (size_t i = 0; i < n && !a; i++)
		if (!strcmp(syms[i].name, name))
			a = base + syms[i].addr;
	free(syms);
	ks_instr_elf_close(e);
	return a;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

static struct thr *thr_find(struct ks_attach *a, pid_t tid)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->t[i].tid == tid)
			return &a->t[i];
	return NULL;
}

/* Waits for t's next stop; 0 stopped, 1 gone.  A signal it stopped with
 * is kept for when it runs on. */
static int thr_wait(struct thr *t)
{
	int st;

	for (;;) {
		pid_t r = waitpid(t->tid, &st, __WALL);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = true;
			return 1;
		}
		if (WIFSTOPPED(st)) {
			if ((st >> 16) != PTRACE_EVENT_STOP)
				t->sig = WSTOPSIG(st);
			return 0;
		}
	}
}

/* Seizes and stops every thread of the process, again until no new one
 * appears. */
static int stop_all(struct ks_attach *a, struct ks_err *err)
{
	bool added = true;

	/* gone: not stopped under kscope now (ended, or let run on). */
	while (added) {
		char path[64];
		DIR *d;
		struct dirent *de;

		added = false;
		snprintf(path, sizeof(path), "/proc/%d/task", (int)a->pid);
		if (!(d = opendir(path)))
			return ks_err_set(err, -ESRCH, "process %d ended", (int)a->pid);
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)strtol(de->d_name, NULL, 10);
			struct thr *t;

			if (tid <= 0)
				continue;
			t = thr_find(a, tid);
			if (t && !t->gone)
				continue;
			if (!t) {
				if (a->n == a->cap) {
					size_t cap = a->cap ? 2 * a->cap : 64;
					struct thr *v = realloc(a->t, cap * sizeof(*v));

					if (!v) {
						closedir(d);
						return ks_err_set(err, -ENOMEM, "out of memory");
					}
					a->t = v;
					a->cap = cap;
				}
				t = &a->t[a->n++];
			}
			*t = (struct thr){ .tid = tid };
			if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
				int e = errno;

				t->gone = true;
				if (e == ESRCH)
					continue;
				closedir(d);
				return ks_err_set(err, -e, "cannot trace thread %d of process %d: %s%s",
						  (int)tid, (int)a->pid, strerror(e),
						  e == EPERM ? " (a process of another user needs root; "
						  "see also /proc/sys/kernel/yama/ptrace_scope)" : "");
			}
			added = true;
			if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 ||
			    thr_wait(t) != 0)
				t->gone = true;
		}
		closedir(d);
	}
	return 0;
}

/* Lets every thread but keep (NULL: every one) run on, untraced, with
 * the signal it stopped with. */
static void run_others(struct ks_attach *a, const struct thr *keep)
{
	for (size_t i = 0; i < a->n; i++) {
		struct thr *t = &a->t[i];

		if (t == keep || t->gone)
			continue;
		ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(intptr_t)t->sig);
		t->gone = true;
		t->sig = 0;
	}
}

static void run_all(struct ks_attach *a)
{
	run_others(a, NULL);
}

static int get_regs(pid_t tid, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) == 0 ? 0 : -errno;
}

/* The thread to borrow: one waiting in a system call, outside the
 * runtime; else the first outside it. */
static struct thr *pick(struct ks_attach *a)
{
	struct thr *any = NULL;

	for (size_t i = 0; i < a->n; i++) {
		struct user_regs_struct r;

		if (a->t[i].gone || get_regs(a->t[i].tid, &r))
			continue;
		if (r.rip >= a->text_lo && r.rip < a->text_hi)
			continue;
		if ((long long)r.orig_rax >= 0)
			return &a->t[i];
		if (!any)
			any = &a->t[i];
	}
	return any;
}

/* ------------------------------------------------------------------ */
/* Calls into the process                                              */
/* ------------------------------------------------------------------ */

/* Calls fn(args) on thread t, its arguments blob (len bytes) written
 * below its stack pointer first: args[i] == UINT64_MAX - k stands for
 * the blob's address + k.  The blob is read back after the call (the
 * callee's results in it).  *ret: rax. */
static int call(struct ks_attach *a, struct thr *t, uint64_t fn, const uint64_t *args,
		int nargs, void *blob, size_t len, uint64_t *ret, struct ks_err *err)
{
	struct user_regs_struct saved, r;
	static unsigned char xs[XSTATE_CAP];
	struct iovec xv = { xs, sizeof(xs) };
	bool have_xs;
	uint64_t at, zero = 0;
	double t0 = now_s();
	int rc = 0;

	if ((rc = get_regs(t->tid, &saved)))
		return ks_err_set(err, rc, "cannot read the registers of thread %d: %s",
				  (int)t->tid, strerror(-rc));
	have_xs = ptrace(PTRACE_GETREGSET, t->tid, (void *)NT_X86_XSTATE, &xv) == 0;
	at = (saved.rsp - 1024 - len) & ~(uint64_t)15;
	if ((len && pwrite(a->mem, blob, len, (off_t)at) != (ssize_t)len) ||
	    pwrite(a->mem, &zero, 8, (off_t)(at - 8)) != 8)
		return ks_err_set(err, -EIO, "cannot write to the stack of thread %d: %s",
				  (int)t->tid, strerror(errno));
	r = saved;
	r.rsp = at - 8;
	r.rip = fn;
	r.rax = 0;
	r.orig_rax = (unsigned long long)-1; /* no system call to restart */
	{
		unsigned long long *regs[6] = { &r.rdi, &r.rsi, &r.rdx, &r.rcx, &r.r8, &r.r9 };

		for (int i = 0; i < nargs && i < 6; i++)
			*regs[i] = args[i] >= UINT64_MAX - (1u << 20) ? at + (UINT64_MAX - args[i])
				   : args[i];
	}
	if (ptrace(PTRACE_SETREGS, t->tid, NULL, &r) != 0)
		return ks_err_set(err, -errno, "cannot set the registers of thread %d: %s",
				  (int)t->tid, strerror(errno));
	if (ptrace(PTRACE_CONT, t->tid, NULL, NULL) != 0) {
		rc = ks_err_set(err, -errno, "cannot resume thread %d: %s", (int)t->tid,
				strerror(errno));
		goto restore;
	}
	for (;;) {
		int st;
		pid_t w = waitpid(t->tid, &st, __WALL | WNOHANG);

		if (w == 0) {
			struct timespec ms = { 0, 1000000 };

			if (now_s() - t0 > CALL_TIMEOUT_S) {
				ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL);
				thr_wait(t);
				rc = ks_err_set(err, -ETIMEDOUT, "a call into process %d did not return "
						"in %.0f s (was a thread stopped holding a lock the "
						"loader needs?)", (int)a->pid, CALL_TIMEOUT_S);
				goto restore;
			}
			nanosleep(&ms, NULL);
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			t->gone = true;
			return ks_err_set(err, -ESRCH, "process %d ended during kscope's call into it",
					  (int)a->pid);
		}
		if (!WIFSTOPPED(st))
			continue;
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			ptrace(PTRACE_CONT, t->tid, NULL, NULL);
			continue;
		}
		if (WSTOPSIG(st) == SIGSEGV && get_regs(t->tid, &r) == 0 && r.rip == 0) {
			*ret = r.rax;
			break;
		}
		if (WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS || WSTOPSIG(st) == SIGILL ||
		    WSTOPSIG(st) == SIGFPE || WSTOPSIG(st) == SIGABRT) {
			if (get_regs(t->tid, &r))
				r.rip = 0;
			rc = ks_err_set(err, -EFAULT, "kscope's call into process %d faulted (%s at "
					"0x%llx); its registers are put back", (int)a->pid,
					strsignal(WSTOPSIG(st)), r.rip);
			goto restore;
		}
		/* The program's own signal: its handler runs now, on top. */
		ptrace(PTRACE_CONT, t->tid, NULL, (void *)(intptr_t)WSTOPSIG(st));
	}
	if (len && pread(a->mem, blob, len, (off_t)at) != (ssize_t)len)
		rc = ks_err_set(err, -EIO, "cannot read the stack of thread %d: %s", (int)t->tid,
				strerror(errno));
restore:
	if (ptrace(PTRACE_SETREGS, t->tid, NULL, &saved) != 0 && !rc)
		rc = ks_err_set(err, -errno, "cannot put back the registers of thread %d: %s",
				(int)t->tid, strerror(errno));
	if (have_xs)
		ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_X86_XSTATE, &xv);
	return rc;
}

/* A string of the process at addr (at most cap - 1 bytes). */
static void read_str(struct ks_attach *a, uint64_t addr, char *out, size_t cap)
{
	ssize_t n = addr ? pread(a->mem, out, cap - 1, (off_t)addr) : -1;

	out[n > 0 ? (size_t)n : 0] = '\0';
	out[cap - 1] = '\0';
}

/* Whether t is stopped inside the runtime's code. */
static bool in_runtime(struct ks_attach *a, struct thr *t)
{
	struct user_regs_struct r;

	return !t->gone && get_regs(t->tid, &r) == 0 && r.rip >= a->text_lo && r.rip < a->text_hi;
}

/* Lets the stopped threads that are inside the runtime's code run on
 * for a moment and stops them again, until none is: single steps would
 * not do (every step is a switch, which the hot path reads again, and
 * one thread may spin on a lock another holds). */
static int step_out(struct ks_attach *a, struct ks_err *err)
{
	for (int round = 0; round < STEP_ROUNDS; round++) {
		bool inside = false;

		for (size_t i = 0; i < a->n; i++) {
			a->t[i].resumed = false;
			if (!in_runtime(a, &a->t[i]))
				continue;
			inside = true;
			a->t[i].resumed = ptrace(PTRACE_CONT, a->t[i].tid, NULL, NULL) == 0;
		}
		if (!inside)
			return 0;
		{
			struct timespec ts = { 0, 20000 * (1 + round % 50) };

			nanosleep(&ts, NULL);
		}
		for (size_t i = 0; i < a->n; i++) {
			struct thr *t = &a->t[i];

			if (t->gone || !t->resumed)
				continue;
			if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) != 0 ||
			    thr_wait(t) != 0)
				t->gone = true;
		}
	}
	for (size_t i = 0; i < a->n; i++)
		if (in_runtime(a, &a->t[i]))
			return ks_err_set(err, -EAGAIN, "thread %d stays inside kscope's runtime",
					  (int)a->t[i].tid);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Attaching and detaching                                             */
/* ------------------------------------------------------------------ */

void ks_attach_free(struct ks_attach *a)
{
	if (!a)
		return;
	run_all(a);
	if (a->mem >= 0)
		close(a->mem);
	if (a->pidfd >= 0)
		close(a->pidfd);
	free(a->t);
	free(a);
}

int ks_attach_start(pid_t pid, const char *lib, const char *block, size_t len,
		    struct ks_attach **out, struct ks_err *err)
{
	struct ks_attach *a = calloc(1, sizeof(*a));
	char path[PATH_MAX + 32], libc[PATH_MAX], msg[MSG_CAP];
	uint64_t libc_base = 0, lib_base = 0, dlopen_fn, dlerror_fn, ret = 0;
	struct thr *t;
	int rc;

	*out = NULL;
	if (!a)
		return ks_err_set(err, -ENOMEM, "out of memory");
	a->pid = pid;
	a->mem = a->pidfd = -1;
	if (!realpath(lib, a->lib)) {
		rc = ks_err_set(err, -errno, "%s: %s", lib, strerror(errno));
		goto fail;
	}
	a->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (a->pidfd < 0) {
		rc = ks_err_set(err, -errno, "--pid %d: %s", (int)pid, strerror(errno));
		goto fail;
	}
	if (maps_find(pid, match_path, a->lib, &lib_base, NULL, NULL, path, sizeof(path)) == 0) {
		rc = ks_err_set(err, -EBUSY, "--pid %d: kscope's runtime is in the process "
				"already (it runs under kscope instrument, or kscope attached to it "
				"before); attaching twice is not supported", (int)pid);
		goto fail;
	}
	if (maps_find(pid, match_libc, NULL, &libc_base, NULL, NULL, libc, sizeof(libc)) ||
	    !(dlopen_fn = sym_addr(pid, libc, libc_base, "dlopen")) ||
	    !(dlerror_fn = sym_addr(pid, libc, libc_base, "dlerror"))) {
		rc = ks_err_set(err, -ENOENT, "--pid %d: no dlopen in the process's C library "
				"(kscope attaches to programs on glibc 2.34 or later)", (int)pid);
		goto fail;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	if ((rc = stop_all(a, err)))
		goto fail;
	a->mem = open(path, O_RDWR | O_CLOEXEC);
	if (a->mem < 0) {
		rc = ks_err_set(err, -errno, "cannot open %s: %s", path, strerror(errno));
		goto fail;
	}
	/* dlopen, with the other threads running. */
	if (!(t = pick(a))) {
		rc = ks_err_set(err, -ESRCH, "process %d has no thread left", (int)pid);
		goto fail;
	}
	run_others(a, t);
	{
		uint64_t args[2] = { UINT64_MAX, 2 /* RTLD_NOW */ };

		if ((rc = call(a, t, dlopen_fn, args, 2, a->lib, strlen(a->lib) + 1, &ret, err)))
			goto fail;
	}
	if (!ret) {
		uint64_t e = 0;

		msg[0] = '\0';
		if (call(a, t, dlerror_fn, NULL, 0, NULL, 0, &e, err) == 0)
			read_str(a, e, msg, sizeof(msg));
		rc = ks_err_set(err, -ENOEXEC, "process %d cannot load %s: %s", (int)pid, a->lib,
				msg[0] ? msg : "dlopen failed");
		goto fail;
	}
	if (maps_find(pid, match_path, a->lib, &a->lib_base, &a->text_lo, &a->text_hi, path,
		      sizeof(path)) ||
	    !(a->fn_setup = sym_addr(pid, a->lib, a->lib_base, KS_INSTR_FN_SETUP)) ||
	    !(a->fn_patch = sym_addr(pid, a->lib, a->lib_base, KS_INSTR_FN_PATCH)) ||
	    !(a->fn_unpatch = sym_addr(pid, a->lib, a->lib_base, KS_INSTR_FN_UNPATCH)) ||
	    !(a->fn_write = sym_addr(pid, a->lib, a->lib_base, KS_INSTR_FN_WRITE))) {
		rc = ks_err_set(err, -ENOENT, "%s is loaded in process %d but its entry points "
				"are not found", a->lib, (int)pid);
		goto fail;
	}
	/* The settings and the analysis, the others still running. */
	{
		size_t blen = len + MSG_CAP + 16;
		unsigned char *b = calloc(1, blen);
		uint64_t args[6];

		if (!b) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		/* [block][msg, MSG_CAP][pcs_buf, 8] */
		memcpy(b, block, len);
		a->pcs_max = 4 * a->n + 1024;
		args[0] = UINT64_MAX;
		args[1] = len;
		args[2] = UINT64_MAX - len;
		args[3] = MSG_CAP;
		args[4] = a->pcs_max;
		args[5] = UINT64_MAX - (len + MSG_CAP);
		rc = call(a, t, a->fn_setup, args, 6, b, blen, &ret, err);
		memcpy(msg, b + len, MSG_CAP);
		msg[MSG_CAP - 1] = '\0';
		memcpy(&a->pcs_buf, b + len + MSG_CAP, 8);
		free(b);
		if (rc)
			goto fail;
		if ((int)ret != 0) {
			rc = ks_err_set(err, -EIO, "kscope's runtime in process %d: %s", (int)pid,
					msg);
			goto fail;
		}
	}
	/* The patching, every thread stopped where it is. */
	if ((rc = stop_all(a, err)))
		goto fail;
	if (!(t = pick(a))) {
		rc = ks_err_set(err, -ESRCH, "process %d has no thread left", (int)pid);
		goto fail;
	}
	{
		size_t n = 0;
		uint64_t *pcs = calloc(a->n + 1, sizeof(*pcs));
		uint64_t args[4] = { a->pcs_buf, 0, UINT64_MAX, MSG_CAP };

		if (!pcs) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			goto fail;
		}
		for (size_t i = 0; i < a->n; i++) {
			struct user_regs_struct r;

			if (!a->t[i].gone && get_regs(a->t[i].tid, &r) == 0)
				pcs[n++] = r.rip;
		}
		if (n > a->pcs_max) {
			free(pcs);
			rc = ks_err_set(err, -EAGAIN, "process %d started threads faster than "
					"kscope could stop them", (int)pid);
			goto fail;
		}
		if (pwrite(a->mem, pcs, n * sizeof(*pcs), (off_t)a->pcs_buf) !=
		    (ssize_t)(n * sizeof(*pcs))) {
			free(pcs);
			rc = ks_err_set(err, -EIO, "cannot write to process %d: %s", (int)pid,
					strerror(errno));
			goto fail;
		}
		free(pcs);
		args[1] = n;
		memset(msg, 0, sizeof(msg));
		rc = call(a, t, a->fn_patch, args, 4, msg, sizeof(msg), &ret, err);
		if (!rc && (int)ret != 0)
			rc = ks_err_set(err, -EIO, "kscope's runtime in process %d: %s", (int)pid,
					msg);
		if (rc)
			goto fail;
	}
	run_all(a);
	*out = a;
	return 0;
fail:
	ks_attach_free(a);
	return rc;
}

int ks_attach_wait(struct ks_attach *a, const volatile sig_atomic_t *stop, double seconds)
{
	double end = seconds > 0 ? now_s() + seconds : 0;

	for (;;) {
		struct pollfd p = { .fd = a->pidfd, .events = POLLIN };
		int ms = 1000;

		if (*stop)
			return 0;
		if (end) {
			double left = end - now_s();

			if (left <= 0)
				return 0;
			if (left * 1000 < ms)
				ms = (int)(left * 1000) + 1;
		}
		if (poll(&p, 1, ms) > 0)
			return 1;
	}
}

int ks_attach_detach(struct ks_attach *a, struct ks_err *err)
{
	struct thr *t;
	uint64_t ret = 0, base = 0;
	char path[PATH_MAX];
	int rc;

	if ((rc = stop_all(a, err)))
		goto out;
	/* After an exec the process runs another program, without the
	 * runtime (which wrote its results at the exec). */
	if (maps_find(a->pid, match_path, a->lib, &base, NULL, NULL, path, sizeof(path)) ||
	    base != a->lib_base) {
		rc = 1;
		goto out;
	}
	if ((rc = step_out(a, err)))
		goto out;
	if (!(t = pick(a))) {
		rc = ks_err_set(err, -ESRCH, "process %d has no thread left", (int)a->pid);
		goto out;
	}
	if ((rc = call(a, t, a->fn_unpatch, NULL, 0, NULL, 0, &ret, err)))
		goto out;
	run_others(a, t);
	if ((rc = call(a, t, a->fn_write, NULL, 0, NULL, 0, &ret, err)))
		goto out;
	if ((int)ret != 0)
		rc = ks_err_set(err, -EIO, "kscope's runtime in process %d wrote no results",
				(int)a->pid);
out:
	run_all(a);
	return rc;
}
