/*
 * The raw sample format: what libkscope.so (the preloaded runtime) writes
 * while the program runs, and what `kscope sample` reads afterwards.
 *
 * Each profiled process (and each child it forks) writes one file,
 * <run>/raw/<pid>.ksraw.  Only the runtime's writer thread writes it, in
 * append-only fashion, so a process killed at any moment leaves a file
 * whose complete records are all readable: the reader stops at the first
 * incomplete record and reports how many bytes it ignored.
 *
 * Layout: struct ks_raw_file_header, then records.  Every record starts
 * with struct ks_raw_rec; `size` counts the whole record including that
 * header and is a multiple of 8, so records stay 8-byte aligned.  Strings
 * inside records are NUL-terminated and padded with NULs to the record's
 * size.  Integers are in the machine's byte order: raw files are read on
 * the machine that wrote them, then turned into portable outputs.
 *
 * Per-thread records (samples, regions, marks, ranges, MPI calls, thread
 * begin/end, pause/resume) are written by the thread itself into its
 * buffer and reach the file inside a KS_RAW_CHUNK record that names the
 * thread; process-wide records (modules, counters, end) stand alone.
 * Timestamps are CLOCK_MONOTONIC nanoseconds.
 *
 * This header is shared by the runtime (src/sample/rt) and the reader
 * (src/sample/raw.c) and must stay free of anything but fixed-size types.
 */
#ifndef KS_SAMPLE_RAW_H
#define KS_SAMPLE_RAW_H

#include <stdint.h>

#define KS_RAW_MAGIC    "KSRAW01"   /* 8 bytes with the NUL */
#define KS_RAW_VERSION  1
#define KS_RAW_MAX_FRAMES 128       /* deepest stack recorded */
#define KS_RAW_MAX_COUNTERS 8       /* hardware/software counters per sample */
#define KS_RAW_NAME_MAX 256         /* longest region/mark/range name kept */

struct ks_raw_file_header {
	char magic[8];           /* KS_RAW_MAGIC */
	uint32_t version;        /* KS_RAW_VERSION */
	uint32_t header_size;    /* sizeof(struct ks_raw_file_header) */
	int32_t pid, ppid;
	int32_t rank;            /* MPI rank, or -1 */
	uint32_t flags;          /* KS_RAW_F_* */
	uint64_t start_mono_ns;  /* CLOCK_MONOTONIC at runtime start */
	uint64_t start_real_ns;  /* CLOCK_REALTIME at the same moment */
	uint32_t cputime_freq;   /* samples per CPU-second, 0 if off */
	uint32_t realtime_freq;  /* samples per second, 0 if off */
	uint32_t signal_cpu;     /* signal number used by the CPU-time sampler */
	uint32_t signal_real;    /* signal number used by the real-time sampler */
	char hostname[64];
};

enum {
	KS_RAW_F_FRAME_POINTERS = 1u << 0, /* stacks walked by frame pointers */
	KS_RAW_F_FORKED         = 1u << 1, /* this process is a fork child */
};

struct ks_raw_rec {
	uint16_t type;           /* KS_RAW_* below */
	uint16_t flags;          /* type-specific */
	uint32_t size;           /* whole record, multiple of 8 */
};

enum ks_raw_type {
	KS_RAW_MODULE      = 1,  /* process: a loaded object (struct ks_raw_module) */
	KS_RAW_CHUNK       = 2,  /* process: one thread's records follow */
	KS_RAW_THREAD_BEGIN = 3, /* thread */
	KS_RAW_THREAD_END  = 4,  /* thread */
	KS_RAW_SAMPLE      = 5,  /* thread */
	KS_RAW_REGION_PUSH = 6,  /* thread: user API region entered */
	KS_RAW_REGION_POP  = 7,  /* thread */
	KS_RAW_MARK        = 8,  /* thread: an instant */
	KS_RAW_RANGE_START = 9,  /* thread: may end on another thread */
	KS_RAW_RANGE_END   = 10, /* thread */
	KS_RAW_PAUSE       = 11, /* thread: kscope_pause() */
	KS_RAW_RESUME      = 12, /* thread */
	KS_RAW_MPI         = 13, /* thread: one MPI call */
	KS_RAW_COUNTER     = 14, /* process: periodic process counter */
	KS_RAW_COUNTER_INFO = 15,/* process: the per-sample counters' names */
	KS_RAW_DROPPED     = 16, /* process: samples lost (buffer busy, no memory) */
	KS_RAW_END         = 17, /* process: how it ended; last record */
	KS_RAW_CMDLINE     = 18, /* process: argv joined by NULs */
	KS_RAW_IMAGE       = 19, /* process: a copy of a module that is no
				  * file (the vdso), after its MODULE record.
				  * Files written before it existed lack it and
				  * read as before. */
};

/* KS_RAW_MODULE: one ELF object mapped in the process, from
 * dl_iterate_phdr at start and after every dlopen. */
struct ks_raw_module {
	struct ks_raw_rec h;
	uint64_t base;           /* dlpi_addr: load bias */
	uint64_t low, high;      /* lowest and highest address of its PT_LOAD segments */
	uint64_t ts;             /* when it was seen */
	char path[];             /* absolute path ("[vdso]", or the executable's path) */
};

/* KS_RAW_IMAGE: the bytes of a module mapped from no file, so that
 * post-processing can read its symbols and build-id: the vdso, whose
 * image the kernel holds (there is no /lib/modules/.../vdso/ file on most
 * machines).  The ELF image from `low` (its ELF header), `size` bytes:
 * its PT_LOAD extent and, when they lie inside the mapping, its section
 * headers. */
struct ks_raw_image {
	struct ks_raw_rec h;
	uint64_t low;            /* run-time address of the image: the MODULE's low */
	uint64_t size;           /* bytes in data[] */
	unsigned char data[];
};

/* KS_RAW_CHUNK: followed (within `size`) by the thread's records. */
struct ks_raw_chunk {
	struct ks_raw_rec h;
	int32_t tid;
	uint32_t seq;            /* per-thread chunk number, from 0 */
};

struct ks_raw_thread_begin {
	struct ks_raw_rec h;
	uint64_t ts;
	int32_t tid;
	int32_t creator_tid;     /* thread that called pthread_create, or 0 */
	char name[16];           /* thread name at begin (may be empty) */
};

struct ks_raw_thread_end {
	struct ks_raw_rec h;
	uint64_t ts;
	uint64_t cpu_ns;         /* thread CPU time at the end */
	char name[16];           /* thread name at the end */
};

enum {
	KS_RAW_CLOCK_CPU  = 0,   /* ks_raw_rec.flags of a sample: which timer */
	KS_RAW_CLOCK_REAL = 1,
	KS_RAW_CLOCK_MASK = 0xff,
	/* A sample written when its thread ended, for the CPU-time periods
	 * that expired after the last signal and were never signalled (the
	 * kernel checks a CPU-time timer only at its tick).  No frames: where
	 * that CPU time went is not known. */
	KS_RAW_SAMPLE_AT_END = 0x100,
	/* A real-time sample from a timer slowed down because many threads
	 * were live (the runtime's budget of real-time samples per second):
	 * overrun counts the periods of the requested rate it stands for. */
	KS_RAW_SAMPLE_SLOWED = 0x200,
};

/* Real-time samples per second, all threads of a process together, that
 * the real-time sampler keeps to (KS_RAW_SAMPLE_SLOWED): a signal to a
 * waiting thread wakes it, and thousands of waiting threads at a few
 * hundred hertz would take every CPU. */
#define KS_RAW_REALTIME_BUDGET 4000u

/* KS_RAW_SAMPLE.  h.flags: KS_RAW_CLOCK_*, maybe KS_RAW_SAMPLE_AT_END or
 * KS_RAW_SAMPLE_SLOWED.  frames[0] is the interrupted PC, then return
 * addresses outwards (caller's). */
struct ks_raw_sample {
	struct ks_raw_rec h;
	uint64_t ts;
	uint64_t cpu_ns;         /* thread CPU time */
	uint32_t minflt, majflt; /* thread page faults so far */
	uint16_t ncounters;      /* values in counters[] (see COUNTER_INFO) */
	uint16_t nframes;
	uint32_t overrun;        /* timer periods the kernel folded into this
				  * signal (si_overrun): the sample stands for
				  * 1 + overrun periods.  Written as 0 before
				  * kscope recorded it. */
	uint64_t data[];         /* counters[ncounters], then frames[nframes] */
};

/* REGION_PUSH, MARK, RANGE_START: a name; RANGE_* also an id. */
struct ks_raw_named {
	struct ks_raw_rec h;
	uint64_t ts;
	uint64_t id;             /* RANGE_START/RANGE_END: range id; else 0 */
	char name[];             /* empty for REGION_POP, RANGE_END */
};
/* REGION_POP, RANGE_END, PAUSE, RESUME use struct ks_raw_named with an
 * empty name. */

/* KS_RAW_MPI: one call, begin to end. */
struct ks_raw_mpi {
	struct ks_raw_rec h;
	uint64_t ts_begin, ts_end;
	uint64_t bytes;          /* bytes sent + received by this rank */
	int32_t peer;            /* rank of the partner, or -1 (collectives) */
	int32_t comm_size;
	char name[32];           /* "MPI_Send", "MPI_Allreduce", ... */
};

enum {
	KS_RAW_COUNTER_RSS      = 1, /* resident set size, bytes */
	KS_RAW_COUNTER_CPU_PCT  = 2, /* process CPU use since the last value, % of one CPU */
};

struct ks_raw_counter {
	struct ks_raw_rec h;
	uint64_t ts;
	uint32_t kind;           /* KS_RAW_COUNTER_* */
	uint32_t pad;
	double value;
};

/* KS_RAW_COUNTER_INFO: names of the per-sample counters, in order; a
 * counter the machine does not support is listed with supported = 0 and
 * its sample values are 0.  Per-sample values are the thread's running
 * totals since it started (or since its process forked). */
struct ks_raw_counter_info {
	struct ks_raw_rec h;
	uint32_t ncounters;
	uint32_t supported_mask; /* bit i: counter i works here */
	char names[KS_RAW_MAX_COUNTERS][32];
	int32_t error[KS_RAW_MAX_COUNTERS]; /* why counter i failed to open
					     * (an errno), or 0 */
};

struct ks_raw_dropped {
	struct ks_raw_rec h;
	uint64_t samples;        /* lost since the last such record */
};

enum {
	KS_RAW_END_EXIT   = 1,   /* exit() or return from main: status */
	KS_RAW_END_EXEC   = 2,   /* replaced by exec */
	KS_RAW_END_SIGNAL = 3,   /* fatal signal: status = signal number */
};

struct ks_raw_end {
	struct ks_raw_rec h;
	uint64_t ts;
	uint32_t reason;         /* KS_RAW_END_* */
	int32_t status;
};

/* KS_RAW_CMDLINE: argv[0..n-1], each NUL-terminated. */
struct ks_raw_cmdline {
	struct ks_raw_rec h;
	uint32_t argc;
	uint32_t pad;
	char args[];
};

/* Rounds a record size up to the next multiple of 8. */
#define KS_RAW_ALIGN(n) (((n) + 7u) & ~(uint32_t)7u)

#endif
