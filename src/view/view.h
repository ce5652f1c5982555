/*
 * view.h: the contract between the parts of kscope view (src/view).
 *
 * kscope view imports one result (a run directory of any kscope command, a
 * visualize_data.bin, a Chrome trace JSON, a Perfetto trace kscope wrote
 * or a profile.db) into a struct
 * ks_view, which is never changed after ks_view_import returns: every
 * request handler only reads it, so the HTTP server's worker threads can
 * answer requests concurrently without locks.
 *
 * The imported data is a list of cards (the seed's "cards" or "ranks"):
 * one card per visualize_data.bin, trace, profile, findings report,
 * prediction or causal profile.  A card carries any of the parts below;
 * its `kinds` bits say which.
 *
 * Requests and responses are JSON texts (docs/view.md, "The API"):
 *
 *   ks_view_request(view, text, len)  -> the response text, always valid
 *                                        JSON, result:false on a bad request
 *
 * Handlers are grouped in tables, one table per module file
 * (view_api_timeline.c, view_api_source.c, view_api_more.c); view_api.c
 * owns the envelope, the dispatch and the parameter checks every handler
 * uses.
 */
#ifndef KS_VIEW_H
#define KS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "err.h"
#include "jsontext.h"

/* Largest request text accepted (HTTP body or WebSocket message). */
#define KS_VIEW_MAX_REQUEST (1u << 20)

/* ------------------------------------------------------------------ */
/* Timeline (view_timeline.c)                                          */
/* ------------------------------------------------------------------ */

/* Times are integer nanoseconds from the timeline's origin (the earliest
 * event of the card).  A timeline is built once and then only read. */
struct kv_timeline;

struct kv_timeline *kv_tl_new(void);
void kv_tl_free(struct kv_timeline *tl);
/* Names a process or thread track (Trace Event "M" metadata).  Optional:
 * a track without a name shows its id.  sort_index orders tracks (lower
 * first; ties by first appearance). */
int kv_tl_process_name(struct kv_timeline *tl, const char *pid, const char *name,
		       int sort_index);
int kv_tl_thread_name(struct kv_timeline *tl, const char *pid, const char *tid,
		      const char *name, int sort_index);
/* One complete slice.  start_ns is absolute here (the origin is taken at
 * kv_tl_finish).  cat, cname and args_json (a JSON object's text, kept as
 * is) may be NULL.  Slices of one thread nest by containment, as in
 * Chrome's viewer; kv_tl_finish gives each its depth. */
int kv_tl_slice(struct kv_timeline *tl, const char *pid, const char *tid,
		const char *name, const char *cat, const char *cname,
		int64_t start_ns, uint64_t dur_ns, const char *args_json,
		size_t args_len);
/* One flow arrow: from the slice enclosing (pid, tid, from_ns) to the one
 * enclosing (pid2, tid2, to_ns). */
int kv_tl_flow(struct kv_timeline *tl, const char *id, const char *cat,
	       const char *name, const char *pid, const char *tid, int64_t from_ns,
	       const char *pid2, const char *tid2, int64_t to_ns);
/* Sorts, nests, indexes.  After it, no more kv_tl_* adding calls. */
int kv_tl_finish(struct kv_timeline *tl, struct ks_err *err);
uint64_t kv_tl_slices(const struct kv_timeline *tl);

/* Reads a Trace Event Format document (an object with "traceEvents" or a
 * bare array; "X", "B"/"E" pairs, "i"/"I", "M" names, "s"/"t"/"f" flows;
 * ts/dur in microseconds unless "displayTimeUnit" says otherwise only for
 * display) into tl.  what names the source in error messages. */
int kv_trace_load(struct kv_timeline *tl, const char *text, size_t len,
		  const char *what, struct ks_err *err);

struct ks_profile; /* src/sample/profile.h */

/* Reads a Perfetto trace that kscope wrote (trace.perfetto-trace of
 * kscope sample or kscope merge; view_perfetto.c): its process and
 * thread tracks, slices and marks into tl, as kv_trace_load reads the
 * same run's Chrome JSON trace, and its samples, with their call stacks,
 * into p (freshly ks_profile_init'ed).  A file that is not protobuf, a
 * damaged one, or a trace with packets kscope does not write is refused
 * with err saying why (what names the source). */
int kv_perfetto_load(struct kv_timeline *tl, struct ks_profile *p, const void *data,
		     size_t len, const char *what, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* Cards and the imported data (view_import.c)                         */
/* ------------------------------------------------------------------ */

enum kv_kind {
	KV_TIMELINE = 1u << 0, /* tl */
	KV_SOURCE   = 1u << 1, /* blocks 0x03 and/or 0x04 (+ 0x01 texts) */
	KV_DETAILS  = 1u << 2, /* any of 0x05..0x09 */
	KV_ROOFLINE = 1u << 3, /* 0x0D */
	KV_PROFILE  = 1u << 4, /* a sample profile.db, or the samples of a
				* Perfetto trace kscope wrote */
	KV_FINDINGS = 1u << 5, /* a memory-tool report */
	KV_PREDICT  = 1u << 6, /* a kscope predict run */
	KV_CAUSAL   = 1u << 7, /* a kscope causal run (causal.csv) */
};

/* A source text the data names: from a 0x01 block, or a file on disk
 * named by the data (read at import; only these are ever served). */
struct kv_source {
	char *path;    /* as the data names it */
	char *name;    /* path repaired (ks_utf8_fix) when it is not UTF-8, as
			* the page gets it and asks for it; else NULL */
	char *text;    /* NUL-terminated, valid UTF-8 (repaired at import) */
	size_t len;
};

/* A file the data names that kscope view did not read, and why ("outside
 * PATH's directory and --source-dir", "not a regular file"...). */
struct kv_refused {
	char *path;
	char *why;
};

struct kv_card {
	char *id;        /* unique: "op/1234/vadd_0", "simulate", ... */
	char *title;     /* what the page shows */
	char *path;      /* the file or directory it came from */
	char *command;   /* the kscope command that made it: "sample", "op",
			  * "simulate", "predict", "memcheck", ... or "" */
	unsigned kinds;  /* enum kv_kind bits */
	bool from_container; /* read from a visualize_data.bin */
	struct kv_timeline *tl;      /* KV_TIMELINE */
	json_t *block[16];           /* parsed JSON payload of 0x02..0x0F
				      * blocks (the first of each type);
				      * NULL where absent.  block[2] is
				      * not kept (it is tl); block[0x0B]
				      * holds the binary cache records as
				      * an array of their 8 counts each. */
	struct kv_source *sources;   /* 0x01 texts and files named by the data */
	size_t nsources;
	struct kv_refused *refused;  /* files named by the data, not read */
	size_t nrefused;
	struct ks_profile *profile;  /* KV_PROFILE */
	json_t *findings;            /* KV_FINDINGS: report.json */
	json_t *predict;             /* KV_PREDICT: {"pipes": [...rows of
				      * Pipe_statistic.csv as objects],
				      * "instructions": [...rows of
				      * Instruction_statistic.csv]} */
	json_t *causal;              /* KV_CAUSAL: {"curves": [...curves of
				      * causal.csv, in its (rank) order],
				      * "messages": [...what was wrong with
				      * the file, each naming it and the
				      * line]} (view_import_read.c) */
};

struct ks_view {
	char *path;             /* PATH as given */
	struct kv_card *cards;
	size_t ncards;
	double import_seconds;
};

/* Where source files the data names may be read from, besides PATH's
 * own directory (PATH itself when it is a directory). */
struct ks_view_import_opts {
	const char *const *source_dirs;
	size_t nsource_dirs;
};

/* Imports PATH (opts may be NULL: sources from PATH's directory only).
 * On failure *out is NULL and err says what was wrong with PATH and what
 * kscope view accepts.  progress, if not NULL, is called now and then
 * with a one-line description of what is being read. */
int ks_view_import(const char *path, const struct ks_view_import_opts *opts,
		   struct ks_view **out, void (*progress)(const char *line),
		   struct ks_err *err);
void ks_view_free(struct ks_view *v);

/* The card with this id; NULL if none. */
const struct kv_card *kv_card_find(const struct ks_view *v, const char *id);
/* A source text by the exact name the data uses, or by the repaired name
 * the page knows it by; NULL if not named. */
const struct kv_source *kv_source_find(const struct kv_card *c, const char *path);
/* Why a file the data names was not read (not served), or NULL. */
const char *kv_source_refused(const struct kv_card *c, const char *path);
/* The name the page knows a source by: valid UTF-8. */
static inline const char *kv_source_name(const struct kv_source *s)
{
	return s->name ? s->name : s->path;
}

/* ------------------------------------------------------------------ */
/* Requests (view_api.c)                                               */
/* ------------------------------------------------------------------ */

/* Answers one request text.  Returns a malloc'ed NUL-terminated response
 * (never NULL unless out of memory); *len_out gets its length. */
char *ks_view_request(const struct ks_view *v, const char *text, size_t len,
		      size_t *len_out);

/* What a handler reports on a bad request: the message goes back in the
 * response's body as {"message": ...} with result:false. */
struct kv_reqerr {
	char msg[512];
};

/* A handler gets the request's params (always a JSON object) and sets
 * *body to a new reference.  Returns 0, or -1 with e->msg set. */
typedef int (*kv_handler)(const struct ks_view *v, json_t *params, json_t **body,
			  struct kv_reqerr *e);

struct kv_command {
	const char *module;   /* "timeline", "source", "roofline", "profile",
			       * "findings", "predict", "causal" */
	const char *command;  /* "unit/threadTraces" */
	kv_handler fn;
};

/* The tables, each ended by a {NULL, NULL, NULL} entry. */
extern const struct kv_command kv_timeline_commands[];  /* view_api_timeline.c */
extern const struct kv_command kv_source_commands[];    /* view_api_source.c */
extern const struct kv_command kv_more_commands[];      /* view_api_more.c */

/* Parameter checks for handlers (view_api.c).  Each returns 0 and stores
 * the value, or -1 with e->msg naming the parameter, what it was and what
 * is accepted.  A parameter that is absent and not required leaves *out
 * unchanged and returns 0. */
int kv_param_str(json_t *params, const char *name, bool required,
		 const char **out, struct kv_reqerr *e);
/* Integers: a JSON integer, or a real with no fractional part, or a
 * decimal string (the seed sends ids as strings), within [lo, hi]. */
int kv_param_int(json_t *params, const char *name, bool required, int64_t lo,
		 int64_t hi, int64_t *out, struct kv_reqerr *e);
/* Numbers: integer or real (finite), within [lo, hi]. */
int kv_param_num(json_t *params, const char *name, bool required, double lo,
		 double hi, double *out, struct kv_reqerr *e);
/* The card a request is about: params "cardId" or "rankId" if given (it
 * must exist and have every bit of `need`), else the first card that has
 * every bit of `need`.  -1 with a message listing the cards that would do
 * when there is none. */
int kv_param_card(const struct ks_view *v, json_t *params, unsigned need,
		  const struct kv_card **out, struct kv_reqerr *e);
/* Sets e->msg with printf formatting and returns -1. */
int kv_fail(struct kv_reqerr *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
