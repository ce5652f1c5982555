/*
 * The process under the compiled front end: reading kscope's settings
 * (mtrt.h), starting the analysis when instrumented code first calls
 * __tsan_init, and writing the findings file's segments the way kscope's
 * Valgrind tool does -- a start record when the image starts analysing,
 * the results and an end record when it ends, an end record "exec" when
 * it execs, a new file with a start record naming the parent in the
 * child of a fork.
 *
 * How the process ends is taken from where it can be seen: main's return
 * value (__libc_start_main is wrapped to see it), exit, _exit, _Exit and
 * quick_exit (wrapped: they record the status; the last three write the
 * findings at once, since no destructor runs after them).  exit's
 * findings are written by the library's destructor, after the program's
 * own atexit handlers and destructors, which may still touch memory.
 *
 * A process of the run that runs no instrumented code (a shell, an
 * uninstrumented program the instrumented one execs) writes a start
 * record marked "instrumented": false and its end record, so that the
 * process tree in the reports is whole.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

struct rt_state rt;

/* ------------------------------------------------------------------ */
/* Settings                                                            */
/* ------------------------------------------------------------------ */

/* The value of key in the options string, as an unsigned; whether it is
 * there and a number within lo..hi. */
static bool opt_uint(const char *opts, const char *key, unsigned lo, unsigned hi,
		     unsigned *out)
{
	size_t kl = strlen(key);
	const char *p = opts;

	while (p && *p) {
		if (!strncmp(p, key, kl) && p[kl] == '=') {
			char *end;
			unsigned long v = strtoul(p + kl + 1, &end, 10);

			if (end == p + kl + 1 || (*end && *end != ',') || v < lo || v > hi)
				return false;
			*out = (unsigned)v;
			return true;
		}
		p = strchr(p, ',');
		if (p)
			p++;
	}
	return false;
}

static bool read_settings(void)
{
	const char *dir = getenv(KS_MTRT_ENV_DIR), *opts = getenv(KS_MTRT_ENV_OPTIONS);
	unsigned v;

	if (!dir || !*dir || strlen(dir) >= sizeof(rt.dir) - 64 || !opts)
		return false;
	strcpy(rt.dir, dir);
	if (strstr(opts, "analysis=falseshare"))
		rt.analysis = RT_FALSESHARE;
	else if (strstr(opts, "analysis=contention"))
		rt.analysis = RT_CONTENTION;
	else
		return false;
	rt.falseshare = rt.analysis == RT_FALSESHARE;
	if (!opt_uint(opts, "line_size", 16, 4096, &rt.line_size) ||
	    (rt.line_size & (rt.line_size - 1)))
		return false;
	while ((1u << rt.line_shift) < rt.line_size)
		rt.line_shift++;
	rt.line_mask = rt.line_size - 1;
	if (!opt_uint(opts, "min_accesses", 1, 1000000000, &rt.min_accesses))
		rt.min_accesses = 100;
	if (!opt_uint(opts, "min_writes", 0, 1000000000, &rt.min_writes))
		rt.min_writes = 100;
	if (!opt_uint(opts, "num_callers", 1, 64, &rt.num_callers))
		rt.num_callers = 12;
	rt.min_write = !opt_uint(opts, "min_write", 0, 1, &v) || v;
	rt.pad_smu = !opt_uint(opts, "pad_smu", 0, 1, &v) || v;
	rt.thread_isolation = !opt_uint(opts, "thread_isolation", 0, 1, &v) || v;
	return true;
}

/* ------------------------------------------------------------------ */
/* Records                                                             */
/* ------------------------------------------------------------------ */

int rt_open_findings(void)
{
	char path[sizeof(rt.dir) + 32];
	int fd;

	snprintf(path, sizeof(path), "%s/findings.%d.jsonl", rt.dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	return fd;
}

/* The program's name and arguments, as the kernel has them. */
static void read_cmdline(void)
{
	char buf[PATH_MAX], *args = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	int fd;

	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	rt.exe = rt_strdup(buf);
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 4096;
			char *na = rt_zalloc(ncap + 1);

			if (!na)
				break;
			if (len)
				memcpy(na, args, len);
			rt_free(args, cap + 1);
			args = na;
			cap = ncap;
		}
		n = read(fd, args + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!args)
		return;
	rt.argc = 0;
	for (size_t i = 0; i < len; i++)
		if (!args[i])
			rt.argc++;
	if (len && args[len - 1])
		rt.argc++; /* the last one unterminated (the buffer has a 0 past it) */
	rt.argv = rt_zalloc((size_t)(rt.argc + 1) * sizeof(char *));
	if (!rt.argv) {
		rt.argc = 0;
		return;
	}
	for (size_t i = 0, k = 0; i < len && k < (size_t)rt.argc; k++) {
		rt.argv[k] = args + i;
		i += strlen(args + i) + 1;
	}
}

static void start_out(struct rt_out *o)
{
	if (!rt.exe)
		read_cmdline(); /* an image that never started analysing */
	rt_out_printf(o, "{\"rec\":\"start\",\"analysis\":\"%s\",\"format\":1,\"pid\":%d,"
		      "\"ppid\":%d,\"exe\":", rt.falseshare ? "falseshare" : "contention",
		      (int)rt.pid, (int)rt.ppid);
	rt_out_str(o, rt.exe ? rt.exe : "");
	rt_out_printf(o, ",\"argv\":[");
	for (int i = 0; i < rt.argc; i++) {
		if (i)
			rt_out_printf(o, ",");
		rt_out_str(o, rt.argv[i]);
	}
	rt_out_printf(o, "],\"line_size\":%u,\"word_size\":%u,\"options\":{\"min_write\":%s,"
		      "\"pad_smu\":%s,\"thread_isolation\":%s},\"front_end\":\"%s\","
		      "\"instrumented\":%s}\n",
		      rt.line_size, 1u << rt.word_shift, rt.min_write ? "true" : "false",
		      rt.pad_smu ? "true" : "false", rt.thread_isolation ? "true" : "false",
		      KS_MTRT_FRONT_END, rt.active ? "true" : "false");
	rt.segment_open = true;
}

/* An output buffer (64 KiB: not on the program's stack) on the findings
 * file; NULL when either cannot be had. */
static struct rt_out *out_open(void)
{
	struct rt_out *o = rt_zalloc(sizeof(*o));

	if (!o)
		return NULL;
	o->fd = rt_open_findings();
	if (o->fd < 0) {
		rt_free(o, sizeof(*o));
		return NULL;
	}
	return o;
}

static void out_close(struct rt_out *o)
{
	if (!o)
		return;
	rt_out_flush(o);
	close(o->fd);
	rt_free(o, sizeof(*o));
}

static void write_start(void)
{
	struct rt_out *o = out_open();

	if (!o)
		return;
	rt_out_reset();
	start_out(o);
	out_close(o);
}

/* ------------------------------------------------------------------ */
/* Start                                                               */
/* ------------------------------------------------------------------ */

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);

void rt_init(void)
{
	static int state; /* 0 not yet, 1 running, 2 done */
	struct rt_thread *t;

	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) == 2)
		return;
	if (__atomic_exchange_n(&state, 1, __ATOMIC_ACQ_REL) != 0)
		return; /* in progress on this thread (a nested call): go on */
	rt_heap_init();
	rt_threads_init();
	rt.pid = getpid();
	rt.ppid = getppid();
	if (read_settings()) {
		t = rt_thread_new(); /* the main thread: 1 */
		if (t) {
			rt_self = t;
			rt.armed = true;
			pthread_atfork(fork_prepare, fork_parent, fork_child);
		}
	}
	__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
}

__attribute__((constructor(101))) static void rt_ctor(void)
{
	rt_init();
}

void rt_activate(void)
{
	static struct rt_lock lock;
	struct ks_mt_config cfg = {
		.line_size = rt.line_size,
		.max_threads = KS_MT_MAX_THREADS,
		.falseshare = rt.falseshare,
		.min_write = rt.min_write,
		.min_writes = rt.min_writes,
		.pad_smu = rt.pad_smu,
		.thread_isolation = rt.thread_isolation,
		.context = rt_site_context,
		/* All of user space is direct: the table stays safe for
		 * parallel threads (mtcore.h, Concurrency). */
		.direct_bits = RT_DIRECT_BITS,
	};
	struct rt_thread *t = rt_self;
	int rc;

	rt_lock_take(&lock);
	if (rt.active || !rt.armed || rt.finished) {
		rt_lock_give(&lock);
		return;
	}
	if (t)
		t->in_rt++;
	rc = ks_mt_init(&rt.mt, &cfg, &rt_core_alloc);
	if (rc == 0) {
		/* rt_words builds the core's word masks itself: the core
		 * says how wide a word is (bytes on lines up to 64 bytes). */
		rt.word_shift = 0;
		while ((1u << rt.word_shift) < ks_mt_word_size(rt.mt))
			rt.word_shift++;
		ks_mt_own_map(rt.mt, &rt.own_map);
		read_cmdline();
		__atomic_store_n(&rt.active, true, __ATOMIC_RELEASE);
		write_start();
	} else {
		static const char msg[] = "kscope: the compiled front end cannot set up its "
					  "shadow memory (out of address space?); the program "
					  "runs without analysis\n";

		(void)!write(2, msg, sizeof(msg) - 1);
	}
	if (t)
		t->in_rt--;
	rt_lock_give(&lock);
	if (rc == 0 && __tsan_on_initialize)
		__tsan_on_initialize();
}

RT_EXPORT void __tsan_init(void)
{
	rt_init();
	if (rt.armed && !rt.active)
		rt_activate();
}

/* ------------------------------------------------------------------ */
/* End                                                                 */
/* ------------------------------------------------------------------ */

static void end_out(struct rt_out *o, const char *how)
{
	struct rt_heap_stats hs;

	if (how)
		rt_out_printf(o, "{\"rec\":\"end\",\"exit\":{\"how\":\"%s\"}", how);
	else if (rt.exit_seen)
		rt_out_printf(o, "{\"rec\":\"end\",\"exit\":{\"how\":\"exit\",\"code\":%d}",
			      rt.exit_code);
	else
		rt_out_printf(o, "{\"rec\":\"end\",\"exit\":{\"how\":\"unknown\"}");
	if (rt.mt) {
		rt_heap_stats(&hs);
		rt_out_printf(o, ",\"heap\":{\"allocs\":%llu,\"frees\":%llu,\"bytes_allocated\":%llu,"
			      "\"in_use_bytes\":%llu,\"in_use_blocks\":%llu},\"shadow_bytes\":%lu",
			      (unsigned long long)hs.allocs, (unsigned long long)hs.frees,
			      (unsigned long long)hs.bytes, (unsigned long long)hs.in_use_bytes,
			      (unsigned long long)hs.in_use_blocks,
			      (unsigned long)ks_mt_shadow_resident(rt.mt));
	}
	rt_out_printf(o, ",\"threads\":%u}\n", rt_threads_made());
	rt.segment_open = false;
}

/* Waits (boundedly) until no other thread is inside the slow path: it
 * may be changing its quiet cache, which is flushed next. */
static void quiesce(void)
{
	struct rt_thread *self = rt_self;

	for (struct rt_thread *t = rt_threads(); t; t = t->next) {
		if (t == self)
			continue;
		for (unsigned i = 0; i < 100000 && __atomic_load_n(&t->in_rt, __ATOMIC_ACQUIRE); i++)
			sched_yield();
	}
}

void rt_finish(void)
{
	struct rt_thread *self = rt_self;
	struct rt_out *o;
	bool locked[RT_NLOCKS];

	if (!rt.armed || getpid() != rt.pid)
		return; /* not a run's process, or a vfork child */
	if (__atomic_exchange_n(&rt.finished, true, __ATOMIC_ACQ_REL))
		return;
	if (self)
		self->in_rt++;
	if (rt.active && __tsan_on_finalize)
		(void)__tsan_on_finalize(0);
	o = out_open();
	if (!o)
		goto out;
	if (!rt.active) {
		if (!rt.segment_open)
			start_out(o);
		end_out(o, NULL);
		goto out;
	}
	/* No new slow path starts; those under way end; then every
	 * thread's pending counts go to the core, and the core is read with
	 * every line lock held. */
	__atomic_store_n(&rt.active, false, __ATOMIC_RELEASE);
	quiesce();
	for (struct rt_thread *t = rt_threads(); t; t = t->next)
		rt_thread_flush(t);
	for (unsigned i = 0; i < RT_NLOCKS; i++)
		locked[i] = rt_lock_take_bounded(&rt_line_locks[i].l);
	if (!rt.segment_open)
		start_out(o); /* (an exec failed after its end record) */
	rt_out_results(o);
	end_out(o, NULL);
	for (unsigned i = 0; i < RT_NLOCKS; i++)
		if (locked[i])
			rt_lock_give(&rt_line_locks[i].l);
out:
	out_close(o);
	if (self)
		self->in_rt--;
}

__attribute__((destructor)) static void rt_dtor(void)
{
	rt_finish();
}

/* Not in a vfork child, whose memory is its parent's. */
static void note_exit(int status)
{
	if (getpid() != rt.pid)
		return;
	rt.exit_code = status & 0xff;
	rt.exit_seen = true;
}

typedef void (*exit_fn)(int);

RT_EXPORT void exit(int status)
{
	exit_fn real = (exit_fn)dlsym(RTLD_NEXT, "exit");

	note_exit(status);
	real(status);
	__builtin_unreachable();
}

#define RT_QUICK_EXIT(name)                                                        \
	RT_EXPORT void name(int status)                                            \
	{                                                                          \
		exit_fn real = (exit_fn)dlsym(RTLD_NEXT, #name);                   \
		note_exit(status);                                                 \
		rt_finish();                                                       \
		real(status);                                                      \
		__builtin_unreachable();                                           \
	}
RT_QUICK_EXIT(_exit)
RT_QUICK_EXIT(_Exit)
RT_QUICK_EXIT(quick_exit)
#undef RT_QUICK_EXIT

/* main's return value is the status exit is called with, inside the C
 * library where no wrapper sees it. */
typedef int (*main_fn)(int, char **, char **);
typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void),
			     void (*)(void), void *);
static main_fn real_main;

static int main_trampoline(int argc, char **argv, char **envp)
{
	int rc = real_main(argc, argv, envp);

	note_exit(rc);
	return rc;
}

RT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
				void (*fini)(void), void (*rtld_fini)(void), void *stack_end);
RT_EXPORT int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void),
				void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	start_main_fn real = (start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");

	real_main = main;
	return real(main_trampoline, argc, argv, init, fini, rtld_fini, stack_end);
}

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */

/* Nothing of the runtime may be held by another thread when the process
 * is copied: the child would find it locked forever. */
static void fork_prepare(void)
{
	if (rt_self)
		rt_self->in_rt++;
	rt_lines_lock_all();
	rt_ctx_lock();
	rt_obj_lock();
	rt_sym_lock();
	rt_heap_lock_all();
	rt_threads_lock();
	rt_alloc_lock_all();
}

static void fork_unlock(void)
{
	rt_alloc_unlock_all();
	rt_threads_unlock();
	rt_heap_unlock_all();
	rt_sym_unlock();
	rt_obj_unlock();
	rt_ctx_unlock();
	rt_lines_unlock_all();
	if (rt_self)
		rt_self->in_rt--;
}

static void fork_parent(void)
{
	fork_unlock();
}

/* The child analyses on, from what the parent had counted, into its own
 * file whose start record names the parent (docs/memtools.md,
 * Processes). */
static void fork_child(void)
{
	fork_unlock();
	rt.ppid = rt.pid;
	rt.pid = getpid();
	rt.exit_seen = false;
	rt.segment_open = false;
	rt_threads_after_fork();
	if (rt.active && !rt.finished)
		write_start();
}

/* ------------------------------------------------------------------ */
/* exec                                                                */
/* ------------------------------------------------------------------ */

/* Before an exec: this image's segment ends (its counts are not kept,
 * as under the Valgrind tool: an image that execs is a shell or a
 * shim).  Not in a vfork child, whose memory is its parent's. */
static bool exec_pre(void)
{
	struct rt_out *o;

	if (!rt.armed || rt.finished || getpid() != rt.pid)
		return false;
	o = out_open();
	if (!o)
		return false;
	if (!rt.segment_open)
		start_out(o);
	end_out(o, "exec");
	out_close(o);
	return true;
}

/* The exec failed: the image goes on, in a new segment. */
static void exec_failed(bool ended)
{
	int e = errno;

	if (ended && rt.active)
		write_start();
	errno = e;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);

static void *next_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

RT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)next_fn("execve");
	bool ended = exec_pre();
	int rc = real(path, argv, envp);

	exec_failed(ended);
	return rc;
}

RT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	execve_fn real = (execve_fn)next_fn("execvpe");
	bool ended = exec_pre();
	int rc = real(file, argv, envp);

	exec_failed(ended);
	return rc;
}

RT_EXPORT int execv(const char *path, char *const argv[])
{
	execv_fn real = (execv_fn)next_fn("execv");
	bool ended = exec_pre();
	int rc = real(path, argv);

	exec_failed(ended);
	return rc;
}

RT_EXPORT int execvp(const char *file, char *const argv[])
{
	execv_fn real = (execv_fn)next_fn("execvp");
	bool ended = exec_pre();
	int rc = real(file, argv);

	exec_failed(ended);
	return rc;
}

RT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	fexecve_fn real = (fexecve_fn)next_fn("fexecve");
	bool ended = exec_pre();
	int rc = real(fd, argv, envp);

	exec_failed(ended);
	return rc;
}

RT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
		       int flags)
{
	execveat_fn real = (execveat_fn)next_fn("execveat");
	bool ended;
	int rc;

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	ended = exec_pre();
	rc = real(dirfd, path, argv, envp, flags);
	exec_failed(ended);
	return rc;
}

/* The execl family: the arguments into an array, then the matching
 * vector form (itself wrapped above). */
static char **collect_args(const char *arg0, va_list ap, char ***envp)
{
	va_list cp;
	size_t n = 1;
	char **v;

	va_copy(cp, ap);
	while (va_arg(cp, char *))
		n++;
	va_end(cp);
	v = rt_zalloc((n + 1) * sizeof(*v));
	if (!v)
		return NULL;
	v[0] = (char *)(uintptr_t)arg0;
	for (size_t i = 1; i < n; i++)
		v[i] = va_arg(ap, char *);
	(void)va_arg(ap, char *); /* the NULL */
	if (envp)
		*envp = va_arg(ap, char **);
	v[n] = NULL;
	return v;
}

static size_t args_bytes(char **v)
{
	size_t n = 0;

	while (v[n])
		n++;
	return (n + 1) * sizeof(*v);
}

RT_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **v;
	int rc;

	va_start(ap, arg0);
	v = collect_args(arg0, ap, NULL);
	va_end(ap);
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	rc = execv(path, v);
	rt_free(v, args_bytes(v));
	return rc;
}

RT_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	char **v;
	int rc;

	va_start(ap, arg0);
	v = collect_args(arg0, ap, NULL);
	va_end(ap);
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	rc = execvp(file, v);
	rt_free(v, args_bytes(v));
	return rc;
}

RT_EXPORT int execle(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **v, **envp = NULL;
	int rc;

	va_start(ap, arg0);
	v = collect_args(arg0, ap, &envp);
	va_end(ap);
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	rc = execve(path, v, envp);
	rt_free(v, args_bytes(v));
	return rc;
}
