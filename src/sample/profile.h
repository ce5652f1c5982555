/*
 * The symbolized profile: what `kscope sample` builds from raw files after
 * the program ends, and what every output (profile.db, the Perfetto and
 * JSON traces, flat.txt and tree.txt) is written from.
 *
 * Everything lives in flat arrays indexed by uint32_t ids, with strings
 * interned once (ks_profile_intern).  Call paths form a tree of nodes
 * (struct ks_pnode): a sample points at the node of its innermost frame,
 * and walking `parent` links gives the whole path outwards to a root.
 * User-API regions that were open when a sample was taken sit above the
 * program's own frames in that path, as frames of module "[region]".
 *
 * Times are nanoseconds since the profile's time origin (the earliest
 * process start), so traces start at 0.
 */
#ifndef KS_SAMPLE_PROFILE_H
#define KS_SAMPLE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define KS_NONE UINT32_MAX /* "no id" for optional references */

/* A function at a place: what a call-path node stands for. */
struct ks_pframe {
	uint32_t function;     /* string id: demangled name, or "0x1234" if unknown */
	uint32_t file;         /* string id, or KS_NONE */
	uint32_t line;         /* 0 if unknown */
	uint32_t module;       /* string id: module path, "[region]", "[unknown]" */
	uint64_t address;      /* module-relative address (0 for regions) */
	bool inlined;          /* an inlined call inside its parent's function */
};

/* A node in the call tree: frame `frame` called from node `parent`. */
struct ks_pnode {
	uint32_t parent;       /* KS_NONE for a root */
	uint32_t frame;
};

struct ks_pprocess {
	int32_t pid, ppid, rank;  /* rank -1 without MPI */
	uint32_t command;      /* string id: the command line, space-joined */
	uint64_t start, end;   /* ns */
	uint32_t end_reason;   /* KS_RAW_END_* or 0 if unknown (killed) */
	int32_t end_status;
};

struct ks_pthread {
	uint32_t process;      /* index into processes */
	int32_t tid;
	uint32_t name;         /* string id ("" if none) */
	uint64_t start, end;   /* ns */
	uint64_t cpu_ns;       /* CPU time at its end (or last sample) */
	uint64_t samples;      /* number of samples */
};

struct ks_psample {
	uint64_t ts;
	uint32_t thread;
	uint32_t node;         /* innermost call-path node */
	uint8_t clock;         /* KS_RAW_CLOCK_* */
	uint32_t overrun;      /* the sample stands for 1 + overrun timer periods */
	uint64_t cpu_ns;       /* thread CPU time at the sample */
	uint32_t minflt, majflt;
	uint32_t counters;     /* index into counter_values of its first value,
				* or KS_NONE when no per-sample counters */
};

enum ks_pslice_kind {
	KS_SLICE_REGION = 0,   /* kscope_region_push/pop */
	KS_SLICE_RANGE  = 1,   /* kscope_range_start/end */
	KS_SLICE_MPI    = 2,   /* an MPI call */
	KS_SLICE_MARK   = 3,   /* kscope_mark: start == end */
	KS_SLICE_PAUSE  = 4,   /* between kscope_pause and kscope_resume */
	KS_SLICE_CALL   = 5,   /* a call of a function (kscope instrument) */
};

/* Something with a start and an end on a thread's timeline. */
struct ks_pslice {
	uint32_t thread;
	uint32_t name;         /* string id */
	uint8_t kind;          /* enum ks_pslice_kind */
	uint32_t depth;        /* nesting depth among the thread's regions, from 0 */
	uint64_t start, end;   /* ns; end == start for marks; an unclosed slice
				* ends when its thread ends */
	uint64_t bytes;        /* MPI: bytes moved; else 0 */
	int32_t peer;          /* MPI: partner rank or -1 */
	uint64_t id;           /* RANGE: range id */
};

enum ks_pcounter_kind {
	KS_PCOUNTER_RSS = 1,      /* bytes */
	KS_PCOUNTER_CPU_PCT = 2,  /* % of one CPU */
};

struct ks_pcounter {
	uint32_t process;
	uint32_t kind;         /* enum ks_pcounter_kind */
	uint64_t ts;
	double value;
};

/* An ELF object mapped in a process: where it was and which build it was,
 * so the profile's addresses can be symbolized again later. */
struct ks_pmodule {
	uint32_t process;      /* index into processes */
	uint32_t path;         /* string id: the path as mapped ("[vdso]") */
	uint64_t base;         /* load bias: runtime address - ELF address */
	uint64_t low, high;    /* runtime address range of its PT_LOAD segments */
	uint32_t build_id;     /* string id: NT_GNU_BUILD_ID in lowercase hex,
				* or KS_NONE when it has none or was unreadable */
};

struct ks_pmeta {
	uint32_t key, value;   /* string ids */
};

#define KS_ARRAY(type, name) \
	type *name;            \
	size_t n_##name, cap_##name

struct ks_profile {
	KS_ARRAY(char *, strings);          /* owned; strings[0] == "" */
	KS_ARRAY(struct ks_pframe, frames);
	KS_ARRAY(struct ks_pnode, nodes);
	KS_ARRAY(struct ks_pprocess, processes);
	KS_ARRAY(struct ks_pthread, threads);
	KS_ARRAY(struct ks_psample, samples);
	KS_ARRAY(struct ks_pslice, slices);
	KS_ARRAY(struct ks_pcounter, counters);
	KS_ARRAY(uint64_t, counter_values);  /* per-sample counter values */
	KS_ARRAY(uint32_t, counter_names);   /* string ids of per-sample counters */
	KS_ARRAY(struct ks_pmeta, meta);     /* run metadata: key/value */
	KS_ARRAY(struct ks_pmodule, modules);
	uint64_t dropped_samples;
	uint32_t cputime_freq, realtime_freq;
	void *intern;          /* private: string and node lookup tables */
};

/* Empties p (initially zeroed) and frees everything it owns. */
void ks_profile_free(struct ks_profile *p);
/* Makes an empty profile with strings[0] == "". */
int ks_profile_init(struct ks_profile *p, struct ks_err *err);

/* The id of s (copied on first use).  Returns KS_NONE only when out of
 * memory. */
uint32_t ks_profile_intern(struct ks_profile *p, const char *s);
static inline const char *ks_profile_str(const struct ks_profile *p, uint32_t id)
{
	return id < p->n_strings ? p->strings[id] : "";
}
/* The id of an equal frame, adding it if new; KS_NONE when out of memory. */
uint32_t ks_profile_frame(struct ks_profile *p, const struct ks_pframe *f);
/* The id of the node (parent, frame), adding it if new. */
uint32_t ks_profile_node(struct ks_profile *p, uint32_t parent, uint32_t frame);
/* Appends one element to an array member; returns a pointer to it
 * (zeroed) or NULL when out of memory.  Pointers stay valid only until the
 * next append to the same array. */
#define ks_profile_push(p, name) \
	((__typeof__((p)->name))ks_profile_grow((void **)&(p)->name, &(p)->n_##name, \
						&(p)->cap_##name, sizeof(*(p)->name)))
void *ks_profile_grow(void **array, size_t *n, size_t *cap, size_t elem);
/* Adds a metadata pair. */
int ks_profile_meta(struct ks_profile *p, const char *key, const char *value);

/* Self and total sample counts per node, computed from the samples: both
 * arrays have n_nodes entries and are malloc'd for the caller.  If thread
 * is not KS_NONE only that thread's samples count. */
int ks_profile_node_counts(const struct ks_profile *p, uint32_t thread,
			   uint64_t **self, uint64_t **total);

#endif
