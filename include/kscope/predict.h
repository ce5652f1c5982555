/*
 * kscope predict: a kernel described as tensors and instructions,
 * scheduled on a chip's pipes by a discrete-event model that uses measured
 * instruction costs (docs/predict.md).
 *
 * The library is libkscope-predict.so (and the static ks_predict that the
 * kscope executable links).  Everything is plain C with integer handles,
 * so that the text language (kscope predict model.kpp) and the Python
 * module (ctypes) are thin layers over the same calls and give the same
 * schedule.
 *
 * Conventions:
 *  - Calls that can fail return 0 (or a handle >= 0) on success and a
 *    negative errno code on failure; ks_pred_error() then says what was
 *    wrong, in one line, naming the value and what is accepted.  A failed
 *    call changes nothing in the model.
 *  - Tensors and instructions are numbered from 0 in creation order.
 *  - Names (tensors, instructions, spaces, pipes, data types, formats) are
 *    1 to KS_PRED_MAX_NAME characters of [A-Za-z0-9_.-]; spaces, pipes,
 *    data types and formats are matched without regard to case.
 *  - Times are in the chip's cycles; ks_pred_chip_clock_hz() converts.
 *  - A model is not thread-safe; different models may be used from
 *    different threads.
 */
#ifndef KSCOPE_PREDICT_H
#define KSCOPE_PREDICT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_PRED_MAX_NAME 63      /* characters of a name */
#define KS_PRED_MAX_DIMS 8       /* dimensions of a tensor */
#define KS_PRED_MAX_OPERANDS 8   /* inputs, and outputs, of an instruction */
#define KS_PRED_MAX_ELEMENTS (INT64_C(1) << 50) /* elements of a tensor */
#define KS_PRED_MAX_INSTRUCTIONS 100000000 /* of a model */

struct ks_pred_model;

/* ------------------------------------------------------------------ */
/* Models and chips                                                    */
/* ------------------------------------------------------------------ */

/* A new, empty model on chip, which is a chip name (looked up as
 * <name>.json in $KSCOPE_CHIP_PATH's directories, then
 * $XDG_DATA_HOME/kscope/chips (~/.local/share when unset; where
 * `kscope calibrate` writes host.json), then the chips installed with
 * kscope) or a path to a chip file (anything containing a '/').  NULL with
 * *err (may be NULL; errsize bytes) saying why: an unknown chip names the
 * places looked in and the chips found there; a damaged file names the
 * file and what is wrong. */
struct ks_pred_model *ks_pred_model_new(const char *chip, char *err, size_t errsize);
void ks_pred_model_free(struct ks_pred_model *m);

/* The last failed call's message ("" if none). */
const char *ks_pred_error(const struct ks_pred_model *m);
/* The warnings so far (missing transfer paths, format conversions the
 * chip has no table for, ...), one per line, each given once; "" if none. */
const char *ks_pred_warnings(const struct ks_pred_model *m);

/* Where the next calls come from, for messages and the trace's args
 * ("model.kpp:12:5").  file NULL clears it.  The text language and the
 * Python module set it; C callers may. */
void ks_pred_set_location(struct ks_pred_model *m, const char *file, int line, int column);

/* The chip's name (its file's "name") and clock. */
const char *ks_pred_chip_name(const struct ks_pred_model *m);
double ks_pred_chip_clock_hz(const struct ks_pred_model *m);

/* ------------------------------------------------------------------ */
/* Tensors                                                             */
/* ------------------------------------------------------------------ */

/* A tensor: no data, only where it lives and how big it is.  space is one
 * of the chip's memory spaces ("GM", "UB", ...); dtype one of fp16, bf16,
 * fp32, fp64, int8, uint8, int16, int32, int64; shape has ndim (1 to
 * KS_PRED_MAX_DIMS) dimensions, each >= 1, their product at most
 * KS_PRED_MAX_ELEMENTS; format is "ND" (NULL means ND), "NZ", or another
 * format the chip names.  name may be NULL ("t<id>").  Returns the
 * tensor's id. */
int ks_pred_tensor(struct ks_pred_model *m, const char *name, const char *space,
		   const char *dtype, const int64_t *shape, int ndim, const char *format);

/* Splits tensor along axis into parts children of equal extent (the last
 * one smaller when the extent does not divide; parts at most the extent).
 * The children's ids (consecutive) go to ids[0..parts-1]; returns the
 * first.  Children live in the parent's space and are ready when the
 * parent is (see "Readiness" in docs/predict.md). */
int ks_pred_split(struct ks_pred_model *m, int tensor, int axis, int parts, int *ids);

/* ------------------------------------------------------------------ */
/* Instructions                                                        */
/* ------------------------------------------------------------------ */

/* dst.load(src): a transfer from src's space to dst's on the path the chip
 * gives for that pair (its pipe and throughput table).  The two must have
 * the same number of elements; dtypes must match.  When the formats differ
 * (ND -> NZ), the path's conversion table applies.  Returns the
 * instruction's id. */
int ks_pred_load(struct ks_pred_model *m, int dst, int src);

/* Any instruction by name: the vector instructions (vadd vsub vmul vdiv
 * vmax vmin: two inputs, one output, all of one shape; vexp vln vabs vrelu:
 * one input, one output of its shape; vconv: one input, one output of the
 * same shape and another dtype; vreduce_sum vreduce_max: one input, one
 * output with the input's last axis reduced to 1), mmad (inputs a [m,k]
 * and b [k,n], output c [m,n]), and those the chip file or
 * ks_pred_register() define.  The operands' spaces must be those the
 * instruction accepts when the chip lists them.  Returns the
 * instruction's id. */
int ks_pred_instr(struct ks_pred_model *m, const char *name, const int *inputs,
		  int ninputs, const int *outputs, int noutputs);

/* count scalar operations on the SCALAR pipe (the chip's "scalar" cost),
 * reading inputs and producing outputs (either list may be empty). */
int ks_pred_scalar(struct ks_pred_model *m, int64_t count, const int *inputs,
		   int ninputs, const int *outputs, int noutputs);

/* Explicit synchronisation between pipes, as msKPP's set_flag and
 * wait_flag (docs/predict.md): ks_pred_set_flag issues, on pipe src, a
 * set of event (0 to 65535) for pipe dst, which happens when src's
 * instructions before it have finished; ks_pred_wait_flag issues, on pipe
 * dst, a wait that starts no earlier than its set (the k-th wait of a
 * (src, dst, event) takes its k-th set).  Neither takes time.  Pipes are
 * the chip's names, in any case.  Returns the instruction's id. */
int ks_pred_set_flag(struct ks_pred_model *m, const char *src, const char *dst, int event);
int ks_pred_wait_flag(struct ks_pred_model *m, const char *src, const char *dst, int event);

/* A user-defined instruction, usable by name in ks_pred_instr from then
 * on, without recompiling kscope.  pipe is one of the chip's pipes.  Its
 * cost is either
 *  - formula (not NULL): an expression giving cycles, over the names
 *    size (elements of the first output, or of the first input when there
 *    is no output), bytes (bytes of all inputs and outputs), in_bytes,
 *    out_bytes, and d0..d7 (the first input's dimensions; 1 beyond its
 *    rank); + - * / and parentheses; or
 *  - a table of n (size, throughput) pairs, size in elements (increasing,
 *    > 0) and throughput in elements per cycle (> 0), interpolated like
 *    the chip's tables.
 * ops_per_element is its operation count per element of size (for the
 * statistics; 0 if it does no arithmetic).  The name must not be taken. */
int ks_pred_register(struct ks_pred_model *m, const char *name, const char *pipe,
		     const char *formula, const double *sizes, const double *throughputs,
		     size_t n, double ops_per_element);

/* ------------------------------------------------------------------ */
/* Scheduling and results                                              */
/* ------------------------------------------------------------------ */

/* Schedules every instruction (docs/predict.md, "The scheduler").  Once
 * run, the model takes no more instructions.  *cycles (may be NULL) gets
 * the predicted time: when the last instruction ends.  -EDEADLK when work
 * remains and nothing can run: the message names each blocked pipe, its
 * head instruction and the tensor it waits for. */
int ks_pred_run(struct ks_pred_model *m, double *cycles);

/* One scheduled instruction. */
struct ks_pred_slice {
	const char *name;      /* instruction name ("vadd", "load", ...) */
	const char *pipe;
	double start, end;     /* cycles */
	double bytes;          /* bytes read and written */
	double ops;            /* arithmetic operations */
	const char *location;  /* "file:line:column", or "" */
};

size_t ks_pred_count(const struct ks_pred_model *m);
/* Instruction id's schedule; -EINVAL before ks_pred_run or out of range. */
int ks_pred_slice(const struct ks_pred_model *m, int id, struct ks_pred_slice *out);

/* Writes the outputs into dir (created if missing; kscope's own files in
 * it are replaced): trace.json, Pipe_statistic.csv,
 * Instruction_statistic.csv, instruction_time.svg, visualize_data.bin.
 * measured (may be NULL) is a kscope op result (its run directory or
 * Timing.csv) or a per-pipe CSV ("Pipe,Time (us)"), for the
 * measured/predicted ratios. */
int ks_pred_write(struct ks_pred_model *m, const char *dir, const char *measured);

/* Which outputs ks_pred_write writes (msKPP's enable_trace and
 * enable_metrics): the pipeline chart, trace.json and visualize_data.bin
 * (KS_PRED_OUT_TRACE), and the statistics, Pipe_statistic.csv,
 * Instruction_statistic.csv and instruction_time.svg (KS_PRED_OUT_METRICS).
 * Both by default; a million-instruction model spends most of its time
 * writing the trace.  -EINVAL for other bits. */
enum { KS_PRED_OUT_TRACE = 1, KS_PRED_OUT_METRICS = 2 };
int ks_pred_set_outputs(struct ks_pred_model *m, unsigned mask);

/* ------------------------------------------------------------------ */
/* The text language                                                   */
/* ------------------------------------------------------------------ */

/* ks_pred_parse_file flags */
#define KS_PRED_PARSE_IGNORE_UNKNOWN 1u /* keys the file does not declare as
					 * a param are ignored (kscope tune) */

/* Reads a model file (docs/predict.md, "The language") and builds it
 * into a new model.  chip, when not NULL, replaces the file's `chip`
 * statement.  keys/values (n pairs) override the file's `param`
 * defaults (kscope predict -D KEY=VALUE; kscope tune's configurations);
 * a key the file does not declare is an error unless flags has
 * KS_PRED_PARSE_IGNORE_UNKNOWN; a value that is not an integer is an
 * error.  NULL with *err saying file:line:column: what is wrong. */
struct ks_pred_model *ks_pred_parse_file(const char *path, const char *chip,
					 const char *const *keys,
					 const char *const *values, size_t n,
					 unsigned flags, char *err, size_t errsize);

/* ------------------------------------------------------------------ */
/* Cache hit ratio                                                     */
/* ------------------------------------------------------------------ */

/* The fraction (0 to 1) of the reads from a cached space (GM: the chip
 * file's spaces with "cache") that hit the cache, as msKPP's
 * set_cache_hit_ratio.  A model-level setting: it applies to every load
 * out of such a space, those before the call too, and the last call wins.
 * Such a load then takes its table's time times (1 - r + r/s) / (1 - r0 +
 * r0/s), s being the space's cache speedup and r0 the ratio its tables
 * describe (docs/predict.md, "The cache hit ratio"); without a call the
 * tables apply as they are.  -EINVAL for a ratio outside 0..1 and on a
 * chip with no cache. */
int ks_pred_set_cache_hit_ratio(struct ks_pred_model *m, double ratio);

/* ------------------------------------------------------------------ */
/* Cores                                                               */
/* ------------------------------------------------------------------ */

/* Issues the instructions that follow to core name (msKPP's Core: "AIC0",
 * "AIV1", any case), on a chip whose file describes "cores": each core
 * has its own copy of its pipes ("AIV1.VECTOR" in the trace and the
 * statistics), and of the spaces that are not shared (UB, L1, L0*; GM is
 * shared).  The first call must come before the first instruction; from
 * then on every instruction goes to a core's pipe, and an instruction on a
 * pipe the core lacks, or on a tensor in another core's per-core space,
 * is refused.  NULL selects no core (instructions are then refused until
 * the next call).  -EINVAL on a chip without cores and for a name that is
 * none of its cores (docs/predict.md, "Cores"). */
int ks_pred_set_core(struct ks_pred_model *m, const char *name);

#ifdef __cplusplus
}
#endif

#endif
