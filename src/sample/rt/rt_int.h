/*
 * Private header of libkscope.so, the runtime of `kscope sample` that the
 * launcher puts in LD_PRELOAD.  It declares the runtime's one piece of
 * process-wide state (struct ks_rt), the per-thread state (struct
 * ks_rt_thread) and the functions the rt_*.c files share.  Nothing outside
 * src/sample/rt includes it.
 *
 * How the parts fit together:
 *   rt_main.c           constructor, exit hook, the raw file and its header
 *   rt_config.c         options from KSCOPE_* environment variables
 *   rt_log.c            the runtime's own stderr messages (off by default)
 *   rt_module.c         KS_RAW_MODULE records from dl_iterate_phdr
 *   rt_thread.c         thread begin/end, the table of thread states
 *   rt_pool.c           mapping and recycling of sample buffers
 *   rt_buffer_async.c   appending records to a thread's buffer, the queue
 *   rt_util_async.c     clocks, thread ids, real-function lookup
 *   rt_timer_async.c    the per-thread timers and the sampling handler
 *   rt_window_async.c   the time windows (--delay, --duration, --periods)
 *   rt_unwind_async.c   stack walks (libunwind or frame pointers)
 *   rt_flush_async.c    writing chunks to the file; the final flush
 *   rt_signal.c         sigaction/signal/sigprocmask wrappers, signal moves
 *   rt_signal_async.c   the handler for fatal and terminating signals
 *   rt_writer.c         the writer thread
 *   rt_record.c         per-thread records from normal code
 *   rt_wrap.c           pthread_create, fork, exec*, _exit, dlclose wrappers
 *   rt_restart.c        blocking calls restarted after a sampling signal
 *   rt_user.c           the kscope_* user API (include/kscope/user.h)
 *   rt_mpi.c            MPI wrappers
 *
 * Ownership of a sample buffer: a thread's current buffer (cur) is written
 * only by whoever holds that thread's `busy` flag: the thread itself (in
 * normal code or in its signal handler) or a flusher.  A full buffer goes to
 * the writer's lock-free queue; the writer writes it and gives it back as
 * the thread's spare, or to the pool.
 */
#ifndef KS_RT_INT_H
#define KS_RT_INT_H

#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

#include "counters.h"
#include "raw.h"
#include "spec.h"

/* Symbols the program must see (wrappers, user API); everything else in
 * the library is hidden (-fvisibility=hidden). */
#define KS_RT_EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ */
/* Options                                                            */
/* ------------------------------------------------------------------ */

enum { KS_RT_LOG_ERROR = 0, KS_RT_LOG_WARN, KS_RT_LOG_INFO, KS_RT_LOG_DEBUG };

/* KSCOPE_* environment variables, parsed once at start (rt_config.c). */
struct ks_rt_opts {
	char run_dir[4096];      /* empty: the runtime stays off */
	uint32_t cputime_freq;   /* samples per CPU-second, 0 = off */
	uint32_t realtime_freq;  /* samples per second, 0 = off */
	uint64_t delay_ns;       /* before sampling starts */
	uint64_t duration_ns;    /* of sampling after the delay, 0 = no end */
	/* The limits and the parsers are spec.h's, shared with the checker
	 * of `kscope sample`. */
	struct ks_spec_tidrange tids[KS_SPEC_MAX_TIDRANGES];
	size_t ntids;            /* 0 = every thread */
	struct ks_spec_period periods[KS_SPEC_MAX_PERIODS];
	size_t nperiods;         /* 0 = no period restriction */
	bool unwind_fp;          /* walk frame pointers instead of libunwind */
	char counters[KS_SPEC_MAX_COUNTERS][KS_SPEC_COUNTER_NAME_MAX + 1];
	uint32_t ncounters;
	uint32_t buffer_samples; /* capacity of a buffer, in maximum-size samples */
	int log_level;           /* KS_RT_LOG_* */
	int32_t rank;            /* MPI rank from the environment, or -1 */
};

void ks_rt_opts_from_env(struct ks_rt_opts *o);
bool ks_rt_tid_selected(const struct ks_rt_opts *o, uint32_t index);

void ks_rt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------------ */
/* Buffers                                                            */
/* ------------------------------------------------------------------ */

struct ks_rt_thread;

/* One mapped sample buffer.  `chunk` is the KS_RAW_CHUNK header and the
 * thread's records follow it, so chunk..chunk+used goes to the file in
 * one write. */
struct ks_rt_buf {
	struct ks_rt_buf *next;      /* queue or pool link */
	struct ks_rt_thread *owner;  /* thread state the buffer returns to */
	size_t map_size;             /* bytes mapped for this struct */
	uint32_t cap;                /* bytes from &chunk to the end */
	uint32_t used;               /* bytes from &chunk in use (>= header) */
	struct ks_raw_chunk chunk;
	/* records follow */
};

/* The largest sample record. */
#define KS_RT_SAMPLE_MAX (sizeof(struct ks_raw_sample) + \
			  8u * (KS_RAW_MAX_COUNTERS + KS_RAW_MAX_FRAMES))

int ks_rt_pool_init(void);
struct ks_rt_buf *ks_rt_pool_get(void);
void ks_rt_pool_put(struct ks_rt_buf *b);
/* After fork, in the child: the pool's lock is reset. */
void ks_rt_pool_atfork_child(void);
void ks_rt_pool_lock(void);
void ks_rt_pool_unlock(void);

/* Gives the writer a buffer to write (async-signal-safe). */
void ks_rt_queue_push(struct ks_rt_buf *b);
/* Takes every queued buffer, oldest first (async-signal-safe). */
struct ks_rt_buf *ks_rt_queue_take(void);

/* With t->busy held: space for a record of up to `size` bytes in t's
 * buffer, or NULL (no buffer, counted as dropped by the caller).  Full
 * buffers are handed to the writer. */
void *ks_rt_buf_reserve(struct ks_rt_thread *t, uint32_t size);
/* With t->busy held: the record at the reserved place is `size` bytes. */
void ks_rt_buf_commit(struct ks_rt_thread *t, uint32_t size);
/* With t->busy held: queues t's current buffer for the writer if it holds
 * records (t->cur becomes NULL). */
bool ks_rt_buf_seal(struct ks_rt_thread *t);
void ks_rt_buf_send(struct ks_rt_thread *t);
/* The same for a thread's last buffer, as it ends: the writer is woken
 * only every KS_RT_LAZY_WAKE such buffers, else takes them at its next
 * tick, so that thousands of short threads do not cost a wake-up and a
 * write each. */
#define KS_RT_LAZY_WAKE 32
void ks_rt_buf_send_last(struct ks_rt_thread *t);
/* With t->busy held: hands t's current buffer to the writer if it holds
 * records, and takes the spare.  Returns true if t has a buffer after. */
bool ks_rt_buf_handoff(struct ks_rt_thread *t);

/* Takes t->busy: immediately (signal handler) or waiting for a holder
 * that will let go; false if t's records are closed for good. */
bool ks_rt_busy_try(struct ks_rt_thread *t);
bool ks_rt_busy_wait(struct ks_rt_thread *t);
void ks_rt_busy_release(struct ks_rt_thread *t);

/* Appends a named record (REGION_*, MARK, RANGE_*, PAUSE, RESUME) to the
 * calling thread.  Normal context. */
void ks_rt_record_named(uint16_t type, const char *name, uint64_t id);
/* Appends any complete record to the calling thread (normal context). */
void ks_rt_record(const void *rec, uint32_t size);

/* ------------------------------------------------------------------ */
/* Threads                                                            */
/* ------------------------------------------------------------------ */

enum {
	KS_RT_T_FREE = 0,
	KS_RT_T_LIVE = 1,     /* a thread is recording into it */
	KS_RT_T_DEAD = 2,     /* its thread ended: free for reuse */
	KS_RT_T_CLAIMED = 3,  /* being set up for a new thread */
};
enum { KS_RT_CPU = 0, KS_RT_REAL = 1 }; /* samplers (= KS_RAW_CLOCK_*) */
/* With time windows, regions nested deeper than this are not recorded. */
#define KS_RT_REGION_LEVELS 256

struct ks_rt_thread {
	struct ks_rt_thread *all_next;   /* list of every state, never unlinked */
	_Atomic int state;               /* KS_RT_T_* */
	_Atomic int busy;                /* 1 while someone writes cur */
	pid_t tid;
	uint32_t index;                  /* creation order, 0 = main thread */
	bool selected;                   /* KSCOPE_TIDS chose it */
	bool ended;                      /* THREAD_END written */
	struct ks_rt_buf *cur;           /* buffer being filled (busy held) */
	_Atomic(struct ks_rt_buf *) spare;
	uint32_t seq;                    /* next chunk number (busy held) */
	pthread_mutex_t timer_lock;      /* timer create/delete/move */
	timer_t timer[2];                /* per sampler */
	bool has_timer[2];
	/* The CPU-time timer's schedule, to find at the thread's end the
	 * periods that expired but were never signalled (ks_rt_timers_end):
	 * its expiries are at thread CPU time cpu_first_ns + k * cpu_period_ns,
	 * and cpu_periods_seen counts those its signals stood for (written
	 * only by the thread's own handler). */
	uint64_t cpu_first_ns, cpu_period_ns;
	volatile uint64_t cpu_periods_seen;
	/* The real-time timer's period, in periods of the requested rate
	 * (see ks_rt.rt_mult); read by the thread's handler. */
	_Atomic uint32_t rt_mult;
	int counter_fd[KS_RAW_MAX_COUNTERS]; /* perf_event fds or -1 */
	uint64_t counter_id[KS_RAW_MAX_COUNTERS]; /* their PERF_EVENT_IOC_ID */
	uintptr_t stack_lo, stack_hi;    /* for frame-pointer walks */
	char name[16];
	bool flush_held;                 /* a flusher holds busy (flusher only) */
	/* With time windows: the thread's open user regions, and whether
	 * each level's push was recorded, so that its pop is recorded too
	 * (the thread itself only, rt_user.c). */
	uint32_t region_depth;
	uint64_t region_kept[KS_RT_REGION_LEVELS / 64];
};

/* The calling thread's state, NULL, or KS_RT_SELF_ENDED once the thread
 * has ended its recording (its last TLS destructors may still run code).
 * A TLS variable rather than a context argument because the sampling
 * signal handler has no other way to find it; initial-exec so that reading
 * it in a handler calls nothing. */
extern __thread struct ks_rt_thread *ks_rt_self
	__attribute__((tls_model("initial-exec")));
#define KS_RT_SELF_ENDED ((struct ks_rt_thread *)1)

/* The calling thread's live state or NULL (async-signal-safe). */
static inline struct ks_rt_thread *ks_rt_self_get(void)
{
	struct ks_rt_thread *t = ks_rt_self;

	return t == KS_RT_SELF_ENDED ? NULL : t;
}

/* Starts recording the calling thread (normal context); creator_tid 0
 * for the main thread.  Returns its state or NULL. */
struct ks_rt_thread *ks_rt_thread_begin(pid_t creator_tid, uint32_t index);
/* Ends the calling thread's recording (normal context, idempotent). */
void ks_rt_thread_end(void);
/* The calling thread's state, registering a thread kscope did not see
 * start (normal context).  NULL when the runtime is off. */
struct ks_rt_thread *ks_rt_thread_adopt(void);
/* In the fork child: only the calling thread survives. */
void ks_rt_threads_atfork_child(void);
/* Decides which KSCOPE_COUNTERS work here (constructor). */
void ks_rt_counters_init(void);
/* A KS_RAW_THREAD_END record for t, which may be another thread. */
void ks_rt_thread_end_rec(const struct ks_rt_thread *t, struct ks_raw_thread_end *e,
			  bool self);
/* The kernel's CPU clock of thread tid of this process, as
 * pthread_getcpuclockid builds it (CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED). */
static inline clockid_t ks_rt_thread_clock(pid_t tid)
{
	return (clockid_t)((~(unsigned)tid) << 3) | 6;
}
/* Thread CPU time of any thread of this process (async-signal-safe). */
uint64_t ks_rt_thread_cpu_ns(pid_t tid);

/* ------------------------------------------------------------------ */
/* Timers and sampling                                                */
/* ------------------------------------------------------------------ */

/* The value every kscope timer signal carries, per sampler. */
#define KS_RT_TIMER_MAGIC 0x6b73636f70650000ull

int ks_rt_timer_start(struct ks_rt_thread *t, int which);
/* Writer tick: re-arms the real-time timers when the number of live
 * threads calls for another slowdown (normal context). */
void ks_rt_realtime_rebudget(void);
void ks_rt_timer_stop(struct ks_rt_thread *t, int which);
/* Starts the timers t should have, under t->timer_lock. */
void ks_rt_timers_start(struct ks_rt_thread *t);
void ks_rt_timers_stop(struct ks_rt_thread *t);
/* On the calling thread t, as it ends: stops its timers and records the
 * CPU-time periods that expired but were never signalled, as one sample
 * without frames (KS_RAW_SAMPLE_AT_END). */
void ks_rt_timers_end(struct ks_rt_thread *t);
/* The SA_SIGINFO handler of both sampling signals. */
void ks_rt_on_sample(int sig, siginfo_t *si, void *uc);
/* Whether the time windows (delay, duration, periods) are open now
 * (async-signal-safe).  Samples, regions, marks, ranges, MPI calls and
 * the process counters are recorded only inside them. */
bool ks_rt_window_open(uint64_t now_ns);
/* Whether any window is set: without one everything is recorded. */
bool ks_rt_windowed(void);
/* Constructor, after the options and origin_ns. */
void ks_rt_windows_init(void);
/* In a fork child: CPU-time periods go on with the child's CPU time. */
void ks_rt_windows_atfork_child(void);

/* Fills frames[0..max) from the signal context; returns how many. */
int ks_rt_unwind(const struct ks_rt_thread *t, void *uc, uint64_t *frames, int max);
/* Sets libunwind up for use in signal handlers (constructor). */
void ks_rt_unwind_init(void);

/* ------------------------------------------------------------------ */
/* Signals                                                            */
/* ------------------------------------------------------------------ */

enum {
	KS_RT_SIG_NONE = 0,     /* untouched: sigaction passes straight through */
	KS_RT_SIG_TERM = 1,     /* fatal by default: flush on death, dispatch */
	KS_RT_SIG_SAMPLER = 2,  /* a sampler's signal */
	KS_RT_SIG_PROG = 3,     /* the program's handler, called through ours */
};

/* Per-thread signal counts, so that a blocking call interrupted only by
 * kscope's sampling signals can be restarted (rt_restart.c).  TLS
 * because the handlers have nowhere else to count; initial-exec so that
 * handlers touch it without a call. */
struct ks_rt_tls {
	unsigned ours;               /* sampling signals taken */
	unsigned theirs;             /* program handlers called */
	unsigned in_sample;          /* inside the sampling handler (libunwind
				      * calls sigprocmask there) */
};
extern __thread struct ks_rt_tls ks_rt_tls __attribute__((tls_model("initial-exec")));

/* What kscope knows about one signal number. */
struct ks_rt_sigtrack {
	_Atomic int role;            /* KS_RT_SIG_* */
	_Atomic int slot;            /* which prog[] is current */
	struct sigaction prog[2];    /* the program's disposition as it set it */
};

/* Installs the sampling and flush-on-death handlers (constructor). */
void ks_rt_signals_init(void);
/* kscope's handler of every signal whose handler the program set, and of
 * fatal signals left at their default. */
void ks_rt_on_term(int sig, siginfo_t *si, void *uc);
/* Ends the process by sig as if kscope were absent: flushes, restores the
 * default action and re-raises (async-signal-safe). */
void ks_rt_die_by_signal(int sig);

/* ------------------------------------------------------------------ */
/* The file, the writer and the flush                                 */
/* ------------------------------------------------------------------ */

enum {
	KS_RT_OFF = 0,        /* no KSCOPE_RUN_DIR, or the file could not be made */
	KS_RT_RUNNING = 1,
	KS_RT_EXECFLUSH = 2,  /* flushed before exec; undone if exec fails */
	KS_RT_FINISHING = 3,
	KS_RT_FINISHED = 4,
};

enum {
	KS_RT_GATE_PAUSED = 1u << 0,   /* kscope_pause() */
	KS_RT_GATE_STOPPED = 1u << 1,  /* flushing or ended */
};

/* The next definitions of the functions kscope wraps, from
 * dlsym(RTLD_NEXT).  Resolved in the constructor (so that signal handlers
 * never call dlsym) and on first use by wrappers called earlier. */
struct ks_rt_real {
	int (*sigaction)(int, const struct sigaction *, struct sigaction *);
	int (*sigprocmask)(int, const sigset_t *, sigset_t *);
	int (*pthread_sigmask)(int, const sigset_t *, sigset_t *);
	void (*(*signal)(int, void (*)(int)))(int);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	pid_t (*fork)(void);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	void (*_exit)(int);
	void (*_Exit)(int);
	int (*dlclose)(void *);
	/* blocking calls restarted after kscope's signals (rt_restart.c) */
	int (*poll)(void *, unsigned long, int);
	int (*ppoll)(void *, unsigned long, const struct timespec *, const sigset_t *);
	int (*select)(int, void *, void *, void *, struct timeval *);
	int (*pselect)(int, void *, void *, void *, const struct timespec *, const sigset_t *);
	int (*epoll_wait)(int, void *, int, int);
	int (*epoll_pwait)(int, void *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, void *, int, const struct timespec *, const sigset_t *);
	int (*nanosleep)(const struct timespec *, struct timespec *);
	int (*clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
	int (*sigsuspend)(const sigset_t *);
	int (*sigtimedwait)(const sigset_t *, siginfo_t *, const struct timespec *);
	int (*sigwaitinfo)(const sigset_t *, siginfo_t *);
	int (*pause)(void);
	int (*semop)(int, void *, size_t);
	int (*semtimedop)(int, void *, size_t, const struct timespec *);
	ssize_t (*msgrcv)(int, void *, size_t, long, int);
	int (*msgsnd)(int, const void *, size_t, int);
	int (*__poll_chk)(void *, unsigned long, int, size_t);
	int (*__ppoll_chk)(void *, unsigned long, const struct timespec *, const sigset_t *,
			   size_t);
};

/* The real function `fn` (a member of struct ks_rt_real), resolving it on
 * first use. */
#define KS_RT_REAL(fn) \
	((__typeof__(ks_rt.real.fn))ks_rt_real_get(&ks_rt.real.fn, #fn))
/* *slot (a function pointer), set from dlsym(RTLD_NEXT, name) if NULL. */
void *ks_rt_real_get(void *slot, const char *name);

/* A module already written to the file. */
struct ks_rt_modseen {
	uint64_t base, low, high;
	uint64_t name_hash;
};

/* The runtime's state: one per process.  A global because a preloaded
 * library has no caller to receive a context from: its entry points are
 * the constructor, wrapped libc functions and signal handlers. */
struct ks_rt {
	struct ks_rt_opts opts;
	struct ks_rt_real real;
	_Atomic int state;               /* KS_RT_* */
	_Atomic unsigned gate;           /* KS_RT_GATE_*: samples only at 0 */
	_Atomic bool sampler_on[2];      /* a sampler stopped for lack of a signal */
	_Atomic int sig[2];              /* signal number per sampler */
	pid_t pid;                       /* the process that owns the file */
	uint64_t origin_ns;              /* CLOCK_MONOTONIC at start: windows */
	_Atomic uint64_t phase_seq;      /* counter of the timers' random first
					  * expiries (rt_timer_async.c) */
	/* The real-time sampler's budget (rt_timer_async.c): with more live
	 * threads than KS_RAW_REALTIME_BUDGET / realtime_freq, every real-time
	 * timer runs rt_mult times slower, each sample standing for rt_mult
	 * periods. */
	_Atomic uint32_t rt_timers;      /* live real-time timers */
	_Atomic uint32_t rt_mult;        /* the current slowdown, >= 1 */
	_Atomic uint32_t rt_mult_max;    /* the largest it was */
	_Atomic uint32_t rt_mult_applied;/* the one every timer was last set to */
	_Atomic bool rt_rebudget;        /* asks the writer to re-arm them now */
	/* the periods' sequence (rt_window_async.c) */
	_Atomic uint32_t win_cur;        /* the period running */
	_Atomic uint64_t win_start[KS_SPEC_MAX_PERIODS]; /* on its clock, ns */

	/* the raw file */
	char path[4200];                 /* for reopening (see file_check) */
	int fd;
	dev_t fd_dev;                    /* to tell our fd from a reused number */
	ino_t fd_ino;
	bool fd_broken;                  /* a write failed: no more writes */
	uint64_t fd_off;                 /* bytes written */
	uint64_t exec_off;               /* file size before an exec flush's END */
	struct ks_raw_file_header hdr;
	_Atomic pid_t file_owner;        /* tid holding the file lock, or 0 */
	int statm_fd;                    /* /proc/self/statm for RSS */
	dev_t statm_dev;
	ino_t statm_ino;

	/* buffers */
	uint32_t buf_bytes;              /* capacity of a buffer (from &chunk) */
	pthread_mutex_t pool_lock;       /* normal code only */
	struct ks_rt_buf *pool;          /* free buffers (pool_lock) */
	_Atomic(struct ks_rt_buf *) queue; /* full buffers, newest first */
	_Atomic uint32_t queued_lazy;    /* ended threads' buffers queued
					  * without waking the writer */
	sem_t wake;                      /* posted when the queue grows */
	_Atomic uint64_t dropped;        /* samples lost since the last record */

	/* threads */
	_Atomic(struct ks_rt_thread *) threads;
	_Atomic uint32_t next_index;
	pthread_key_t key;               /* its destructor ends a thread */

	/* per-sample counters */
	uint32_t counter_mask;           /* supported counters */
	const struct ks_counter_def *counter_def[KS_RAW_MAX_COUNTERS]; /* counters.c's */
	int32_t counter_errno[KS_RAW_MAX_COUNTERS]; /* why one is not supported, or 0 */

	/* libunwind's code, whose own sigprocmask calls are left alone */
	uintptr_t unwind_lo, unwind_hi;

	/* signals */
	pthread_mutex_t sig_lock;        /* changes to sigs[] and sampler moves */
	struct ks_rt_sigtrack sigs[NSIG];

	/* modules already recorded (mod_lock) */
	pthread_mutex_t mod_lock;
	struct ks_rt_modseen *mods;
	size_t nmods, capmods;
	unsigned long long mod_adds;     /* dlpi_adds at the last poll (writer) */
	char exe_path[4096];             /* the executable, from /proc/self/exe */

	/* user API and MPI */
	_Atomic uint64_t next_range;
	_Atomic int32_t rank;

	/* end */
	_Atomic int exit_status;
	pthread_t writer;
	bool writer_started;
	_Atomic bool writer_stop;
};

extern struct ks_rt ks_rt;

static inline bool ks_rt_on(void)
{
	int s = atomic_load_explicit(&ks_rt.state, memory_order_acquire);
	return s == KS_RT_RUNNING || s == KS_RT_EXECFLUSH;
}

/* CLOCK_MONOTONIC in ns (async-signal-safe). */
uint64_t ks_rt_now(void);
pid_t ks_rt_gettid(void);

/* Opens <run>/raw/<pid>[.<n>].ksraw and writes the header and the
 * process records (constructor, fork child).  0 or -errno. */
int ks_rt_file_start(bool forked);
/* Rewrites the header in place (rank learnt, signal moved). */
void ks_rt_header_update(void);
/* Moves a descriptor out of the program's usual range, close-on-exec. */
int ks_rt_fd_high(int fd);
/* Whether fd is still the file (dev, ino) kscope opened: a program may
 * close descriptors it does not know and reuse the numbers, and kscope
 * must then neither read, write nor close them (async-signal-safe). */
bool ks_rt_fd_is(int fd, dev_t dev, ino_t ino);
/* The same for a perf_event descriptor, by its event id. */
bool ks_rt_perf_fd_is(int fd, uint64_t id);

/* The file lock: serializes writes to the raw file between the writer
 * thread and flushes.  timeout_ms < 0 waits forever.  Returns 1 if taken,
 * 2 if the caller already holds it, 0 if it timed out. */
int ks_rt_file_lock(int timeout_ms);
void ks_rt_file_unlock(void);
/* With the file lock: appends bytes (async-signal-safe). */
int ks_rt_file_write(const void *p, size_t n);
/* With the file lock: writes every queued buffer; give_back returns them
 * to their threads or the pool (normal context only). */
void ks_rt_flush_queue(bool give_back);
/* Writes one buffer's chunk (file lock held). */
int ks_rt_write_buf(struct ks_rt_buf *b);
/* Gives a written buffer back to its thread or the pool. */
void ks_rt_buf_return(struct ks_rt_buf *b);
/* Appends a KS_RAW_DROPPED record if samples were lost (file lock). */
void ks_rt_write_dropped(void);

/* The final flush: every thread's records, DROPPED, then END with reason
 * and status.  For KS_RAW_END_EXEC the process continues if exec fails:
 * see ks_rt_exec_failed.  Async-signal-safe when from_signal. */
void ks_rt_finish(uint32_t reason, int32_t status, bool from_signal);
/* Undoes the END of an exec flush after exec failed. */
void ks_rt_exec_failed(void);

/* Module records for objects not yet recorded (normal context). */
void ks_rt_modules_scan(void);
/* Scans only if the loader reports objects added since the last scan
 * (dl_phdr_info.dlpi_adds); cheap enough for every writer tick. */
void ks_rt_modules_poll(void);
void ks_rt_modules_reset(void);

int ks_rt_writer_start(void);

/* Resolves every member of ks_rt.real (constructor). */
void ks_rt_real_resolve(void);

#endif
