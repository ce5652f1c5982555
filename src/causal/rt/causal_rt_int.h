/*
 * libkscope-causal.so's shared state: the runtime of `kscope causal`,
 * preloaded into the program (docs/causal.md).
 *
 * The state is one global (struct ks_crt ks_crt): a preloaded library has
 * no caller to hand a context to, and the signal handler must reach it.
 * Per-thread state is initial-exec TLS, which a signal handler may touch.
 *
 * Virtual speedup (Curtsinger and Berger, "Coz", SOSP 2015): while an
 * experiment runs, every sample of a thread that falls in the selected
 * line adds speedup x period to the global delay count and to that
 * thread's own; every thread whose own count is behind the global one
 * pauses for the difference at its next sample.  Running the line is then
 * as if it had been made faster by the speedup, relative to everything
 * else; the experiment's effective length is its wall time less the delay
 * inserted.  Threads blocked in a wrapped call are credited the delays
 * that accrued while they waited (the thread that woke them paid first).
 */
#ifndef KS_CAUSAL_RT_INT_H
#define KS_CAUSAL_RT_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define KS_CRT_EXPORT __attribute__((visibility("default")))
#define KS_CRT_TLS __thread __attribute__((tls_model("initial-exec")))

#define KS_CRT_MAX_POINTS 256
#define KS_CRT_POINT_NAME 128
#define KS_CRT_RECENT 256        /* in-scope samples the next line is drawn from */
#define KS_CRT_MAX_SPEEDUPS 101

/* One address range of the program's code and the source line it is. */
struct ks_crt_range {
	uint64_t lo, hi;          /* run-time addresses, [lo, hi) */
	uint32_t line;            /* index into kscope's line table */
};

/* The counter layout coz.h's macros increment (its ABI). */
struct ks_crt_counter {
	size_t count;
	size_t backoff;           /* unused, as in coz */
};

enum ks_crt_point_kind { KS_CRT_THROUGHPUT = 1, KS_CRT_LATENCY = 2 };

struct ks_crt_point {
	_Atomic(const char *) key;            /* the first name pointer seen, for a fast match */
	char name[KS_CRT_POINT_NAME];
	int kind;
	struct ks_crt_counter hits;           /* throughput visits, or latency arrivals */
	struct ks_crt_counter ends;           /* latency departures */
	size_t hits_at_start, ends_at_start;  /* controller only */
};

struct ks_crt {
	bool active;              /* this process runs experiments */
	_Atomic bool coarse;      /* perf's task-clock was refused: POSIX timers */
	int sig;                  /* the sampling signal */
	uint64_t period_ns;       /* CPU time between a thread's samples */
	struct ks_crt_range *ranges;
	size_t nranges;
	uint32_t nlines;
	_Atomic uint64_t *line_samples;   /* per line id */

	/* The experiment, as the signal handler reads it. */
	_Atomic int64_t selected;         /* line id, -1: none */
	_Atomic uint64_t sample_delay;    /* ns added per selected sample */
	_Atomic uint64_t global_delay;    /* ns every thread must have paused */
	_Atomic uint64_t selected_samples;
	_Atomic uint32_t recent[KS_CRT_RECENT];
	_Atomic uint64_t nrecent;

	/* Settings. */
	bool whole;                       /* the run is one experiment (--end-to-end) */
	int64_t fixed_line;               /* -1: lines drawn from the samples */
	unsigned speedups[KS_CRT_MAX_SPEEDUPS];
	size_t nspeedups;
	uint64_t experiment_ns;           /* grows while experiments see too few visits */
	uint64_t experiment_first_ns;

	/* Progress points. */
	struct ks_crt_point points[KS_CRT_MAX_POINTS];
	_Atomic size_t npoints;
	atomic_flag points_lock;

	/* The controller thread and the raw file. */
	pthread_t controller;
	bool controller_started;
	_Atomic bool stop;
	int raw_fd;
	uint64_t start_ns;
};

/* Per thread. */
struct ks_crt_thread {
	bool sampled;             /* its sampler runs */
	pid_t tid;                /* the kernel's id of the thread (when sampled) */
	int perf_fd;              /* its task-clock event, or -1: the POSIX timer */
	timer_t timer;
	/* ns of delay this thread has paused, or been credited; atomic: the
	 * controller reads it at an experiment's end. */
	_Atomic uint64_t local_delay;
	uint64_t before_block;    /* the global count when it entered a blocking call */
	_Atomic bool blocked;     /* in a wrapped call that may block */
	volatile bool paying;     /* in ks_crt_pay or a wrapped blocking call: the
				   * signal handler does not make it pay */
};

extern struct ks_crt ks_crt;
extern KS_CRT_TLS struct ks_crt_thread ks_crt_self;

/* The most rounds ks_crt_pay sleeps in one call. */
#define KS_CRT_PAY_ROUNDS 8

/* causal_async.c: async-signal-safe. */
void ks_crt_on_sample(int sig, siginfo_t *si, void *ucontext);
void ks_crt_pay(struct ks_crt_thread *t);
uint64_t ks_crt_now_ns(void);
void ks_crt_sleep_ns(uint64_t ns);

/* Called around the wrapped calls that may block (causal_rt.c).  From
 * the start of the call to the crediting after it, the thread's sampling
 * signal does not make it pay (ks_crt_thread.paying): paying there would
 * pay delays a woken thread is about to be credited with. */
static inline void ks_crt_pre_block(void)
{
	ks_crt_self.paying = true;
	atomic_signal_fence(memory_order_seq_cst);
	ks_crt_self.before_block = atomic_load_explicit(&ks_crt.global_delay,
							memory_order_relaxed);
	atomic_store_explicit(&ks_crt_self.blocked, true, memory_order_relaxed);
}

/* woken: another thread ended the wait (it paid its delays first), so
 * the delays that accrued meanwhile count as paid. */
static inline void ks_crt_post_block(bool woken)
{
	atomic_store_explicit(&ks_crt_self.blocked, false, memory_order_relaxed);
	if (woken)
		atomic_fetch_add_explicit(&ks_crt_self.local_delay,
					  atomic_load_explicit(&ks_crt.global_delay,
							       memory_order_relaxed) -
					  ks_crt_self.before_block, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	ks_crt_self.paying = false;
}

#endif
