/*
 * view_import_int.h: what the files of kscope view's import share
 * (view_import.c: PATH, the directory walk and the cards;
 * view_import_read.c: reading each kind of file into a card;
 * view_import_profile.c: a profile.db and the timeline of its samples;
 * view_perfetto.c, through view.h: a Perfetto trace kscope wrote).
 * Private to src/view.
 */
#ifndef KV_IMPORT_INT_H
#define KV_IMPORT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "view.h"

/* Largest file kscope view reads besides containers (which are mapped,
 * not read): a trace.json, a report.json, a CSV.  Past it the import
 * fails, naming the file and the limit. */
#define KV_MAX_TEXT_FILE (512u << 20)
/* Largest source file read from disk: sources are shown whole in the
 * page, and a file this big is not a source anyone reads line by line;
 * a larger one is left out (the page says it is not available). */
#define KV_MAX_SOURCE_FILE (8u << 20)
/* At most this many source files are read from disk per card, so that a
 * profile naming every header of a large program stays bounded. */
#define KV_MAX_DISK_SOURCES 512
/* At most this many curves of a causal.csv are read (the first, the best
 * ranked): the page draws a panel for each, and past a few hundred no one
 * reads them.  The card's messages say when the file had more. */
#define KV_MAX_CAUSAL_CURVES 500

/* The import's state while cards are made. */
struct kv_import {
	struct ks_view *v;
	size_t cap_cards;
	void (*progress)(const char *line);
	struct ks_err *err;
	/* Directories source files are read from (real paths, no trailing
	 * '/'): PATH's own and --source-dir's. */
	char **roots;
	size_t nroots;
};

void kv_progress(struct kv_import *im, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* What one directory (or PATH as a single file) holds that kscope view
 * reads.  Each path is malloc'd or NULL. */
struct kv_dirfiles {
	char *vizbin;        /* visualize_data.bin */
	char *trace;         /* trace.json, or the Chrome trace given as PATH */
	char *perfetto;      /* trace.perfetto-trace, or the Perfetto trace
			      * given as PATH */
	char *profile;       /* profile.db */
	char *report;        /* report.json of a memory tool */
	char *pipes;         /* Pipe_statistic.csv */
	char *instructions;  /* Instruction_statistic.csv */
	char *causal;        /* causal.csv of kscope causal */
	char *kernel_source; /* kernel.cl of a kscope op launch */
};

/* Reads everything df names into card c (whose id, path and command are
 * already set): blocks, timeline, profile, findings, predictions, causal
 * curves, then
 * the source files the data names.  0, or a negative code with im->err
 * naming the file and the problem. */
int kv_card_fill(struct kv_import *im, struct kv_card *c, const struct kv_dirfiles *df);

/* view_import_profile.c: reads a profile.db into c->profile and builds
 * c->tl from its samples. */
int kv_card_profile(struct kv_import *im, struct kv_card *c, const char *path);

/* Adds a source (path, text) to c, taking ownership of text (malloc'd,
 * NUL-terminated, len bytes) even on failure.  A path already present
 * is kept as it is (text freed). */
int kv_card_add_source(struct kv_card *c, const char *path, char *text, size_t len);
/* Reads path from disk into c's sources if it is absolute, lies (links
 * resolved) under one of im's roots, is a regular file (opened without
 * blocking, checked on the open descriptor) of at most KV_MAX_SOURCE_FILE
 * bytes without a NUL byte, and is not already there.  A missing file is
 * left out (a source is optional); one that exists but is refused goes
 * into c's refused list with the reason. */
void kv_card_read_source(const struct kv_import *im, struct kv_card *c, const char *path,
			 size_t *budget);

/* Frees what a card owns (not the card itself). */
void kv_card_clear(struct kv_card *c);

#endif
