/*
 * Unit tests for the timeline-trace writers (src/sample/trace): a
 * synthetic profile (two processes, three threads, nested regions, a
 * mark, MPI calls, a range and a pause that do not nest, an unclosed
 * region, counters and samples) is written in both formats into a run
 * directory and read back: the JSON with jansson, the Perfetto trace with
 * a small protobuf reader written here, independent of the encoder.  Also
 * the protobuf encoder itself, empty and inconsistent profiles, awkward
 * names, shared pids, a failing write and 100000 slices.
 *
 * `test_sample_trace --write DIR` writes the synthetic profile's traces
 * into a new run directory under DIR and exits; decode.sh uses it to
 * check the Perfetto trace with protoc.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "outdir.h"
#include "pb.h"
#include "profile.h"
#include "test_util.h"
#include "trace.h"

/* ------------------------------------------------------------------ */
/* Building profiles                                                   */
/* ------------------------------------------------------------------ */

static uint32_t add_process(struct ks_profile *p, int32_t pid, int32_t rank,
			    const char *cmd, uint64_t start, uint64_t end)
{
	struct ks_pprocess *pr = ks_profile_push(p, processes);

	assert_non_null(pr);
	pr->pid = pid;
	pr->ppid = 1;
	pr->rank = rank;
	pr->command = ks_profile_intern(p, cmd);
	pr->start = start;
	pr->end = end;
	return (uint32_t)p->n_processes - 1;
}

static uint32_t add_thread(struct ks_profile *p, uint32_t process, int32_t tid,
			   const char *name, uint64_t start, uint64_t end)
{
	uint32_t nm = ks_profile_intern(p, name);
	struct ks_pthread *t = ks_profile_push(p, threads);

	assert_non_null(t);
	t->process = process;
	t->tid = tid;
	t->name = nm;
	t->start = start;
	t->end = end;
	return (uint32_t)p->n_threads - 1;
}

static void add_slice(struct ks_profile *p, uint32_t thread, const char *name,
		      uint8_t kind, uint32_t depth, uint64_t start, uint64_t end)
{
	uint32_t nm = ks_profile_intern(p, name);
	struct ks_pslice *s = ks_profile_push(p, slices);

	assert_non_null(s);
	s->thread = thread;
	s->name = nm;
	s->kind = kind;
	s->depth = depth;
	s->start = start;
	s->end = end;
	s->peer = -1;
}

static void add_mpi(struct ks_profile *p, uint32_t thread, const char *name,
		    uint32_t depth, uint64_t start, uint64_t end, uint64_t bytes,
		    int32_t peer)
{
	add_slice(p, thread, name, KS_SLICE_MPI, depth, start, end);
	p->slices[p->n_slices - 1].bytes = bytes;
	p->slices[p->n_slices - 1].peer = peer;
}

static void add_counter(struct ks_profile *p, uint32_t process, uint32_t kind,
			uint64_t ts, double value)
{
	struct ks_pcounter *c = ks_profile_push(p, counters);

	assert_non_null(c);
	c->process = process;
	c->kind = kind;
	c->ts = ts;
	c->value = value;
}

/* The node of the call path outer -> inner. */
static uint32_t add_path(struct ks_profile *p, const char *outer, const char *inner)
{
	struct ks_pframe f = { .file = KS_NONE, .module = ks_profile_intern(p, "app") };
	uint32_t root;

	f.function = ks_profile_intern(p, outer);
	root = ks_profile_node(p, KS_NONE, ks_profile_frame(p, &f));
	f.function = ks_profile_intern(p, inner);
	return ks_profile_node(p, root, ks_profile_frame(p, &f));
}

static void add_sample(struct ks_profile *p, uint32_t thread, uint64_t ts,
		       uint32_t node)
{
	struct ks_psample *s = ks_profile_push(p, samples);

	assert_non_null(s);
	s->ts = ts;
	s->thread = thread;
	s->node = node;
	s->counters = KS_NONE;
}

#define T0_NAME "main"
#define T1_NAME "worker \"1\" \\ new\nline\ttab\x01 \xc3\xa9 \xe2\x9c\x93 \xff"
/* T1_NAME as read back: the stray byte 0xff became U+00FF. */
#define T1_NAME_UTF8 "worker \"1\" \\ new\nline\ttab\x01 \xc3\xa9 \xe2\x9c\x93 \xc3\xbf"

/*
 * The synthetic profile.  Expected trace content, per thread:
 *   t0 (pid 100, tid 100): outer [1000,9000] > inner [2000,5000] >
 *      MPI_Send [3000,4000]; mark checkpoint @6000; range async
 *      [4500,7000] (own "ranges" lane); pause [8500,9200] crossing outer's
 *      end (lane "overlapping slices 1"); samples @2500, @3500 (compute)
 *      and @4500, @8000 (none -> "[unknown]").
 *   t1 (pid 100, tid 101, awkward name): loop [1500, end 20000 (thread
 *      end, unclosed)] > body [1500, 20000] > blink [3000,3000].
 *   t2 (pid 200, tid 200): solve [1234567,2234568] > MPI_Recv
 *      [1300000,1400000]; pause [3000000,3000500]; sample @1250000.
 * Counters: pid 100 CPU 50.5 @1000, 99.75 @2000; RSS 1 MiB @1000, 2 MiB
 * @2000; pid 200 CPU 12.25 @1000; plus a NaN and an unknown kind, which
 * are left out.
 */
static void build_profile(struct ks_profile *p)
{
	struct ks_err e;
	uint32_t p0, p1, t0, t1, t2, compute;

	assert_int_equal(ks_profile_init(p, &e), 0);
	p0 = add_process(p, 100, 0, "./app --x", 0, 30000);
	p1 = add_process(p, 200, 1, "./app \"q\"", 500, 4000000);
	t0 = add_thread(p, p0, 100, T0_NAME, 0, 10000);
	t1 = add_thread(p, p0, 101, T1_NAME, 1000, 20000);
	t2 = add_thread(p, p1, 200, "main", 500, 4000000);

	/* Added out of order on purpose: the writers sort. */
	add_slice(p, t0, "checkpoint", KS_SLICE_MARK, 0, 6000, 6000);
	add_mpi(p, t0, "MPI_Send", 2, 3000, 4000, 1024, 1);
	add_slice(p, t0, "outer", KS_SLICE_REGION, 0, 1000, 9000);
	add_slice(p, t0, "inner", KS_SLICE_REGION, 1, 2000, 5000);
	add_slice(p, t0, "async", KS_SLICE_RANGE, 0, 4500, 7000);
	p->slices[p->n_slices - 1].id = 7;
	add_slice(p, t0, "pause", KS_SLICE_PAUSE, 0, 8500, 9200);

	add_slice(p, t1, "body", KS_SLICE_REGION, 1, 1500, 20000);
	add_slice(p, t1, "loop", KS_SLICE_REGION, 0, 1500, 20000);
	add_slice(p, t1, "blink", KS_SLICE_REGION, 2, 3000, 3000);

	add_slice(p, t2, "solve", KS_SLICE_REGION, 0, 1234567, 2234568);
	add_mpi(p, t2, "MPI_Recv", 1, 1300000, 1400000, 1024, 0);
	add_slice(p, t2, "pause", KS_SLICE_PAUSE, 0, 3000000, 3000500);

	add_counter(p, p0, KS_PCOUNTER_CPU_PCT, 2000, 99.75);
	add_counter(p, p0, KS_PCOUNTER_CPU_PCT, 1000, 50.5);
	add_counter(p, p0, KS_PCOUNTER_RSS, 1000, 1048576);
	add_counter(p, p0, KS_PCOUNTER_RSS, 2000, 2097152);
	add_counter(p, p1, KS_PCOUNTER_CPU_PCT, 1000, 12.25);
	add_counter(p, p1, KS_PCOUNTER_CPU_PCT, 1500, NAN);
	add_counter(p, p1, 99, 1000, 1);

	compute = add_path(p, "main", "compute");
	add_sample(p, t0, 3500, compute);
	add_sample(p, t0, 2500, compute);
	add_sample(p, t0, 4500, KS_NONE);
	add_sample(p, t0, 8000, KS_NONE);
	add_sample(p, t2, 1250000, compute);
}

/* ------------------------------------------------------------------ */
/* Writing                                                             */
/* ------------------------------------------------------------------ */

#define PERFETTO_NAME "trace.perfetto-trace"
#define JSON_NAME "trace.json"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Writes both traces of p into a new run directory under out; returns
 * the run directory's path (malloc'd).  If secs is not NULL, it gets the
 * time spent in the two writers (not in creating or syncing files). */
static char *write_traces_timed(const struct ks_profile *p, const char *out,
				double *secs)
{
	double t0, spent = 0;
	struct ks_rundir rd;
	struct ks_outfile of;
	struct ks_err e;
	char *path;

	if (ks_rundir_create(out, "sample", 0, &rd, &e) != 0)
		fail_msg("%s", e.msg);
	assert_int_equal(ks_outfile_open(&rd, PERFETTO_NAME, &of, &e), 0);
	t0 = now_s();
	if (ks_trace_write_perfetto(p, &of, &e) != 0)
		fail_msg("%s", e.msg);
	spent += now_s() - t0;
	assert_int_equal(ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e), 0);
	assert_int_equal(ks_outfile_open(&rd, JSON_NAME, &of, &e), 0);
	t0 = now_s();
	if (ks_trace_write_json(p, &of, &e) != 0)
		fail_msg("%s", e.msg);
	spent += now_s() - t0;
	assert_int_equal(ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e), 0);
	path = strdup(rd.path);
	ks_rundir_close(&rd);
	if (secs)
		*secs = spent;
	return path;
}

static char *write_traces(const struct ks_profile *p, const char *out)
{
	return write_traces_timed(p, out, NULL);
}

static char *file_in(const char *dir, const char *name)
{
	char *s;

	assert_true(asprintf(&s, "%s/%s", dir, name) > 0);
	return s;
}

/* ------------------------------------------------------------------ */
/* Reading the Perfetto trace back                                     */
/* ------------------------------------------------------------------ */

struct fld {
	uint32_t num;
	int wire;
	uint64_t v;            /* varint, or the bits of a fixed64 */
	const uint8_t *data;   /* length-delimited */
	size_t len;
};

static bool rd_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	uint64_t r = 0;

	for (int shift = 0; shift < 70; shift += 7) {
		uint8_t b;

		if (*p >= end)
			return false;
		b = *(*p)++;
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

static bool rd_field(const uint8_t **p, const uint8_t *end, struct fld *f)
{
	uint64_t tag, len;

	memset(f, 0, sizeof(*f));
	if (!rd_varint(p, end, &tag) || (tag >> 3) == 0)
		return false;
	f->num = (uint32_t)(tag >> 3);
	f->wire = (int)(tag & 7);
	switch (f->wire) {
	case 0:
		return rd_varint(p, end, &f->v);
	case 1:
		if (end - *p < 8)
			return false;
		for (int i = 0; i < 8; i++)
			f->v |= (uint64_t)(*p)[i] << (8 * i);
		*p += 8;
		return true;
	case 2:
		if (!rd_varint(p, end, &len) || len > (uint64_t)(end - *p))
			return false;
		f->data = *p;
		f->len = (size_t)len;
		*p += len;
		return true;
	default:
		return false;
	}
}

/* Loops over the fields of a message; ok turns false on a bad one.  The
 * cursor's name carries the line number so loops can nest. */
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define FOR_FIELDS(f, data, len, ok) FOR_FIELDS_(f, data, len, ok, CAT(q_, __LINE__))
#define FOR_FIELDS_(f, data, len, ok, q)                                      \
	for (const uint8_t *q = (data); q < (data) + (len) &&                   \
	     ((ok) = rd_field(&q, (data) + (len), &(f)));)

static char *dupn(const struct fld *f)
{
	assert_int_equal(f->wire, 2);
	return strndup((const char *)f->data, f->len);
}

enum { TD_OTHER, TD_PROCESS, TD_THREAD, TD_COUNTER };

struct td {
	uint64_t uuid, parent;
	int kind;
	char *name;            /* TrackDescriptor.name, process or thread name */
	int32_t pid, tid;
	uint64_t unit;
	uint32_t seq;
};

struct ev {
	uint32_t seq;
	uint64_t ts;
	uint64_t type;
	uint64_t track;
	const char *name, *cat;   /* resolved through interning; not owned */
	int n_anns;
	bool has_bytes, has_peer, has_id, has_value;
	uint64_t bytes, id;
	int64_t peer;
	double value;
};

struct interned {
	uint32_t seq;
	uint32_t kind;         /* InternedData field: 1 cat, 2 name, 3 ann */
	uint64_t iid;
	char *name;
};

struct dec {
	size_t n_packets;
	struct td *tds;
	size_t n_tds;
	struct ev *evs;
	size_t n_evs, cap_evs;
	struct interned *in;
	size_t n_in;
	bool seq_seen[1024];
	size_t n_perf;         /* PerfSample packets */
	size_t n_perf_stack;   /* of them, with a callstack_iid */
};

static void dec_free(struct dec *d)
{
	for (size_t i = 0; i < d->n_tds; i++)
		free(d->tds[i].name);
	for (size_t i = 0; i < d->n_in; i++)
		free(d->in[i].name);
	free(d->tds);
	free(d->evs);
	free(d->in);
	memset(d, 0, sizeof(*d));
}

static const char *lookup(const struct dec *d, uint32_t seq, uint32_t kind, uint64_t iid)
{
	for (size_t i = d->n_in; i-- > 0;)
		if (d->in[i].seq == seq && d->in[i].kind == kind && d->in[i].iid == iid)
			return d->in[i].name;
	return NULL;
}

static bool add_interned(struct dec *d, uint32_t seq, uint32_t kind,
			 const uint8_t *data, size_t len)
{
	struct fld f;
	bool ok = true;
	uint64_t iid = 0;
	char *name = NULL;

	FOR_FIELDS(f, data, len, ok) {
		if (f.num == 1)
			iid = f.v;
		else if (f.num == 2)
			name = dupn(&f);
	}
	if (!ok || !iid || !name) {
		free(name);
		return false;
	}
	/* An iid means one string for the whole trace. */
	for (size_t i = 0; i < d->n_in; i++)
		if (d->in[i].kind == kind && d->in[i].iid == iid &&
		    strcmp(d->in[i].name, name) != 0) {
			free(name);
			return false;
		}
	d->in = realloc(d->in, (d->n_in + 1) * sizeof(*d->in));
	d->in[d->n_in++] = (struct interned){ seq, kind, iid, name };
	return true;
}

static bool dec_td(struct dec *d, uint32_t seq, const uint8_t *data, size_t len)
{
	struct td td = { .seq = seq };
	struct fld f, g;
	bool ok = true, ok2 = true;

	FOR_FIELDS(f, data, len, ok) {
		switch (f.num) {
		case 1: td.uuid = f.v; break;
		case 5: td.parent = f.v; break;
		case 2: free(td.name); td.name = dupn(&f); break;
		case 3:
			td.kind = TD_PROCESS;
			FOR_FIELDS(g, f.data, f.len, ok2) {
				if (g.num == 1)
					td.pid = (int32_t)g.v;
				else if (g.num == 6) {
					free(td.name);
					td.name = dupn(&g);
				}
			}
			break;
		case 4:
			td.kind = TD_THREAD;
			FOR_FIELDS(g, f.data, f.len, ok2) {
				if (g.num == 1)
					td.pid = (int32_t)g.v;
				else if (g.num == 2)
					td.tid = (int32_t)g.v;
				else if (g.num == 5) {
					free(td.name);
					td.name = dupn(&g);
				}
			}
			break;
		case 8:
			td.kind = TD_COUNTER;
			FOR_FIELDS(g, f.data, f.len, ok2)
				if (g.num == 3)
					td.unit = g.v;
			break;
		default:
			ok = false;
		}
	}
	if (!ok || !ok2 || !td.uuid) {
		free(td.name);
		return false;
	}
	d->tds = realloc(d->tds, (d->n_tds + 1) * sizeof(*d->tds));
	d->tds[d->n_tds++] = td;
	return true;
}

static bool dec_te(struct dec *d, uint32_t seq, uint64_t ts,
		   const uint8_t *data, size_t len)
{
	struct ev ev = { .seq = seq, .ts = ts };
	struct fld f, g;
	bool ok = true, ok2 = true;

	FOR_FIELDS(f, data, len, ok) {
		switch (f.num) {
		case 3:
			if (!(ev.cat = lookup(d, seq, 1, f.v)))
				return false;
			break;
		case 10:
			if (!(ev.name = lookup(d, seq, 2, f.v)))
				return false;
			break;
		case 9: ev.type = f.v; break;
		case 11: ev.track = f.v; break;
		case 44:
			if (f.wire != 1)
				return false;
			memcpy(&ev.value, &f.v, sizeof(ev.value));
			ev.has_value = true;
			break;
		case 4: {
			const char *an = NULL;
			uint64_t v = 0;

			ev.n_anns++;
			FOR_FIELDS(g, f.data, f.len, ok2) {
				if (g.num == 1)
					an = lookup(d, seq, 3, g.v);
				else if (g.num == 3 || g.num == 4)
					v = g.v;
			}
			if (!an)
				return false;
			if (!strcmp(an, "bytes"))
				ev.has_bytes = true, ev.bytes = v;
			else if (!strcmp(an, "peer"))
				ev.has_peer = true, ev.peer = (int64_t)v;
			else if (!strcmp(an, "id"))
				ev.has_id = true, ev.id = v;
			break;
		}
		default:
			return false;
		}
	}
	if (!ok || !ok2 || !ev.type)
		return false;
	if (d->n_evs == d->cap_evs) {
		d->cap_evs = d->cap_evs ? d->cap_evs * 2 : 256;
		d->evs = realloc(d->evs, d->cap_evs * sizeof(*d->evs));
	}
	d->evs[d->n_evs++] = ev;
	return true;
}

/* Decodes a whole trace; false (with *why set) if anything is off. */
static bool dec_trace(struct dec *d, const uint8_t *buf, size_t len, const char **why)
{
	struct fld pkt, f;
	bool ok = true, ok2 = true;

	memset(d, 0, sizeof(*d));
	FOR_FIELDS(pkt, buf, len, ok) {
		uint64_t ts = 0, seq = 0, flags = 0;
		bool has_ts = false;
		const uint8_t *te = NULL, *tdd = NULL, *idata = NULL, *ps = NULL;
		size_t te_len = 0, td_len = 0, i_len = 0, ps_len = 0;

		*why = "Trace has a field other than packet = 1";
		if (pkt.num != 1 || pkt.wire != 2)
			return false;
		d->n_packets++;
		FOR_FIELDS(f, pkt.data, pkt.len, ok2) {
			switch (f.num) {
			case 8: ts = f.v; has_ts = true; break;
			case 10: seq = f.v; break;
			case 13: flags = f.v; break;
			case 11: te = f.data; te_len = f.len; break;
			case 60: tdd = f.data; td_len = f.len; break;
			case 12: idata = f.data; i_len = f.len; break;
			case 66: ps = f.data; ps_len = f.len; break;
			default:
				*why = "unexpected TracePacket field";
				return false;
			}
		}
		*why = "bad packet encoding";
		if (!ok2)
			return false;
		*why = "bad sequence id";
		if (seq == 0 || seq >= 1024)
			return false;
		*why = "wrong sequence flags";
		if (flags != (d->seq_seen[seq] ? 2u : 1u))
			return false;
		d->seq_seen[seq] = true;
		*why = "packet has not one of track_event, track_descriptor, perf_sample";
		if ((te != NULL) + (tdd != NULL) + (ps != NULL) != 1)
			return false;
		if (ps) {
			*why = "bad perf sample (or one without a timestamp)";
			if (!has_ts)
				return false;
			d->n_perf++;
			FOR_FIELDS(f, ps, ps_len, ok2)
				if (f.num == 4)
					d->n_perf_stack++;
			if (!ok2)
				return false;
		}
		if (idata) {
			FOR_FIELDS(f, idata, i_len, ok2) {
				*why = "bad interned data";
				/* 5-7, 17-19: the samples' stacks, checked by
				 * decode.sh and tests/sample/export */
				if ((f.num >= 5 && f.num <= 7) || (f.num >= 17 && f.num <= 19))
					continue;
				if (f.num < 1 || f.num > 3 ||
				    !add_interned(d, (uint32_t)seq, f.num, f.data, f.len))
					return false;
			}
		}
		*why = "bad track descriptor";
		if (tdd && !dec_td(d, (uint32_t)seq, tdd, td_len))
			return false;
		*why = "bad track event (or an iid not interned on its sequence)";
		if (te && (!has_ts || !dec_te(d, (uint32_t)seq, ts, te, te_len)))
			return false;
	}
	*why = "bad Trace encoding";
	return ok;
}

static struct dec *dec_file(const char *path)
{
	struct dec *d = calloc(1, sizeof(*d));
	size_t len;
	unsigned char *buf = ks_test_read_file(path, &len);
	const char *why = NULL;

	assert_non_null(buf);
	if (!dec_trace(d, buf, len, &why))
		fail_msg("%s: %s", path, why);
	free(buf);
	return d;
}

static const struct td *find_td(const struct dec *d, int kind, const char *name)
{
	for (size_t i = 0; i < d->n_tds; i++)
		if (d->tds[i].kind == kind && d->tds[i].name &&
		    !strcmp(d->tds[i].name, name))
			return &d->tds[i];
	return NULL;
}

static const struct td *find_uuid(const struct dec *d, uint64_t uuid)
{
	for (size_t i = 0; i < d->n_tds; i++)
		if (d->tds[i].uuid == uuid)
			return &d->tds[i];
	return NULL;
}

static size_t count_events(const struct dec *d, uint64_t type, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < d->n_evs; i++)
		if (d->evs[i].type == type &&
		    (!name || (d->evs[i].name && !strcmp(d->evs[i].name, name))))
			n++;
	return n;
}

static const struct ev *find_event(const struct dec *d, uint64_t type, const char *name)
{
	for (size_t i = 0; i < d->n_evs; i++)
		if (d->evs[i].type == type && d->evs[i].name &&
		    !strcmp(d->evs[i].name, name))
			return &d->evs[i];
	return NULL;
}

/* Every event's track is described; per track, times never go back and
 * begin/end pairs balance; slices only on non-counter tracks, counter
 * values only on counter tracks. */
static void check_tracks(const struct dec *d)
{
	struct st { uint64_t uuid, last_ts; long depth; } *st = NULL;
	size_t n = 0;

	for (size_t i = 0; i < d->n_evs; i++) {
		const struct ev *ev = &d->evs[i];
		const struct td *td = find_uuid(d, ev->track);
		size_t k;

		assert_non_null(td);
		assert_int_equal(td->kind == TD_COUNTER, ev->type == 4);
		for (k = 0; k < n && st[k].uuid != ev->track; k++)
			;
		if (k == n) {
			st = realloc(st, (n + 1) * sizeof(*st));
			st[n++] = (struct st){ ev->track, 0, 0 };
		}
		assert_true(ev->ts >= st[k].last_ts);
		st[k].last_ts = ev->ts;
		if (ev->type == 1)
			st[k].depth++;
		if (ev->type == 2)
			assert_true(--st[k].depth >= 0);
	}
	for (size_t k = 0; k < n; k++)
		assert_int_equal(st[k].depth, 0);
	free(st);
}

/* ------------------------------------------------------------------ */
/* Reading the JSON back                                               */
/* ------------------------------------------------------------------ */

static json_t *load_json(const char *path)
{
	json_error_t je;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &je);

	if (!root)
		fail_msg("%s: %s at line %d", path, je.text, je.line);
	assert_string_equal(json_string_value(json_object_get(root, "displayTimeUnit")),
			    "ns");
	assert_true(json_is_array(json_object_get(root, "traceEvents")));
	return root;
}

static size_t count_ph(json_t *root, const char *ph)
{
	json_t *evs = json_object_get(root, "traceEvents"), *ev;
	size_t i, n = 0;

	json_array_foreach(evs, i, ev)
		if (!strcmp(json_string_value(json_object_get(ev, "ph")), ph))
			n++;
	return n;
}

static json_t *find_ph(json_t *root, const char *ph, const char *name, size_t skip)
{
	json_t *evs = json_object_get(root, "traceEvents"), *ev;
	size_t i;

	json_array_foreach(evs, i, ev)
		if (!strcmp(json_string_value(json_object_get(ev, "ph")), ph) &&
		    !strcmp(json_string_value(json_object_get(ev, "name")), name) &&
		    skip-- == 0)
			return ev;
	return NULL;
}

static double num(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	assert_true(json_is_number(v));
	return json_number_value(v);
}

static void assert_us(json_t *obj, const char *key, double want)
{
	double got = num(obj, key);

	if (fabs(got - want) > 1e-9 * (fabs(want) + 1))
		fail_msg("%s: got %.6f, want %.6f", key, got, want);
}

/* Per async id, "b" and "e" events balance and times never go back. */
static void check_json_async(json_t *root)
{
	json_t *evs = json_object_get(root, "traceEvents"), *ev;
	struct { const char *id; double last; long depth; } st[16];
	size_t i, n = 0;

	json_array_foreach(evs, i, ev) {
		const char *ph = json_string_value(json_object_get(ev, "ph"));
		const char *id;
		size_t k;

		if (strcmp(ph, "b") && strcmp(ph, "e"))
			continue;
		id = json_string_value(json_object_get(ev, "id"));
		assert_non_null(id);
		for (k = 0; k < n && strcmp(st[k].id, id); k++)
			;
		if (k == n) {
			assert_true(n < 16);
			st[n].id = id;
			st[n].last = 0;
			st[n++].depth = 0;
		}
		assert_true(num(ev, "ts") >= st[k].last);
		st[k].last = num(ev, "ts");
		if (!strcmp(ph, "b"))
			st[k].depth++;
		else
			assert_true(--st[k].depth >= 0);
	}
	for (size_t k = 0; k < n; k++)
		assert_int_equal(st[k].depth, 0);
}

/* ------------------------------------------------------------------ */
/* Tests                                                               */
/* ------------------------------------------------------------------ */

static void test_pb_encoding(void **state)
{
	struct ks_pb b = { 0 };
	uint8_t v[10];
	size_t m, m2;
	char big[300];

	(void)state;
	assert_int_equal(ks_pb_put_varint(v, 0), 1);
	assert_int_equal(v[0], 0);
	assert_int_equal(ks_pb_put_varint(v, 300), 2);
	assert_int_equal(v[0], 0xac);
	assert_int_equal(v[1], 0x02);
	assert_int_equal(ks_pb_varint_size(UINT64_MAX), 10);
	assert_int_equal(ks_pb_zigzag(0), 0);
	assert_int_equal(ks_pb_zigzag(-1), 1);
	assert_int_equal(ks_pb_zigzag(1), 2);
	assert_int_equal(ks_pb_zigzag(-2), 3);
	assert_int_equal(ks_pb_zigzag(INT64_MIN), UINT64_MAX);

	ks_pb_uint(&b, 1, 150);             /* 08 96 01 */
	ks_pb_int(&b, 2, -1);               /* 10 ff*9 01 */
	ks_pb_sint(&b, 3, -2);              /* 18 03 */
	ks_pb_double(&b, 4, 1.0);           /* 21 00..f0 3f */
	ks_pb_string(&b, 5, "hi");          /* 2a 02 68 69 */
	assert_int_equal(b.len, 3 + 11 + 2 + 9 + 4);
	assert_memory_equal(b.buf, "\x08\x96\x01\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"
			    "\x18\x03\x21\x00\x00\x00\x00\x00\x00\xf0\x3f\x2a\x02hi", b.len);

	/* Nested messages get minimal lengths, even past one length byte. */
	b.len = 0;
	m = ks_pb_begin(&b, 1);
	m2 = ks_pb_begin(&b, 2);
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ks_pb_string(&b, 3, big);           /* 1a ab 02 + 299 */
	ks_pb_end(&b, m2);                  /* 12 ae 02 */
	ks_pb_uint(&b, 4, 1);               /* 20 01 */
	ks_pb_end(&b, m);                   /* 0a b3 02 */
	assert_int_equal(b.len, 3 + 3 + 3 + 299 + 2);
	assert_memory_equal(b.buf, "\x0a\xb3\x02\x12\xae\x02\x1a\xab\x02", 9);
	assert_memory_equal(b.buf + 9 + 299, "\x20\x01", 2);

	/* Empty nested message. */
	b.len = 0;
	m = ks_pb_begin(&b, 8);
	ks_pb_end(&b, m);
	assert_int_equal(b.len, 2);
	assert_memory_equal(b.buf, "\x42\x00", 2);
	assert_int_equal(b.error, 0);
	ks_pb_free(&b);
}

static void test_synthetic_perfetto(void **state)
{
	struct ks_profile p;
	char *dir = ks_test_tmpdir(), *run, *path;
	const struct td *pr0, *pr1, *th0, *th1, *th2, *td;
	const struct ev *ev;
	struct dec *d;
	size_t n_counters = 0;

	(void)state;
	build_profile(&p);
	run = write_traces(&p, dir);
	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);

	/* 5 process/counter descriptors, 3 thread descriptors; t0: 6 + 1 +
	 * (2 + 1) + (2 + 1) + (1 + 4) + 4 perf samples; t1: 6; t2: 6 + (1 +
	 * 1) + 1 perf sample; 5 counters. */
	assert_int_equal(d->n_packets, 5 + 3 + 22 + 6 + 9 + 5);
	/* One PerfSample a sample; the two without a call path have no
	 * callstack. */
	assert_int_equal(d->n_perf, 5);
	assert_int_equal(d->n_perf_stack, 3);

	pr0 = find_td(d, TD_PROCESS, "./app --x [rank 0]");
	pr1 = find_td(d, TD_PROCESS, "./app \"q\" [rank 1]");
	assert_non_null(pr0);
	assert_non_null(pr1);
	assert_int_equal(pr0->pid, 100);
	assert_int_equal(pr1->pid, 200);
	th0 = find_td(d, TD_THREAD, T0_NAME);
	th1 = find_td(d, TD_THREAD, T1_NAME_UTF8);
	assert_non_null(th0);
	assert_non_null(th1);
	assert_int_equal(th0->pid, 100);
	assert_int_equal(th0->tid, 100);
	assert_int_equal(th0->parent, pr0->uuid);
	assert_int_equal(th1->pid, 100);
	assert_int_equal(th1->tid, 101);
	assert_int_equal(th1->parent, pr0->uuid);
	th2 = NULL;
	for (size_t i = 0; i < d->n_tds; i++)
		if (d->tds[i].kind == TD_THREAD && d->tds[i].tid == 200)
			th2 = &d->tds[i];
	assert_non_null(th2);
	assert_int_equal(th2->pid, 200);
	assert_int_equal(th2->parent, pr1->uuid);
	/* Each thread has its own sequence, distinct from the processes'. */
	assert_int_not_equal(th0->seq, th1->seq);
	assert_int_not_equal(th0->seq, pr0->seq);
	assert_int_not_equal(pr0->seq, pr1->seq);

	/* Counter tracks under their process. */
	td = find_td(d, TD_COUNTER, "CPU %");
	assert_non_null(td);
	td = NULL;
	for (size_t i = 0; i < d->n_tds; i++)
		if (d->tds[i].kind == TD_COUNTER) {
			assert_true(d->tds[i].parent == pr0->uuid ||
				    d->tds[i].parent == pr1->uuid);
			if (!strcmp(d->tds[i].name, "RSS")) {
				assert_int_equal(d->tds[i].unit, 3);
				assert_int_equal(d->tds[i].parent, pr0->uuid);
			}
			n_counters++;
		}
	assert_int_equal(n_counters, 3);

	/* Lanes and the samples track hang under their thread. */
	td = find_td(d, TD_OTHER, "ranges");
	assert_non_null(td);
	assert_int_equal(td->parent, th0->uuid);
	td = find_td(d, TD_OTHER, "overlapping slices 1");
	assert_non_null(td);
	assert_int_equal(td->parent, th0->uuid);
	ev = find_event(d, 1, "pause");
	assert_non_null(ev);

	check_tracks(d);
	assert_int_equal(count_events(d, 1, NULL), 11);
	assert_int_equal(count_events(d, 2, NULL), 11);
	assert_int_equal(count_events(d, 3, NULL), 6);
	assert_int_equal(count_events(d, 3, "checkpoint"), 1);
	assert_int_equal(count_events(d, 4, NULL), 5);

	ev = find_event(d, 1, "outer");
	assert_non_null(ev);
	assert_int_equal(ev->ts, 1000);
	assert_int_equal(ev->track, th0->uuid);
	assert_string_equal(ev->cat, "region");
	ev = find_event(d, 1, "MPI_Send");
	assert_non_null(ev);
	assert_int_equal(ev->ts, 3000);
	assert_string_equal(ev->cat, "mpi");
	assert_true(ev->has_bytes && ev->has_peer);
	assert_int_equal(ev->bytes, 1024);
	assert_int_equal(ev->peer, 1);
	ev = find_event(d, 1, "MPI_Recv");
	assert_non_null(ev);
	assert_int_equal(ev->peer, 0);
	ev = find_event(d, 1, "async");
	assert_non_null(ev);
	assert_true(ev->has_id);
	assert_int_equal(ev->id, 7);
	assert_int_equal(ev->track, find_td(d, TD_OTHER, "ranges")->uuid);
	ev = find_event(d, 3, "checkpoint");
	assert_int_equal(ev->ts, 6000);
	assert_int_equal(ev->track, th0->uuid);

	/* The unclosed loop ends with its thread, after its child body. */
	{
		size_t n_end = 0;
		uint64_t last = 0;

		for (size_t i = 0; i < d->n_evs; i++)
			if (d->evs[i].track == th1->uuid && d->evs[i].type == 2) {
				n_end++;
				last = d->evs[i].ts;
			}
		assert_int_equal(n_end, 3);
		assert_int_equal(last, 20000);
	}

	/* Samples: instants named after the innermost function. */
	assert_int_equal(count_events(d, 3, "compute"), 3);
	assert_int_equal(count_events(d, 3, "[unknown]"), 2);
	ev = find_event(d, 3, "compute");
	assert_string_equal(ev->cat, "sample");
	assert_int_equal(find_uuid(d, ev->track)->parent, th0->uuid);

	/* Counter values, in time order per track. */
	for (size_t i = 0; i < d->n_evs; i++) {
		ev = &d->evs[i];
		if (ev->type != 4)
			continue;
		assert_true(ev->has_value);
		if (ev->ts == 1000 && find_uuid(d, ev->track)->parent == pr1->uuid)
			assert_true(ev->value == 12.25);
	}
	for (size_t i = 0; i < d->n_evs; i++)
		if (d->evs[i].type == 4 && d->evs[i].ts == 2000 &&
		    !strcmp(find_uuid(d, d->evs[i].track)->name, "CPU %"))
			assert_true(d->evs[i].value == 99.75);

	dec_free(d);
	free(d);
	free(path);
	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_synthetic_json(void **state)
{
	struct ks_profile p;
	char *dir = ks_test_tmpdir(), *run, *path;
	json_t *root, *ev, *args;

	(void)state;
	build_profile(&p);
	run = write_traces(&p, dir);
	path = file_in(run, JSON_NAME);
	root = load_json(path);

	/* The samples with their stacks: main > compute, and two samples
	 * without a call path (no "sf"). */
	{
		json_t *sf = json_object_get(root, "stackFrames");
		json_t *smp = json_object_get(root, "samples"), *x;
		size_t i, with_sf = 0;

		assert_int_equal(json_object_size(sf), 2);
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(sf, "2"), "name")), "compute");
		assert_string_equal(json_string_value(json_object_get(
			json_object_get(sf, "2"), "parent")), "1");
		assert_null(json_object_get(json_object_get(sf, "1"), "parent"));
		assert_int_equal(json_array_size(smp), 5);
		json_array_foreach(smp, i, x) {
			assert_int_equal(json_integer_value(json_object_get(x, "weight")), 1);
			with_sf += json_integer_value(json_object_get(x, "sf")) == 2;
		}
		assert_int_equal(with_sf, 3);
	}

	/* 2 process_name + 2 process_sort_index + 3 thread_name. */
	assert_int_equal(count_ph(root, "M"), 7);
	assert_int_equal(count_ph(root, "X"), 9);
	assert_int_equal(count_ph(root, "i"), 1);
	assert_int_equal(count_ph(root, "b"), 2);
	assert_int_equal(count_ph(root, "e"), 2);
	assert_int_equal(count_ph(root, "C"), 5);
	assert_int_equal(json_array_size(json_object_get(root, "traceEvents")), 26);

	ev = find_ph(root, "M", "thread_name", 1);
	assert_non_null(ev);
	assert_int_equal(num(ev, "tid"), 101);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "args"),
							      "name")), T1_NAME_UTF8);
	ev = find_ph(root, "M", "process_name", 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "args"),
							      "name")),
			    "./app \"q\" [rank 1]");

	ev = find_ph(root, "X", "outer", 0);
	assert_non_null(ev);
	assert_us(ev, "ts", 1.0);
	assert_us(ev, "dur", 8.0);
	assert_int_equal(num(ev, "pid"), 100);
	assert_int_equal(num(ev, "tid"), 100);
	assert_string_equal(json_string_value(json_object_get(ev, "cat")), "region");
	ev = find_ph(root, "X", "solve", 0);
	assert_us(ev, "ts", 1234.567);
	assert_us(ev, "dur", 1000.001);
	ev = find_ph(root, "X", "loop", 0);
	assert_us(ev, "ts", 1.5);
	assert_us(ev, "dur", 18.5);
	ev = find_ph(root, "X", "blink", 0);
	assert_us(ev, "dur", 0);
	ev = find_ph(root, "X", "MPI_Send", 0);
	args = json_object_get(ev, "args");
	assert_int_equal(json_integer_value(json_object_get(args, "bytes")), 1024);
	assert_int_equal(json_integer_value(json_object_get(args, "peer")), 1);
	ev = find_ph(root, "i", "checkpoint", 0);
	assert_us(ev, "ts", 6.0);
	assert_string_equal(json_string_value(json_object_get(ev, "s")), "t");

	/* The range and the misnested pause: async pairs, one id per lane. */
	ev = find_ph(root, "b", "async", 0);
	assert_non_null(ev);
	assert_us(ev, "ts", 4.5);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(ev, "args"),
							    "id")), 7);
	{
		json_t *end = find_ph(root, "e", "async", 0);

		assert_non_null(end);
		assert_us(end, "ts", 7.0);
		assert_string_equal(json_string_value(json_object_get(ev, "id")),
				    json_string_value(json_object_get(end, "id")));
	}
	ev = find_ph(root, "b", "pause", 0);
	assert_non_null(ev);
	assert_us(ev, "ts", 8.5);
	check_json_async(root);
	assert_non_null(find_ph(root, "X", "pause", 0));   /* t2's, which nests */

	ev = find_ph(root, "C", "CPU %", 1);
	assert_us(ev, "ts", 2.0);
	assert_true(num(json_object_get(ev, "args"), "value") == 99.75);
	ev = find_ph(root, "C", "RSS", 0);
	assert_true(num(json_object_get(ev, "args"), "value") == 1048576);

	json_decref(root);
	free(path);
	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_empty_profiles(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), *run, *path;
	json_t *root;
	struct dec *d;

	(void)state;
	/* Nothing at all: an empty Trace (no packets) and no events. */
	assert_int_equal(ks_profile_init(&p, &e), 0);
	run = write_traces(&p, dir);
	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	assert_int_equal(d->n_packets, 0);
	dec_free(d);
	free(d);
	free(path);
	path = file_in(run, JSON_NAME);
	root = load_json(path);
	assert_int_equal(json_array_size(json_object_get(root, "traceEvents")), 0);
	json_decref(root);
	free(path);
	free(run);

	/* A process and an unnamed thread, no samples, slices or counters:
	 * just their descriptors. */
	add_thread(&p, add_process(&p, 7, -1, "", 0, 0), 7, "", 0, 0);
	run = write_traces(&p, dir);
	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	assert_int_equal(d->n_packets, 2);
	assert_int_equal(d->n_evs, 0);
	assert_int_equal(d->tds[1].kind, TD_THREAD);
	assert_null(d->tds[1].name);
	dec_free(d);
	free(d);
	free(path);
	path = file_in(run, JSON_NAME);
	root = load_json(path);
	assert_int_equal(count_ph(root, "M"), 1);   /* process_name only */
	assert_int_equal(json_array_size(json_object_get(root, "traceEvents")), 1);
	json_decref(root);
	free(path);
	free(run);

	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* Names made of every awkward byte survive both formats. */
static void test_awkward_names(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), *run, *path, name[300];
	char want[600], *w = want;
	json_t *root, *ev;
	struct dec *d;
	uint32_t t;

	(void)state;
	/* Bytes 1..255: controls, quotes, backslash, DEL, and bytes 0x80..0xff
	 * that are not valid UTF-8 on their own. */
	for (int c = 1; c < 256; c++)
		name[c - 1] = (char)c;
	name[255] = '\0';
	for (int c = 1; c < 256; c++) {
		if (c < 0x80) {
			*w++ = (char)c;
		} else {
			*w++ = (char)(0xc0 | (c >> 6));
			*w++ = (char)(0x80 | (c & 0x3f));
		}
	}
	*w = '\0';
	assert_int_equal(ks_profile_init(&p, &e), 0);
	t = add_thread(&p, add_process(&p, 1, -1, name, 0, 100), 1, name, 0, 100);
	add_slice(&p, t, name, KS_SLICE_REGION, 0, 10, 20);
	add_slice(&p, t, "\xf0\x9f\x98\x80 \xed\xa0\x80 \xc0\xaf", KS_SLICE_MARK, 0, 15, 15);
	run = write_traces(&p, dir);

	path = file_in(run, JSON_NAME);
	root = load_json(path);
	ev = find_ph(root, "X", want, 0);
	assert_non_null(ev);
	ev = find_ph(root, "M", "thread_name", 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(ev, "args"),
							      "name")), want);
	/* A 4-byte character passes; a surrogate and an overlong form do not. */
	assert_non_null(find_ph(root, "i", "\xf0\x9f\x98\x80 \xc3\xad\xc2\xa0\xc2\x80 "
				"\xc3\x80\xc2\xaf", 0));
	json_decref(root);
	free(path);

	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	assert_non_null(find_event(d, 1, want));
	assert_non_null(find_td(d, TD_THREAD, want));
	dec_free(d);
	free(d);
	free(path);

	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* Slices that do not nest get lanes of their own: overlapping ranges one
 * "ranges" lane each, a pause that outlives its region an overlap lane,
 * where a pause inside it nests; a mark may come before any slice. */
static void test_lanes(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), *run, *path;
	const struct td *th, *td;
	const struct ev *ev;
	json_t *root;
	struct dec *d;
	uint32_t t;

	(void)state;
	assert_int_equal(ks_profile_init(&p, &e), 0);
	t = add_thread(&p, add_process(&p, 1, -1, "lanes", 0, 100), 1, "t", 0, 100);
	add_slice(&p, t, "early", KS_SLICE_MARK, 0, 0, 0);
	add_slice(&p, t, "a", KS_SLICE_REGION, 0, 0, 100);
	add_slice(&p, t, "b", KS_SLICE_REGION, 1, 10, 60);
	add_slice(&p, t, "r1", KS_SLICE_RANGE, 0, 10, 30);
	add_slice(&p, t, "r2", KS_SLICE_RANGE, 0, 20, 40);
	add_slice(&p, t, "r3", KS_SLICE_RANGE, 0, 35, 50);
	add_slice(&p, t, "pause", KS_SLICE_PAUSE, 0, 50, 70);
	add_slice(&p, t, "pause2", KS_SLICE_PAUSE, 0, 55, 65);
	run = write_traces(&p, dir);

	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	check_tracks(d);
	th = find_td(d, TD_THREAD, "t");
	assert_non_null(th);
	assert_int_equal(find_event(d, 3, "early")->track, th->uuid);
	assert_int_equal(find_event(d, 1, "a")->track, th->uuid);
	assert_int_equal(find_event(d, 1, "b")->track, th->uuid);
	td = find_td(d, TD_OTHER, "ranges");
	assert_non_null(td);
	assert_int_equal(find_event(d, 1, "r1")->track, td->uuid);
	assert_int_equal(find_event(d, 1, "r3")->track, td->uuid);
	td = find_td(d, TD_OTHER, "ranges 2");
	assert_non_null(td);
	assert_int_equal(find_event(d, 1, "r2")->track, td->uuid);
	td = find_td(d, TD_OTHER, "overlapping slices 1");
	assert_non_null(td);
	assert_int_equal(td->parent, th->uuid);
	assert_int_equal(find_event(d, 1, "pause")->track, td->uuid);
	ev = find_event(d, 1, "pause2");
	assert_int_equal(ev->track, td->uuid);
	assert_null(find_td(d, TD_OTHER, "overlapping slices 2"));
	dec_free(d);
	free(d);
	free(path);

	path = file_in(run, JSON_NAME);
	root = load_json(path);
	assert_int_equal(count_ph(root, "X"), 2);
	assert_int_equal(count_ph(root, "i"), 1);
	assert_int_equal(count_ph(root, "b"), 5);
	assert_int_equal(count_ph(root, "e"), 5);
	check_json_async(root);
	assert_string_equal(json_string_value(json_object_get(find_ph(root, "b", "pause", 0), "id")),
			    json_string_value(json_object_get(find_ph(root, "b", "pause2", 0), "id")));
	assert_string_not_equal(json_string_value(json_object_get(find_ph(root, "b", "r1", 0), "id")),
				json_string_value(json_object_get(find_ph(root, "b", "r2", 0), "id")));
	json_decref(root);
	free(path);
	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* Ranks on different hosts may share a pid; the viewers would merge
 * them, so the second gets another pid and says which was real. */
static void test_shared_pid(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), *run, *path;
	const struct td *a, *b;
	json_t *root;
	struct dec *d;

	(void)state;
	assert_int_equal(ks_profile_init(&p, &e), 0);
	add_thread(&p, add_process(&p, 4242, 0, "./mpi", 0, 10), 4242, "", 0, 10);
	add_thread(&p, add_process(&p, 4242, 1, "./mpi", 0, 10), 4242, "", 0, 10);
	run = write_traces(&p, dir);
	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	a = find_td(d, TD_PROCESS, "./mpi [rank 0]");
	b = find_td(d, TD_PROCESS, "./mpi [rank 1] (pid 4242)");
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(a->pid, 4242);
	assert_int_equal(b->pid, 4243);
	assert_int_equal(d->tds[3].pid, 4243);   /* the second thread */
	dec_free(d);
	free(d);
	free(path);
	path = file_in(run, JSON_NAME);
	root = load_json(path);
	assert_int_equal(num(find_ph(root, "M", "process_name", 1), "pid"), 4243);
	json_decref(root);
	free(path);
	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* A profile whose ids do not fit is refused with a message, not read
 * out of bounds. */
static void test_inconsistent_profile(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir();
	struct ks_rundir rd;
	struct ks_outfile of;

	(void)state;
	build_profile(&p);
	p.slices[3].thread = 9;
	assert_int_equal(ks_rundir_create(dir, "sample", 0, &rd, &e), 0);
	assert_int_equal(ks_outfile_open(&rd, PERFETTO_NAME, &of, &e), 0);
	assert_int_equal(ks_trace_write_perfetto(&p, &of, &e), -EINVAL);
	assert_string_equal(e.msg, "profile slice 3 refers to thread 9, but there are 3");
	assert_int_equal(ks_trace_write_json(&p, &of, &e), -EINVAL);
	p.slices[3].thread = 0;
	p.counters[0].process = 2;
	assert_int_equal(ks_trace_write_json(&p, &of, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "counter 0 refers to process 2"));
	p.counters[0].process = 0;
	p.samples[0].node = 1000;
	assert_int_equal(ks_trace_write_perfetto(&p, &of, &e), -EINVAL);
	ks_outfile_abort(&of);
	ks_rundir_discard(&rd);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* A failing write is reported with the file's name. */
static void test_write_error(void **state)
{
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir();
	struct ks_rundir rd;
	struct ks_outfile of;
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC);

	(void)state;
	if (full < 0)
		skip();
	build_profile(&p);
	assert_int_equal(ks_rundir_create(dir, "sample", 0, &rd, &e), 0);
	for (int fmt = 0; fmt < 2; fmt++) {
		const char *name = fmt ? JSON_NAME : PERFETTO_NAME;
		int rc;

		assert_int_equal(ks_outfile_open(&rd, name, &of, &e), 0);
		assert_int_equal(dup2(full, of.fd), of.fd);
		rc = fmt ? ks_trace_write_json(&p, &of, &e)
			 : ks_trace_write_perfetto(&p, &of, &e);
		assert_int_equal(rc, -ENOSPC);
		assert_non_null(strstr(e.msg, name));
		assert_int_not_equal(ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e), 0);
	}
	close(full);
	ks_rundir_discard(&rd);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

/* 100000 slices added in scrambled order: written fast, nested right. */
static void test_many_slices(void **state)
{
	enum { N = 25000 };    /* four slices each */
	struct ks_profile p;
	struct ks_err e;
	char *dir = ks_test_tmpdir(), *run, *path, nm[32];
	uint32_t t, perm[N];
	uint64_t lcg = 12345;
	double dt;
	json_t *root;
	struct dec *d;

	(void)state;
	assert_int_equal(ks_profile_init(&p, &e), 0);
	t = add_thread(&p, add_process(&p, 1, -1, "big", 0, 0), 1, "w", 0,
		       (uint64_t)N * 1000 + 5000);
	for (uint32_t i = 0; i < N; i++)
		perm[i] = i;
	for (uint32_t i = N - 1; i > 0; i--) {
		uint32_t j, tmp;

		lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
		j = (uint32_t)((lcg >> 33) % (i + 1));
		tmp = perm[i];
		perm[i] = perm[j];
		perm[j] = tmp;
	}
	for (uint32_t k = 0; k < N; k++) {
		uint64_t b = (uint64_t)perm[k] * 1000;

		snprintf(nm, sizeof(nm), "step %u", perm[k] % 100);
		add_slice(&p, t, nm, KS_SLICE_REGION, 1, b + 100, b + 500);
		add_mpi(&p, t, "MPI_Allreduce", 2, b + 200, b + 300, 8, -1);
		add_slice(&p, t, "iteration", KS_SLICE_REGION, 0, b, b + 900);
		add_slice(&p, t, "io", KS_SLICE_RANGE, 0, b + 400, b + 1200);
	}
	assert_int_equal(p.n_slices, 100000);

	run = write_traces_timed(&p, dir, &dt);
	/* About 0.2 s in the gcc RelWithDebInfo build and 1.4 s under the
	 * sanitizers when this was written; the bound is loose on purpose and
	 * only catches quadratic behaviour (which would take minutes). */
	print_message("100000 slices: %.3f s in the two writers\n", dt);
	if (dt > 10.0)
		fail_msg("writing 100000 slices took %.2f s", dt);

	path = file_in(run, PERFETTO_NAME);
	d = dec_file(path);
	assert_int_equal(count_events(d, 1, NULL), 100000);
	assert_int_equal(count_events(d, 2, NULL), 100000);
	check_tracks(d);
	/* The ranges overlap the next iteration but not each other: one
	 * ranges lane, no overlap lanes. */
	assert_non_null(find_td(d, TD_OTHER, "ranges"));
	assert_null(find_td(d, TD_OTHER, "ranges 2"));
	assert_null(find_td(d, TD_OTHER, "overlapping slices 1"));
	dec_free(d);
	free(d);
	free(path);

	path = file_in(run, JSON_NAME);
	root = load_json(path);
	assert_int_equal(count_ph(root, "X"), 75000);
	assert_int_equal(count_ph(root, "b"), 25000);
	assert_int_equal(count_ph(root, "e"), 25000);
	/* X events come in nesting order: by start, then longer first. */
	{
		json_t *evs = json_object_get(root, "traceEvents"), *ev;
		double last_ts = -1, last_dur = 0;
		size_t i;

		json_array_foreach(evs, i, ev) {
			double ts, dur;

			if (strcmp(json_string_value(json_object_get(ev, "ph")), "X"))
				continue;
			ts = num(ev, "ts");
			dur = num(ev, "dur");
			assert_true(ts > last_ts || (ts == last_ts && dur <= last_dur));
			last_ts = ts;
			last_dur = dur;
		}
	}
	json_decref(root);
	free(path);
	free(run);
	ks_profile_free(&p);
	ks_test_rmtree(dir);
	free(dir);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pb_encoding),
		cmocka_unit_test(test_synthetic_perfetto),
		cmocka_unit_test(test_synthetic_json),
		cmocka_unit_test(test_empty_profiles),
		cmocka_unit_test(test_awkward_names),
		cmocka_unit_test(test_lanes),
		cmocka_unit_test(test_shared_pid),
		cmocka_unit_test(test_inconsistent_profile),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_many_slices),
	};

	if (argc == 3 && !strcmp(argv[1], "--write")) {
		/* For decode.sh: the synthetic profile's traces, then stop. */
		struct ks_profile p;
		char *run;

		build_profile(&p);
		run = write_traces(&p, argv[2]);
		printf("%s\n", run);
		free(run);
		ks_profile_free(&p);
		return 0;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
