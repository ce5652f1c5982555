/*
 * The program's threads as the runtime sees them: each has a number in
 * creation order (the main thread is 1, as in kscope's Valgrind tool),
 * its shadow call stack, its quiet cache and its sites.  pthread_create is
 * wrapped so that a thread is numbered by its creator, at creation, and
 * knows its state from its first instruction; a pthread key's destructor
 * sees it end, however it ends (return, pthread_exit, cancellation).
 * Threads made some other way are numbered when they first touch memory.
 *
 * Numbers go up to KS_MT_MAX_THREADS - 1; a program that makes more
 * threads over its life gets the numbers of threads that have ended, and
 * beyond 4095 alive at once the rest share the last number
 * (docs/memtools.md, Limits).  A thread's state outlives it: its sites
 * and counts are reported at the end.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "rt_int.h"

__thread struct rt_thread *rt_self __attribute__((tls_model("initial-exec")));
struct rt_qent rt_q_none[RT_QN_MAX];

static struct rt_lock reg_lock;
static struct rt_thread *all_threads;          /* newest first */
static struct rt_thread *by_tid[KS_MT_MAX_THREADS];
static unsigned next_tid = 1;
static unsigned made;
static pthread_key_t end_key;
static bool key_made;

static void thread_key_end(void *p);

/* The never-matching table, and the key whose destructor sees threads
 * end.  Called from rt_init, before any other thread exists. */
void rt_threads_init(void)
{
	if (pthread_key_create(&end_key, thread_key_end) == 0)
		key_made = true;
}

static unsigned tid_take(void)
{
	unsigned tid;

	if (next_tid < KS_MT_MAX_THREADS)
		return next_tid++;
	/* Out of fresh numbers: one whose thread has ended. */
	for (tid = 2; tid < KS_MT_MAX_THREADS; tid++)
		if (!by_tid[tid] || by_tid[tid]->dead)
			return tid;
	return KS_MT_MAX_THREADS - 1;
}

struct rt_thread *rt_thread_new(void)
{
	struct rt_thread *t = rt_zalloc(sizeof(*t));
	struct rt_qent *q = rt_zalloc(RT_QN_MIN * sizeof(*q));

	if (!t || !q) {
		rt_free(t, sizeof(*t));
		rt_free(q, RT_QN_MIN * sizeof(*q));
		return NULL;
	}
	t->qmask = RT_QN_MIN - 1;
	t->q = t->own_q = q;
	t->stk = &t->own_stk;
	rt_lock_take(&reg_lock);
	t->tid = tid_take();
	t->bit = t->tid < 63 ? UINT64_C(1) << t->tid : 0;
	by_tid[t->tid] = t;
	t->next = all_threads;
	__atomic_store_n(&all_threads, t, __ATOMIC_RELEASE);
	made++;
	rt_lock_give(&reg_lock);
	return t;
}

struct rt_thread *rt_thread_adopt(void)
{
	struct rt_thread *t;

	if (!rt.armed)
		return NULL;
	t = rt_thread_new();
	if (!t)
		return NULL;
	rt_self = t;
	if (key_made)
		pthread_setspecific(end_key, t);
	return t;
}

void rt_thread_flush(struct rt_thread *t)
{
	struct rt_qent *q = t->own_q;

	if (q)
		for (uintptr_t i = 0; i <= t->qmask; i++)
			if (q[i].pc != RT_QNONE)
				rt_qent_credit(t, &q[i]);
	rt_pend_flush(t);
}

void rt_thread_divert(struct rt_thread *t)
{
	t->q = t->ignore > 0 || t->dead || !t->own_q ? rt_q_none : t->own_q;
}

void rt_thread_end(struct rt_thread *t)
{
	struct rt_qent *q = t->own_q;

	if (t->dead)
		return;
	t->in_rt++;
	if (rt.active)
		rt_thread_flush(t);
	t->dead = true;
	rt_thread_divert(t);
	t->own_q = NULL;
	t->in_rt--;
	rt_free(q, (t->qmask + 1) * sizeof(*q));
}

static void thread_key_end(void *p)
{
	struct rt_thread *t = p;

	/* Later destructors (the C library's) may still touch memory: they
	 * are counted, without the cache. */
	if (t)
		rt_thread_end(t);
}

struct rt_thread *rt_threads(void)
{
	return __atomic_load_n(&all_threads, __ATOMIC_ACQUIRE);
}

unsigned rt_threads_made(void)
{
	return made;
}

void rt_threads_lock(void)
{
	rt_lock_take(&reg_lock);
}

void rt_threads_unlock(void)
{
	rt_lock_give(&reg_lock);
}

void rt_threads_after_fork(void)
{
	struct rt_thread *self = rt_self;

	/* The parent's other threads do not exist here; what their caches
	 * held is what the parent had counted before the fork, which the
	 * child's counts include (docs/memtools.md, Processes). */
	for (struct rt_thread *t = all_threads; t; t = t->next) {
		if (t == self || t->dead)
			continue;
		if (rt.active)
			rt_thread_flush(t);
		t->dead = true;
		rt_thread_divert(t);
	}
	if (key_made && self)
		pthread_setspecific(end_key, self);
}

/* ------------------------------------------------------------------ */
/* pthread_create                                                      */
/* ------------------------------------------------------------------ */

struct start {
	void *(*fn)(void *);
	void *arg;
	struct rt_thread *t;
};

static void *thread_main(void *p)
{
	struct start s = *(struct start *)p;

	rt_free(p, sizeof(s));
	rt_self = s.t;
	if (key_made)
		pthread_setspecific(end_key, s.t);
	return s.fn(s.arg);
}

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

RT_EXPORT int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*fn)(void *), void *arg)
{
	static create_fn real;
	struct start *s;
	int rc;

	if (!real) {
		real = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
		if (!real)
			return 11; /* EAGAIN: cannot make threads */
	}
	if (!rt.armed || !(s = rt_zalloc(sizeof(*s))))
		return real(thread, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->t = rt_thread_new();
	if (!s->t) {
		rt_free(s, sizeof(*s));
		return real(thread, attr, fn, arg);
	}
	rc = real(thread, attr, thread_main, s);
	if (rc != 0) {
		/* Never ran: nothing to report, its number stays used. */
		s->t->dead = true;
		rt_thread_divert(s->t);
		rt_free(s->t->own_q, (s->t->qmask + 1) * sizeof(*s->t->own_q));
		s->t->own_q = NULL;
		rt_free(s, sizeof(*s));
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* Fibers: a shadow call stack each; the thread's number stays         */
/* ------------------------------------------------------------------ */

/* The thread that runs a fiber is the one whose cache line copies the
 * analyses count, so switching fibers changes only which shadow stack
 * the calls go on.  __tsan_get_current_fiber gives the thread's own
 * stack the first time. */
RT_EXPORT void *__tsan_get_current_fiber(void)
{
	struct rt_thread *t = rt_self ? rt_self : rt_thread_adopt();

	return t ? (void *)t->stk : NULL;
}

RT_EXPORT void *__tsan_create_fiber(unsigned flags)
{
	(void)flags;
	return rt_zalloc(sizeof(struct rt_stack));
}

RT_EXPORT void __tsan_destroy_fiber(void *fiber)
{
	struct rt_thread *t = rt_self;

	if (!fiber || (t && (fiber == t->stk || fiber == &t->own_stk)))
		return;
	rt_free(fiber, sizeof(struct rt_stack));
}

RT_EXPORT void __tsan_switch_to_fiber(void *fiber, unsigned flags)
{
	struct rt_thread *t = rt_self ? rt_self : rt_thread_adopt();

	(void)flags;
	if (t && fiber)
		t->stk = fiber;
}

RT_EXPORT void __tsan_set_fiber_name(void *fiber, const char *name)
{
	(void)fiber;
	(void)name;
}
