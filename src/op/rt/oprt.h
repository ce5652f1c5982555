/*
 * The interface between the runtime-neutral part of libkscope-op.so
 * (src/op/rt: the channel to kscope, the configuration, the launch
 * filters, the replay drivers and the raw files) and the backend of one
 * accelerator runtime (src/op/opencl, src/op/cuda: each a table of
 * operations).  The backend of a process is the runtime it calls first
 * (ks_oprt_backend_use).
 *
 * A backend wraps its runtime's entry points and keeps records of the
 * program's objects.  For each kernel launch the program makes, its
 * wrapper holds the replay lock shared (ks_oprt_shared_lock), describes the
 * launch (struct ks_oprt_launch) and asks ks_oprt_launch_decide() what to
 * do.  On KS_OPRT_PASS it forwards the launch itself; anything else it
 * hands to ks_oprt_launch_handle() after dropping the shared lock, which
 * takes the lock exclusively (so no other thread launches, releases or
 * finishes anything meanwhile), drives the replay through the backend's
 * table of operations (struct ks_oprt_backend) and makes the program's own
 * launch through it too.
 *
 * A replay ("rep") is the backend's own object: an ordered list of
 * captured launches (one in kernel replay, the launches of a range in
 * range replay), each with a fresh kernel object carrying the recorded
 * arguments, and the argument buffers they use, each with up to two
 * snapshots (slot 0: before, slot 1: after a range).  The neutral part
 * only sees the buffers' figures (struct ks_oprt_buf).
 *
 * Also here: the JSON text builder the raw files are written with, which
 * backends use to describe launches in context.json.
 */
#ifndef KS_OPRT_H
#define KS_OPRT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Symbols the program must see (wrapped entry points, the user API);
 * everything else in the library is hidden (-fvisibility=hidden). */
#define KS_OPRT_EXPORT __attribute__((visibility("default")))

/* Thread-local variables of the library: the library is loaded at start
 * (LD_PRELOAD), so the static TLS model is valid and spares a call to
 * __tls_get_addr on every wrapped call. */
#define KS_OPRT_TLS _Thread_local __attribute__((tls_model("initial-exec")))

/* ------------------------------------------------------------------ */
/* JSON text (oprt_json.c)                                             */
/* ------------------------------------------------------------------ */

#define KS_OPRT_JSON_DEPTH 16

/* A JSON document being written into a growing buffer.  Each value is
 * added with the key it has in the enclosing object (key NULL inside an
 * array).  Strings are escaped; bytes that are not UTF-8 become U+FFFD.
 * Allocation failures and nesting errors set `bad`; the document is then
 * not written. */
struct ks_oprt_json {
	char *buf;                        /* NUL-terminated text (owned) */
	size_t len, cap;
	bool bad;
	int depth;
	struct {
		bool array;
		bool multiline;               /* a member went on its own line */
		unsigned n;                   /* members so far */
	} level[KS_OPRT_JSON_DEPTH];
};

void ks_oprt_json_init(struct ks_oprt_json *j);
void ks_oprt_json_free(struct ks_oprt_json *j);
void ks_oprt_json_obj_open(struct ks_oprt_json *j, const char *key);
void ks_oprt_json_obj_close(struct ks_oprt_json *j);
void ks_oprt_json_arr_open(struct ks_oprt_json *j, const char *key);
void ks_oprt_json_arr_close(struct ks_oprt_json *j);
/* s NULL writes null. */
void ks_oprt_json_str(struct ks_oprt_json *j, const char *key, const char *s);
/* len bytes of s (which may hold NULs: written as \u0000). */
void ks_oprt_json_strn(struct ks_oprt_json *j, const char *key, const char *s, size_t len);
void ks_oprt_json_u64(struct ks_oprt_json *j, const char *key, uint64_t v);
void ks_oprt_json_i64(struct ks_oprt_json *j, const char *key, int64_t v);
/* Non-finite values are written as null. */
void ks_oprt_json_num(struct ks_oprt_json *j, const char *key, double v);
void ks_oprt_json_bool(struct ks_oprt_json *j, const char *key, bool v);
void ks_oprt_json_null(struct ks_oprt_json *j, const char *key);

/* ------------------------------------------------------------------ */
/* Kernel names                                                        */
/* ------------------------------------------------------------------ */

struct ks_oprt_ordinals;

/* A kernel name, interned once per process (oprt_launch.c) so that the
 * per-launch decisions need no string work.  Lives until exit. */
struct ks_oprt_name {
	const char *name;
	bool match;                       /* passes config's kernel_name */
	bool target;                      /* named in config's targets file */
	bool capture;                     /* its launches may be replayed: the
	                                     backend records their arguments */
	atomic_bool announced;            /* `kernel name=` has been sent */
	struct ks_oprt_ordinals *ord;     /* launches per global size (under
	                                     the names lock) */
	struct ks_oprt_name *next;        /* hash chain */
};

/* The record of name, created on first use.  NULL when out of memory. */
struct ks_oprt_name *ks_oprt_name_get(const char *name);

/* ------------------------------------------------------------------ */
/* Launches                                                            */
/* ------------------------------------------------------------------ */

/* One kernel launch the program is making, as the neutral part sees it. */
struct ks_oprt_launch {
	struct ks_oprt_name *name;
	unsigned dim;                     /* 1 to 3 */
	uint64_t gsize[3];                /* global size; 1 past dim */
	void *be;                         /* the backend's description */
	/* Set by ks_oprt_launch_decide(): */
	uint64_t index;                   /* among all the process's launches */
	uint64_t ordinal;                 /* among launches of name with gsize */
	char range[256];                  /* innermost open included range */
};

enum ks_oprt_verdict {
	KS_OPRT_PASS,                     /* forward, nothing else */
	KS_OPRT_COLLECT,                  /* kernel replay or application run 0 */
	KS_OPRT_TIME,                     /* application run >= 1: a target */
	KS_OPRT_RECORD,                   /* range replay: inside a collected range */
};

struct ks_oprt_decision {
	enum ks_oprt_verdict verdict;
	char dir[512];                    /* COLLECT: "<pid>/<kernel>_<index>" */
};

/* The index the process's next launch gets (ks_oprt_launch_decide). */
extern atomic_ullong ks_oprt_launch_index;
/* Which launches can only pass, whatever else happens: set with the
 * configuration.  KS_OPRT_FAST_NONE: none is known in advance (range
 * replay, or --launch-skip-before-match, which counts every launch);
 * KS_OPRT_FAST_NO_MATCH: those of a name --kernel-name does not match;
 * KS_OPRT_FAST_NO_TARGET: in a timing run, those of a name with no
 * target. */
enum { KS_OPRT_FAST_NONE, KS_OPRT_FAST_NO_MATCH, KS_OPRT_FAST_NO_TARGET };
extern int ks_oprt_fast_rule;

/* The decision for a launch of nm that can only pass, without the launch
 * record: true (and the launch counted, as ks_oprt_launch_decide counts
 * it) when nm was announced and the launch can only pass; the backend
 * then forwards it.  False: ask ks_oprt_launch_decide.  This is the path
 * of every launch kscope does not collect, so it stays a few loads. */
static inline bool ks_oprt_launch_fast_pass(const struct ks_oprt_name *nm)
{
	if (!nm || !atomic_load_explicit(&nm->announced, memory_order_relaxed))
		return false;
	switch (ks_oprt_fast_rule) {
	case KS_OPRT_FAST_NO_MATCH:
		if (nm->match)
			return false;
		break;
	case KS_OPRT_FAST_NO_TARGET:
		if (nm->target)
			return false;
		break;
	default:
		return false;
	}
	atomic_fetch_add_explicit(&ks_oprt_launch_index, 1, memory_order_relaxed);
	return true;
}

/* What to do with l (fills its index, ordinal and range).  Call with the
 * replay lock held shared.  Sends `kernel` and `launch` as needed and
 * waits for kscope's answer to `launch`. */
enum ks_oprt_verdict ks_oprt_launch_decide(struct ks_oprt_launch *l,
					   struct ks_oprt_decision *d);
/* Carries out a verdict other than PASS; call with the replay lock NOT
 * held.  Returns the status of the program's own launch, which the
 * backend made through launch_original(). */
int ks_oprt_launch_handle(struct ks_oprt_launch *l, const struct ks_oprt_decision *d);

/* ------------------------------------------------------------------ */
/* Replays                                                             */
/* ------------------------------------------------------------------ */

enum { KS_OPRT_SLOT_BEFORE = 0, KS_OPRT_SLOT_AFTER = 1 };

/* One argument buffer of a replay, as measure.json reports it.  The
 * backend fills it; basis strings are static. */
struct ks_oprt_buf {
	unsigned launch;                  /* the captured launch that uses it
	                                     first (0 outside ranges) */
	unsigned arg;                     /* its argument index there */
	bool not_arg;                     /* reached by no argument: backed
	                                     up for --backup all (arg unused) */
	uint64_t base;                    /* not_arg: its device address */
	uint64_t bytes;
	bool may_read, may_write;
	bool backed_up;
	bool written_known;               /* bytes_written was measured */
	uint64_t bytes_read, bytes_written;
	const char *read_basis, *write_basis;
};

/* A replay's hardware counters (the CUDA backend's CUPTI figures): what
 * measure.json's "hardware" holds. */
#define KS_OPRT_HW_MAX 8
struct ks_oprt_hw {
	bool tried;                       /* the backend was asked */
	bool have;                        /* values measured */
	char source[600];                 /* have: what measured them */
	char why[400];                    /* !have: why not */
	size_t n;
	const char *names[KS_OPRT_HW_MAX]; /* static strings */
	double values[KS_OPRT_HW_MAX];
};

/* The operations of one accelerator runtime.  Every int-returning
 * operation returns 0, or a negative value with err saying what failed
 * (naming the runtime call and its error, e.g. "clEnqueueNDRangeKernel
 * returned CL_INVALID_WORK_GROUP_SIZE"). */
struct ks_oprt_backend {
	const char *name;                 /* also the type of the message that
	                                     says the program uses it */
	int (*init)(struct ks_err *err);
	void (*fini)(void);

	/* Waits for launch's wait list (launch may be NULL) and drains every
	 * command queue of the program, so that a replay runs alone and sees
	 * settled memory. */
	int (*quiesce)(void *launch, struct ks_err *err);
	/* Streams through a buffer larger than the caches of launch's
	 * device and of the host; *bytes: its size. */
	int (*flush)(void *launch, uint64_t *bytes, struct ks_err *err);
	/* The program's own launch.  With timed (only after quiesce()), it
	 * is waited for, and *ns (when *have_ns) is its END - START; the
	 * backend may run it on a queue of its own when the program's queue
	 * does not profile and the program asked for no event.  Returns the
	 * runtime's status, which is the program's to see. */
	int (*launch_original)(void *launch, bool timed, uint64_t *ns, bool *have_ns);
	/* The name of a status launch_original() returned ("CL_SUCCESS"). */
	const char *(*status_name)(int status);

	void *(*rep_new)(void);
	/* Captures launch (index: its launch index) at the end of rep: a
	 * fresh kernel object with the recorded arguments, its work sizes,
	 * and the buffers it uses not seen before in rep. */
	int (*rep_add)(void *rep, void *launch, uint64_t index, struct ks_err *err);
	/* Copies into slot every buffer rep's launches may write that has no
	 * copy there yet (range replay calls it after each capture: the first
	 * copy of a buffer is its state before the range). */
	int (*rep_backup)(void *rep, int slot, struct ks_err *err);
	/* Writes slot back into the buffers (no-op for those not backed up). */
	int (*rep_restore)(void *rep, int slot, struct ks_err *err);
	int (*rep_flush)(void *rep, uint64_t *bytes, struct ks_err *err);
	/* Runs rep's launches in order, on the program's queue when it
	 * profiles, else on a queue of the backend's own with profiling (one
	 * per queue of the program the launches came from), and waits:
	 * *start_ns is the first launch's START, *dur_ns the last END minus
	 * that (device clock). */
	int (*rep_run)(void *rep, uint64_t *start_ns, uint64_t *dur_ns, struct ks_err *err);
	/* Sets each backed-up buffer's bytes_written: the bytes that now
	 * differ from slot. */
	int (*rep_diff)(void *rep, int slot, struct ks_err *err);
	struct ks_oprt_buf *(*rep_bufs)(void *rep, size_t *n);
	/* Writes context.json's members after kind, name, index, pid and tid:
	 * platform, device, program, queue, and work and args (kernel) or
	 * launches (range). */
	void (*rep_describe)(void *rep, bool range, struct ks_oprt_json *j);
	/* The program of rep's first launch as given to the runtime: *file is
	 * "kernel.cl", "kernel.bin" or "kernel.il", or NULL when unknown;
	 * *data (len bytes) belongs to rep. */
	void (*rep_program)(void *rep, const char **file, const void **data, size_t *len);
	void (*rep_free)(void *rep);
	/* Optional.  At exit, when the program launched nothing through any
	 * backend: whether it tried this runtime and could not use it (no
	 * driver, no device), with why in buf, one line. */
	bool (*why_unusable)(char *buf, size_t size);
	/* Optional.  Runs rep's launches once more under the platform's
	 * hardware counters (the buffers restored and the caches flushed
	 * before), filling hw; 0, or -1 with hw->why. */
	int (*rep_hw)(void *rep, struct ks_oprt_hw *hw);
	/* Optional.  At exit, for the backend the process used: whether
	 * something the user should know was not profiled (kernels run by
	 * CUDA graphs), with what in buf, one line. */
	bool (*exit_note)(char *buf, size_t size);
	/* Optional, around fork() (pthread_atfork, oprt_main.c), for the
	 * backend the process uses.  fork_prepare takes the backend's locks
	 * without waiting and says whether it got them all; fork_release
	 * gives them back, in the parent, or makes them new in the child
	 * (one thread, which holds them).  A backend without them leaves a
	 * child forked after the process used it unprofiled. */
	bool (*fork_prepare)(void);
	void (*fork_release)(bool child);
};

/* ------------------------------------------------------------------ */
/* What the neutral part offers backends                                */
/* ------------------------------------------------------------------ */

/* Whether the runtime is on: the channel gave a configuration.  When off,
 * wrappers only forward.  ks_oprt_pending: kscope's address is known and
 * this process has not connected yet; the first ks_oprt_active() then
 * connects (ks_oprt_connect), so that a process that never calls an
 * accelerator runtime never connects.  Call ks_oprt_active() before
 * taking any lock of the library's. */
extern atomic_bool ks_oprt_on;
extern atomic_bool ks_oprt_pending;
bool ks_oprt_connect(void);

static inline bool ks_oprt_active(void)
{
	if (atomic_load_explicit(&ks_oprt_on, memory_order_acquire))
		return true;
	return atomic_load_explicit(&ks_oprt_pending, memory_order_acquire) &&
	       ks_oprt_connect();
}

/* The replay lock: every wrapper that enqueues, finishes or releases
 * holds it shared; a replay holds it exclusively.  A thread that already
 * holds it (a runtime callback calling back into a wrapper) does not take
 * it again: ks_oprt_shared_lock() then returns false, and the wrapper
 * should only forward. */
bool ks_oprt_shared_lock(void);
void ks_oprt_shared_unlock(void);

/* Whether the program's command queues must have profiling turned on:
 * in application replay, where what is measured is the program's own
 * launch, on its own queue.  Kernel and range replay run their passes on
 * a queue of the backend's own and leave the program's queues as the
 * program made them, so that launches kscope does not collect cost what
 * they cost without it. */
bool ks_oprt_profile_program_queues(void);

/* The backend of the process: NULL until the program calls an
 * accelerator runtime.  ks_oprt_backend_choose makes be the backend
 * unless another already is; whether be is the backend. */
extern _Atomic(const struct ks_oprt_backend *) ks_oprt_cur_be;
bool ks_oprt_backend_choose(const struct ks_oprt_backend *be);

/* Makes be the backend of this process unless another is already: the
 * first accelerator runtime a program calls is the one profiled, and a
 * program calling both has the other one's calls only forwarded.
 * Whether be is the backend.  Cheap after the first call (one load). */
static inline bool ks_oprt_backend_use(const struct ks_oprt_backend *be)
{
	const struct ks_oprt_backend *cur =
		atomic_load_explicit(&ks_oprt_cur_be, memory_order_acquire);

	return cur ? cur == be : ks_oprt_backend_choose(be);
}

/* Sends `<backend name> platform=P device=D driver=V` once per process
 * (call after ks_oprt_backend_use returned true). */
void ks_oprt_runtime_used(const char *platform, const char *device, const char *driver);

/* Test hook: whether KSCOPE_OP_TEST_FAIL_REPLAY names this kernel, whose
 * replay launches must then fail as if the runtime had run out of
 * resources (tests/op/rt uses it to test failed replays). */
bool ks_oprt_test_fail_replay(const char *kernel);

/* Whether kscope op asked to back up every live allocation of the
 * device (--backup all), not only those the arguments point into. */
bool ks_oprt_backup_all(void);

/* Monotonic clock, ns. */
uint64_t ks_oprt_now(void);

/* The backends built into this library (opencl/ocl_backend.c,
 * cuda/cuda_backend.c where the CUDA toolkit's headers were found). */
extern const struct ks_oprt_backend ks_oprt_opencl_backend;
#ifdef KS_OPRT_HAVE_CUDA
extern const struct ks_oprt_backend ks_oprt_cuda_backend;
#endif

#endif
