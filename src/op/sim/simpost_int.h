/*
 * Private to src/op/sim: the raw file of kscope's Valgrind tool as read
 * into memory (simread.c), the views derived from it (simpost.c), and the
 * writers of the deliverables (simcsv.c, simviz.c, simbw.c).
 *
 * Records are kept in arrays in file order and referred to by index, never
 * by the IDs of the raw file (those are mapped once, while reading).  The
 * counts of an `x` or `bw` record are a row of a flat array whose width
 * depends on the number of cache levels (XW(s), BW(s)), which keeps two
 * million `x` records of a two-level hierarchy in 160 MB rather than 220.
 */
#ifndef KS_OP_SIMPOST_INT_H
#define KS_OP_SIMPOST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <kscope/vizbin.h>

#include "outdir.h"
#include "simpost.h"
#include "textout.h"

struct ks_vb_writer;

#define SIM_NONE UINT32_MAX

struct sim_cache {
	uint64_t size, assoc, line, latency;
	bool shared;
	char name[16];
};

struct sim_ins {
	uint64_t addr;
	int32_t file, fn;        /* indexes into files/fns, -1 unknown */
	uint32_t line;           /* 0 unknown */
	uint32_t flops, base;    /* per execution */
	uint32_t lineid;         /* row of s->lines, SIM_NONE if never executed */
	uint32_t dis;            /* offset of its disassembly in s->text */
	uint16_t mnem_len;       /* bytes of the mnemonic at the start of dis */
	uint16_t gprs;           /* general-purpose registers it reads or
	                            writes, bit 0 rax .. bit 15 r15 (disasm) */
	uint8_t len, pipe;
	uint8_t vlanes, velem;   /* vector lanes used and their bits (0 0: no
				    lane-wise vector work, or an older file) */
	uint8_t bytes[KS_SIM_MAX_INS_BYTES];
	bool executed;           /* some x record names it */
};

struct sim_sb {
	uint32_t first, count;   /* its ins indexes: s->sb_ins[first..] */
};

struct sim_thread {
	uint32_t tid;
	uint64_t instrs, cycles;
	uint32_t core;           /* index among the cores, SIM_NONE if no x */
};

struct sim_x {
	uint32_t th, ins;        /* indexes into threads, ins */
};

/* The counters of an x record, in this order, then per level ACC, MISS. */
enum { XE, XC, XL, XS, XI, XFIXED };
#define XW(s) (XFIXED + 2 * (size_t)(s)->levels)
#define XA(k) (XFIXED + 2 * (k))
#define XM(k) (XFIXED + 2 * (k) + 1)
/* The RD, WR pairs of a bw record, one per boundary. */
#define BW(s) (2 * ((size_t)(s)->levels + 1))

struct sim_bw {
	uint32_t th;
	uint64_t bucket;
};

struct sim_tr {
	uint32_t th, sb, executed;
	uint64_t start, end;
};

/* The counters of a cache set (`set` record), in the raw file's order. */
enum { CS_LOAD, CS_STORE, CS_HIT, CS_MISS, CS_ALLOC, CS_EVW, CS_EVWO, CS_N };

/* A (level-0 line, instruction) pair of the hot lines (`hl`), or a
 * line's write-backs (`hlwb`: ins SIM_NONE, only wb set). */
struct sim_hl {
	uint64_t addr;           /* the level-0 line's address */
	uint32_t ins;            /* index into ins */
	uint64_t ld, st, wb;
	uint64_t miss[KS_SIM_MAX_LEVELS];
};

/* A source line (or the group of instructions without one). */
struct sim_line {
	int32_t file;            /* -1: the "??" group */
	uint32_t line;
};

/* A u32 -> u32 map (open addressing) from the raw file's IDs. */
struct sim_map {
	uint32_t *keys;          /* key + 1; 0 is an empty slot */
	uint32_t *vals;
	size_t cap, n;
};

struct sim {
	const char *raw_path;
	ks_simpost_warn_fn warn;
	void *warn_ctx;
	double clock_hz;
	unsigned metrics;        /* KS_SIM_METRIC_*: the deliverables asked for */
	/* header */
	long long pid;
	char *exe, *region;
	unsigned levels;
	struct sim_cache cache[KS_SIM_MAX_LEVELS];
	uint64_t icache[3];      /* size, assoc, line */
	bool have_icache;
	uint64_t mem_latency;
	uint64_t interval;       /* cycles per bandwidth bucket, 0 unknown */
	/* tables */
	char **files, **fns;
	size_t nfiles, nfns, cap_files, cap_fns;
	struct sim_ins *ins;
	size_t nins, cap_ins;
	struct sim_sb *sbs;
	size_t nsbs, cap_sbs;
	uint32_t *sb_ins;
	size_t nsb_ins, cap_sb_ins;
	struct sim_thread *threads;
	size_t nthreads, cap_threads;
	struct sim_x *x;
	uint64_t *xv;            /* XW(s) per x record */
	size_t nx, cap_x;
	struct sim_bw *bw;
	uint64_t *bwv;           /* BW(s) per bw record */
	size_t nbw, cap_bw;
	struct sim_tr *tr;
	size_t ntr, cap_tr;
	/* where the trace starts ("trace" record): "region", "main", "never",
	 * or "" (an older tool: from the program's first instruction) */
	char trace_from[8];
	uint64_t trace_clock;    /* "main": the entering thread's cycle */
	uint32_t trace_tid;      /* "main": the entering thread's TID */
	/* cache sets and hot lines (simcache.c; none in older files) */
	bool have_sets;
	unsigned set_level;      /* the level the sets count */
	uint64_t nsets;
	uint64_t *setv;          /* CS_N per set, nsets sets */
	struct sim_hl *hl;
	size_t nhl, cap_hl;
	bool have_hl_other;
	struct sim_hl hl_other;  /* dropped pairs' sums (hlother) */
	uint64_t hl_dropped;
	struct sim_map file_ids, fn_ids, ins_ids, sb_ids, tids;
	/* end */
	bool have_end;
	char end_how[16];
	int end_code;
	uint64_t dropped;
	/* disassembly (simdisasm.c) */
	char *text;
	size_t ntext, cap_text;
	/* derived (simpost.c) */
	uint32_t *cores;         /* thread indexes of the cores, by TID */
	size_t ncores;
	struct sim_line *lines;  /* by file path, then line; "??" last */
	size_t nlines;
	uint64_t max_flops;      /* FLOPS of the executed instruction with most */
};

/* Sums of x counters over some records. */
struct sim_acc {
	uint64_t execs, cycles, loadb, storeb, flops, imiss;
	uint64_t basec;          /* the cost model's base cycles: execs x base */
	uint64_t vused, vavail;  /* VECTOR instructions with lanes: execs x
				    lanes used, execs x lanes of the widest
				    vector at their element size */
	uint16_t gprs;           /* union of the instructions' register masks */
	uint64_t acc[KS_SIM_MAX_LEVELS], miss[KS_SIM_MAX_LEVELS];
};

/* simread.c: reads o->raw_path into s (zeroed by the caller).  A damaged
 * record is -EINVAL with err naming the file and line. */
int sim_read(struct sim *s, struct ks_err *err);
void sim_free(struct sim *s);
void sim_warnf(const struct sim *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* simdisasm.c: the disassembly of every instruction into s->text. */
int sim_disasm(struct sim *s, struct ks_err *err);
static inline const char *sim_dis(const struct sim *s, const struct sim_ins *in)
{
	return s->text + in->dis;
}

/* simpost.c: shared by the writers. */
const uint64_t *sim_xv(const struct sim *s, size_t xi);
const uint64_t *sim_bwv(const struct sim *s, size_t bi);
void sim_acc_add(const struct sim *s, struct sim_acc *a, size_t xi);
/* Hit rate (0..1) of level k in a, NaN without accesses. */
/* Stall cycles: the cycles beyond the cost model's base cost of the
 * instructions (cache and memory latency, instruction-fetch misses). */
uint64_t sim_stall(const struct sim_acc *a);
double sim_hit_rate(const struct sim_acc *a, unsigned k);
/* Vector utilisation in percent (vused / vavail), NaN without lanes. */
double sim_vector_util(const struct sim_acc *a);
/* The sums per core and pipe class: (*out)[core * KS_SIM_PIPE_COUNT +
 * pipe], then a last row (core s->ncores) over all cores.  The caller
 * frees *out. */
int sim_pipe_acc(const struct sim *s, struct sim_acc **out, struct ks_err *err);
/* The level shown as "L2Cache Hit Rate": the second level when there is
 * one, else the first; -1 without levels. */
int sim_l2_level(const struct sim *s);
const char *sim_file_name(const struct sim *s, int32_t file);
const char *sim_fn_name(const struct sim *s, int32_t fn);
/* "<path>:<line>", or "??:0". */
void sim_location(const struct sim *s, const struct sim_ins *in, char *out, size_t size);
/* The name of bandwidth path k ("L1 -> registers", "memory -> LL"). */
void sim_path_name(const struct sim *s, unsigned k, char *out, size_t size);
/* Cycles to microseconds at the simulated clock. */
double sim_us(const struct sim *s, double cycles);

/* Indexes of the x records sorted by their key (see simpost.c). */
enum sim_order {
	SIM_BY_CORE_ADDR,        /* per thread, by address (instr_exe.csv) */
	SIM_BY_CORE_LINE,        /* per thread, by line, then address */
	SIM_BY_LINE_CORE,        /* by line, then thread, then address */
	SIM_BY_ADDR_CORE,        /* by address, then thread */
};
int sim_sort_x(const struct sim *s, enum sim_order order, uint32_t **out,
	       struct ks_err *err);

/* Opens a writer on a new deliverable name in rd. */
int sim_open(struct ks_rundir *rd, const char *name, struct ks_outfile *of,
	     struct ks_text *t, struct ks_err *err);
/* Flushes t and commits of (mode 0440). */
int sim_commit(struct ks_outfile *of, struct ks_text *t, struct ks_err *err);

/* A container being written, a JSON block at a time: sim_vb_begin
 * starts a block of type and a writer t on it, whose text also goes to
 * tee when set (trace.json beside its 0x02 block); sim_vb_end finishes
 * it.  Errors name visualize_data.bin. */
struct sim_vb {
	struct ks_vb_writer *w;
	struct ks_vb_error verr;
	struct ks_outfile *tee;
};
int sim_vb_begin(struct sim_vb *v, struct ks_text *t, unsigned type, unsigned version,
		 struct ks_err *err);
int sim_vb_end(struct sim_vb *v, struct ks_text *t, struct ks_err *err);

/* The writers: each writes its deliverables into run. */
int sim_write_csv(struct ks_rundir *run, const struct sim *s, struct ks_err *err);
int sim_write_trace(struct ks_rundir *run, const struct sim *s, uint64_t *slices,
		    struct ks_err *err);
/* visualize_data.bin, and trace.json as its 0x02 block's document
 * (*trace_done then true: the caller writes it alone otherwise). */
int sim_write_viz(struct ks_rundir *run, const struct sim *s,
		  const struct ks_simpost_opts *o, struct ks_simpost_summary *sum,
		  bool *trace_done, struct ks_err *err);
int sim_write_bw(struct ks_rundir *run, const struct sim *s, struct ks_err *err);
/* simcache.c: the cache sets (0x0B, cache_sets.csv) and the hot cache
 * lines (0x0E, cache_lines.csv); nothing when the raw file has none. */
int sim_write_cache_sets(struct ks_rundir *run, struct ks_vb_writer *w,
			 const struct sim *s, struct ks_err *err);
int sim_write_cache_lines(struct ks_rundir *run, struct ks_vb_writer *w,
			  const struct sim *s, struct ks_err *err);
/* simdetails.c: the Details page's blocks 0x05 to 0x09, each written to
 * w (sim_write_viz calls them after the roofline). */
int sim_write_base_info(struct ks_vb_writer *w, const struct sim *s,
			const struct ks_simpost_opts *o, const struct ks_simpost_summary *sum,
			struct ks_err *err);
int sim_write_compute_graph(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err);
int sim_write_compute_table(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err);
int sim_write_memory_graph(struct ks_vb_writer *w, const struct sim *s,
			   const struct ks_simpost_opts *o, struct ks_err *err);
int sim_write_memory_table(struct ks_vb_writer *w, const struct sim *s, struct ks_err *err);
/* 0x0C: per core its cycles, bytes and second-level hit rate, and advice
 * when the cores' cycles are more than a fifth apart. */
int sim_write_core_load(struct ks_vb_writer *w, const struct sim *s,
			const struct ks_simpost_opts *o, struct ks_err *err);

/* Writes the pipeline chart's document to t (trace.json and 0x02);
 * *slices gets the number of slices. */
void sim_trace_doc(const struct sim *s, struct ks_text *t, uint64_t *slices);

#endif
