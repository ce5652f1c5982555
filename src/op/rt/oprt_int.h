/*
 * Private header of the runtime-neutral part of libkscope-op.so, the
 * runtime of `kscope op` preloaded into the profiled program.  It declares
 * the library's one piece of process-wide state (struct ks_oprt_state)
 * and the functions the oprt_*.c files share.  Backends include oprt.h
 * only.
 *
 * How the parts fit together:
 *   oprt_main.c      constructor, destructor, the connection on first
 *                    use, fork, the replay lock, the test hook; the
 *                    backends (OpenCL, CUDA) and which one a process uses
 *   oprt_chan.c      the channel to kscope (proto.h): its address, the
 *                    connection, hello, config, the request/reply pairs
 *   oprt_config.c    `config` into struct ks_oprt_config; the targets file
 *   oprt_launch.c    kernel names, ordinals, the filter state machine
 *                    (skip, range, name, then kscope's collect or pass)
 *   oprt_replay.c    kernel replay, application replay (run 0 and the
 *                    timed targets of later runs)
 *   oprt_range.c     the user API's ranges and range replay
 *   oprt_nvtx.c      NVTX ranges as user ranges (the NVTX injection)
 *   oprt_measure.c   a measurement in progress and measure.json
 *   oprt_raw.c       the launch directory and its files (opraw.h)
 *   oprt_json.c      JSON text
 *   oprt_counters.c  host hardware counters around a pass (perf_event_open)
 */
#ifndef KS_OPRT_INT_H
#define KS_OPRT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/un.h>

#include "filter.h"
#include "oprt_lock.h"
#include "oprt.h"
#include "proto.h"

enum ks_oprt_mode { KS_OPRT_MODE_KERNEL, KS_OPRT_MODE_APPLICATION, KS_OPRT_MODE_RANGE };

/* kscope's `config` message (proto.h). */
struct ks_oprt_config {
	enum ks_oprt_mode mode;
	unsigned long long skip;          /* launches (ranges) to skip */
	unsigned warmup, passes;
	bool flush, mstx;
	bool backup_all;                  /* --backup all */
	struct ks_op_filter *kernel_name; /* NULL: every kernel */
	struct ks_op_filter *mstx_include;/* NULL: every range */
	char dir[4096];                   /* the run directory (absolute) */
	bool timing_run;                  /* application run >= 1 (targets=) */
};

/* A user range that is open (kscope_range_start without its end yet). */
struct ks_oprt_open_range {
	uint64_t id;
	bool included;                    /* passes mstx_include */
	struct ks_oprt_open_range *prev, *next; /* in start order */
	char name[256];
};

/*
 * The library's state.  It must be process-wide: the wrapped entry points
 * and the user API are called by the program with no context of ours.
 * Fields set by the constructor, or by the first connection (under
 * conn_lock, before the runtime turns on), are read-only afterwards.
 *
 * After fork() the child resets what is per process (oprt_main.c,
 * oprt_atfork_child): the channel, the launch index, the names'
 * announcements and ordinals, the ranges; the configuration, the
 * backend and its records are the parent's.
 */
struct ks_oprt_state {
	struct ks_oprt_config cfg;
	unsigned run;                     /* KSCOPE_OP_RUN */
	bool child;                       /* a forked child that runs
	                                     unprofiled: the locks may be held
	                                     by threads it does not have */
	/* Where kscope listens (KSCOPE_OP_CHANNEL), read at load. */
	struct sockaddr_un addr;
	char token[KS_OP_TOKEN_LEN + 1];
	pthread_mutex_t conn_lock;        /* serializes connecting (first use) */
	bool configured;                  /* cfg parsed, backends started */
	char *fail_replay;                /* the test hook's kernel name, or NULL */

	/* The channel (oprt_chan.c).  chan_lock serializes request/reply
	 * pairs and guards fd, out and in. */
	pthread_mutex_t chan_lock;
	int fd;                           /* -1 once closed */
	struct ks_op_msg *out, *in;       /* allocated once (64 KiB each) */
	atomic_bool runtime_announced;

	/* Launch filtering (oprt_launch.c). */
	atomic_bool final;                /* kscope said pass final=1 */
	atomic_bool skip_done;            /* kscope said skip more=0 */
	pthread_mutex_t names_lock;       /* names, ordinals, targets */

	/* The replay lock (oprt_lock.h): writers preferred, so that a replay
	 * is not starved by threads that keep launching. */
	struct ks_rwl replay_lock;

	/* Ranges (oprt_range.c), under range_lock. */
	pthread_mutex_t range_lock;
	struct ks_oprt_open_range *ranges, *ranges_last;
	atomic_int open_included;         /* open ranges that pass mstx_include */
	uint64_t next_range_id;
	uint64_t ranges_seen;             /* every range started */
	uint64_t ranges_passed;           /* those that passed skip and include */
	atomic_bool recording;            /* rec is set */
	void *rec;                        /* the collected range being recorded */
	uint64_t rec_id;
	unsigned rec_launches;
	char rec_dir[512];
	char rec_name[256];
	uint64_t rec_index;
	char rec_error[512];              /* a launch could not be recorded */
};

extern struct ks_oprt_state ks_oprt;

/* The backend the replay drivers use: the process's, or OpenCL's before
 * the program called any runtime (a range may start before that). */
static inline const struct ks_oprt_backend *ks_oprt_be(void)
{
	const struct ks_oprt_backend *be =
		atomic_load_explicit(&ks_oprt_cur_be, memory_order_acquire);

	return be ? be : &ks_oprt_opencl_backend;
}

/* oprt_main.c: the replay lock held exclusively (replay drivers). */
void ks_oprt_excl_lock(void);
void ks_oprt_excl_unlock(void);

/* oprt_chan.c */
/* Reads kscope's address from KSCOPE_OP_CHANNEL (left set, for the
 * program's children) into ks_oprt.addr and token.  -ENOENT without the
 * variable, -EINVAL when it is malformed. */
int ks_oprt_chan_setup(struct ks_err *err);
/* Connects to that address, sends hello and receives config into
 * ks_oprt.in; sets ks_oprt.fd.  Any error leaves no channel.  Call with
 * conn_lock held. */
int ks_oprt_chan_connect(struct ks_err *err);
/* Locks the channel and starts the outgoing message of type; NULL (not
 * locked) when the channel is closed. */
struct ks_op_msg *ks_oprt_chan_begin(const char *type);
/* Sends the outgoing message and unlocks.  A failure closes the channel. */
int ks_oprt_chan_send(void);
/* Sends the outgoing message and receives the answer, keeping the lock:
 * the answer, to read before ks_oprt_chan_end(), or NULL when the channel
 * failed (and was closed). */
const struct ks_op_msg *ks_oprt_chan_request(void);
void ks_oprt_chan_end(void);
/* Closes the channel (the runtime goes off).  Call with chan_lock held. */
void ks_oprt_chan_close_locked(void);

/* oprt_config.c */
int ks_oprt_config_parse(const struct ks_op_msg *m, struct ks_oprt_config *c,
			 struct ks_err *err);
/* Reads the targets file (application runs >= 1): lines NAME,X:Y:Z,K. */
int ks_oprt_targets_load(const char *path, struct ks_err *err);
/* Whether (name, gsize, ordinal) is a target.  Names lock held. */
bool ks_oprt_target_is(const struct ks_oprt_name *nm, const uint64_t gsize[3],
		       uint64_t ordinal);

/* Copies a, b and c one after the other into dst (size bytes), cutting
 * what does not fit. */
static inline void ks_oprt_join(char *dst, size_t size, const char *a, const char *b,
				const char *c)
{
	const char *parts[3] = { a, b, c };
	size_t n = 0;

	for (int i = 0; i < 3; i++)
		for (const char *p = parts[i]; *p && n + 1 < size; p++)
			dst[n++] = *p;
	dst[n] = '\0';
}

/* oprt_launch.c */
/* The ordinal of this launch of nm with global size g (ranges: 0:0:0),
 * counted from 0; UINT64_MAX when out of memory.  Takes the names lock. */
uint64_t ks_oprt_ordinal(struct ks_oprt_name *nm, const uint64_t g[3]);
/* "X:Y:Z" into out. */
void ks_oprt_gsize_str(const uint64_t g[3], char *out, size_t size);
/* Whether rel ("<pid>/<name>_<index>") is a safe relative directory. */
bool ks_oprt_rel_ok(const char *rel);
/* --launch-skip-before-match across the process tree: whether this launch
 * (or range, in range replay) is among the first `skip` of the program,
 * which kscope counts (`skip` request).  False at once when config said
 * skip=0 or kscope already said that none is any more. */
bool ks_oprt_skip_ask(void);
/* Once the configuration is read: sets ks_oprt_fast_rule from it. */
void ks_oprt_launch_configured(void);
/* In a forked child (oprt_atfork_child, one thread, names lock free):
 * every name unannounced, its ordinals from 0 again. */
void ks_oprt_names_fork_reset(void);

/* oprt_replay.c */
int ks_oprt_collect(struct ks_oprt_launch *l, const char *rel);
int ks_oprt_time_target(struct ks_oprt_launch *l);
/* Replays the collected range rep (launches captured, or error saying why
 * capturing stopped), writes its raw files into rel and frees rep. */
void ks_oprt_range_replay(void *rep, const char *rel, const char *name, uint64_t index,
			  unsigned launches, const char *error);
/* Sends `collected dir=rel status=... [message=...]`. */
void ks_oprt_send_collected(const char *rel, bool ok, const char *message);

/* oprt_range.c */
/* kscope_range_start/end (kscope/user.h), for the library's own callers
 * (oprt_nvtx.c): bound here, whatever else the process defines under the
 * user API's names.  The id is 0 when the runtime is off. */
uint64_t ks_oprt_range_start(const char *name);
void ks_oprt_range_end(uint64_t id);
/* Whether launches are being recorded into a collected range. */
bool ks_oprt_range_recording(void);
int ks_oprt_range_record(struct ks_oprt_launch *l);
/* At exit: a collected range that never ended is reported failed. */
void ks_oprt_range_atexit(void);
/* In a forked child (one thread, range lock free): no open range, no
 * range recorded, counts from 0. */
void ks_oprt_range_fork_reset(void);
/* The innermost open range that passes mstx_include, into out ("" if
 * none). */
void ks_oprt_range_innermost(char *out, size_t size);

/* oprt_counters.c: instructions, cycles and cache misses of every thread
 * of the process, summed, around one pass. */
#define KS_OPRT_NCOUNTERS 3
extern const char *const ks_oprt_counter_names[KS_OPRT_NCOUNTERS];
struct ks_oprt_counters {
	bool supported;
	char reason[400];                 /* why not supported */
	int *fd;                          /* per thread, KS_OPRT_NCOUNTERS each */
	size_t nthreads;
};
/* Opens the counters on every thread; on failure supported is false and
 * reason says what failed and why. */
void ks_oprt_counters_open(struct ks_oprt_counters *c);
void ks_oprt_counters_start(struct ks_oprt_counters *c);
/* Stops and reads them into v (KS_OPRT_NCOUNTERS values). */
void ks_oprt_counters_stop(struct ks_oprt_counters *c, uint64_t *v);
void ks_oprt_counters_close(struct ks_oprt_counters *c);

/* oprt_measure.c: one measurement as measure.json reports it. */
struct ks_oprt_measure {
	const char *mode;                 /* kernel, application, range */
	bool failed;
	char error[512];
	unsigned warmup, passes;          /* asked for */
	bool flush;
	uint64_t flush_bytes;
	bool have_original;
	uint64_t original_ns;
	uint64_t *pass_ns, *pass_start;   /* device START of each pass */
	uint64_t *warm_ns, *warm_start;
	unsigned npass, nwarm;            /* done */
	uint64_t replay_wall_ns;
	uint64_t backup_bytes;
	struct ks_oprt_buf *bufs;          /* owned */
	size_t nbufs;
	bool range;                       /* buffers carry their launch */
	struct ks_oprt_counters ctr;
	uint64_t *ctr_values;             /* KS_OPRT_NCOUNTERS per pass */
	struct ks_oprt_hw hw;
};

/* Allocates the arrays for warmup and passes.  -ENOMEM. */
int ks_oprt_measure_init(struct ks_oprt_measure *m, const char *mode, unsigned warmup,
			 unsigned passes, bool flush);
void ks_oprt_measure_fini(struct ks_oprt_measure *m);
/* measure.json's text. */
void ks_oprt_measure_json(const struct ks_oprt_measure *m, struct ks_oprt_json *j);

/* oprt_raw.c */
/* Creates config's dir/rel (each missing component 0750); its absolute
 * path into abs. */
int ks_oprt_raw_mkdir(const char *rel, char *abs, size_t size, struct ks_err *err);
/* Writes data into dir/name through a temporary name and a rename (0640). */
int ks_oprt_raw_write(const char *dir, const char *name, const void *data, size_t len,
		      struct ks_err *err);
/* context.json (the neutral members, then the backend's) and the program
 * file of rep, into dir. */
int ks_oprt_raw_context(const char *dir, void *rep, bool range, const char *name,
			uint64_t index, uint64_t ordinal, const char *range_name,
			struct ks_err *err);

#endif
