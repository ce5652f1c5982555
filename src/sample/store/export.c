/*
 * The exports of a sample profile (store.h): its call stacks in the
 * formats other tools read, for `kscope report --format folded|pprof|
 * speedscope`.
 *
 *   folded      Brendan Gregg's collapsed stacks, the input of
 *               flamegraph.pl and inferno: one line per distinct stack,
 *               "outer;caller;callee COUNT", sorted.
 *   pprof       profile.proto of github.com/google/pprof (proto/
 *               profile.proto), gzip-compressed as that file asks.
 *   speedscope  speedscope's file format (https://www.speedscope.app/
 *               file-format-schema.json): one "sampled" profile per
 *               thread (and per timer, when both ran).
 *
 * All three count the samples that pass the reports' filters (--thread,
 * --region: ks_report_select), and weigh a sample as the reports do, by
 * the timer periods it stands for (1 + overrun): folded counts periods,
 * pprof and speedscope give the time they stand for, periods times the
 * sampler's period (1 s / its rate), when the rate is known.  Frames are
 * named by their function; a user-API region, a frame of module
 * "[region]", reads "NAME [region]" as in the call tree.  docs/
 * profile-db.md ("Exports") is the reference.
 *
 * The pprof message is encoded with the small protobuf writer of
 * src/sample/trace (pb.h) and compressed with zlib.
 */
#include "store.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pb.h"
#include "raw.h"
#include "store_int.h"
#include "textout.h"
#include "utf8.h"

#define REGION_MODULE "[region]"
#define NO_STACK "[no call path]"

/* qsort_r's argument is not const; the comparators only read through it. */
struct sort_arg {
	const struct ks_profile *p;
};

/* ------------------------------------------------------------------ */
/* Shared                                                              */
/* ------------------------------------------------------------------ */

/* A frame's name in the exports, valid UTF-8; malloc'd, NULL when out of
 * memory.  folded: ';' (the separator) becomes ':' and line breaks
 * spaces, so that a name cannot split a line or a stack. */
static char *frame_name(const struct ks_profile *p, uint32_t frame, bool folded)
{
	const struct ks_pframe *f = &p->frames[frame];
	const char *fn = ks_profile_str(p, f->function);
	bool region = strcmp(ks_profile_str(p, f->module), REGION_MODULE) == 0;
	char *s, *fixed;

	if (!fn[0])
		fn = "[unknown]";
	if (asprintf(&s, "%s%s", fn, region ? " " REGION_MODULE : "") < 0)
		return NULL;
	if (!ks_utf8_valid(s, strlen(s))) {
		fixed = ks_utf8_fix(s, strlen(s), NULL);
		free(s);
		if (!(s = fixed))
			return NULL;
	}
	for (char *c = s; folded && *c; c++) {
		if (*c == ';')
			*c = ':';
		else if (*c == '\n' || *c == '\r')
			*c = ' ';
	}
	return s;
}

/* The time one timer period of a sample stands for, in ns; 0 when the
 * rate of its timer is unknown. */
static uint64_t period_ns(const struct ks_profile *p, uint8_t clock)
{
	uint32_t hz = clock == KS_RAW_CLOCK_REAL ? p->realtime_freq : p->cputime_freq;

	return hz ? 1000000000ull / hz : 0;
}

static int sink_file(void *ctx, const void *buf, size_t len)
{
	return fwrite(buf, 1, len, ctx) == len ? 0 : -EIO;
}

/* The call path of node, outermost first, into *path (grown as needed);
 * its length. */
static size_t node_path(const struct ks_profile *p, uint32_t node, uint32_t **path,
			size_t *cap)
{
	size_t n = 0;

	for (uint32_t x = node; x != KS_NONE; x = p->nodes[x].parent) {
		if (n == *cap) {
			size_t nc = *cap ? 2 * *cap : 256;
			uint32_t *np = realloc(*path, nc * sizeof(*np));

			if (!np)
				return SIZE_MAX;
			*path = np;
			*cap = nc;
		}
		(*path)[n++] = x;
	}
	for (size_t i = 0; i < n / 2; i++) {
		uint32_t t = (*path)[i];

		(*path)[i] = (*path)[n - 1 - i];
		(*path)[n - 1 - i] = t;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* Folded stacks                                                       */
/* ------------------------------------------------------------------ */

struct fline {
	char *stack;
	uint64_t count;
};

static int cmp_fline(const void *a, const void *b)
{
	return strcmp(((const struct fline *)a)->stack, ((const struct fline *)b)->stack);
}

int ks_export_folded(FILE *out, const struct ks_profile *p,
		     const struct ks_report_opts *o, struct ks_err *err)
{
	uint64_t *w = NULL, nostack = 0;
	bool *pass = NULL;
	char **names = NULL;
	struct fline *lines = NULL;
	uint32_t *path = NULL;
	size_t nlines = 0, cap = 0;
	struct ks_text t;
	int rc;

	if ((rc = ks_report_select(p, o, &pass, err)))
		return rc;
	rc = -ENOMEM;
	w = calloc(p->n_nodes + 1, sizeof(*w));
	names = calloc(p->n_frames + 1, sizeof(*names));
	lines = calloc(p->n_nodes + 1, sizeof(*lines));
	if (!w || !names || !lines)
		goto out;
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (!pass[i])
			continue;
		if (s->node == KS_NONE)
			nostack += (uint64_t)s->overrun + 1;
		else
			w[s->node] += (uint64_t)s->overrun + 1;
	}
	for (size_t i = 0; i < p->n_nodes; i++) {
		size_t n, len = 0;
		char *line;

		if (!w[i])
			continue;
		n = node_path(p, (uint32_t)i, &path, &cap);
		if (n == SIZE_MAX)
			goto out;
		for (size_t k = 0; k < n; k++) {
			uint32_t f = p->nodes[path[k]].frame;

			if (!names[f] && !(names[f] = frame_name(p, f, true)))
				goto out;
			len += strlen(names[f]) + 1;
		}
		if (!(line = malloc(len + 1)))
			goto out;
		len = 0;
		for (size_t k = 0; k < n; k++) {
			const char *nm = names[p->nodes[path[k]].frame];
			size_t l = strlen(nm);

			if (k)
				line[len++] = ';';
			memcpy(line + len, nm, l);
			len += l;
		}
		line[len] = '\0';
		lines[nlines++] = (struct fline){ line, w[i] };
	}
	/* Nodes that differ only in lines or addresses fold into one line. */
	qsort(lines, nlines, sizeof(*lines), cmp_fline);
	if ((rc = ks_text_open(&t, sink_file, out)))
		goto out;
	for (size_t i = 0; i < nlines; i++) {
		uint64_t count = lines[i].count;

		while (i + 1 < nlines && strcmp(lines[i].stack, lines[i + 1].stack) == 0)
			count += lines[++i].count;
		ks_text_puts(&t, lines[i].stack);
		ks_text_put(&t, " ", 1);
		ks_text_u64(&t, count);
		ks_text_put(&t, "\n", 1);
	}
	if (nostack) {
		ks_text_puts(&t, NO_STACK " ");
		ks_text_u64(&t, nostack);
		ks_text_put(&t, "\n", 1);
	}
	rc = ks_text_close(&t);
	if (!rc && fflush(out) != 0)
		rc = -EIO;
	if (rc)
		rc = ks_err_set(err, rc, "writing the folded stacks failed");
out:
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory");
	for (size_t i = 0; i < nlines; i++)
		free(lines[i].stack);
	for (size_t i = 0; names && i < p->n_frames; i++)
		free(names[i]);
	free(lines);
	free(names);
	free(path);
	free(w);
	free(pass);
	return rc;
}

/* ------------------------------------------------------------------ */
/* pprof                                                               */
/* ------------------------------------------------------------------ */

/* Field numbers of github.com/google/pprof's proto/profile.proto. */
enum {
	PROF_SAMPLE_TYPE = 1, PROF_SAMPLE = 2, PROF_MAPPING = 3, PROF_LOCATION = 4,
	PROF_FUNCTION = 5, PROF_STRING_TABLE = 6, PROF_TIME_NANOS = 9,
	PROF_DURATION_NANOS = 10, PROF_PERIOD_TYPE = 11, PROF_PERIOD = 12,
	PROF_COMMENT = 13, PROF_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1, VT_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2, LABEL_NUM = 3,
	MAPPING_ID = 1, MAPPING_FILENAME = 5, MAPPING_HAS_FUNCTIONS = 7,
	MAPPING_HAS_FILENAMES = 8, MAPPING_HAS_LINE_NUMBERS = 9,
	MAPPING_HAS_INLINE_FRAMES = 10,
	LOC_ID = 1, LOC_MAPPING_ID = 2, LOC_ADDRESS = 3, LOC_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNC_ID = 1, FUNC_NAME = 2, FUNC_SYSTEM_NAME = 3, FUNC_FILENAME = 4,
};

/* The string table: index 0 is "", then each string once. */
struct stab {
	char **s;              /* owned, valid UTF-8 */
	size_t n, cap;
	uint32_t *of_profile;  /* per profile string id: its index, 0 if none yet */
};

static int64_t stab_add(struct stab *t, const char *s)
{
	char *copy;

	if (t->n == t->cap) {
		size_t nc = t->cap ? 2 * t->cap : 256;
		char **ns = realloc(t->s, nc * sizeof(*ns));

		if (!ns)
			return -1;
		t->s = ns;
		t->cap = nc;
	}
	copy = ks_utf8_valid(s, strlen(s)) ? strdup(s) : ks_utf8_fix(s, strlen(s), NULL);
	if (!copy)
		return -1;
	t->s[t->n] = copy;
	return (int64_t)t->n++;
}

/* The index of profile string id (0 for ""), adding it if new; -1 when
 * out of memory. */
static int64_t stab_id(struct stab *t, const struct ks_profile *p, uint32_t id)
{
	int64_t k;

	if (id == KS_NONE || !ks_profile_str(p, id)[0])
		return 0;
	if (t->of_profile[id])
		return t->of_profile[id];
	if ((k = stab_add(t, ks_profile_str(p, id))) < 0)
		return -1;
	t->of_profile[id] = (uint32_t)k;
	return k;
}

/* A sample group: the passing samples of one node, thread and timer. */
struct pkey {
	uint32_t node, thread;
	uint8_t clock;
	uint32_t sample;
};

static int cmp_pkey(const void *a, const void *b)
{
	const struct pkey *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	return (x->sample > y->sample) - (x->sample < y->sample);
}

/* Functions: frames with the same name, file and module are one. */
static int cmp_frame_fn(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	const struct ks_pframe *x = &p->frames[*(const uint32_t *)a];
	const struct ks_pframe *y = &p->frames[*(const uint32_t *)b];

	if (x->function != y->function)
		return x->function < y->function ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return 0;
}

static void value_type(struct ks_pb *b, uint32_t field, int64_t type, int64_t unit)
{
	size_t m = ks_pb_begin(b, field);

	ks_pb_int(b, VT_TYPE, type);
	ks_pb_int(b, VT_UNIT, unit);
	ks_pb_end(b, m);
}

static void label(struct ks_pb *b, int64_t key, int64_t str, int64_t num, bool is_num)
{
	size_t m = ks_pb_begin(b, SAMPLE_LABEL);

	ks_pb_int(b, LABEL_KEY, key);
	if (is_num)
		ks_pb_int(b, LABEL_NUM, num);
	else
		ks_pb_int(b, LABEL_STR, str);
	ks_pb_end(b, m);
}

/* Gzips in (n bytes) to out. */
static int gzip_to(FILE *out, const uint8_t *in, size_t n, struct ks_err *err)
{
	z_stream zs;
	uint8_t *buf;
	uLong bound;
	int zr;

	memset(&zs, 0, sizeof(zs));
	/* windowBits 15 + 16: a gzip header and trailer around the stream. */
	if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return ks_err_set(err, -ENOMEM, "out of memory (zlib)");
	bound = deflateBound(&zs, (uLong)n);
	if (n > UINT32_MAX || !(buf = malloc(bound))) {
		deflateEnd(&zs);
		return ks_err_set(err, -ENOMEM, "out of memory compressing the profile");
	}
	zs.next_in = (Bytef *)(uintptr_t)in;
	zs.avail_in = (uInt)n;
	zs.next_out = buf;
	zs.avail_out = (uInt)bound;
	zr = deflate(&zs, Z_FINISH);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(buf);
		return ks_err_set(err, -EIO, "compressing the profile failed (zlib: %d)", zr);
	}
	if (fwrite(buf, 1, zs.total_out, out) != zs.total_out || fflush(out) != 0) {
		free(buf);
		return ks_err_set(err, -EIO, "writing the pprof profile failed");
	}
	free(buf);
	return 0;
}

int ks_export_pprof(FILE *out, const struct ks_profile *p,
		    const struct ks_report_opts *o, struct ks_err *err)
{
	struct sort_arg sa = { p };
	struct stab st = { 0 };
	struct ks_pb b = { 0 };
	bool *pass = NULL, *used = NULL;
	struct pkey *keys = NULL;
	uint32_t *fid = NULL, *order = NULL, *mid = NULL, *path = NULL;
	size_t nkeys = 0, cap = 0, nfunc = 0, nmap = 0;
	uint64_t cpu_period = period_ns(p, KS_RAW_CLOCK_CPU);
	uint64_t wall_period = period_ns(p, KS_RAW_CLOCK_REAL);
	int64_t s_samples, s_count, s_cpu, s_wall, s_ns, s_tid, s_thread, s_kscope;
	int64_t deflt, end = 0, start_ns = 0;
	int rc;

	if ((rc = ks_report_select(p, o, &pass, err)))
		return rc;
	rc = -ENOMEM;
	st.of_profile = calloc(p->n_strings + 1, sizeof(*st.of_profile));
	used = calloc(p->n_frames + 1, sizeof(*used));
	fid = calloc(p->n_frames + 1, sizeof(*fid));
	mid = calloc(p->n_strings + 1, sizeof(*mid));
	order = malloc((p->n_frames + 1) * sizeof(*order));
	keys = malloc((p->n_samples + 1) * sizeof(*keys));
	if (!st.of_profile || !used || !fid || !mid || !order || !keys ||
	    stab_add(&st, "") != 0)
		goto out;
	s_samples = stab_add(&st, "samples");
	s_count = stab_add(&st, "count");
	s_cpu = stab_add(&st, "cpu");
	s_wall = stab_add(&st, "wall");
	s_ns = stab_add(&st, "nanoseconds");
	s_tid = stab_add(&st, "tid");
	s_thread = stab_add(&st, "thread");
	s_kscope = stab_add(&st, "written by kscope report --format pprof from a "
			    "kscope sample profile");
	if (s_samples < 0 || s_count < 0 || s_cpu < 0 || s_wall < 0 || s_ns < 0 ||
	    s_tid < 0 || s_thread < 0 || s_kscope < 0)
		goto out;

	/* The sample groups, and the frames they use. */
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct ks_psample *s = &p->samples[i];

		if (!pass[i])
			continue;
		keys[nkeys++] = (struct pkey){ s->node, s->thread, s->clock, (uint32_t)i };
		for (uint32_t x = s->node; x != KS_NONE; x = p->nodes[x].parent)
			used[p->nodes[x].frame] = true;
	}
	qsort(keys, nkeys, sizeof(*keys), cmp_pkey);

	/* Header: sample types, in the order of each sample's values. */
	value_type(&b, PROF_SAMPLE_TYPE, s_samples, s_count);
	if (cpu_period)
		value_type(&b, PROF_SAMPLE_TYPE, s_cpu, s_ns);
	if (wall_period)
		value_type(&b, PROF_SAMPLE_TYPE, s_wall, s_ns);
	deflt = cpu_period ? s_cpu : wall_period ? s_wall : s_samples;
	ks_pb_int(&b, PROF_DEFAULT_SAMPLE_TYPE, deflt);
	if (cpu_period || wall_period) {
		value_type(&b, PROF_PERIOD_TYPE, deflt, s_ns);
		ks_pb_int(&b, PROF_PERIOD, (int64_t)(cpu_period ? cpu_period : wall_period));
	} else {
		value_type(&b, PROF_PERIOD_TYPE, s_samples, s_count);
		ks_pb_int(&b, PROF_PERIOD, 1);
	}
	ks_pb_int(&b, PROF_COMMENT, s_kscope);
	for (size_t i = 0; i < p->n_meta; i++)
		if (strcmp(ks_profile_str(p, p->meta[i].key), "start_realtime_ns") == 0)
			start_ns = strtoll(ks_profile_str(p, p->meta[i].value), NULL, 10);
	if (start_ns > 0)
		ks_pb_int(&b, PROF_TIME_NANOS, start_ns);
	for (size_t i = 0; i < p->n_processes; i++)
		if ((int64_t)p->processes[i].end > end)
			end = (int64_t)p->processes[i].end;
	if (end > 0)
		ks_pb_int(&b, PROF_DURATION_NANOS, end);

	/* Functions (name, file), mappings (modules), one location a frame. */
	for (size_t i = 0; i < p->n_frames; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, p->n_frames, sizeof(*order), cmp_frame_fn, &sa);
	for (size_t k = 0; k < p->n_frames; k++) {
		uint32_t f = order[k];
		const struct ks_pframe *fr = &p->frames[f];
		int64_t name, file;
		size_t m;

		if (k && cmp_frame_fn(&order[k - 1], &order[k], &sa) == 0) {
			fid[f] = fid[order[k - 1]];
			continue;
		}
		fid[f] = (uint32_t)++nfunc;
		name = stab_id(&st, p, fr->function);
		file = stab_id(&st, p, fr->file);
		if (name < 0 || file < 0)
			goto out;
		if (strcmp(ks_profile_str(p, fr->module), REGION_MODULE) == 0) {
			char *nm = frame_name(p, f, false);

			name = nm ? stab_add(&st, nm) : -1;
			free(nm);
			if (name < 0)
				goto out;
		}
		m = ks_pb_begin(&b, PROF_FUNCTION);
		ks_pb_uint(&b, FUNC_ID, fid[f]);
		ks_pb_int(&b, FUNC_NAME, name);
		ks_pb_int(&b, FUNC_SYSTEM_NAME, name);
		ks_pb_int(&b, FUNC_FILENAME, file);
		ks_pb_end(&b, m);
	}
	for (size_t f = 0; f < p->n_frames; f++) {
		const struct ks_pframe *fr = &p->frames[f];
		size_t m, l;

		if (!used[f])
			continue;
		if (!mid[fr->module]) {
			int64_t file = stab_id(&st, p, fr->module);

			if (file < 0)
				goto out;
			mid[fr->module] = (uint32_t)++nmap;
			m = ks_pb_begin(&b, PROF_MAPPING);
			ks_pb_uint(&b, MAPPING_ID, nmap);
			ks_pb_int(&b, MAPPING_FILENAME, file);
			ks_pb_uint(&b, MAPPING_HAS_FUNCTIONS, 1);
			ks_pb_uint(&b, MAPPING_HAS_FILENAMES, 1);
			ks_pb_uint(&b, MAPPING_HAS_LINE_NUMBERS, 1);
			ks_pb_uint(&b, MAPPING_HAS_INLINE_FRAMES, 1);
			ks_pb_end(&b, m);
		}
		m = ks_pb_begin(&b, PROF_LOCATION);
		ks_pb_uint(&b, LOC_ID, f + 1);
		ks_pb_uint(&b, LOC_MAPPING_ID, mid[fr->module]);
		ks_pb_uint(&b, LOC_ADDRESS, fr->address);
		l = ks_pb_begin(&b, LOC_LINE);
		ks_pb_uint(&b, LINE_FUNCTION_ID, fid[f]);
		if (fr->line)
			ks_pb_int(&b, LINE_LINE, fr->line);
		ks_pb_end(&b, l);
		ks_pb_end(&b, m);
	}

	/* Samples: one per group, its locations innermost first. */
	for (size_t i = 0; i < nkeys;) {
		const struct pkey *k = &keys[i];
		const struct ks_pthread *th = &p->threads[k->thread];
		uint64_t count = 0, periods = 0;
		size_t m, pk, n;
		int64_t tname;

		for (; i < nkeys && keys[i].node == k->node && keys[i].thread == k->thread &&
		       keys[i].clock == k->clock; i++) {
			count++;
			periods += (uint64_t)p->samples[keys[i].sample].overrun + 1;
		}
		m = ks_pb_begin(&b, PROF_SAMPLE);
		if (k->node != KS_NONE) {
			n = node_path(p, k->node, &path, &cap);
			if (n == SIZE_MAX)
				goto out;
			pk = ks_pb_begin(&b, SAMPLE_LOCATION_ID);
			for (size_t j = n; j-- > 0;)
				ks_pb_varint(&b, p->nodes[path[j]].frame + 1ull);
			ks_pb_end(&b, pk);
		}
		pk = ks_pb_begin(&b, SAMPLE_VALUE);
		ks_pb_varint(&b, count);
		if (cpu_period)
			ks_pb_varint(&b, k->clock == KS_RAW_CLOCK_REAL ? 0 : periods * cpu_period);
		if (wall_period)
			ks_pb_varint(&b, k->clock == KS_RAW_CLOCK_REAL ? periods * wall_period : 0);
		ks_pb_end(&b, pk);
		label(&b, s_tid, 0, th->tid, true);
		if (ks_profile_str(p, th->name)[0]) {
			if ((tname = stab_id(&st, p, th->name)) < 0)
				goto out;
			label(&b, s_thread, tname, 0, false);
		}
		ks_pb_end(&b, m);
	}
	for (size_t i = 0; i < st.n; i++)
		ks_pb_string(&b, PROF_STRING_TABLE, st.s[i]);
	if (b.error)
		goto out;
	rc = gzip_to(out, b.buf, b.len, err);
out:
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory");
	for (size_t i = 0; i < st.n; i++)
		free(st.s[i]);
	free(st.s);
	free(st.of_profile);
	ks_pb_free(&b);
	free(pass);
	free(used);
	free(fid);
	free(mid);
	free(order);
	free(keys);
	free(path);
	return rc;
}

/* ------------------------------------------------------------------ */
/* speedscope                                                          */
/* ------------------------------------------------------------------ */

/* speedscope frames: frames with the same name and module are one (its
 * file is that of the first). */
static int cmp_frame_sp(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	const struct ks_pframe *x = &p->frames[*(const uint32_t *)a];
	const struct ks_pframe *y = &p->frames[*(const uint32_t *)b];

	if (x->function != y->function)
		return x->function < y->function ? -1 : 1;
	if (x->module != y->module)
		return x->module < y->module ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

/* Passing samples of a thread and timer, by time. */
static int cmp_sample_ts(const void *a, const void *b, void *arg)
{
	const struct ks_profile *p = ((const struct sort_arg *)arg)->p;
	const struct ks_psample *x = &p->samples[*(const uint32_t *)a];
	const struct ks_psample *y = &p->samples[*(const uint32_t *)b];

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->clock != y->clock)
		return x->clock < y->clock ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

int ks_export_speedscope(FILE *out, const struct ks_profile *p,
			 const struct ks_report_opts *o, struct ks_err *err)
{
	struct sort_arg sa = { p };
	bool *pass = NULL, clocks[2] = { false, false };
	uint32_t *order = NULL, *spf = NULL, *sel = NULL, *path = NULL;
	size_t nsel = 0, nsp = 0, cap = 0;
	struct ks_text t;
	int rc;

	if ((rc = ks_report_select(p, o, &pass, err)))
		return rc;
	rc = -ENOMEM;
	order = malloc((p->n_frames + 1) * sizeof(*order));
	spf = malloc((p->n_frames + 1) * sizeof(*spf));
	sel = malloc((p->n_samples + 1) * sizeof(*sel));
	if (!order || !spf || !sel)
		goto out;
	for (size_t i = 0; i < p->n_samples; i++)
		if (pass[i]) {
			sel[nsel++] = (uint32_t)i;
			clocks[p->samples[i].clock == KS_RAW_CLOCK_REAL] = true;
		}
	qsort_r(sel, nsel, sizeof(*sel), cmp_sample_ts, &sa);
	for (size_t i = 0; i < p->n_frames; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, p->n_frames, sizeof(*order), cmp_frame_sp, &sa);

	if ((rc = ks_text_open(&t, sink_file, out)))
		goto out;
	ks_text_puts(&t, "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\n"
		     "\"version\":\"0.0.1\",\"exporter\":\"kscope report\",\"name\":");
	{
		const char *cmd = p->n_processes ? ks_profile_str(p, p->processes[0].command) : "";

		ks_text_json_str(&t, cmd[0] ? cmd : "kscope sample");
	}
	ks_text_puts(&t, ",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
	for (size_t k = 0; k < p->n_frames; k++) {
		uint32_t f = order[k];
		const struct ks_pframe *fr = &p->frames[f];
		char *name;

		if (k && p->frames[order[k - 1]].function == fr->function &&
		    p->frames[order[k - 1]].module == fr->module) {
			spf[f] = spf[order[k - 1]];
			continue;
		}
		spf[f] = (uint32_t)nsp;
		if (!(name = frame_name(p, f, false))) {
			ks_text_close(&t);
			rc = -ENOMEM;
			goto out;
		}
		ks_text_puts(&t, nsp++ ? ",\n{\"name\":" : "\n{\"name\":");
		ks_text_json_str(&t, name);
		free(name);
		if (fr->file != KS_NONE) {
			ks_text_puts(&t, ",\"file\":");
			ks_text_json_str(&t, ks_profile_str(p, fr->file));
		}
		ks_text_put(&t, "}", 1);
	}
	ks_text_puts(&t, "]},\n\"profiles\":[");
	/* One profile per run of sel with the same thread and timer. */
	for (size_t i = 0, np = 0; i < nsel;) {
		const struct ks_psample *s0 = &p->samples[sel[i]];
		const struct ks_pthread *th = &p->threads[s0->thread];
		uint64_t per = period_ns(p, s0->clock), total = 0;
		const char *tn = ks_profile_str(p, th->name);
		size_t j, n;
		char title[64];

		for (j = i; j < nsel && p->samples[sel[j]].thread == s0->thread &&
			    p->samples[sel[j]].clock == s0->clock; j++)
			total += ((uint64_t)p->samples[sel[j]].overrun + 1) * (per ? per : 1);
		ks_text_puts(&t, np++ ? ",\n{\"type\":\"sampled\",\"name\":"
				      : "\n{\"type\":\"sampled\",\"name\":");
		snprintf(title, sizeof(title), "%stid %" PRId32 "%s%s", tn[0] ? "" : "thread ",
			 th->tid, clocks[0] && clocks[1] ? ", " : "",
			 clocks[0] && clocks[1] ? (s0->clock == KS_RAW_CLOCK_REAL ?
						  "real time" : "CPU time") : "");
		if (tn[0]) {
			char *full;

			if (asprintf(&full, "%s (%s)", tn, title) < 0) {
				ks_text_close(&t);
				rc = -ENOMEM;
				goto out;
			}
			ks_text_json_str(&t, full);
			free(full);
		} else {
			ks_text_json_str(&t, title);
		}
		ks_text_puts(&t, per ? ",\"unit\":\"nanoseconds\"" : ",\"unit\":\"none\"");
		ks_text_puts(&t, ",\"startValue\":0,\"endValue\":");
		ks_text_u64(&t, total);
		ks_text_puts(&t, ",\n\"samples\":[");
		for (size_t k = i; k < j; k++) {
			const struct ks_psample *s = &p->samples[sel[k]];

			ks_text_puts(&t, k > i ? ",[" : "[");
			if (s->node != KS_NONE) {
				n = node_path(p, s->node, &path, &cap);
				if (n == SIZE_MAX) {
					ks_text_close(&t);
					rc = -ENOMEM;
					goto out;
				}
				for (size_t d = 0; d < n; d++) {
					if (d)
						ks_text_put(&t, ",", 1);
					ks_text_u64(&t, spf[p->nodes[path[d]].frame]);
				}
			}
			ks_text_put(&t, "]", 1);
		}
		ks_text_puts(&t, "],\n\"weights\":[");
		for (size_t k = i; k < j; k++) {
			if (k > i)
				ks_text_put(&t, ",", 1);
			ks_text_u64(&t, ((uint64_t)p->samples[sel[k]].overrun + 1) *
					(per ? per : 1));
		}
		ks_text_puts(&t, "]}");
		i = j;
	}
	ks_text_puts(&t, "\n]}\n");
	rc = ks_text_close(&t);
	if (!rc && fflush(out) != 0)
		rc = -EIO;
	if (rc)
		rc = ks_err_set(err, rc, "writing the speedscope profile failed");
out:
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory");
	free(pass);
	free(order);
	free(spf);
	free(sel);
	free(path);
	return rc;
}
