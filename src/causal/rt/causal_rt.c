/*
 * libkscope-causal.so: the runtime `kscope causal` preloads into the
 * program (docs/causal.md).  It samples every thread's CPU time, runs
 * experiments one after the other on a controller thread (a line and a
 * virtual speedup each, causal_rt_int.h), counts the program's progress
 * points, and appends one record per experiment to a raw file that kscope
 * reads when the program has ended (src/causal/causal_post.h has the
 * format).  A record is written whole with one write(), so a program that
 * crashes keeps every experiment it finished.
 *
 * It also defines the progress points of kscope/user.h and coz's
 * _coz_get_counter, so that programs annotated for coz report to kscope
 * unchanged, and wraps the pthread calls that block or wake threads, for
 * the delays' accounting.
 *
 * With KSCOPE_CAUSAL_RT_WHOLE set, the whole run is one experiment
 * instead (kscope causal --end-to-end, for programs without progress
 * points): the line and speedup kscope chose for this run hold from the
 * constructor to the destructor, which records the run's wall time, its
 * delay and one visit of the point "end-to-end".
 *
 * Settings come from the environment kscope sets (KSCOPE_CAUSAL_RT_*).  A
 * process whose executable is not the one kscope profiles (a shell, a
 * helper the program runs) keeps its progress points but runs no
 * experiments.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <link.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "causal_rt_int.h"
#include "kscope/user.h"

struct ks_crt ks_crt = { .selected = -1, .fixed_line = -1, .raw_fd = -1,
			 .points_lock = ATOMIC_FLAG_INIT };
KS_CRT_TLS struct ks_crt_thread ks_crt_self;

/* The fewest visits an experiment must see of its busiest throughput
 * point (a point visited once at start-up must not stretch them all);
 * below, the next experiments last twice as long, as coz's do. */
#define MIN_VISITS 5
#define MAX_GROWTH 64        /* times the first length, at most */
/* Between experiments. */
#define COOLDOWN_NS 10000000u
/* At an experiment's end, the longest the controller waits, in sampling
 * periods, for every thread to have paid the delays of the experiment. */
#define CATCH_UP_PERIODS 20

/* ------------------------------------------------------------------ */
/* The functions wrapped                                               */
/* ------------------------------------------------------------------ */

static struct {
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*pthread_join)(pthread_t, void **);
	void (*pthread_exit)(void *);
	int (*pthread_mutex_lock)(pthread_mutex_t *);
	int (*pthread_mutex_unlock)(pthread_mutex_t *);
	int (*pthread_cond_wait)(pthread_cond_t *, pthread_mutex_t *);
	int (*pthread_cond_timedwait)(pthread_cond_t *, pthread_mutex_t *,
				      const struct timespec *);
	int (*pthread_cond_signal)(pthread_cond_t *);
	int (*pthread_cond_broadcast)(pthread_cond_t *);
	int (*pthread_barrier_wait)(pthread_barrier_t *);
	int (*sem_wait)(sem_t *);
	int (*sem_timedwait)(sem_t *, const struct timespec *);
	int (*sem_post)(sem_t *);
} real;

/* The condition variables have two versions in glibc; a plain dlsym
 * finds the old one, which does not work on the program's (new) ones. */
static void *next_sym(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;

	return p ? p : dlsym(RTLD_NEXT, name);
}

#define RESOLVE(f, v) (*(void **)&real.f = next_sym(#f, v))

static void resolve(void)
{
	RESOLVE(pthread_create, NULL);
	RESOLVE(pthread_join, NULL);
	RESOLVE(pthread_exit, NULL);
	RESOLVE(pthread_mutex_lock, NULL);
	RESOLVE(pthread_mutex_unlock, NULL);
	RESOLVE(pthread_cond_wait, "GLIBC_2.3.2");
	RESOLVE(pthread_cond_timedwait, "GLIBC_2.3.2");
	RESOLVE(pthread_cond_signal, "GLIBC_2.3.2");
	RESOLVE(pthread_cond_broadcast, "GLIBC_2.3.2");
	RESOLVE(pthread_barrier_wait, NULL);
	RESOLVE(sem_wait, NULL);
	RESOLVE(sem_timedwait, NULL);
	RESOLVE(sem_post, NULL);
}

/* A call made before the constructor ran (another library's). */
#define ENSURE(f)                                                              \
	do {                                                                   \
		if (!real.f)                                                   \
			resolve();                                             \
	} while (0)

/* ------------------------------------------------------------------ */
/* Threads and their samplers                                          */
/* ------------------------------------------------------------------ */

static pthread_key_t sampler_key;

/* The sampled threads: registered when their sampler starts, removed when
 * it stops (at the thread's end).  The controller waits on them at an
 * experiment's end, under a spin lock it holds while it reads them, so
 * that no thread's state goes while being read; a child made by fork()
 * closes their events' descriptors (they count the parent's threads). */
#define MAX_THREADS 4096
static struct ks_crt_thread *registry[MAX_THREADS];
static atomic_flag registry_lock = ATOMIC_FLAG_INIT;

static void registry_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&registry_lock, memory_order_acquire))
		;
}

static void registry_lock_give(void)
{
	atomic_flag_clear_explicit(&registry_lock, memory_order_release);
}

static void registry_set(struct ks_crt_thread *from, struct ks_crt_thread *to)
{
	registry_lock_take();
	for (size_t i = 0; i < MAX_THREADS; i++)
		if (registry[i] == from) {
			registry[i] = to;
			break;
		}
	registry_lock_give();
}

/* Waits until every registered thread not blocked in a wrapped call has
 * paid up to the global count g, at most `limit` ns; the program ending
 * stops the wait. */
static void wait_caught_up(uint64_t g, uint64_t limit)
{
	uint64_t end = ks_crt_now_ns() + limit;

	while (!atomic_load(&ks_crt.stop) && ks_crt_now_ns() < end) {
		bool all = true;

		registry_lock_take();
		for (size_t i = 0; i < MAX_THREADS && all; i++) {
			struct ks_crt_thread *t = registry[i];

			all = !t || atomic_load_explicit(&t->blocked, memory_order_relaxed) ||
			      atomic_load_explicit(&t->local_delay, memory_order_relaxed) >= g;
		}
		registry_lock_give();
		if (all)
			return;
		ks_crt_sleep_ns(200000u);
	}
}

/* Time the threads were ready to run but waited for a CPU (the
 * scheduler's run-queue wait, /proc/self/task/TID/schedstat's second
 * field), over an experiment: pauses and blocking are not counted, only
 * what another load on the machine, or more ready threads than CPUs,
 * took from the program.  The virtual speedup assumes a paused thread
 * runs again as soon as its pause ends; when threads wait for a CPU,
 * every pause costs more than it inserts, and the predictions come out
 * low (docs/causal.md).  Up to WAIT_THREADS threads are measured, the
 * first registered, read by the controller at both ends. */
#define WAIT_THREADS 64

struct wait_mark {
	pid_t tid;
	uint64_t wait_ns;
};

static bool ready_wait(pid_t tid, uint64_t *ns)
{
	char path[64], buf[128];
	unsigned long long run, wait;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return false;
	*ns = wait;
	return true;
}

/* Notes the run-queue wait of up to WAIT_THREADS registered threads;
 * returns how many. */
static size_t wait_marks(struct wait_mark *m)
{
	size_t n = 0, k = 0;

	registry_lock_take();
	for (size_t i = 0; i < MAX_THREADS && n < WAIT_THREADS; i++)
		if (registry[i])
			m[n++].tid = registry[i]->tid;
	registry_lock_give();
	for (size_t i = 0; i < n; i++)
		if (ready_wait(m[i].tid, &m[i].wait_ns))
			m[k++] = m[i];
	return k;
}

/* The run-queue wait since the marks, summed over the threads that are
 * still there (*threads of them). */
static uint64_t wait_since(const struct wait_mark *m, size_t n, size_t *threads)
{
	uint64_t sum = 0, w;

	*threads = 0;
	for (size_t i = 0; i < n; i++)
		if (ready_wait(m[i].tid, &w) && w >= m[i].wait_ns) {
			sum += w - m[i].wait_ns;
			(*threads)++;
		}
	return sum;
}

static void sampler_stop(void *unused)
{
	(void)unused;
	if (!ks_crt_self.sampled)
		return;
	registry_set(&ks_crt_self, NULL);
	ks_crt_self.sampled = false;
	if (ks_crt_self.perf_fd >= 0) {
		close(ks_crt_self.perf_fd);
		ks_crt_self.perf_fd = -1;
	} else {
		timer_delete(ks_crt_self.timer);
	}
}

/* perf's task-clock event on the calling thread, its overflows signalled
 * to the thread; the descriptor (moved above the program's usual range,
 * so that a program's dup2 onto a low number does not replace it), or -1
 * when the kernel refuses (perf_event_paranoid, seccomp). */
static int perf_sampler(pid_t tid)
{
	struct perf_event_attr pa;
	struct f_owner_ex owner = { F_OWNER_TID, tid };
	int fd, high;

	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = PERF_TYPE_SOFTWARE;
	pa.config = PERF_COUNT_SW_TASK_CLOCK;
	pa.sample_period = ks_crt.period_ns;
	pa.wakeup_events = 1;
	pa.disabled = 1;
	pa.exclude_kernel = 1;
	pa.exclude_hv = 1;
	fd = (int)syscall(SYS_perf_event_open, &pa, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -1;
	high = fcntl(fd, F_DUPFD_CLOEXEC, 900);
	if (high >= 0) {
		close(fd);
		fd = high;
	}
	if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, ks_crt.sig) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0 || ioctl(fd, PERF_EVENT_IOC_REFRESH, 1) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Starts the calling thread's CPU-time sampler. */
static void thread_start_sampling(void)
{
	struct sigevent sev;
	struct itimerspec its;
	pid_t tid = (pid_t)syscall(SYS_gettid);

	if (!ks_crt.active || ks_crt_self.sampled)
		return;
	ks_crt_self.perf_fd = atomic_load(&ks_crt.coarse) ? -1 : perf_sampler(tid);
	if (ks_crt_self.perf_fd >= 0)
		goto started;
	atomic_store(&ks_crt.coarse, true);
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = ks_crt.sig;
	sev._sigev_un._tid = tid;
	if (timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &ks_crt_self.timer) != 0)
		return;
	its.it_interval.tv_sec = (time_t)(ks_crt.period_ns / 1000000000u);
	its.it_interval.tv_nsec = (long)(ks_crt.period_ns % 1000000000u);
	its.it_value = its.it_interval;
	if (timer_settime(ks_crt_self.timer, 0, &its, NULL) != 0) {
		timer_delete(ks_crt_self.timer);
		return;
	}
started:
	ks_crt_self.tid = tid;
	ks_crt_self.sampled = true;
	registry_set(NULL, &ks_crt_self);
	/* The key's destructor stops the sampler when the thread ends. */
	pthread_setspecific(sampler_key, &ks_crt_self);
}

struct start {
	void *(*fn)(void *);
	void *arg;
	uint64_t local_delay;     /* the creator's: a new thread owes what it owed */
};

static void *thread_main(void *p)
{
	struct start s = *(struct start *)p;

	void *ret;

	free(p);
	ks_crt_self.local_delay = s.local_delay;
	thread_start_sampling();
	ret = s.fn(s.arg);
	/* Ending wakes the thread that joins it: pay first (catch_up). */
	if (ks_crt.active)
		ks_crt_pay(&ks_crt_self);
	return ret;
}

KS_CRT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr,
				 void *(*fn)(void *), void *arg)
{
	struct start *s;
	int rc;

	ENSURE(pthread_create);
	if (!ks_crt.active)
		return real.pthread_create(th, attr, fn, arg);
	s = malloc(sizeof(*s));
	if (!s)
		return real.pthread_create(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->local_delay = ks_crt_self.local_delay;
	rc = real.pthread_create(th, attr, thread_main, s);
	if (rc)
		free(s);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Blocking and waking                                                 */
/* ------------------------------------------------------------------ */

/* A thread about to wake another pays what it owes first, so that the
 * woken thread can be credited with the delays it waited through. */
static void catch_up(void)
{
	if (ks_crt.active)
		ks_crt_pay(&ks_crt_self);
}

KS_CRT_EXPORT void pthread_exit(void *ret)
{
	ENSURE(pthread_exit);
	catch_up();
	real.pthread_exit(ret);
	__builtin_unreachable();
}

KS_CRT_EXPORT int pthread_join(pthread_t th, void **ret)
{
	int rc;

	ENSURE(pthread_join);
	ks_crt_pre_block();
	rc = real.pthread_join(th, ret);
	ks_crt_post_block(rc == 0);
	return rc;
}

KS_CRT_EXPORT int pthread_mutex_lock(pthread_mutex_t *m)
{
	int rc;

	ENSURE(pthread_mutex_lock);
	ks_crt_pre_block();
	rc = real.pthread_mutex_lock(m);
	ks_crt_post_block(rc == 0);
	return rc;
}

KS_CRT_EXPORT int pthread_mutex_unlock(pthread_mutex_t *m)
{
	ENSURE(pthread_mutex_unlock);
	catch_up();
	return real.pthread_mutex_unlock(m);
}

KS_CRT_EXPORT int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int rc;

	ENSURE(pthread_cond_wait);
	ks_crt_pre_block();
	rc = real.pthread_cond_wait(c, m);
	ks_crt_post_block(rc == 0);
	return rc;
}

KS_CRT_EXPORT int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
					 const struct timespec *abstime)
{
	int rc;

	ENSURE(pthread_cond_timedwait);
	ks_crt_pre_block();
	rc = real.pthread_cond_timedwait(c, m, abstime);
	ks_crt_post_block(rc == 0);   /* a timeout was no one's doing */
	return rc;
}

KS_CRT_EXPORT int pthread_cond_signal(pthread_cond_t *c)
{
	ENSURE(pthread_cond_signal);
	catch_up();
	return real.pthread_cond_signal(c);
}

KS_CRT_EXPORT int pthread_cond_broadcast(pthread_cond_t *c)
{
	ENSURE(pthread_cond_broadcast);
	catch_up();
	return real.pthread_cond_broadcast(c);
}

/* The last thread to arrive wakes the others: each pays before it
 * arrives, and is credited what accrued while it waited. */
KS_CRT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	int rc;

	ENSURE(pthread_barrier_wait);
	catch_up();
	ks_crt_pre_block();
	rc = real.pthread_barrier_wait(b);
	ks_crt_post_block(rc == 0 || rc == PTHREAD_BARRIER_SERIAL_THREAD);
	return rc;
}

KS_CRT_EXPORT int sem_wait(sem_t *s)
{
	int rc;

	ENSURE(sem_wait);
	ks_crt_pre_block();
	rc = real.sem_wait(s);
	ks_crt_post_block(rc == 0);
	return rc;
}

KS_CRT_EXPORT int sem_timedwait(sem_t *s, const struct timespec *abstime)
{
	int rc;

	ENSURE(sem_timedwait);
	ks_crt_pre_block();
	rc = real.sem_timedwait(s, abstime);
	ks_crt_post_block(rc == 0);
	return rc;
}

KS_CRT_EXPORT int sem_post(sem_t *s)
{
	ENSURE(sem_post);
	catch_up();
	return real.sem_post(s);
}

/* ------------------------------------------------------------------ */
/* Progress points                                                     */
/* ------------------------------------------------------------------ */

/* The point called name of that kind, made on first use; NULL when the
 * table is full or name is empty.  The table only grows: a point's
 * address stays valid, as coz.h's macros keep it. */
static struct ks_crt_point *point_get(const char *name, int kind)
{
	size_t n = atomic_load_explicit(&ks_crt.npoints, memory_order_acquire);
	struct ks_crt_point *p = NULL;

	if (!name || !*name)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct ks_crt_point *q = &ks_crt.points[i];

		if (q->kind == kind && (atomic_load_explicit(&q->key, memory_order_relaxed) == name ||
					strncmp(q->name, name, KS_CRT_POINT_NAME - 1) == 0))
			return q;
	}
	while (atomic_flag_test_and_set_explicit(&ks_crt.points_lock, memory_order_acquire))
		;
	n = atomic_load_explicit(&ks_crt.npoints, memory_order_relaxed);
	for (size_t i = 0; i < n && !p; i++)
		if (ks_crt.points[i].kind == kind &&
		    strncmp(ks_crt.points[i].name, name, KS_CRT_POINT_NAME - 1) == 0)
			p = &ks_crt.points[i];
	if (!p && n < KS_CRT_MAX_POINTS) {
		p = &ks_crt.points[n];
		snprintf(p->name, sizeof(p->name), "%s", name);
		p->kind = kind;
		atomic_store_explicit(&p->key, name, memory_order_relaxed);
		atomic_store_explicit(&ks_crt.npoints, n + 1, memory_order_release);
	}
	atomic_flag_clear_explicit(&ks_crt.points_lock, memory_order_release);
	return p;
}

static void count(struct ks_crt_counter *c)
{
	__atomic_add_fetch(&c->count, 1, __ATOMIC_RELAXED);
}

KS_CRT_EXPORT void kscope_progress(const char *name)
{
	struct ks_crt_point *p = point_get(name, KS_CRT_THROUGHPUT);

	if (p)
		count(&p->hits);
}

KS_CRT_EXPORT void kscope_begin(const char *name)
{
	struct ks_crt_point *p = point_get(name, KS_CRT_LATENCY);

	if (p)
		count(&p->hits);
}

KS_CRT_EXPORT void kscope_end(const char *name)
{
	struct ks_crt_point *p = point_get(name, KS_CRT_LATENCY);

	if (p)
		count(&p->ends);
}

/* coz.h's entry point: type 1 a throughput point, 2 a latency point's
 * begin, 3 its end (COZ_COUNTER_TYPE_*). */
KS_CRT_EXPORT struct ks_crt_counter *_coz_get_counter(int type, const char *name);

KS_CRT_EXPORT struct ks_crt_counter *_coz_get_counter(int type, const char *name)
{
	struct ks_crt_point *p;

	switch (type) {
	case 1:
		p = point_get(name, KS_CRT_THROUGHPUT);
		return p ? &p->hits : NULL;
	case 2:
		p = point_get(name, KS_CRT_LATENCY);
		return p ? &p->hits : NULL;
	case 3:
		p = point_get(name, KS_CRT_LATENCY);
		return p ? &p->ends : NULL;
	default:
		return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* The raw file                                                        */
/* ------------------------------------------------------------------ */

/* Appends len bytes of buf as one write (a record is never split). */
static void raw_write(const char *buf, size_t len)
{
	if (ks_crt.raw_fd >= 0 && len)
		(void)!write(ks_crt.raw_fd, buf, len);
}

struct rec {
	char buf[64 * 1024];
	size_t len;
};

static void rec_add(struct rec *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void rec_add(struct rec *r, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (r->len >= sizeof(r->buf))
		return;
	va_start(ap, fmt);
	n = vsnprintf(r->buf + r->len, sizeof(r->buf) - r->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		r->len += (size_t)n < sizeof(r->buf) - r->len ? (size_t)n
							      : sizeof(r->buf) - r->len;
}

/* A point's name as the raw format takes it: no tab, newline or control
 * character (they would split the record). */
static void clean_name(char *out, size_t size, const char *name)
{
	size_t i;

	for (i = 0; name[i] && i + 1 < size; i++)
		out[i] = (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '_' : name[i];
	out[i] = '\0';
}

/* ------------------------------------------------------------------ */
/* Experiments                                                         */
/* ------------------------------------------------------------------ */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
	uint64_t x = rng_state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* Sleeps ns unless the program is ending; false if it is. */
static bool controller_sleep(uint64_t ns)
{
	uint64_t end = ks_crt_now_ns() + ns;

	while (!atomic_load(&ks_crt.stop)) {
		uint64_t now = ks_crt_now_ns();

		if (now >= end)
			return true;
		ks_crt_sleep_ns(end - now < 5000000u ? end - now : 5000000u);
	}
	return false;
}

/* The next experiment's line: the fixed one, or the line of a recent
 * sample in scope; -1 when there is none yet. */
static int64_t pick_line(void)
{
	uint64_t n = atomic_load(&ks_crt.nrecent);

	if (ks_crt.fixed_line >= 0)
		return ks_crt.fixed_line;
	if (n == 0)
		return -1;
	if (n > KS_CRT_RECENT)
		n = KS_CRT_RECENT;
	return atomic_load(&ks_crt.recent[rng_next() % n]);
}

/* Half the experiments at 0% (the baseline every line is compared
 * with), the others at one of the other speedups, drawn evenly. */
static unsigned pick_speedup(void)
{
	unsigned nonzero[KS_CRT_MAX_SPEEDUPS];
	size_t n = 0;

	for (size_t i = 0; i < ks_crt.nspeedups; i++)
		if (ks_crt.speedups[i])
			nonzero[n++] = ks_crt.speedups[i];
	if (n == 0 || rng_next() % 2 == 0)
		return 0;
	return nonzero[rng_next() % n];
}

static void experiment(int64_t line, unsigned speedup)
{
	static struct rec r;
	static struct wait_mark marks[WAIT_THREADS];
	size_t np = atomic_load(&ks_crt.npoints), nmarks, waited_threads;
	uint64_t d0, t0, d1, t1, waited, max_visits = 0;
	bool throughput = false;

	for (size_t i = 0; i < np; i++) {
		ks_crt.points[i].hits_at_start = __atomic_load_n(&ks_crt.points[i].hits.count,
								 __ATOMIC_RELAXED);
		ks_crt.points[i].ends_at_start = __atomic_load_n(&ks_crt.points[i].ends.count,
								 __ATOMIC_RELAXED);
	}
	nmarks = wait_marks(marks);
	atomic_store(&ks_crt.selected_samples, 0);
	atomic_store(&ks_crt.sample_delay, ks_crt.period_ns * speedup / 100);
	d0 = atomic_load(&ks_crt.global_delay);
	t0 = ks_crt_now_ns();
	atomic_store_explicit(&ks_crt.selected, line, memory_order_release);
	if (!controller_sleep(ks_crt.experiment_ns)) {
		/* The program is ending: an experiment cut short is left out. */
		atomic_store(&ks_crt.selected, -1);
		return;
	}
	atomic_store_explicit(&ks_crt.selected, -1, memory_order_release);
	atomic_store(&ks_crt.sample_delay, 0);
	d1 = atomic_load(&ks_crt.global_delay);
	/* The experiment lasts until its delays are paid: a thread that
	 * still owes them (one woken from a sleep, or between samples) would
	 * pay them in the next experiment, and this one's effective length
	 * would count pauses that had not happened yet. */
	wait_caught_up(d1, CATCH_UP_PERIODS * ks_crt.period_ns);
	t1 = ks_crt_now_ns();
	waited = wait_since(marks, nmarks, &waited_threads);

	r.len = 0;
	rec_add(&r, "experiment\tline=%" PRId64 "\tspeedup=%u\twall_ns=%" PRIu64
		"\tdelay_ns=%" PRIu64 "\tsamples=%" PRIu64 "\tready_wait_ns=%" PRIu64
		"\tthreads=%zu\n", line, speedup, t1 - t0, d1 - d0,
		atomic_load(&ks_crt.selected_samples), waited, waited_threads);
	np = atomic_load(&ks_crt.npoints);
	for (size_t i = 0; i < np; i++) {
		struct ks_crt_point *p = &ks_crt.points[i];
		size_t hits = __atomic_load_n(&p->hits.count, __ATOMIC_RELAXED);
		size_t ends = __atomic_load_n(&p->ends.count, __ATOMIC_RELAXED);
		char name[KS_CRT_POINT_NAME];

		clean_name(name, sizeof(name), p->name);
		if (p->kind == KS_CRT_THROUGHPUT) {
			uint64_t delta = hits - p->hits_at_start;

			rec_add(&r, "point\tname=%s\tkind=throughput\tdelta=%" PRIu64 "\n",
				name, delta);
			throughput = true;
			if (delta > max_visits)
				max_visits = delta;
		} else {
			rec_add(&r, "point\tname=%s\tkind=latency\tarrivals=%zu"
				"\tdepartures=%zu\tdifference=%zu\n", name,
				hits - p->hits_at_start, ends - p->ends_at_start,
				hits >= ends ? hits - ends : 0);
		}
	}
	raw_write(r.buf, r.len);
	if (throughput && max_visits < MIN_VISITS &&
	    ks_crt.experiment_ns <= ks_crt.experiment_first_ns * (MAX_GROWTH / 2))
		ks_crt.experiment_ns *= 2;
}

static void *controller_main(void *unused)
{
	sigset_t all;

	(void)unused;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	while (!atomic_load(&ks_crt.stop)) {
		int64_t line = pick_line();

		if (line < 0) {
			if (!controller_sleep(10000000u))
				break;
			continue;
		}
		experiment(line, pick_speedup());
		if (!controller_sleep(COOLDOWN_NS))
			break;
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Settings and start                                                  */
/* ------------------------------------------------------------------ */

static bool env_u64(const char *name, uint64_t *out)
{
	const char *v = getenv(name);
	char *end;
	unsigned long long x;

	if (!v || !*v)
		return false;
	errno = 0;
	x = strtoull(v, &end, 10);
	if (errno || *end)
		return false;
	*out = x;
	return true;
}

/* Is this process's executable the file kscope profiles ("DEV:INO")? */
static bool is_the_program(void)
{
	const char *want = getenv("KSCOPE_CAUSAL_RT_EXE");
	struct stat st;
	char have[64];

	if (!want || stat("/proc/self/exe", &st) != 0)
		return false;
	snprintf(have, sizeof(have), "%ju:%ju", (uintmax_t)st.st_dev, (uintmax_t)st.st_ino);
	return strcmp(have, want) == 0;
}

/* The main program's load address, which the ranges' link-time
 * addresses are relative to (0 for a position-dependent executable). */
static int main_bias(struct dl_phdr_info *info, size_t size, void *out)
{
	(void)size;
	*(uint64_t *)out = info->dlpi_addr;
	return 1;     /* the first object is the program */
}

/* Reads kscope's table of the program's line ranges (KSCOPE_CAUSAL_RT_LINES):
 * "KSCL", u32 version 1, u32 line count, u32 range count, then per range
 * u64 lo, u64 hi (link-time addresses), u32 line, u32 0; sorted, disjoint.
 * The table is mapped with malloc'd memory before any thread exists. */
static bool load_ranges(void)
{
	const char *path = getenv("KSCOPE_CAUSAL_RT_LINES");
	uint32_t head[4];
	uint64_t bias = 0;
	int fd;
	bool ok = false;

	if (!path || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	if (read(fd, head, sizeof(head)) != (ssize_t)sizeof(head) ||
	    memcmp(head, "KSCL", 4) != 0 || head[1] != 1 || head[3] == 0)
		goto out;
	ks_crt.nlines = head[2];
	ks_crt.nranges = head[3];
	ks_crt.ranges = calloc(ks_crt.nranges, sizeof(*ks_crt.ranges));
	ks_crt.line_samples = calloc(ks_crt.nlines ? ks_crt.nlines : 1,
				     sizeof(*ks_crt.line_samples));
	if (!ks_crt.ranges || !ks_crt.line_samples)
		goto out;
	dl_iterate_phdr(main_bias, &bias);
	for (size_t i = 0; i < ks_crt.nranges; i++) {
		struct {
			uint64_t lo, hi;
			uint32_t line, pad;
		} e;

		if (read(fd, &e, sizeof(e)) != (ssize_t)sizeof(e) || e.line >= ks_crt.nlines ||
		    e.lo >= e.hi)
			goto out;
		ks_crt.ranges[i].lo = e.lo + bias;
		ks_crt.ranges[i].hi = e.hi + bias;
		ks_crt.ranges[i].line = e.line;
	}
	ok = true;
out:
	close(fd);
	return ok;
}

static bool parse_speedups(void)
{
	const char *v = getenv("KSCOPE_CAUSAL_RT_SPEEDUPS");
	char *end;

	if (!v)
		return false;
	while (*v && ks_crt.nspeedups < KS_CRT_MAX_SPEEDUPS) {
		unsigned long s = strtoul(v, &end, 10);

		if (end == v || s > 100)
			return false;
		ks_crt.speedups[ks_crt.nspeedups++] = (unsigned)s;
		v = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return false;
	}
	return ks_crt.nspeedups > 0;
}

static void open_raw(void)
{
	const char *dir = getenv("KSCOPE_CAUSAL_RT_RAW");
	char path[PATH_MAX], head[256];
	int n;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/causal_%ld.txt", dir, (long)getpid());
	ks_crt.raw_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	n = snprintf(head, sizeof(head), "process\tpid=%ld\tperiod_ns=%" PRIu64
		     "\tstart_ns=%" PRIu64 "\tsampler=%s\n", (long)getpid(), ks_crt.period_ns,
		     ks_crt.start_ns, atomic_load(&ks_crt.coarse) ? "timer" : "perf");
	if (n > 0)
		raw_write(head, (size_t)n);
}

/* In a child made by fork(): the timers and the controller stayed in
 * the parent; the child runs on without experiments. */
static void on_fork_child(void)
{
	ks_crt.active = false;
	ks_crt_self.sampled = false;
	/* The child has one thread: the registry is read without its lock,
	 * which the parent's controller may have held at the fork. */
	for (size_t i = 0; i < MAX_THREADS; i++) {
		if (registry[i] && registry[i]->perf_fd >= 0)
			close(registry[i]->perf_fd);
		registry[i] = NULL;
	}
	atomic_flag_clear(&registry_lock);
	if (ks_crt.raw_fd >= 0)
		close(ks_crt.raw_fd);
	ks_crt.raw_fd = -1;
	ks_crt.controller_started = false;
}

__attribute__((constructor)) static void causal_init(void)
{
	struct sigaction sa;
	uint64_t v;

	resolve();
	if (!is_the_program())
		return;
	ks_crt.sig = SIGRTMIN + 4;
	ks_crt.period_ns = env_u64("KSCOPE_CAUSAL_RT_PERIOD_NS", &v) && v >= 100000 ? v : 1000000;
	ks_crt.experiment_ns = (env_u64("KSCOPE_CAUSAL_RT_EXPERIMENT_MS", &v) && v && v < 3600000 ?
				v : 500) * 1000000u;
	ks_crt.experiment_first_ns = ks_crt.experiment_ns;
	if (env_u64("KSCOPE_CAUSAL_RT_FIXED_LINE", &v))
		ks_crt.fixed_line = (int64_t)v;
	ks_crt.whole = env_u64("KSCOPE_CAUSAL_RT_WHOLE", &v) && v == 1;
	if (!parse_speedups() || !load_ranges())
		return;
	/* A whole run has one speedup, and a line unless it is at 0%. */
	if (ks_crt.whole && (ks_crt.nspeedups != 1 ||
			     (ks_crt.speedups[0] && ks_crt.fixed_line < 0)))
		return;
	if (ks_crt.fixed_line >= (int64_t)ks_crt.nlines)
		return;
	if (getrandom(&rng_state, sizeof(rng_state), 0) != sizeof(rng_state) || !rng_state)
		rng_state = ks_crt_now_ns() | 1;
	if (pthread_key_create(&sampler_key, sampler_stop) != 0)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = ks_crt_on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(ks_crt.sig, &sa, NULL) != 0)
		return;
	ks_crt.start_ns = ks_crt_now_ns();
	ks_crt.active = true;
	thread_start_sampling();
	open_raw();
	if (ks_crt.raw_fd < 0) {
		sampler_stop(NULL);
		ks_crt.active = false;
		return;
	}
	pthread_atfork(NULL, NULL, on_fork_child);
	if (ks_crt.whole) {
		/* The run is the experiment: selected from the start. */
		atomic_store(&ks_crt.sample_delay, ks_crt.period_ns * ks_crt.speedups[0] / 100);
		atomic_store(&ks_crt.selected, ks_crt.fixed_line);
		return;
	}
	if (real.pthread_create(&ks_crt.controller, NULL, controller_main, NULL) == 0)
		ks_crt.controller_started = true;
}

/* The whole run's experiment record (KSCOPE_CAUSAL_RT_WHOLE), written at
 * the program's normal end, with every progress point's count and the
 * point "end-to-end" visited once. */
static void whole_record(struct rec *r)
{
	size_t np = atomic_load(&ks_crt.npoints);
	uint64_t line = ks_crt.fixed_line >= 0 ? (uint64_t)ks_crt.fixed_line : 0;

	atomic_store(&ks_crt.selected, -1);
	rec_add(r, "experiment\tline=%" PRIu64 "\tspeedup=%u\twall_ns=%" PRIu64
		"\tdelay_ns=%" PRIu64 "\tsamples=%" PRIu64 "\n", line, ks_crt.speedups[0],
		ks_crt_now_ns() - ks_crt.start_ns, atomic_load(&ks_crt.global_delay),
		atomic_load(&ks_crt.selected_samples));
	rec_add(r, "point\tname=end-to-end\tkind=throughput\tdelta=1\n");
	for (size_t i = 0; i < np; i++) {
		struct ks_crt_point *p = &ks_crt.points[i];
		char name[KS_CRT_POINT_NAME];

		clean_name(name, sizeof(name), p->name);
		if (p->kind == KS_CRT_THROUGHPUT && strcmp(name, "end-to-end") != 0)
			rec_add(r, "point\tname=%s\tkind=throughput\tdelta=%zu\n", name,
				__atomic_load_n(&p->hits.count, __ATOMIC_RELAXED));
	}
}

/* At the program's normal end: the controller stops (an experiment under
 * way is left out), then the samples per line and the end are recorded. */
__attribute__((destructor)) static void causal_fini(void)
{
	static struct rec r;

	if (!ks_crt.active)
		return;
	sampler_stop(NULL);
	atomic_store(&ks_crt.stop, true);
	if (ks_crt.controller_started)
		real.pthread_join(ks_crt.controller, NULL);
	ks_crt.active = false;
	r.len = 0;
	if (ks_crt.whole)
		whole_record(&r);
	for (uint32_t i = 0; i < ks_crt.nlines; i++) {
		uint64_t n = atomic_load(&ks_crt.line_samples[i]);

		if (n) {
			rec_add(&r, "samples\tline=%" PRIu32 "\tcount=%" PRIu64 "\n", i, n);
			if (r.len > sizeof(r.buf) - 256) {
				raw_write(r.buf, r.len);
				r.len = 0;
			}
		}
	}
	rec_add(&r, "end\tns=%" PRIu64 "\n", ks_crt_now_ns());
	raw_write(r.buf, r.len);
	close(ks_crt.raw_fd);
	ks_crt.raw_fd = -1;
}
