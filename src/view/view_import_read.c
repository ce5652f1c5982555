/*
 * view_import_read.c: reading the files of one directory into a card --
 * a visualize_data.bin's blocks, a trace.json, a Perfetto trace kscope
 * wrote (view_perfetto.c reads it), a memory tool's
 * report.json, kscope predict's two CSV files, kscope causal's
 * causal.csv -- and then the source files the data names.
 *
 * A causal.csv that is not what kscope causal writes (another header, a
 * field that is not a number, a row of the wrong length) still makes its
 * card: what is wrong goes into the card's messages, each naming the file
 * and the line, and the rows that could be read are shown.
 *
 * A container is mapped by its reader and read in place: the 0x02 trace
 * goes straight from the mapping into the timeline, and JSON payloads are
 * parsed once into the card, so a 100 MB container costs one pass over
 * its bytes and no copy.  Source texts are the one thing copied (the
 * mapping is closed at the end of the import).
 *
 * Only sources are read beyond the files of the directory: a file the
 * data names by an absolute path, under PATH's directory or a
 * --source-dir once links are resolved, that is a regular file (opened
 * with O_NONBLOCK, so a FIFO cannot hang the import, and checked on the
 * descriptor), at most KV_MAX_SOURCE_FILE bytes and without a NUL byte.
 * These and the 0x01 texts are the only texts kscope view ever serves;
 * a file refused is listed with the reason, which the API gives.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kscope/vizbin.h"
#include "profile.h"
#include "readfile.h"
#include "view_import_int.h"

/* ------------------------------------------------------------------ */
/* Sources                                                             */
/* ------------------------------------------------------------------ */

int kv_card_add_source(struct kv_card *c, const char *path, char *text, size_t len)
{
	struct kv_source *s;
	bool valid;

	if (kv_source_find(c, path)) {
		free(text);
		return 0;
	}
	s = realloc(c->sources, (c->nsources + 1) * sizeof *s);
	if (!s) {
		free(text);
		return -ENOMEM;
	}
	c->sources = s;
	s = &c->sources[c->nsources];
	valid = ks_utf8_valid(path, strlen(path));
	s->path = strdup(path);
	s->name = valid ? NULL : ks_utf8_fix(path, strlen(path), NULL);
	if (!s->path || (!valid && !s->name)) {
		free(s->path);
		free(s->name);
		free(text);
		return -ENOMEM;
	}
	/* Stored as the page gets it: valid UTF-8 (a source in Latin-1
	 * reads right). */
	if (!ks_utf8_valid(text, len)) {
		char *fixed = ks_utf8_fix(text, len, &len);

		free(text);
		if (!fixed) {
			free(s->path);
			free(s->name);
			return -ENOMEM;
		}
		text = fixed;
	}
	s->text = text;
	s->len = len;
	c->nsources++;
	return 0;
}

const char *kv_source_refused(const struct kv_card *c, const char *path)
{
	for (size_t i = 0; i < c->nrefused; i++)
		if (strcmp(c->refused[i].path, path) == 0)
			return c->refused[i].why;
	return NULL;
}

/* Notes that path was not read, and why (at most KV_MAX_DISK_SOURCES). */
static void refuse(struct kv_card *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void refuse(struct kv_card *c, const char *path, const char *fmt, ...)
{
	struct kv_refused *r;
	va_list ap;
	char why[512];

	if (c->nrefused >= KV_MAX_DISK_SOURCES || kv_source_refused(c, path))
		return;
	r = realloc(c->refused, (c->nrefused + 1) * sizeof *r);
	if (!r)
		return;
	c->refused = r;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	r[c->nrefused].path = strdup(path);
	r[c->nrefused].why = strdup(why);
	if (!r[c->nrefused].path || !r[c->nrefused].why) {
		free(r[c->nrefused].path);
		free(r[c->nrefused].why);
		return;
	}
	c->nrefused++;
}

/* Whether real (a resolved path) lies under one of the roots. */
static bool under_roots(const struct kv_import *im, const char *real)
{
	for (size_t i = 0; i < im->nroots; i++) {
		size_t n = strlen(im->roots[i]);

		if (strcmp(im->roots[i], "/") == 0 ||
		    (strncmp(real, im->roots[i], n) == 0 && real[n] == '/'))
			return true;
	}
	return false;
}

void kv_card_read_source(const struct kv_import *im, struct kv_card *c, const char *path,
			 size_t *budget)
{
	struct ks_err e;
	struct stat st;
	char *text = NULL, *real;
	size_t size = 0;
	int rc;

	if (path[0] != '/' || *budget == 0 || kv_source_find(c, path) ||
	    kv_source_refused(c, path))
		return;
	real = realpath(path, NULL);
	if (!real)
		return; /* missing: the frame just has no source to show */
	if (!under_roots(im, real)) {
		refuse(c, path, "it is outside the directories kscope view serves sources "
		       "from (PATH's directory and --source-dir); run kscope view with "
		       "--source-dir naming a directory above it");
		free(real);
		return;
	}
	/* Nothing but a regular file is ever opened: a FIFO would block the
	 * open, a device could do anything.  O_NONBLOCK and the check of the
	 * descriptor (ks_read_file_at) close the gap between the two. */
	if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
		refuse(c, path, "it is not a regular file");
		free(real);
		return;
	}
	rc = ks_read_file_at(AT_FDCWD, real, O_NOFOLLOW | O_NONBLOCK, KV_MAX_SOURCE_FILE, &text,
			     &size, &e);
	free(real);
	if (rc < 0) {
		refuse(c, path, "%s", rc == -EFBIG ? "it is over 8 MiB" : e.msg);
		return;
	}
	if (memchr(text, '\0', size)) { /* not a text */
		refuse(c, path, "it is not a text file (it has a NUL byte)");
		free(text);
		return;
	}
	(*budget)--;
	kv_card_add_source(c, path, text, size);
}

/* Objects with a "file" string anywhere in j (findings' stack frames):
 * the file joined to its "dir" when it is relative. */
static void findings_sources(const struct kv_import *im, struct kv_card *c, json_t *j,
			     size_t *budget, int depth)
{
	const char *key;
	json_t *v;
	size_t i;

	if (depth > 32 || *budget == 0)
		return;
	if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			findings_sources(im, c, v, budget, depth + 1);
		return;
	}
	if (!json_is_object(j))
		return;
	const char *file = json_string_value(json_object_get(j, "file"));
	const char *dir = json_string_value(json_object_get(j, "dir"));

	if (file && file[0] == '/') {
		kv_card_read_source(im, c, file, budget);
	} else if (file && dir && dir[0] == '/') {
		char *p = malloc(strlen(dir) + strlen(file) + 2);

		if (p) {
			sprintf(p, "%s/%s", dir, file);
			kv_card_read_source(im, c, p, budget);
			free(p);
		}
	}
	json_object_foreach(j, key, v)
		if (json_is_object(v) || json_is_array(v))
			findings_sources(im, c, v, budget, depth + 1);
}

static void data_sources(const struct kv_import *im, struct kv_card *c)
{
	size_t budget = KV_MAX_DISK_SOURCES;
	json_t *files = json_object_get(c->block[KS_VB_API_FILES], "Files"), *f;
	size_t i;

	json_array_foreach(files, i, f) {
		const char *s = json_string_value(json_object_get(f, "Source"));

		if (s)
			kv_card_read_source(im, c, s, &budget);
	}
	if (c->findings)
		findings_sources(im, c, c->findings, &budget, 0);
	if (c->profile) {
		const struct ks_profile *p = c->profile;
		unsigned char *seen = calloc(p->n_strings ? p->n_strings : 1, 1);

		for (size_t k = 0; seen && k < p->n_frames; k++) {
			uint32_t id = p->frames[k].file;

			if (id == KS_NONE || id >= p->n_strings || seen[id])
				continue;
			seen[id] = 1;
			kv_card_read_source(im, c, ks_profile_str(p, id), &budget);
		}
		free(seen);
	}
}

/* ------------------------------------------------------------------ */
/* visualize_data.bin and trace.json                                   */
/* ------------------------------------------------------------------ */

static int load_timeline(struct kv_import *im, struct kv_card *c, const char *text,
			 size_t len, const char *what)
{
	struct kv_timeline *tl = kv_tl_new();
	int rc;

	if (!tl)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", what);
	kv_progress(im, "building the timeline of %s (%.1f MB)", what, (double)len / 1e6);
	rc = kv_trace_load(tl, text, len, what, im->err);
	if (rc == 0)
		rc = kv_tl_finish(tl, im->err);
	if (rc < 0) {
		kv_tl_free(tl);
		return rc;
	}
	c->tl = tl;
	return 0;
}

/* A 0x0B payload (whole 32-byte CacheRecords, little-endian u32s) as a
 * JSON array of arrays of its eight counts, in the record's order. */
static json_t *cache_records_json(const void *data, uint64_t len)
{
	const unsigned char *p = data;
	json_t *all = json_array();

	for (uint64_t off = 0; all && off + KS_VB_CACHE_RECORD_SIZE <= len;
	     off += KS_VB_CACHE_RECORD_SIZE) {
		json_t *rec = json_array();

		for (unsigned f = 0; rec && f < 8; f++) {
			const unsigned char *q = p + off + 4 * f;

			json_array_append_new(rec, json_integer((json_int_t)(
				(uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
				(uint32_t)q[3] << 24)));
		}
		if (!rec || json_array_append_new(all, rec)) {
			json_decref(all);
			return NULL;
		}
	}
	return all;
}

static int read_container(struct kv_import *im, struct kv_card *c, const char *path)
{
	struct ks_vb_reader *r = NULL;
	struct ks_vb_error ve = { 0 };
	char summary[256], what[4200];
	int rc;

	rc = ks_vb_open(path, 0, &r, &ve);
	if (rc < 0)
		return ks_err_set(im->err, rc, "%s: %s", path, ve.msg);
	kv_progress(im, "reading %s (%u blocks, %.1f MB)", path, ks_vb_count(r),
		    (double)ks_vb_file_size(r) / 1e6);
	for (uint32_t i = 0; i < ks_vb_count(r) && rc == 0; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);
		const char *pl = (const char *)b->payload;
		size_t len = (size_t)b->payload_size;

		/* the trace's reader checks a 0x02 payload as it reads it,
		 * which spares parsing the largest block twice */
		if (b->type != KS_VB_TRACE &&
		    (rc = ks_vb_check_payload(b, summary, sizeof summary, &ve)) < 0) {
			ks_err_set(im->err, rc, "%s: %s", path, ve.msg);
			break;
		}
		switch (b->type) {
		case KS_VB_SOURCE: {
			char *text = malloc(len + 1);

			if (!text) {
				rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
				break;
			}
			memcpy(text, pl, len);
			text[len] = '\0';
			if (kv_card_add_source(c, b->path, text, len) < 0)
				rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
			break;
		}
		case KS_VB_TRACE:
			if (c->tl)
				break; /* the first trace block is the card's */
			snprintf(what, sizeof what, "%s: block %u (trace) at offset %llu", path,
				 b->index, (unsigned long long)b->offset);
			rc = load_timeline(im, c, pl, len, what);
			break;
		case KS_VB_MEMORY_TIMING:
			break; /* binary records: nothing the page shows yet */
		case KS_VB_CACHE_RECORDS:
			/* Kept as a JSON array of the records' eight counts
			 * (the Details page's cache sets); the check passed,
			 * so the size is a multiple of the record. */
			if (!c->block[b->type] &&
			    !(c->block[b->type] = cache_records_json(pl, len)))
				rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
			break;
		default: {
			json_error_t je;

			if (b->type > KS_VB_TYPE_MAX || c->block[b->type])
				break;
			c->block[b->type] = json_loadb(pl, len, 0, &je);
			if (!c->block[b->type])
				rc = ks_err_set(im->err, -EINVAL, "%s: block %u: %s", path,
						b->index, je.text);
			break;
		}
		}
	}
	ks_vb_close(r);
	return rc;
}

static int read_text(struct kv_import *im, const char *path, char **text, size_t *len)
{
	int rc = ks_read_file_at(AT_FDCWD, path, O_NOFOLLOW, KV_MAX_TEXT_FILE, text, len,
				 im->err);

	if (rc == 0)
		kv_progress(im, "reading %s (%.1f MB)", path, (double)*len / 1e6);
	return rc;
}

/* A Perfetto trace kscope wrote: the timeline of its slices, and the
 * profile of its samples when it has any. */
static int read_perfetto(struct kv_import *im, struct kv_card *c, const char *path)
{
	struct kv_timeline *tl = kv_tl_new();
	struct ks_profile *p = calloc(1, sizeof *p);
	char *data = NULL;
	size_t len = 0;
	int rc = tl && p ? 0 : ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);

	if (rc == 0)
		rc = ks_profile_init(p, im->err);
	if (rc == 0)
		rc = read_text(im, path, &data, &len);
	if (rc == 0) {
		kv_progress(im, "building the timeline of %s (%.1f MB)", path, (double)len / 1e6);
		rc = kv_perfetto_load(tl, p, data, len, path, im->err);
	}
	if (rc == 0)
		rc = kv_tl_finish(tl, im->err);
	free(data);
	if (rc < 0) {
		if (tl)
			kv_tl_free(tl);
		if (p)
			ks_profile_free(p);
		free(p);
		return rc;
	}
	c->tl = tl;
	if (p->n_samples) {
		c->profile = p;
	} else {
		ks_profile_free(p);
		free(p);
	}
	return 0;
}

static int read_trace(struct kv_import *im, struct kv_card *c, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	int rc = read_text(im, path, &text, &len);

	if (rc == 0)
		rc = load_timeline(im, c, text, len, path);
	free(text);
	return rc;
}

/* ------------------------------------------------------------------ */
/* report.json                                                         */
/* ------------------------------------------------------------------ */

/* 1 if path is a memory tool's report (c->findings set), 0 if it is some
 * other report.json, or a negative code. */
static int read_report(struct kv_import *im, struct kv_card *c, const char *path)
{
	json_error_t je;
	char *text = NULL;
	size_t len = 0;
	json_t *j;
	int rc = read_text(im, path, &text, &len);

	if (rc < 0)
		return rc;
	j = json_loadb(text, len, 0, &je);
	free(text);
	if (!j)
		return ks_err_set(im->err, -EINVAL, "%s: invalid JSON at line %d, column %d: "
				  "%s", path, je.line, je.column, je.text);
	if (!json_is_object(j) ||
	    !json_string_value(json_object_get(j, "format")) ||
	    strcmp(json_string_value(json_object_get(j, "format")),
		   "kscope-memtools-report") != 0) {
		json_decref(j);
		return 0;
	}
	c->findings = j;
	return 1;
}

/* ------------------------------------------------------------------ */
/* kscope predict's CSV files                                          */
/* ------------------------------------------------------------------ */

/* Appends c to the growing string *out (keeping room for a NUL); false
 * when out of memory, with *out freed. */
static bool csv_push(char **out, size_t *n, size_t *cap, char c)
{
	if (*n + 2 > *cap) {
		char *o = realloc(*out, *cap *= 2);

		if (!o) {
			free(*out);
			*out = NULL;
			return false;
		}
		*out = o;
	}
	(*out)[(*n)++] = c;
	return true;
}

/* One CSV field (RFC 4180 quoting) from *p; advances past its separator.
 * Returns a malloc'd string, *eol set at the end of a record. */
static char *csv_field(const char **p, const char *end, bool *eol)
{
	const char *s = *p;
	size_t cap = 32, n = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	if (s < end && *s == '"') {
		s++;
		while (s < end) {
			if (*s == '"' && s + 1 < end && s[1] == '"') {
				s++;
			} else if (*s == '"') {
				s++;
				break;
			}
			if (!csv_push(&out, &n, &cap, *s++))
				return NULL;
		}
	}
	while (s < end && *s != ',' && *s != '\n' && *s != '\r')
		if (!csv_push(&out, &n, &cap, *s++))
			return NULL;
	out[n] = '\0';
	*eol = s >= end || *s != ',';
	if (s < end && *s == '\r') {
		s++; /* CR LF or a bare CR ends the record */
		if (s < end && *s == '\n')
			s++;
	} else if (s < end) {
		s++;
	}
	*p = s;
	return out;
}

/* A field as JSON: an integer or a number when the whole field is one. */
static json_t *csv_value(const char *s)
{
	char *end;

	if (*s && *s != ' ') {
		errno = 0;
		long long ll = strtoll(s, &end, 10);
		if (!*end && !errno)
			return json_integer(ll);
		double d = strtod(s, &end);
		if (!*end && isfinite(d))
			return json_real(d);
	}
	return json_string(s);
}

static int read_csv(struct kv_import *im, const char *path, json_t **out)
{
	char *text = NULL;
	size_t len = 0;
	json_t *rows = NULL, *header = NULL;
	int rc = read_text(im, path, &text, &len);

	if (rc < 0)
		return rc;
	rows = json_array();
	header = json_array();
	const char *p = text, *end = text + len;
	bool first = true;

	while (rows && header && p < end) {
		json_t *row = first ? NULL : json_object();
		size_t col = 0;
		bool eol = false;

		if (*p == '\n' || *p == '\r') { /* blank line */
			p++;
			continue;
		}
		while (!eol) {
			char *f = csv_field(&p, end, &eol);

			if (!f) {
				rc = -ENOMEM;
				break;
			}
			if (first) {
				json_array_append_new(header, json_string(f));
			} else {
				const char *key = json_string_value(json_array_get(header, col));

				if (!key) {
					free(f);
					json_decref(row);
					rc = ks_err_set(im->err, -EINVAL, "%s: line %zu has more "
							"fields than the header's %zu", path,
							json_array_size(rows) + 2,
							json_array_size(header));
					goto out;
				}
				json_object_set_new(row, key, csv_value(f));
			}
			free(f);
			col++;
		}
		if (rc < 0) {
			json_decref(row);
			break;
		}
		if (row)
			json_array_append_new(rows, row);
		first = false;
	}
	if (!rows || !header || rc == -ENOMEM) {
		rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", path);
		goto out;
	}
	if (first) {
		rc = ks_err_set(im->err, -EINVAL, "%s: empty: a header line is expected", path);
		goto out;
	}
	*out = rows;
	rows = NULL;
out:
	json_decref(rows);
	json_decref(header);
	free(text);
	return rc;
}

static int read_predict(struct kv_import *im, struct kv_card *c,
			const struct kv_dirfiles *df)
{
	json_t *pipes = NULL, *instr = NULL;
	int rc = read_csv(im, df->pipes, &pipes);

	if (rc == 0)
		rc = read_csv(im, df->instructions, &instr);
	if (rc == 0) {
		c->predict = json_pack("{s:o,s:o}", "pipes", pipes, "instructions", instr);
		pipes = instr = NULL;
		if (!c->predict)
			rc = ks_err_set(im->err, -ENOMEM, "%s: out of memory", df->pipes);
	}
	json_decref(pipes);
	json_decref(instr);
	return rc;
}

/* ------------------------------------------------------------------ */
/* kscope causal's causal.csv                                          */
/* ------------------------------------------------------------------ */

/* The columns of causal.csv the page shows (src/causal/causal_post.c
 * writes them, in this order; docs/causal.md, "Outputs").  They are found
 * by their names in the header, and other columns are left alone, so that
 * a kscope causal that writes more columns is still read.  The last,
 * function, is optional: a causal.csv written before it existed has none,
 * and its curves get a null function. */
enum {
	CC_POINT, CC_FILE, CC_LINE, CC_LINE_PCT, CC_PROGRAM_PCT, CC_LOW, CC_HIGH,
	CC_EXPERIMENTS, CC_VISITS, CC_EFFECTIVE, CC_FUNCTION, CC_NCOLS
};
#define CC_NEEDED CC_FUNCTION    /* the columns before it are required */

static const char *const causal_cols[CC_NCOLS] = {
	"point", "file", "line", "line_speedup_pct", "program_speedup_pct",
	"ci_low_pct", "ci_high_pct", "experiments", "visits", "effective_s", "function",
};

/* Problems listed one by one in the card's messages; the others are
 * counted in one last message. */
#define KV_MAX_CAUSAL_MESSAGES 20
/* Fields of a record kept (the rest are counted): the header's columns
 * must be among the first so many. */
#define KV_MAX_CAUSAL_FIELDS 256

/* The state of one causal.csv's reading. */
struct causal_read {
	const char *path;
	size_t nheader;          /* fields of the header, which every row has */
	size_t col[CC_NCOLS];    /* where each of causal_cols is in a row
				  * (function: nheader when it has none) */
	json_t *curves;          /* the result's "curves" */
	json_t *messages;        /* the result's "messages" */
	size_t problems;         /* every problem, listed or not */
	size_t ncurves;          /* curves in the file, read or past the cap */
	json_t *curve;           /* the curve being read (owned by curves) */
	char *point, *file;      /* its key, as the file has it (malloc'd) */
	long long line;
	double impact_sum;       /* its program speedups where the line's > 0 */
	size_t impact_n;
};

/* Adds "PATH: line N: ..." to the messages (control characters, which a
 * quoted field may hold, made spaces by ks_err_set).  -ENOMEM or 0. */
static int causal_problem(struct causal_read *cr, size_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int causal_problem(struct causal_read *cr, size_t line, const char *fmt, ...)
{
	struct ks_err e;
	char what[768];
	va_list ap;

	if (cr->problems++ >= KV_MAX_CAUSAL_MESSAGES)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	ks_err_set(&e, -EINVAL, "%s: line %zu: %s", cr->path, line, what);
	return json_array_append_new(cr->messages, ks_json_text(e.msg)) < 0 ? -ENOMEM : 0;
}

/* A field of the number columns: a finite number, the whole field.  An
 * empty field is NULL (unknown) where empty_ok, else a problem. */
static bool causal_number(const char *s, bool empty_ok, json_t **out)
{
	char *end;
	double d;

	*out = NULL;
	if (!*s)
		return empty_ok;
	if (*s == ' ' || *s == '\t')
		return false;
	d = strtod(s, &end);
	if (*end || !isfinite(d))
		return false;
	*out = json_real(d);
	return true;
}

/* A field of the count columns: a whole number of at least lo. */
static bool causal_count(const char *s, long long lo, json_t **out)
{
	char *end;
	long long v;

	*out = NULL;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end || errno || v < lo)
		return false;
	*out = json_integer(v);
	return true;
}

/* The curve read so far gets its impact: the mean program speedup of its
 * points above 0% (null when it has none). */
static int causal_end_curve(struct causal_read *cr)
{
	int rc = 0;

	if (cr->curve && json_object_set_new(cr->curve, "impact_pct", cr->impact_n ?
					     json_real(cr->impact_sum / (double)cr->impact_n) :
					     json_null()) < 0)
		rc = -ENOMEM;
	cr->curve = NULL;
	return rc;
}

/* One data row (row: its fields, as many as the header's) at line:
 * checked, then added to its curve, a new curve when the point, file or
 * line changes.  Past KV_MAX_CAUSAL_CURVES curves, rows are checked and
 * their curves counted, not kept. */
static int causal_row(struct causal_read *cr, char **row, size_t line)
{
	json_t *v[CC_NCOLS] = { NULL }, *pt;
	const char *f[CC_NCOLS];
	long long ln;
	int rc = 0;

	for (unsigned i = 0; i < CC_NCOLS; i++)
		f[i] = cr->col[i] < cr->nheader ? row[cr->col[i]] : "";
	for (unsigned i = CC_LINE; i < CC_NEEDED; i++) {
		bool ok;
		const char *want;

		switch (i) {
		case CC_LINE:
			ok = causal_count(f[i], 1, &v[i]);
			want = "a line number (1 or more)";
			break;
		case CC_EXPERIMENTS: case CC_VISITS:
			ok = causal_count(f[i], 0, &v[i]);
			want = "a whole number (0 or more)";
			break;
		case CC_LOW: case CC_HIGH:
			ok = causal_number(f[i], true, &v[i]);
			want = "a number, or nothing (unknown)";
			break;
		default:
			ok = causal_number(f[i], false, &v[i]);
			want = "a number";
			break;
		}
		if (!ok) {
			rc = causal_problem(cr, line, "%s is \"%.60s\"; %s is expected (the row is "
					    "left out)", causal_cols[i], f[i], want);
			goto out;
		}
		if (!v[i] && f[i][0]) {
			rc = -ENOMEM;
			goto out;
		}
	}

	ln = json_integer_value(v[CC_LINE]);
	if (!cr->point || ln != cr->line || strcmp(f[CC_POINT], cr->point) != 0 ||
	    strcmp(f[CC_FILE], cr->file) != 0) {
		rc = causal_end_curve(cr);
		if (rc < 0)
			goto out;
		free(cr->point);
		free(cr->file);
		cr->point = strdup(f[CC_POINT]);
		cr->file = strdup(f[CC_FILE]);
		cr->line = ln;
		cr->impact_sum = 0;
		cr->impact_n = 0;
		if (!cr->point || !cr->file) {
			rc = -ENOMEM;
			goto out;
		}
		if (++cr->ncurves > KV_MAX_CAUSAL_CURVES)
			goto out; /* counted, not kept: a message says how many */
		/* impact_pct is set when the curve ends (causal_end_curve) */
		/* the function of the curve's first row (kscope causal
		 * writes the same on every row of a curve); empty: unknown */
		cr->curve = json_pack("{s:o*,s:o*,s:I,s:o,s:n,s:o}", "point",
				      ks_json_text(f[CC_POINT]), "file", ks_json_text(f[CC_FILE]),
				      "line", (json_int_t)ln, "function",
				      f[CC_FUNCTION][0] ? ks_json_text(f[CC_FUNCTION]) : json_null(),
				      "impact_pct", "points", json_array());
		if (!cr->curve || !json_object_get(cr->curve, "point") ||
		    !json_object_get(cr->curve, "file") ||
		    !json_object_get(cr->curve, "function") ||
		    json_array_append_new(cr->curves, cr->curve) < 0) {
			cr->curve = NULL;
			rc = -ENOMEM;
			goto out;
		}
	}
	if (!cr->curve)
		goto out; /* a curve past the cap */
	if (json_real_value(v[CC_LINE_PCT]) > 0) {
		cr->impact_sum += json_real_value(v[CC_PROGRAM_PCT]);
		cr->impact_n++;
	}
	pt = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O}",
		       "line_speedup_pct", v[CC_LINE_PCT],
		       "program_speedup_pct", v[CC_PROGRAM_PCT],
		       "ci_low_pct", v[CC_LOW] ? v[CC_LOW] : json_null(),
		       "ci_high_pct", v[CC_HIGH] ? v[CC_HIGH] : json_null(),
		       "experiments", v[CC_EXPERIMENTS], "visits", v[CC_VISITS],
		       "effective_s", v[CC_EFFECTIVE]);
	if (!pt || json_array_append_new(json_object_get(cr->curve, "points"), pt) < 0)
		rc = -ENOMEM;
out:
	for (unsigned i = 0; i < CC_NCOLS; i++)
		json_decref(v[i]);
	return rc;
}

/* Checks the header (line 1; f holds its first fields, nf counts them
 * all): 0 when it has every column of causal_cols (their places noted),
 * 1 when not (a message says so), -ENOMEM. */
static int causal_header(struct causal_read *cr, char **f, size_t nf)
{
	char got[200], lacks[200];
	size_t n = 0, m = 0, kept = nf < KV_MAX_CAUSAL_FIELDS ? nf : KV_MAX_CAUSAL_FIELDS;

	cr->nheader = nf;
	lacks[0] = '\0';
	for (size_t c = 0; c < CC_NCOLS; c++) {
		size_t i = 0;

		while (i < kept && strcmp(f[i], causal_cols[c]) != 0)
			i++;
		cr->col[c] = i < kept ? i : nf;
		if (i == kept && c < CC_NEEDED && m < sizeof lacks) {
			int k = snprintf(lacks + m, sizeof lacks - m, "%s%s", m ? ", " : "",
					 causal_cols[c]);

			m += k > 0 ? (size_t)k : 0;
		}
	}
	if (!lacks[0])
		return 0;
	got[0] = '\0';
	for (size_t i = 0; i < kept && n < sizeof got; i++) {
		int k = snprintf(got + n, sizeof got - n, "%s%s", i ? "," : "", f[i]);

		n += k > 0 ? (size_t)k : 0;
	}
	if (causal_problem(cr, 1, "the header is \"%.120s%s\", without %.200s; kscope "
			   "causal's has point,file,line,line_speedup_pct,program_speedup_pct,"
			   "ci_low_pct,ci_high_pct,experiments,visits,effective_s (no curve is "
			   "read)", got, n > 120 ? "..." : "", lacks) < 0)
		return -ENOMEM;
	return 1;
}

/* Reads text (len bytes, a causal.csv) into cr's curves and messages. */
static int causal_parse(struct causal_read *cr, const char *text, size_t len)
{
	const char *p = text, *end = text + len, *counted = text;
	char *f[KV_MAX_CAUSAL_FIELDS];
	size_t line = 1;
	bool header = true;
	int rc = 0;

	while (p < end && rc == 0) {
		size_t nf = 0;
		bool eol = false;

		/* the physical line the record starts on (a quoted field
		 * may hold line breaks) */
		for (; counted < p; counted++)
			if (*counted == '\n')
				line++;
		if (*p == '\n' || *p == '\r') { /* a blank line */
			p++;
			continue;
		}
		while (!eol) {
			char *x = csv_field(&p, end, &eol);

			if (!x) {
				rc = -ENOMEM;
				break;
			}
			if (nf < KV_MAX_CAUSAL_FIELDS)
				f[nf] = x;
			else
				free(x);
			nf++;
		}
		if (rc == 0 && header) {
			rc = causal_header(cr, f, nf);
			header = false;
		} else if (rc == 0 && nf != cr->nheader) {
			rc = causal_problem(cr, line, "%zu field%s, where the header has %zu (the "
					    "row is left out)", nf, nf == 1 ? "" : "s",
					    cr->nheader);
		} else if (rc == 0) {
			rc = causal_row(cr, f, line);
		}
		for (size_t i = 0; i < nf && i < KV_MAX_CAUSAL_FIELDS; i++)
			free(f[i]);
	}
	if (rc == 0 && header)
		return causal_problem(cr, 1, "the file is empty; kscope causal writes a header "
				      "line first");
	if (rc == 0)
		rc = causal_end_curve(cr);
	return rc > 0 ? 0 : rc;
}

static int read_causal(struct kv_import *im, struct kv_card *c, const char *path)
{
	struct causal_read cr = { .path = path };
	struct ks_err e = { 0 };
	char *text = NULL;
	size_t len = 0;
	int rc;

	cr.curves = json_array();
	cr.messages = json_array();
	if (!cr.curves || !cr.messages) {
		rc = -ENOMEM;
		goto out;
	}
	rc = ks_read_file_at(AT_FDCWD, path, O_NOFOLLOW, KV_MAX_TEXT_FILE, &text, &len, &e);
	if (rc == -ENOMEM)
		goto out;
	if (rc < 0) {
		/* the card is still made, with the reason it has no curves */
		rc = json_array_append_new(cr.messages, ks_json_text(e.msg)) < 0 ? -ENOMEM : 0;
		cr.problems++;
	} else {
		kv_progress(im, "reading %s (%.1f MB)", path, (double)len / 1e6);
		rc = causal_parse(&cr, text, len);
	}
	if (rc == 0 && cr.problems > KV_MAX_CAUSAL_MESSAGES) {
		ks_err_set(&e, -EINVAL, "%s: %zu more problems not listed", path,
			   cr.problems - KV_MAX_CAUSAL_MESSAGES);
		rc = json_array_append_new(cr.messages, ks_json_text(e.msg)) < 0 ? -ENOMEM : 0;
	}
	if (rc == 0 && cr.ncurves > KV_MAX_CAUSAL_CURVES) {
		ks_err_set(&e, -EINVAL, "%s: %zu curves; the first %d (the best ranked) are "
			   "shown", path, cr.ncurves, KV_MAX_CAUSAL_CURVES);
		rc = json_array_append_new(cr.messages, ks_json_text(e.msg)) < 0 ? -ENOMEM : 0;
	}
	if (rc == 0) {
		c->causal = json_pack("{s:O,s:O}", "curves", cr.curves, "messages", cr.messages);
		if (!c->causal)
			rc = -ENOMEM;
	}
out:
	json_decref(cr.curves);
	json_decref(cr.messages);
	free(cr.point);
	free(cr.file);
	free(text);
	return rc < 0 ? ks_err_set(im->err, rc, "%s: out of memory", path) : 0;
}

/* ------------------------------------------------------------------ */
/* The card                                                            */
/* ------------------------------------------------------------------ */

static void set_title(struct kv_card *c)
{
	char buf[512];
	json_t *bi = c->block[KS_VB_BASE_INFO];
	const char *name = json_string_value(json_object_get(bi, "name"));

	buf[0] = '\0';
	if (name) {
		json_t *li = json_object_get(bi, "launch_index");
		const char *pid = json_string_value(json_object_get(bi, "pid"));

		if (json_is_integer(li))
			snprintf(buf, sizeof buf, "%s, launch %lld%s%s", name,
				 (long long)json_integer_value(li), pid ? ", pid " : "",
				 pid ? pid : "");
		else
			snprintf(buf, sizeof buf, "%s", name);
	} else if (c->findings) {
		json_t *prog = json_object_get(c->findings, "program");
		const char *exe = json_string_value(json_object_get(prog, "exe"));
		const char *base = exe && strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;

		snprintf(buf, sizeof buf, "%s: %s", c->command, base ? base : "?");
	} else if (c->profile) {
		const struct ks_profile *p = c->profile;

		for (size_t i = 0; i < p->n_meta; i++)
			if (strcmp(ks_profile_str(p, p->meta[i].key), "command") == 0)
				snprintf(buf, sizeof buf, "sample: %.400s",
					 ks_profile_str(p, p->meta[i].value));
	}
	if (!buf[0] && c->command[0]) {
		const char *base = strrchr(c->path, '/') ? strrchr(c->path, '/') + 1 : c->path;

		snprintf(buf, sizeof buf, "%s: %s", c->command, base);
	}
	if (!buf[0])
		snprintf(buf, sizeof buf, "%s", c->id);
	c->title = strdup(buf);
}

int kv_card_fill(struct kv_import *im, struct kv_card *c, const struct kv_dirfiles *df)
{
	int rc = 0;

	if (df->vizbin) {
		rc = read_container(im, c, df->vizbin);
		c->from_container = rc == 0;
	}
	if (rc == 0 && df->profile)
		rc = kv_card_profile(im, c, df->profile);
	/* a container's 0x02 block is the run's trace.json; a sample run's
	 * traces have nothing the profile lacks; without the profile, its
	 * Perfetto trace has the samples' stacks, which trace.json lacks */
	if (rc == 0 && df->perfetto && !c->tl && !df->profile)
		rc = read_perfetto(im, c, df->perfetto);
	if (rc == 0 && df->trace && !c->tl && !df->profile)
		rc = read_trace(im, c, df->trace);
	if (rc == 0 && df->report && (rc = read_report(im, c, df->report)) > 0)
		rc = 0;
	if (rc == 0 && df->pipes && df->instructions)
		rc = read_predict(im, c, df);
	if (rc == 0 && df->causal)
		rc = read_causal(im, c, df->causal);
	if (rc == 0 && df->kernel_source) {
		/* op's trace names the kernel's source as "kernel.cl" */
		char *text = NULL;
		size_t len = 0;
		struct ks_err e;

		if (ks_read_file_at(AT_FDCWD, df->kernel_source, O_NOFOLLOW | O_NONBLOCK,
				    KV_MAX_SOURCE_FILE, &text, &len, &e) == 0 &&
		    !memchr(text, '\0', len))
			rc = kv_card_add_source(c, "kernel.cl", text, len);
		else
			free(text);
		if (rc < 0)
			rc = ks_err_set(im->err, rc, "%s: out of memory", df->kernel_source);
	}
	if (rc < 0)
		return rc;
	data_sources(im, c);

	c->kinds = 0;
	if (c->tl)
		c->kinds |= KV_TIMELINE;
	if (c->block[KS_VB_API_FILES] || c->block[KS_VB_API_INSTR])
		c->kinds |= KV_SOURCE;
	for (unsigned t = KS_VB_BASE_INFO; t <= KS_VB_MEMORY_TABLE; t++)
		if (c->block[t])
			c->kinds |= KV_DETAILS;
	if (c->block[KS_VB_CORE_LOAD])
		c->kinds |= KV_DETAILS;
	if (c->block[KS_VB_ROOFLINE])
		c->kinds |= KV_ROOFLINE;
	if (c->profile)
		c->kinds |= KV_PROFILE;
	if (c->findings)
		c->kinds |= KV_FINDINGS;
	if (c->predict)
		c->kinds |= KV_PREDICT;
	if (c->causal)
		c->kinds |= KV_CAUSAL;

	if (!c->command[0]) {
		/* no run directory name: what the files say */
		const char *cmd = c->findings ? json_string_value(json_object_get(c->findings,
									       "analysis"))
			: c->profile ? "sample" : c->predict ? "predict"
			: c->causal ? "causal"
			: c->block[KS_VB_BASE_INFO] ? "op"
			: c->block[KS_VB_API_FILES] ? "simulate" : NULL;

		if (cmd) {
			char *s = strdup(cmd);

			if (!s)
				return ks_err_set(im->err, -ENOMEM, "%s: out of memory", c->path);
			free(c->command);
			c->command = s;
		}
	}
	set_title(c);
	if (!c->title)
		return ks_err_set(im->err, -ENOMEM, "%s: out of memory", c->path);
	return 0;
}
