/*
 * ks_predict's internals: the chip (chip.c), the model (model.c), the
 * scheduler (sched.c), the outputs (out.c) and --measured (measured.c).
 * include/kscope/predict.h is the public face of the same code.
 */
#ifndef KS_PRED_INT_H
#define KS_PRED_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "expr.h"
#include "kscope/predict.h"
#include "outdir.h"

#define PRED_MAX_PIPES 32
#define PRED_MAX_SPACES 32
#define PRED_MAX_TABLE 4096    /* entries of one throughput table */
#define PRED_NEVER (-2)        /* a dependency nothing satisfies */
#define PRED_NONE (-1)
#define PRED_PATH_STRIDE 128  /* > conversions of one path */
#define PRED_MAX_CORES 16     /* core instances of a chip ("cores") */

/* ---- data types ---- */

enum pred_dtype {
	DT_FP16, DT_BF16, DT_FP32, DT_FP64, DT_INT8, DT_UINT8, DT_INT16,
	DT_INT32, DT_INT64, DT_COUNT
};
extern const char *const pred_dtype_names[DT_COUNT];
extern const unsigned pred_dtype_bytes[DT_COUNT];
int pred_dtype_find(const char *name); /* -1 if unknown */

/* ---- throughput tables ---- */

enum pred_above { ABOVE_LARGEST, ABOVE_PEAK, ABOVE_LAST };

/* A size -> throughput table (throughput per cycle), interpolated
 * linearly in size. */
struct pred_curve {
	size_t n;              /* 0: no table */
	double *size, *tput;   /* owned; sizes increasing */
	double peak;           /* 0: none */
	double largest;        /* max of tput */
	enum pred_above above;
};

/* Throughput at size (> 0); 0 when the curve has neither table nor
 * peak. */
double pred_curve_at(const struct pred_curve *c, double size);
void pred_curve_free(struct pred_curve *c);
/* Builds a curve from n pairs, checked (sizes increasing and > 0,
 * throughputs > 0 and finite); what names the table for messages. */
int pred_curve_set(struct pred_curve *c, const double *size, const double *tput,
		   size_t n, const char *what, struct ks_err *err);

/* ---- chips ---- */

struct pred_space {
	char name[KS_PRED_MAX_NAME + 1];
	bool ready;
	uint64_t bytes;        /* capacity, 0 if not given */
	/* "cache": reads from this space (loads out of it) hit a cache with
	 * the model's cache hit ratio (ks_pred_set_cache_hit_ratio).
	 * cache_speedup is the cache's bandwidth over the memory's, 0 when the
	 * space has no cache; cache_base the hit ratio the chip's tables
	 * describe (the model's ratio when none is set). */
	double cache_speedup, cache_base;
	bool shared;           /* "shared": one for all cores (GM); else each core
				* has its own (only matters with "cores") */
};

struct pred_conv {
	char from[KS_PRED_MAX_NAME + 1], to[KS_PRED_MAX_NAME + 1];
	struct pred_curve c;
};

struct pred_path {
	int from, to, pipe;
	bool footprint;        /* "size": "footprint" */
	struct pred_curve c;
	struct pred_conv *conv;
	size_t nconv;
};

enum pred_kind {
	K_VBIN,     /* two inputs, one output, one shape */
	K_VUN,      /* one input, one output of its shape */
	K_VCONV,    /* one input, one output, same shape, any dtype */
	K_VRED,     /* one input, output with the last axis reduced to 1 */
	K_MMAD,     /* a [m,k], b [k,n] -> c [m,n] */
	K_GENERIC,  /* chip- or user-defined: any operands */
	K_LOAD,     /* a transfer (internal) */
	K_SCALAR,   /* scalar work (internal) */
};

struct pred_chip_instr {
	char name[KS_PRED_MAX_NAME + 1];
	enum pred_kind kind;
	int pipe;
	double ops;            /* per element (per multiply-add for mmad) */
	int nspaces;
	int spaces[3];         /* allowed spaces (all operands, or a, b, c) */
	struct pred_curve dt[DT_COUNT]; /* per data type */
	/* user-defined (ks_pred_register): a formula, or one table for
	 * every data type */
	bool registered;
	struct ks_expr *formula;
	struct pred_curve any;
};

/* One core of a chip with "cores" (msKPP's Core: AIC0, AIV0, AIV1): its
 * own copy of its type's pipes, and of the spaces that are not shared. */
struct pred_core {
	char name[KS_PRED_MAX_NAME + 1]; /* the type's name and its number: "AIV1" */
	int8_t pipe[PRED_MAX_PIPES];     /* chip pipe -> the core's pipe in cpipes,
					  * -1 where the core lacks it */
	uint32_t spaces;                 /* a bit per space it may use */
};

struct pred_chip {
	char name[128];
	char path[4096];
	double clock_hz;
	size_t nspaces, npipes, npaths, ninstr;
	struct pred_space spaces[PRED_MAX_SPACES];
	char pipes[PRED_MAX_PIPES][KS_PRED_MAX_NAME + 1];
	struct pred_path *paths;
	struct pred_chip_instr *instr;   /* the chip's, then registered ones */
	int scalar_pipe;
	double scalar_cpo;
	/* "cores": pipes[] holds the file's "pipes" (which paths and
	 * instructions name, by index into base[]) until a model selects a
	 * core (ks_pred_set_core); then cpipes[] replaces pipes[], so the
	 * scheduler and the outputs see the cores' pipes ("AIV0.VECTOR"). */
	char base[PRED_MAX_PIPES][KS_PRED_MAX_NAME + 1];
	size_t nbase, ncores, ncpipes;
	struct pred_core cores[PRED_MAX_CORES];
	char cpipes[PRED_MAX_PIPES][KS_PRED_MAX_NAME + 1];
};

/* 1 to KS_PRED_MAX_NAME of [A-Za-z0-9_.-]: names of chips, tensors,
 * formats, instructions. */
bool pred_name_ok(const char *s);
/* Finds and loads a chip (name or path). */
int pred_chip_load(const char *chip, struct pred_chip *c, struct ks_err *err);
/* Loads a chip file. */
int pred_chip_load_file(const char *path, struct pred_chip *c, struct ks_err *err);
void pred_chip_free(struct pred_chip *c);
int pred_chip_space(const struct pred_chip *c, const char *name);
int pred_chip_pipe(const struct pred_chip *c, const char *name);
/* The same among the file's "pipes" (what paths and instructions name). */
int pred_chip_base_pipe(const struct pred_chip *c, const char *name);
/* A core by name ("AIV1", any case); -1 if none. */
int pred_chip_core(const struct pred_chip *c, const char *name);
/* The built-in kind of an instruction name, K_GENERIC when not built in. */
enum pred_kind pred_builtin_kind(const char *name);

/* ---- the model ---- */

enum { OP_LOAD = 0, OP_SCALAR = 1, OP_SET_FLAG = 2, OP_WAIT_FLAG = 3, OP_CHIP = 4 };
#define PRED_MAX_EVENT 65535   /* set_flag/wait_flag event ids: 0 .. this (msKPP's) */

struct pred_tensor {
	int32_t name;          /* into names (a string table offset) */
	int16_t space;
	uint8_t dtype, ndim;
	int32_t format;        /* string table offset */
	int32_t parent;        /* PRED_NONE for a root */
	int32_t piece_of;      /* the split (m->splits) it is a piece of, PRED_NONE
				* for a root */
	int32_t splits;        /* its first split, chained through next;
				* PRED_NONE when never split */
	int32_t writers;       /* index into the writer lists, PRED_NONE if none */
	int8_t core;           /* a root in a per-core space: the core it
				* belongs to, -1 while none */
	int64_t shape[KS_PRED_MAX_DIMS];
	int64_t elements;
};

/* One split of a tensor: pieces first .. first + parts - 1, piece k
 * starting k * chunk elements into the parent along axis.  A tensor is a
 * box of its root; the splits say where (deps.c). */
struct pred_split {
	int32_t parent, first, parts, axis;
	int64_t chunk;
	int32_t next;          /* the parent's next split, PRED_NONE if none */
};

/* Why an instruction waits for another (deps.c; the deadlock message and
 * the trace's flow arrows say it). */
enum pred_dep_kind {
	DEP_RAW,   /* it reads what the other writes */
	DEP_WAR,   /* it writes what the other reads, after it */
	DEP_WAW,   /* it writes what the other writes, after it */
	DEP_FLAG,  /* a wait_flag waits for its set_flag */
};

struct pred_dep {
	int32_t id;            /* the instruction waited for, or PRED_NEVER */
	int32_t what;          /* the tensor; DEP_FLAG: the wait's own id */
	uint8_t kind;          /* enum pred_dep_kind */
};

struct pred_instr {
	int32_t op;            /* OP_LOAD, OP_SCALAR, or OP_CHIP + the chip
				* instruction's index */
	int16_t pipe;
	uint8_t nin, nout;
	uint32_t operand;      /* first of nin + nout operands in m->operands */
	int32_t loc;           /* string table offset of the location, or -1 */
	int32_t path;          /* a load on a footprint path: path index *
				* PRED_PATH_STRIDE + (conversion index + 1, or
				* 0 for the plain table); else -1 */
	int32_t flag;          /* set_flag/wait_flag: event * PRED_MAX_PIPES +
				* the other pipe (the wait's for a set, the
				* set's for a wait); else -1 */
	double cost;           /* cycles (for footprint paths: bytes, until run) */
	double bytes, ops;
	double start, end;     /* set by the scheduler; end < 0 until then */
};

#define PRED_LOC_CACHE 64
struct pred_loc_key {
	const char *file;
	int line, column;
	int32_t off;
};

struct pred_strtab {
	char *buf;
	size_t len, cap;
};

struct ks_pred_model {
	struct pred_chip chip;
	unsigned outputs_off;           /* KS_PRED_OUT_* not to write */
	char errmsg[1024];
	struct pred_strtab str;         /* names, formats, locations */
	char *warnings;                 /* lines */
	size_t warnings_len;
	/* the current location */
	int32_t loc;

	struct pred_tensor *t;
	size_t nt, capt;
	/* writers of each tensor, for dependencies on later instructions:
	 * a list per tensor of instruction ids, chained through wnext */
	int32_t *wid, *wnext;
	size_t nw, capw;

	struct pred_instr *in;
	size_t ni, capi;
	int32_t *operands;              /* tensor ids */
	size_t nops, capops;
	struct pred_split *splits;
	size_t nsplits, capsplits;
	/* what each instruction waits for, computed by pred_deps when the
	 * model is scheduled: instruction i's are dep[dstart[i] ..
	 * dstart[i + 1]), at most one per pipe */
	struct pred_dep *dep;
	uint32_t *dstart;
	struct pred_locs *locs;         /* interned locations */
	struct pred_loc_key loc_cache[PRED_LOC_CACHE]; /* the last ones set */

	bool ran;
	bool cores_on;                  /* a core was selected: the chip's pipes
					 * are the cores' (chip.cpipes) */
	int core;                       /* the current core, -1 for none */
	bool cache_set;                 /* ks_pred_set_cache_hit_ratio was called */
	double cache_hit_ratio;         /* 0 to 1 */
	double total;                   /* cycles */
	double footprint;               /* bytes of root tensors in ready spaces */
};

int pred_fail(struct ks_pred_model *m, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void pred_warn(struct ks_pred_model *m, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *pred_str(const struct ks_pred_model *m, int32_t off);
/* The name of an instruction's op. */
const char *pred_op_name(const struct ks_pred_model *m, int32_t op);
/* "name" of tensor id, e.g. "xu" or "xs[3]". */
const char *pred_tensor_name(const struct ks_pred_model *m, int id);
/* "#12 vadd (model.kpp:4:5)" into buf. */
const char *pred_instr_desc(const struct ks_pred_model *m, int id, char *buf, size_t size);

/* sched.c */
int pred_schedule(struct ks_pred_model *m);

/* deps.c: fills m->dep and m->dstart (docs/predict.md, "Readiness"). */
int pred_deps(struct ks_pred_model *m);
/* The first instruction after id that writes tensor t or an ancestor;
 * PRED_NEVER if none. */
int32_t pred_first_writer_after(const struct ks_pred_model *m, int t, int32_t id);

/* model.c: set_flag (set true) or wait_flag between two of the chip's
 * pipes, by name (msKPP's set_flag(pipe_src, pipe_dst, event_id));
 * returns the instruction's id.  Not in include/kscope/predict.h yet: the
 * text language calls it. */
/* Makes *p (of *cap elements of elem bytes) hold need elements, doubling
 * from 1024; false when out of memory (*p is then kept). */
bool pred_grow(void **p, size_t *cap, size_t need, size_t elem);
int pred_flag(struct ks_pred_model *m, bool set, const char *src, const char *dst,
	      int64_t event);

/* out.c: writes the outputs into an open run directory. */
int pred_write_rundir(struct ks_pred_model *m, struct ks_rundir *rd, const char *measured,
		      struct ks_err *err);

/* measured.c: measured times per pipe ("total" for the whole kernel). */
struct pred_measured {
	size_t n;
	char name[PRED_MAX_PIPES + 1][KS_PRED_MAX_NAME + 1];
	double us[PRED_MAX_PIPES + 1];
	double total_us;       /* < 0 when not given */
	char source[4096];
};
int pred_measured_load(const char *path, struct pred_measured *out, struct ks_err *err);
/* The same from a file's text (NUL-terminated; modified), name standing
 * for the file in messages; out must be zeroed with total_us = -1 (the
 * fuzz target calls it). */
int pred_measured_parse(const char *name, char *text, struct pred_measured *out,
			struct ks_err *err);
/* -EINVAL with err naming it when a measured pipe is none of the chip's
 * (its time would otherwise be left out of every comparison unsaid). */
int pred_measured_check(const struct pred_chip *chip, const struct pred_measured *meas,
			struct ks_err *err);

#endif
