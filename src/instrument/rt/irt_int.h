/*
 * libkscope-instr.so's internals, shared by its files and by nothing
 * else: the per-thread shadow stack and counters, and the process-wide
 * state of the preloaded runtime.
 *
 * The contract with kscope (docs/instrument.md): kscope sets
 * KSCOPE_INSTR_DIR (the run directory), KSCOPE_INSTR_MIN,
 * KSCOPE_INSTR_INCLUDE and KSCOPE_INSTR_EXCLUDE (the selection),
 * KSCOPE_INSTR_TRACE_LIMIT (calls per thread in the trace),
 * KSCOPE_INSTR_MODULES (which libraries to patch too); each
 * process writes <dir>/instr.<pid>.txt when it exits.
 */
#ifndef KS_IRT_INT_H
#define KS_IRT_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/perf_event.h>

#include "instr.h"
#include <unwind.h>

#define IRT_ENV_DIR "KSCOPE_INSTR_DIR"
#define IRT_ENV_MIN "KSCOPE_INSTR_MIN"
#define IRT_ENV_INCLUDE "KSCOPE_INSTR_INCLUDE"
#define IRT_ENV_EXCLUDE "KSCOPE_INSTR_EXCLUDE"
#define IRT_ENV_TRACE "KSCOPE_INSTR_TRACE_LIMIT"
#define IRT_ENV_MODULES "KSCOPE_INSTR_MODULES"

/* A trampoline: [id, 4 bytes][call *[rip+d], 6 bytes][moved instructions]
 * [jmp back].  The entry thunk finds the function's id 10 bytes before
 * the resume address the call pushed. */
#define IRT_STUB_ID_BACK KS_INSTR_STUB_ID_BACK
#define IRT_STUB_SIZE KS_INSTR_STUB_SIZE
#define IRT_STACK_FRAMES (1u << 16) /* shadow stack depth per thread */
/* The call graph: per thread, an open-addressing table of (caller,
 * callee) edges.  Callers are function ids, or these two: */
#define IRT_EDGE_BITS 15
#define IRT_EDGES (1u << IRT_EDGE_BITS)
#define IRT_EDGE_PROBES 64          /* then the call is not attributed */
#define IRT_NO_EDGE UINT32_MAX
#define IRT_TRACE_MAX 10000000u      /* calls per thread in the trace, at most */
#define IRT_CALLER_ROOT UINT32_MAX     /* code kscope did not instrument */
#define IRT_CALLER_SIGNAL (UINT32_MAX - 1) /* the kernel, delivering a signal */

/* One open call on a thread's shadow stack. */
struct irt_frame {
	uintptr_t *slot;   /* where its return address is on the real stack */
	uintptr_t ret;     /* the original return address */
	uint64_t t0;       /* entry time, in ticks */
	uint64_t child;    /* ticks spent in calls it made */
	int64_t off0;      /* the thread's off-CPU clock at entry (ns) */
	uint64_t child_off; /* off-CPU ns within calls it made */
	uint32_t id;
	uint32_t edge;     /* its call-graph edge (index), or IRT_NO_EDGE */
	uint32_t ev;       /* its trace event (index), or IRT_NO_EDGE */
	uint32_t pad;
};

/* One call in the thread's trace: the first calls of each thread, up to
 * the limit, in the order they began (so a call's caller, which began
 * before it, is in the trace whenever it is).  t1 is 0 while it runs. */
struct irt_event {
	uint64_t t0, t1;   /* ticks */
	uint32_t id;
	uint32_t depth;    /* shadow frames below it */
};

/* One function's counters on one thread, in ticks. */
struct irt_stat {
	uint64_t calls;    /* entries */
	uint64_t closed;   /* calls whose end was seen */
	uint64_t incl;     /* inclusive time of its outermost activations */
	uint64_t excl;     /* exclusive time */
	uint64_t sum;      /* sum of every call's inclusive time (mean) */
	uint64_t min, max; /* per call, inclusive */
	uint64_t offi;     /* ns of incl the thread spent switched out */
	uint64_t offx;     /* ns of excl the thread spent switched out */
	uint32_t active;   /* activations open now (recursion) */
	uint32_t pad;
};

/* One call-graph edge on one thread.  key: 0 for a free entry, else
 * ((uint64_t)(caller + 1) << 32 | (callee + 1)), caller + 1 wrapping the
 * two special callers to 0 and UINT32_MAX; set once, by compare and
 * swap (an instrumented signal handler may insert meanwhile). */
struct irt_edge {
	uint64_t key;
	uint64_t calls;
	uint64_t incl;     /* like irt_stat's: calls of a callee not already open */
};

/* The thread's CPU clock (irt_cpu_open).  Its off-CPU time so far is
 * the time now (CLOCK_MONOTONIC) less its own CPU clock
 * (CLOCK_THREAD_CPUTIME_ID): a constant while it runs, read again (a
 * system call) only when the page of a perf event of its own says it was
 * switched out and in since.  CPU time = wall time - off-CPU time. */
struct irt_cpu {
	const volatile struct perf_event_mmap_page *pm; /* NULL: no CPU clock */
	uint32_t lock;     /* pm->lock when off was computed */
	int64_t off;       /* off-CPU ns so far, + adj */
	int64_t adj;       /* keeps off continuous across a fork */
	size_t len;        /* of the mapping */
};

struct irt_thread {
	struct irt_cpu cpu;
	bool cpu_known;            /* the CPU clock ran for the thread's life */
	struct irt_frame *stack;   /* IRT_STACK_FRAMES of them, mmap'd */
	uint32_t depth;
	struct irt_stat *stats;    /* one per function of the image, mmap'd */
	struct irt_edge *edges;    /* IRT_EDGES of them, mmap'd */
	uint64_t edges_lost;       /* calls no edge entry was found for */
	struct irt_event *events;  /* irt_g.trace_limit of them, mmap'd */
	uint32_t nev;
	uint64_t ev_dropped;       /* calls past the limit */
	uint64_t overflow;         /* calls made with the shadow stack full */
	uint64_t unwound;          /* frames found skipped (longjmp) */
	pid_t tid;
	int64_t off_end;           /* its off-CPU clock when the results are written */
	bool ended;
	struct irt_thread *next;   /* in irt_g.threads */
};

/* The one process-wide state.  A preloaded library has no caller to
 * hand a context to: the patched code reaches the runtime through the
 * thunks only, so this must be a global. */
struct irt_global {
	bool active;               /* patched and recording */
	bool use_clock;            /* no invariant TSC: clock_gettime instead */
	size_t page;               /* the system's page size */
	uint32_t nfuncs;
	uint32_t trace_limit;      /* calls per thread in the trace */
	uintptr_t exit_addr;       /* irt_exit_thunk */
	struct irt_thread *threads;
	int lock;                  /* spin lock over threads */
};

extern struct irt_global irt_g;

/* The thunks (irt_thunk.c). */
void irt_entry_thunk(void);
void irt_exit_thunk(void);

/* The hooks (irt_hook_async.c); called by the thunks only. */
int irt_enter(uintptr_t resume, uintptr_t *slot);
uintptr_t irt_exit(uintptr_t *slot);
/* Makes the calling thread's state; 0, or -1 when it cannot. */
int irt_thread_start(void);
/* Closes a thread's open frames at now (its end). */
void irt_thread_close_all(struct irt_thread *t, uint64_t now, int64_t off);
/* Closes, at now, the thread's frames whose slot lies below limit (the
 * calls a longjmp left). */
void irt_thread_pop_below(struct irt_thread *t, uintptr_t limit, uint64_t now, int64_t off);
uint64_t irt_now(void);
/* The thread's off-CPU clock now, in ns (struct irt_cpu); 0 without one.
 * Async-signal-safe; a load and a compare unless the thread was
 * switched out since it was last read. */
int64_t irt_off(struct irt_thread *t);
/* irt_now() and irt_off(t) of one same moment. */
uint64_t irt_now_off(struct irt_thread *t, int64_t *off);
/* The same for any thread of the process, read from another at mono
 * (CLOCK_MONOTONIC ns), from the thread's CPU clock. */
int64_t irt_off_of(const struct irt_thread *t, uint64_t mono);
/* Opens the calling thread's CPU clock, its off-CPU time so far
 * continuing from off (irt_main.c); false, and the reason noted once,
 * when the system refuses it. */
bool irt_cpu_open(struct irt_thread *t, int64_t off);
/* Ends the thread's CPU clock, its off-CPU time frozen at off. */
void irt_cpu_close(struct irt_thread *t, int64_t off);
/* CLOCK_MONOTONIC, in ns. */
uint64_t irt_mono_ns(void);
/* The CPU clock (CLOCK_THREAD_CPUTIME_ID) of thread tid of this process,
 * in ns (a system call); -1 when the thread is gone. */
int64_t irt_thread_cpu_ns(pid_t tid);
struct irt_thread *irt_self_get(void);
void irt_self_set(struct irt_thread *t);

/* The functions kscope calls in a process it attached to (--pid), in
 * this order; their names are in instr.h (KS_INSTR_FN_*), their
 * contract in irt_main.c. */
int kscope_instr_attach_setup(const char *block, size_t len, char *msg, size_t cap,
			      size_t npcs_max, uintptr_t **pcs_buf);
int kscope_instr_attach_patch(const uintptr_t *pcs, size_t npcs, char *msg, size_t cap);
int kscope_instr_detach_unpatch(void);
int kscope_instr_detach_write(void);

/* The functions the runtime wraps (irt_got.c): the unwinder's
 * (irt_unwind.c) and the exec family (irt_exec.c). */
enum {
	IRT_W_RAISE, IRT_W_FORCED, IRT_W_BACKTRACE, IRT_W_EXECVE, IRT_W_EXECV,
	IRT_W_EXECVPE, IRT_W_EXECVP, IRT_W_FEXECVE, IRT_W_EXECL, IRT_W_EXECLP,
	IRT_W_EXECLE, IRT_NWRAPS
};
struct irt_wrap {
	const char *name;
	void *wrapper;
	void *real;       /* the wrapped definition, once found */
};
extern struct irt_wrap irt_wraps[IRT_NWRAPS];
/* The real function w: found by irt_got_hook (attached), else the next
 * definition after this library's (preloaded). */
void *irt_real(int w);
/* Attached (--pid): points the loaded objects' GOT entries of the
 * wrapped functions at the wrappers, as preloading does by
 * interposition; 0, or -1. */
int irt_got_hook(void);

/* The wrappers; each exported under the wrapped function's name too. */
_Unwind_Reason_Code irt_wrap_raise(struct _Unwind_Exception *e);
_Unwind_Reason_Code irt_wrap_forced(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop, void *arg);
_Unwind_Reason_Code irt_wrap_backtrace(_Unwind_Trace_Fn fn, void *arg);
int irt_wrap_execve(const char *path, char *const argv[], char *const envp[]);
int irt_wrap_execv(const char *path, char *const argv[]);
int irt_wrap_execvpe(const char *file, char *const argv[], char *const envp[]);
int irt_wrap_execvp(const char *file, char *const argv[]);
int irt_wrap_fexecve(int fd, char *const argv[], char *const envp[]);
int irt_wrap_execl(const char *path, const char *arg, ...);
int irt_wrap_execlp(const char *file, const char *arg, ...);
int irt_wrap_execle(const char *path, const char *arg, ...);

/* Around an exec (irt_exec.c): the results written before it, removed
 * again when it fails (irt_main.c). */
void irt_exec_begin(void);
void irt_exec_failed(void);

void irt_lock(void);
void irt_unlock(void);

#endif
