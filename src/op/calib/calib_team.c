/*
 * The team of threads the CPU measurements run on: one thread per CPU,
 * each pinned, all starting a job at the same moment.
 *
 * Empirical ceilings are what every core achieves together, so a
 * measurement runs the same kernel on all threads at once and divides the
 * total work by the time from the common start to the end of the slowest
 * thread.  Threads wait for a job by spinning on a generation counter
 * rather than on a condition variable: a woken thread would start tens of
 * microseconds late, which is a large error on a trial of a millisecond.
 * The caller's thread is member 0, so a team of N uses exactly N CPUs.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "calib_int.h"

struct ks_calib_team {
	int n;                    /* members, the caller included */
	pthread_t *threads;       /* members 1..n-1 */
	int *cpus;                /* the CPUs kscope may run on */
	int ncpus;
	cpu_set_t saved;          /* the caller's affinity before the team */
	bool saved_ok;
	double *share;            /* per member: CPU time / elapsed time of its
				   * part of the last job */
	_Atomic unsigned gen;     /* bumped to start a job */
	_Atomic int done;         /* members 1..n-1 finished with the job */
	ks_calib_job_fn *job;        /* NULL: members end */
	void *arg;
};

struct member {
	struct ks_calib_team *team;
	int tid;
};

double ks_calib_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ks_calib_cpus_allowed(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

/* One step of a busy wait: a pause hint, and after a while a yield so that
 * an oversubscribed team (more threads than CPUs) still moves on. */
static void spin_wait(unsigned *spins)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
	if (++*spins > 20000)
		sched_yield();
}

/* The calling thread's CPU time, in seconds. */
static double thread_cpu(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Runs member tid's part of the job and records how much of its elapsed
 * time it had a CPU for: less than all of it means another program (or
 * another member) took the CPU in between. */
static void run_part(struct ks_calib_team *t, int tid)
{
	double w0 = ks_calib_now(), c0 = thread_cpu(), w, c;

	t->job(t->arg, tid);
	c = thread_cpu() - c0;
	w = ks_calib_now() - w0;
	t->share[tid] = w > 0 && c0 > 0 ? c / w : 1;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	/* A failure (a container forbidding it) only costs accuracy. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *member_main(void *p)
{
	struct member *m = p;
	struct ks_calib_team *t = m->team;
	int tid = m->tid;
	unsigned seen = 0;

	free(m);
	pin(t->cpus[tid % t->ncpus]);
	for (;;) {
		unsigned spins = 0, g;

		while ((g = atomic_load_explicit(&t->gen, memory_order_acquire)) == seen)
			spin_wait(&spins);
		seen = g;
		if (!t->job)
			break;
		run_part(t, tid);
		atomic_fetch_add_explicit(&t->done, 1, memory_order_release);
	}
	return NULL;
}

int ks_calib_team_start(struct ks_calib_team **team, int nthreads, struct ks_err *err)
{
	struct ks_calib_team *t;
	cpu_set_t set;
	int rc = 0;

	*team = NULL;
	if (nthreads < 1)
		return ks_err_set(err, -EINVAL, "a team needs at least one thread");
	t = calloc(1, sizeof(*t));
	if (!t)
		return ks_err_set(err, -ENOMEM, "out of memory");
	t->threads = calloc((size_t)nthreads, sizeof(*t->threads));
	t->cpus = calloc(CPU_SETSIZE, sizeof(*t->cpus));
	t->share = calloc((size_t)nthreads, sizeof(*t->share));
	if (!t->threads || !t->cpus || !t->share) {
		free(t->threads);
		free(t->cpus);
		free(t->share);
		free(t);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	atomic_init(&t->gen, 0);
	atomic_init(&t->done, 0);
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		t->saved = set;
		t->saved_ok = true;
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &set))
				t->cpus[t->ncpus++] = c;
	}
	if (t->ncpus == 0)
		t->cpus[t->ncpus++] = 0;
	pin(t->cpus[0]);
	for (t->n = 1; t->n < nthreads; t->n++) {
		struct member *m = malloc(sizeof(*m));

		if (!m) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			break;
		}
		m->team = t;
		m->tid = t->n;
		rc = -pthread_create(&t->threads[t->n], NULL, member_main, m);
		if (rc) {
			free(m);
			ks_err_set(err, rc, "cannot start measurement thread %d of %d: %s",
				   t->n + 1, nthreads, strerror(-rc));
			break;
		}
	}
	if (rc) {
		ks_calib_team_stop(t);
		return rc;
	}
	*team = t;
	return 0;
}

int ks_calib_team_size(const struct ks_calib_team *team)
{
	return team->n;
}

double ks_calib_team_run(struct ks_calib_team *t, ks_calib_job_fn *job, void *arg)
{
	unsigned spins = 0;
	double t0, t1;

	t->job = job;
	t->arg = arg;
	atomic_store_explicit(&t->done, 0, memory_order_relaxed);
	t0 = ks_calib_now();
	/* The release publishes job, arg and done = 0 to the members. */
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	run_part(t, 0);
	while (atomic_load_explicit(&t->done, memory_order_acquire) < t->n - 1)
		spin_wait(&spins);
	t1 = ks_calib_now();
	return t1 - t0;
}

double ks_calib_team_cpu_share(const struct ks_calib_team *t)
{
	double min = 1;

	for (int i = 0; i < t->n; i++)
		if (t->share[i] < min)
			min = t->share[i];
	return min;
}

void ks_calib_team_stop(struct ks_calib_team *t)
{
	if (!t)
		return;
	t->job = NULL;
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	for (int i = 1; i < t->n; i++)
		pthread_join(t->threads[i], NULL);
	if (t->saved_ok)
		(void)sched_setaffinity(0, sizeof(t->saved), &t->saved);
	free(t->threads);
	free(t->cpus);
	free(t->share);
	free(t);
}
