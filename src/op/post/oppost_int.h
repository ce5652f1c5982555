/*
 * Private to src/op/post: one collected launch as read from its raw files
 * (oppost_read.c), with the figures derived from it, which the writers
 * (oppost_csv.c, oppost_json.c) turn into deliverables.
 *
 * Every field has a "known" state: strings are empty and numbers are NaN
 * or have a have_* flag when the raw files did not say, so that a
 * deliverable shows "unknown" rather than a made-up zero.
 */
#ifndef KS_OP_OPPOST_INT_H
#define KS_OP_OPPOST_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "oppost.h"

struct op_arg {
	long long index;
	char name[128];          /* "" if unknown */
	char type_name[128];
	char address[16];
	char access[16];
	char kind[16];           /* buffer, local, scalar, ... ("" unknown) */
	long long size;          /* clSetKernelArg's arg_size, -1 unknown */
	bool has_value;
	double value;            /* scalars whose type is known */
	bool is_buffer;
	long long buf_bytes;     /* -1 unknown */
	char flags[256];         /* "CL_MEM_READ_ONLY|..." */
	bool sub_buffer;
};

struct op_buf {
	long long arg;
	long long bytes;         /* -1 unknown */
	int backed_up;           /* 1, 0, -1 unknown */
	long long read, written; /* -1 unknown; written: bytes changed */
	int may_read, may_write; /* 1, 0, -1 unknown (older raw files) */
	char read_basis[160], write_basis[160];
	char base[32];           /* arg -1 (--backup all): its address */
};

/* The work of one launch (ranges have one per launch inside). */
struct op_work {
	int dim;                 /* 0 unknown */
	uint64_t global[3], local[3], offset[3];
	bool has_local, has_offset;
};

/* One launch inside a collected range. */
struct op_sublaunch {
	char name[256];
	struct op_work work;
	struct op_arg *args;
	size_t nargs;
};

/* A measured or warm-up pass as the deliverables list it. */
struct op_pass {
	int number;              /* 1.. within its kind */
	bool warmup;
	unsigned run;            /* application replay's run; 0 otherwise */
	double start_us;         /* NaN when not on a common timeline */
	bool start_estimated;    /* laid out from durations, not measured */
	double dur_us;           /* NaN: no time (application run without it) */
	json_t *counters;        /* the pass's counter object (borrowed), or NULL */
};

struct op_launch {
	char rel[320];           /* directory relative to the run */
	/* context.json */
	bool have_context;
	char kind[16];           /* kernel, range */
	char name[256];
	long long index, pid, tid;
	char platform_name[256], platform_version[256];
	char device_name[256], device_vendor[256], device_version[256];
	char driver_version[128], device_type[16];
	long long compute_units, max_clock_mhz;
	/* The clocks during the replay (CUDA: NVML), -1 unknown. */
	long long sm_clock_mhz, mem_clock_mhz, mem_max_clock_mhz;
	long long global_mem_bytes, cache_bytes, local_mem_bytes;
	char program_origin[16], program_file[64];
	long long program_bytes;
	char build_options[1024];
	bool out_of_order, profiling_by_program;
	struct op_work work;
	struct op_arg *args;
	size_t nargs;
	struct op_sublaunch *subs;  /* ranges */
	size_t nsubs;
	bool have_source;        /* the program file is there */
	/* measure.json */
	bool have_measure;
	char mode[16];
	char status[32];         /* ok, noisy, failed, incomplete, no measurement */
	char message[512];
	long long warmup, passes_asked;
	int flush;               /* 1, 0, -1 unknown */
	long long flush_bytes;
	double original_us;      /* NaN unknown */
	double replay_wall_ms;
	long long backup_bytes;
	struct op_buf *bufs;
	size_t nbufs;
	int counters_supported;  /* 1, 0, -1 unknown */
	char counters_reason[512];
	char **counter_names;    /* keys of the per-pass objects (owned) */
	size_t ncounter_names;
	json_t *measure_json;    /* kept for the counters' objects */
	/* passes, warm-ups first */
	struct op_pass *pass;
	size_t npass;
	/* derived */
	size_t nmeasured;        /* measured passes with a time */
	double min_us, median_us, mean_us, max_us, spread_pct;
	double p80_p20;          /* NaN under KS_OPPOST_NOISY_MIN_PASSES */
	double bytes_read, bytes_written; /* NaN unknown */
	bool bytes_partial;      /* some buffer's counts were unknown */
	bool bytes_measured;     /* from the hardware's DRAM counters */
	bool bytes_extent;       /* bytes_written is the writable extent */
	double bytes_changed;    /* bytes the first pass changed; NaN unknown */
	/* measure.json "hardware" (CUDA: CUPTI) */
	int hw_supported;        /* 1, 0, -1 not asked */
	char hw_source[600], hw_reason[400];
	double hw_read, hw_written, hw_occupancy_pct; /* NaN unknown */
	double hw_time_us;       /* the GPU's own duration of one run; NaN */
	double gbps;
	double flops, gflops, intensity;
	char flops_why[600];     /* why FLOPs are unknown */
	long long work_groups;   /* -1 unknown */
	/* roofline */
	bool roofline;
	char roofline_why[700];
	char binding[128];       /* the ceiling that binds */
	double attainable_gflops;
	double mem_ceiling_gbps, compute_ceiling_gflops;
	char mem_ceiling_name[96], compute_ceiling_name[96];
	double peak_ratio_pct;   /* bandwidth against the memory ceiling */
};

/* Reports a warning through the caller's function. */
void ks_oppost_warnf(const struct ks_oppost_opts *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Reads the raw files of <run>/<rel> (dirfd open on it) into l and derives
 * its figures.  Never fails for bad raw data (warnings); -ENOMEM only. */
int ks_oppost_read(int dirfd, const char *rel, const struct ks_oppost_opts *o,
		   struct op_launch *l, struct ks_err *err);
void ks_oppost_launch_free(struct op_launch *l);
/* Whether the launch ran on a CUDA device (its context's platform is
 * "NVIDIA CUDA", as src/op/cuda writes it). */
bool ks_oppost_is_cuda(const struct op_launch *l);

/* "1024x1024x1" from n sizes ("-" when n is 0). */
void ks_oppost_sizes(char *out, size_t size, const uint64_t *v, int n);

/* The deliverable writers; each writes one file into rd. */
int ks_oppost_write_basic(struct ks_rundir *rd, const struct op_launch *l,
			  const struct ks_oppost_opts *o, struct ks_err *err);
int ks_oppost_write_timing(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err);
int ks_oppost_write_memory(struct ks_rundir *rd, const struct op_launch *l,
			   const struct ks_oppost_opts *o, struct ks_err *err);
int ks_oppost_write_trace(struct ks_rundir *rd, const struct op_launch *l,
			  const struct ks_oppost_opts *o, struct ks_err *err);
int ks_oppost_write_viz(struct ks_rundir *rd, const struct op_launch *l,
			const struct ks_oppost_opts *o, struct ks_err *err);

/* Commits of, first removing an older file of its name when o->replace. */
int ks_oppost_commit(struct ks_rundir *rd, struct ks_outfile *of,
		     const struct ks_oppost_opts *o, struct ks_err *err);

#endif
