/*
 * view_perfetto.c: kv_perfetto_load, the reader of the Perfetto traces
 * kscope writes (trace.perfetto-trace of kscope sample and kscope merge,
 * src/sample/trace/perfetto.c) for kscope view.
 *
 * It is the writer's mirror, not a general Perfetto reader: a packet
 * with a field kscope does not write (a clock snapshot, a trace config,
 * ftrace data: every trace that Perfetto's own tools record has some) is
 * refused with a message that says so, and ui.perfetto.dev remains the
 * viewer for such traces.  From a trace kscope wrote it builds
 *   - the timeline: the same process and thread tracks, slices, marks
 *     and args that the same run's Chrome JSON trace gives through
 *     kv_trace_load, in the same order: a thread's own track as its
 *     slices ("X" there), each extra lane (a child track of the thread,
 *     "ranges", "overlapping slices N") as the track "async:TID.LANE"
 *     ("b"/"e" there, id "TID.LANE"), lanes numbered from 1 in the order
 *     their descriptors come; counters and the "samples" child track are
 *     not shown, as the Chrome JSON reader does not show them;
 *   - a profile (profile.h) of the PerfSample packets: processes and
 *     threads from the track descriptors, each sample's call stack from
 *     the interned callstacks, frames, function names, source paths and
 *     mappings of its sequence.  The trace does not carry the timer
 *     periods a sample stands for, so each counts once.
 *
 * The file is read in two passes over the packets: the first checks the
 * encoding and collects the track descriptors and every interned entry
 * (kept as the place of its bytes in the file, keyed by sequence, field
 * and iid); the second turns events and samples into slices and the
 * profile.  Nothing is trusted: every length is checked against what
 * contains it, every id looked up, and the file is fuzzed
 * (tests/fuzz/fuzz_viewperfetto.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"
#include "view.h"

/* ------------------------------------------------------------------ */
/* Protobuf wire format                                                */
/* ------------------------------------------------------------------ */

struct pbr {
	const uint8_t *p, *end;
};

struct pbf {
	uint32_t field;
	int wire;              /* 0 varint, 1 fixed64, 2 bytes, 5 fixed32 */
	uint64_t v;            /* varint and fixed values */
	const uint8_t *data;   /* wire 2 */
	size_t len;
};

static bool varint(struct pbr *r, uint64_t *out)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
		uint8_t b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return true;
		}
	}
	return false;
}

/* The next field of a message: 1, 0 at its end, -1 when malformed. */
static int pb_next(struct pbr *r, struct pbf *f)
{
	uint64_t tag, n;

	if (r->p >= r->end)
		return 0;
	if (!varint(r, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
		return -1;
	f->field = (uint32_t)(tag >> 3);
	f->wire = (int)(tag & 7);
	f->v = 0;
	f->data = NULL;
	f->len = 0;
	switch (f->wire) {
	case 0:
		return varint(r, &f->v) ? 1 : -1;
	case 1:
	case 5:
		n = f->wire == 1 ? 8 : 4;
		if ((uint64_t)(r->end - r->p) < n)
			return -1;
		for (uint64_t i = 0; i < n; i++)
			f->v |= (uint64_t)r->p[i] << (8 * i);
		r->p += n;
		return 1;
	case 2:
		if (!varint(r, &n) || n > (uint64_t)(r->end - r->p))
			return -1;
		f->data = r->p;
		f->len = (size_t)n;
		r->p += n;
		return 1;
	default:
		return -1;  /* groups (3, 4) are not written by kscope */
	}
}

static struct pbr sub(const struct pbf *f)
{
	return (struct pbr){ f->data, f->data + f->len };
}

/* ------------------------------------------------------------------ */
/* Field numbers (the writer's, src/sample/trace/perfetto.c)           */
/* ------------------------------------------------------------------ */

enum {
	TRACE_PACKET = 1,
	PKT_TIMESTAMP = 8, PKT_SEQUENCE_ID = 10, PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12, PKT_SEQUENCE_FLAGS = 13, PKT_TRACK_DESCRIPTOR = 60,
	PKT_PERF_SAMPLE = 66,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT_UUID = 5,
	TD_COUNTER = 8, TD_SIBLING_ORDER_RANK = 12,
	PD_PID = 1, PD_PROCESS_NAME = 6, PD_START_TIMESTAMP_NS = 7,
	THD_PID = 1, THD_TID = 2, THD_THREAD_NAME = 5,
	TE_CATEGORY_IIDS = 3, TE_DEBUG_ANNOTATIONS = 4, TE_TYPE = 9, TE_NAME_IID = 10,
	TE_TRACK_UUID = 11, TE_NAME = 23,
	TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3,
	DA_NAME_IID = 1, DA_UINT_VALUE = 3, DA_INT_VALUE = 4, DA_NAME = 10,
	ID_EVENT_CATEGORIES = 1, ID_EVENT_NAMES = 2, ID_DEBUG_ANNOTATION_NAMES = 3,
	ID_FUNCTION_NAMES = 5, ID_FRAMES = 6, ID_CALLSTACKS = 7,
	ID_MAPPING_PATHS = 17, ID_SOURCE_PATHS = 18, ID_MAPPINGS = 19,
	INTERNED_IID = 1, INTERNED_NAME = 2,
	FRAME_FUNCTION_NAME_ID = 2, FRAME_MAPPING_ID = 3, FRAME_REL_PC = 4,
	FRAME_SOURCE_PATH_IID = 5, FRAME_LINE_NUMBER = 6,
	MAPPING_PATH_STRING_IDS = 7,
	CALLSTACK_FRAME_IDS = 2,
	PS_PID = 2, PS_TID = 3, PS_CALLSTACK_IID = 4,
};

/* Names of some TracePacket fields kscope does not write, for the
 * message that refuses a trace of another tool. */
static const char *packet_field_name(uint32_t f)
{
	switch (f) {
	case 2: return "process_tree";
	case 6: return "clock_snapshot";
	case 1: return "ftrace_events";
	case 33: return "trace_config";
	case 35: return "trace_stats";
	case 36: return "synchronization_marker";
	case 41: return "incremental_state_cleared";
	case 43: return "process_descriptor";
	case 44: return "thread_descriptor";
	case 45: return "system_info";
	case 54: return "streaming_profile_packet";
	case 58: return "timestamp_clock_id";
	case 59: return "trace_packet_defaults";
	case 69: return "service_event";
	default: return NULL;
	}
}

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

struct track {
	uint64_t uuid, parent;
	enum { TR_OTHER, TR_PROCESS, TR_THREAD, TR_COUNTER } kind;
	int32_t pid, tid;
	const uint8_t *name;   /* TrackDescriptor.name, or the process or
				* thread name; not NUL-terminated */
	size_t name_len;
	int32_t rank;          /* sibling_order_rank; 0 if none */
	uint64_t start;        /* process start */
	uint32_t thread;       /* TR_THREAD: its track index; a child
				* track: its thread's, or UINT32_MAX */
	uint32_t lane;         /* a child lane: its number from 1; 0 for
				* the thread's own track and for "samples" */
	uint32_t pthread;      /* TR_THREAD: its profile thread */
	bool samples;          /* the "samples" child track */
	size_t order;          /* its descriptor's place in the file */
	uint32_t *open;        /* its open slices (indexes in rd.slices) */
	size_t nopen, capopen;
};

struct entry {
	uint32_t seq, field;
	uint64_t iid;
	const uint8_t *data;   /* the entry message */
	size_t len;
	uint32_t node;         /* callstacks: the resolved node, or KS_NONE */
};

/* A slice waiting for its end, or ready to go to the timeline. */
struct pslice {
	uint32_t track;        /* index in tracks */
	char *name, *cat, *args;
	int64_t start;
	uint64_t dur;
	uint64_t key;          /* its place among the timeline's slices: the
				* event that begins it, or for a lane the one
				* that ends it (where the JSON reader adds it) */
	bool open;
};

struct rd {
	const char *what;
	struct ks_err *err;
	struct kv_timeline *tl;
	struct ks_profile *p;
	struct track *tracks;
	size_t ntracks, captracks;
	struct entry *entries;
	size_t nentries, capentries;
	struct pslice *slices;
	size_t nslices, capslices;
	uint64_t packets;
	uint64_t events;       /* slice events so far, for pslice.key */
	int64_t last_ts;
};

static int fail(struct rd *r, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct rd *r, int rc, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	return ks_err_set(r->err, rc, "%s: %s", r->what, msg);
}

static int damaged(struct rd *r, const char *what)
{
	return fail(r, -EINVAL, "not a valid Perfetto trace: packet %" PRIu64 ": %s",
		    r->packets, what);
}

static char *dupn(const uint8_t *s, size_t n)
{
	char *d = malloc(n + 1);

	if (d) {
		if (n)  /* s is NULL for a name never given */
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int cmp_track(const void *a, const void *b)
{
	const struct track *x = a, *y = b;

	return (x->uuid > y->uuid) - (x->uuid < y->uuid);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->field != y->field)
		return x->field < y->field ? -1 : 1;
	if (x->iid != y->iid)
		return x->iid < y->iid ? -1 : 1;
	return (x->data > y->data) - (x->data < y->data);
}

static struct entry *entry_find(struct rd *r, uint32_t seq, uint32_t field, uint64_t iid)
{
	size_t lo = 0, hi = r->nentries;
	struct entry key = { seq, field, iid, NULL, 0, 0 };

	/* The first entry of the key: the one sent first. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct entry *e = &r->entries[mid];
		int c = e->seq != key.seq ? (e->seq < key.seq ? -1 : 1)
			: e->field != key.field ? (e->field < key.field ? -1 : 1)
			: e->iid != key.iid ? (e->iid < key.iid ? -1 : 1) : 0;

		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < r->nentries && r->entries[lo].seq == seq && r->entries[lo].field == field &&
	    r->entries[lo].iid == iid)
		return &r->entries[lo];
	return NULL;
}

static struct track *track_find(struct rd *r, uint64_t uuid)
{
	struct track key = { .uuid = uuid };

	if (!r->ntracks)
		return NULL;
	return bsearch(&key, r->tracks, r->ntracks, sizeof key, cmp_track);
}

/* An interned string (EventName, EventCategory, DebugAnnotationName,
 * InternedString: iid 1, the text 2) of seq, NULL-free copy; NULL when
 * the id is not interned (*bad set) or out of memory. */
static char *interned_str(struct rd *r, uint32_t seq, uint32_t field, uint64_t iid,
			  bool *bad)
{
	struct entry *e = entry_find(r, seq, field, iid);
	struct pbr m;
	struct pbf f;
	int k;

	*bad = false;
	if (!e) {
		*bad = true;
		return NULL;
	}
	m = (struct pbr){ e->data, e->data + e->len };
	while ((k = pb_next(&m, &f)) > 0)
		if (f.field == INTERNED_NAME && f.wire == 2)
			return dupn(f.data, f.len);
	if (k < 0) {
		*bad = true;
		return NULL;
	}
	return strdup("");
}

/* ------------------------------------------------------------------ */
/* Pass 1: descriptors and interned data                               */
/* ------------------------------------------------------------------ */

static int add_track(struct rd *r, const struct pbf *td)
{
	struct pbr m = sub(td);
	struct pbf f;
	struct track t = { .kind = TR_OTHER, .thread = UINT32_MAX, .pthread = KS_NONE };
	bool has_uuid = false;
	int k;

	while ((k = pb_next(&m, &f)) > 0) {
		struct pbr d;
		struct pbf g;
		int j;

		switch (f.field) {
		case TD_UUID:
			t.uuid = f.v;
			has_uuid = true;
			break;
		case TD_PARENT_UUID:
			t.parent = f.v;
			break;
		case TD_NAME:
			if (f.wire == 2 && t.kind == TR_OTHER) {
				t.name = f.data;
				t.name_len = f.len;
			}
			break;
		case TD_SIBLING_ORDER_RANK:
			t.rank = (int32_t)f.v;
			break;
		case TD_COUNTER:
			t.kind = TR_COUNTER;
			break;
		case TD_PROCESS:
		case TD_THREAD:
			if (f.wire != 2)
				return damaged(r, "a process or thread descriptor is not a message");
			t.kind = f.field == TD_PROCESS ? TR_PROCESS : TR_THREAD;
			t.name = NULL;
			t.name_len = 0;
			d = sub(&f);
			while ((j = pb_next(&d, &g)) > 0) {
				if (g.field == PD_PID)  /* THD_PID too */
					t.pid = (int32_t)g.v;
				else if (t.kind == TR_THREAD && g.field == THD_TID)
					t.tid = (int32_t)g.v;
				else if (g.wire == 2 &&
					 g.field == (t.kind == TR_PROCESS ? PD_PROCESS_NAME
									 : THD_THREAD_NAME)) {
					t.name = g.data;
					t.name_len = g.len;
				} else if (t.kind == TR_PROCESS && g.field == PD_START_TIMESTAMP_NS)
					t.start = g.v;
			}
			if (j < 0)
				return damaged(r, "a malformed process or thread descriptor");
			break;
		default:
			break;
		}
	}
	if (k < 0)
		return damaged(r, "a malformed track descriptor");
	if (!has_uuid)
		return damaged(r, "a track descriptor without a uuid");
	if (r->ntracks == r->captracks) {
		size_t cap = r->captracks ? 2 * r->captracks : 64;
		struct track *nt = realloc(r->tracks, cap * sizeof *nt);

		if (!nt)
			return fail(r, -ENOMEM, "out of memory");
		r->tracks = nt;
		r->captracks = cap;
	}
	t.order = r->ntracks;
	r->tracks[r->ntracks++] = t;
	return 0;
}

static int add_interned(struct rd *r, uint32_t seq, const struct pbf *idf)
{
	struct pbr m = sub(idf);
	struct pbf f;
	int k;

	while ((k = pb_next(&m, &f)) > 0) {
		struct pbr e;
		struct pbf g;
		uint64_t iid = 0;
		int j;

		if (f.wire != 2)
			continue;
		switch (f.field) {
		case ID_EVENT_CATEGORIES: case ID_EVENT_NAMES: case ID_DEBUG_ANNOTATION_NAMES:
		case ID_FUNCTION_NAMES: case ID_FRAMES: case ID_CALLSTACKS:
		case ID_MAPPING_PATHS: case ID_SOURCE_PATHS: case ID_MAPPINGS:
			break;
		default:
			continue;
		}
		e = sub(&f);
		while ((j = pb_next(&e, &g)) > 0)
			if (g.field == INTERNED_IID)  /* iid is field 1 of every entry */
				iid = g.v;
		if (j < 0)
			return damaged(r, "a malformed interned entry");
		if (r->nentries == r->capentries) {
			size_t cap = r->capentries ? 2 * r->capentries : 256;
			struct entry *ne = realloc(r->entries, cap * sizeof *ne);

			if (!ne)
				return fail(r, -ENOMEM, "out of memory");
			r->entries = ne;
			r->capentries = cap;
		}
		r->entries[r->nentries++] = (struct entry){ seq, f.field, iid, f.data, f.len,
							    KS_NONE };
	}
	return k < 0 ? damaged(r, "malformed interned data") : 0;
}

/* Checks a packet's fields and collects its descriptors and interned
 * data. */
static int pass1_packet(struct rd *r, const struct pbf *pkt)
{
	struct pbr m = sub(pkt);
	struct pbf f;
	uint32_t seq = 0;
	int k, rc;

	while ((k = pb_next(&m, &f)) > 0) {
		switch (f.field) {
		case PKT_TIMESTAMP: case PKT_SEQUENCE_FLAGS: case PKT_TRACK_EVENT:
		case PKT_PERF_SAMPLE: case PKT_INTERNED_DATA: case PKT_TRACK_DESCRIPTOR:
			break;
		case PKT_SEQUENCE_ID:
			seq = (uint32_t)f.v;
			break;
		default: {
			const char *name = packet_field_name(f.field);

			return fail(r, -EINVAL, "a Perfetto trace that kscope did not write: "
				    "packet %" PRIu64 " has TracePacket field %" PRIu32 "%s%s%s, "
				    "which kscope never writes; kscope view reads the Perfetto "
				    "traces of kscope sample and kscope merge (open others in "
				    "ui.perfetto.dev)", r->packets, f.field, name ? " (" : "",
				    name ? name : "", name ? ")" : "");
		}
		}
	}
	if (k < 0)
		return damaged(r, "malformed protobuf");
	m = sub(pkt);
	while (pb_next(&m, &f) > 0) {
		if ((f.field == PKT_TRACK_DESCRIPTOR || f.field == PKT_INTERNED_DATA ||
		     f.field == PKT_TRACK_EVENT || f.field == PKT_PERF_SAMPLE) && f.wire != 2)
			return damaged(r, "a message field that is not length-delimited");
		if (f.field == PKT_TRACK_DESCRIPTOR && (rc = add_track(r, &f)))
			return rc;
		if (f.field == PKT_INTERNED_DATA && (rc = add_interned(r, seq, &f)))
			return rc;
	}
	return 0;
}

/* After pass 1: tracks by uuid, each child track's thread and lane, the
 * timeline's process and thread names, the profile's processes and
 * threads. */
static int link_tracks(struct rd *r)
{
	char pid[24], tid[24];
	int rc;

	/* Lanes are numbered in the order their descriptors come, so number
	 * them before sorting. */
	for (size_t i = 0; i < r->ntracks; i++) {
		struct track *t = &r->tracks[i];

		if (t->kind == TR_OTHER && t->name_len == 7 && memcmp(t->name, "samples", 7) == 0)
			t->samples = true;
	}
	if (r->ntracks > 1)
		qsort(r->tracks, r->ntracks, sizeof *r->tracks, cmp_track);
	for (size_t i = 1; i < r->ntracks; i++)
		if (r->tracks[i].uuid == r->tracks[i - 1].uuid)
			return fail(r, -EINVAL, "not a valid trace: two track descriptors "
				    "have uuid %" PRIu64, r->tracks[i].uuid);
	for (size_t i = 0; i < r->ntracks; i++) {
		struct track *t = &r->tracks[i];

		if (t->kind == TR_THREAD) {
			t->thread = (uint32_t)i;
		} else if (t->kind == TR_OTHER) {
			struct track *par = t->parent ? track_find(r, t->parent) : NULL;

			if (par && par->kind == TR_THREAD)
				t->thread = (uint32_t)(par - r->tracks);
		}
	}
	/* The timeline's names, in the order the JSON trace gives them:
	 * every process, then every named thread. */
	for (size_t i = 0; i < r->ntracks; i++) {
		struct track *t = &r->tracks[i];
		struct ks_pprocess *pr;
		char *name;

		if (t->kind != TR_PROCESS)
			continue;
		snprintf(pid, sizeof pid, "%" PRId32, t->pid);
		if (!(name = dupn(t->name, t->name_len)))
			return fail(r, -ENOMEM, "out of memory");
		rc = kv_tl_process_name(r->tl, pid, name, t->rank);
		if (rc == 0) {
			pr = ks_profile_push(r->p, processes);
			if (!pr)
				rc = -ENOMEM;
			else {
				pr->pid = t->pid;
				pr->ppid = 0;
				pr->rank = -1;
				pr->command = ks_profile_intern(r->p, name);
				pr->start = t->start;
				pr->end = t->start;
				if (pr->command == KS_NONE)
					rc = -ENOMEM;
			}
		}
		free(name);
		if (rc < 0)
			return fail(r, rc, "%s", strerror(-rc));
	}
	for (size_t i = 0; i < r->ntracks; i++) {
		struct track *t = &r->tracks[i];
		char *name;

		if (t->kind != TR_THREAD)
			continue;
		snprintf(pid, sizeof pid, "%" PRId32, t->pid);
		snprintf(tid, sizeof tid, "%" PRId32, t->tid);
		if (!(name = dupn(t->name, t->name_len)))
			return fail(r, -ENOMEM, "out of memory");
		rc = t->name_len ? kv_tl_thread_name(r->tl, pid, tid, name, 0) : 0;
		if (rc == 0) {
			struct ks_pthread *th = ks_profile_push(r->p, threads);
			uint32_t proc = KS_NONE;

			for (size_t k = 0; k < r->p->n_processes && proc == KS_NONE; k++)
				if (r->p->processes[k].pid == t->pid)
					proc = (uint32_t)k;
			if (!th)
				rc = -ENOMEM;
			else if (proc == KS_NONE) {
				free(name);
				return fail(r, -EINVAL, "not a trace kscope wrote: thread %" PRId32
					    " belongs to process %" PRId32 ", which has no track",
					    t->tid, t->pid);
			} else {
				th->process = proc;
				th->tid = t->tid;
				th->name = ks_profile_intern(r->p, name);
				th->start = th->end = UINT64_MAX;
				t->pthread = (uint32_t)(r->p->n_threads - 1);
				if (th->name == KS_NONE)
					rc = -ENOMEM;
			}
		}
		free(name);
		if (rc < 0)
			return fail(r, rc, "%s", strerror(-rc));
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pass 2: events and samples                                          */
/* ------------------------------------------------------------------ */

static struct pslice *new_slice(struct rd *r)
{
	if (r->nslices == r->capslices) {
		size_t cap = r->capslices ? 2 * r->capslices : 256;
		struct pslice *ns = realloc(r->slices, cap * sizeof *ns);

		if (!ns)
			return NULL;
		r->slices = ns;
		r->capslices = cap;
	}
	memset(&r->slices[r->nslices], 0, sizeof r->slices[0]);
	return &r->slices[r->nslices++];
}

/* Appends to *args (a growing JSON object's text) "name":value. */
static int args_add(char **args, const char *name, const char *value)
{
	size_t n = *args ? strlen(*args) : 1;
	char *a = realloc(*args, n + strlen(name) + strlen(value) + 8);

	if (!a)
		return -ENOMEM;
	if (!*args)
		a[0] = '\0';
	else
		a[n - 1] = ',';  /* over the closing brace */
	sprintf(a + (*args ? n : 0), "%s\"%s\":%s}", *args ? "" : "{", name, value);
	*args = a;
	return 0;
}

/* Names in args are kscope's own ("bytes", "peer", "id"); anything that
 * would need escaping is left out. */
static bool plain_name(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\\' || (unsigned char)*s < 0x20)
			return false;
	return true;
}

static int track_event(struct rd *r, uint32_t seq, int64_t ts, const struct pbf *te)
{
	struct pbr m = sub(te);
	struct pbf f;
	uint64_t type = 0, track_uuid = 0, name_iid = 0, cat_iid = 0;
	const uint8_t *iname = NULL;
	size_t iname_len = 0;
	struct track *t;
	struct pslice *s;
	char *name = NULL, *cat = NULL, *args = NULL;
	bool has_track = false, bad;
	int k, rc = 0;

	while ((k = pb_next(&m, &f)) > 0) {
		if (f.field == TE_TYPE)
			type = f.v;
		else if (f.field == TE_TRACK_UUID) {
			track_uuid = f.v;
			has_track = true;
		} else if (f.field == TE_NAME_IID)
			name_iid = f.v;
		else if (f.field == TE_NAME && f.wire == 2) {
			iname = f.data;
			iname_len = f.len;
		} else if (f.field == TE_CATEGORY_IIDS && !cat_iid)
			cat_iid = f.v;
	}
	if (k < 0)
		return damaged(r, "a malformed track event");
	if (!has_track)
		return damaged(r, "a track event without a track (kscope always names one)");
	if (!(t = track_find(r, track_uuid)))
		return damaged(r, "a track event on a track no descriptor describes");
	if (t->kind == TR_COUNTER || t->kind == TR_PROCESS || t->samples ||
	    t->thread == UINT32_MAX)
		return 0;  /* counters, sample instants: not on the timeline */
	if (type == TYPE_SLICE_END) {
		/* The latest open slice of the track; an end without its
		 * begin is skipped, as the JSON reader skips it. */
		if (!t->nopen)
			return 0;
		s = &r->slices[t->open[--t->nopen]];
		s->open = false;
		if (ts < s->start)
			return damaged(r, "a slice ends before it begins");
		s->dur = (uint64_t)(ts - s->start);
		if (t->lane)
			s->key = r->events++;
		return 0;
	}
	if (type != TYPE_SLICE_BEGIN && type != TYPE_INSTANT)
		return 0;
	if (iname)
		name = dupn(iname, iname_len);
	else if (name_iid && !(name = interned_str(r, seq, ID_EVENT_NAMES, name_iid, &bad)) && bad)
		return damaged(r, "an event name that is not interned on its sequence");
	else if (!name_iid)
		name = strdup("");
	if (cat_iid && !(cat = interned_str(r, seq, ID_EVENT_CATEGORIES, cat_iid, &bad)) &&
	    bad) {
		free(name);
		return damaged(r, "an event category that is not interned on its sequence");
	}
	if (!name)
		goto nomem;
	/* Debug annotations, as the JSON trace's args. */
	m = sub(te);
	while (rc == 0 && pb_next(&m, &f) > 0) {
		struct pbr d;
		struct pbf g;
		char *an = NULL, val[32] = "";
		int j;

		if (f.field != TE_DEBUG_ANNOTATIONS || f.wire != 2)
			continue;
		d = sub(&f);
		while ((j = pb_next(&d, &g)) > 0) {
			if (g.field == DA_NAME_IID && !an) {
				an = interned_str(r, seq, ID_DEBUG_ANNOTATION_NAMES, g.v, &bad);
				if (!an && bad)
					rc = damaged(r, "an annotation name that is not interned");
			} else if (g.field == DA_NAME && g.wire == 2 && !an) {
				an = dupn(g.data, g.len);
			} else if (g.field == DA_UINT_VALUE) {
				snprintf(val, sizeof val, "%" PRIu64, g.v);
			} else if (g.field == DA_INT_VALUE) {
				snprintf(val, sizeof val, "%" PRId64, (int64_t)g.v);
			}
		}
		if (j < 0 && rc == 0)
			rc = damaged(r, "a malformed debug annotation");
		if (rc == 0 && an && val[0] && plain_name(an) && args_add(&args, an, val) < 0)
			rc = -ENOMEM;
		free(an);
	}
	if (rc == -ENOMEM)
		goto nomem;
	if (rc)
		goto out;
	if (type == TYPE_SLICE_BEGIN && t->nopen == t->capopen) {
		size_t cap = t->capopen ? 2 * t->capopen : 16;
		uint32_t *no = realloc(t->open, cap * sizeof *no);

		if (!no)
			goto nomem;
		t->open = no;
		t->capopen = cap;
	}
	if (r->nslices >= UINT32_MAX - 1 || !(s = new_slice(r)))
		goto nomem;
	s->track = (uint32_t)(t - r->tracks);
	s->name = name;
	s->cat = cat;
	s->args = args;
	s->start = ts;
	s->key = r->events++;
	s->open = type == TYPE_SLICE_BEGIN;
	if (s->open)
		t->open[t->nopen++] = (uint32_t)(r->nslices - 1);
	return 0;
nomem:
	rc = fail(r, -ENOMEM, "out of memory");
out:
	free(name);
	free(cat);
	free(args);
	return rc;
}

/* The profile frame of a Frame entry of seq; KS_NONE with the reason set. */
static uint32_t frame_of(struct rd *r, uint32_t seq, uint64_t iid)
{
	struct entry *e = entry_find(r, seq, ID_FRAMES, iid);
	struct ks_pframe fr = { .file = KS_NONE };
	uint64_t fn = 0, map = 0, src = 0;
	struct pbr m;
	struct pbf f;
	char *s = NULL;
	bool bad = false;
	int k;

	if (!e) {
		damaged(r, "a callstack names a frame that is not interned");
		return KS_NONE;
	}
	m = (struct pbr){ e->data, e->data + e->len };
	while ((k = pb_next(&m, &f)) > 0) {
		if (f.field == FRAME_FUNCTION_NAME_ID)
			fn = f.v;
		else if (f.field == FRAME_MAPPING_ID)
			map = f.v;
		else if (f.field == FRAME_REL_PC)
			fr.address = f.v;
		else if (f.field == FRAME_SOURCE_PATH_IID)
			src = f.v;
		else if (f.field == FRAME_LINE_NUMBER)
			fr.line = (uint32_t)f.v;
	}
	if (k < 0) {
		damaged(r, "a malformed frame");
		return KS_NONE;
	}
	/* Function name, source path, module: strings of the sequence. */
	s = fn ? interned_str(r, seq, ID_FUNCTION_NAMES, fn, &bad) : strdup("");
	if (!s)
		goto err;
	fr.function = ks_profile_intern(r->p, s);
	free(s);
	if (src) {
		if (!(s = interned_str(r, seq, ID_SOURCE_PATHS, src, &bad)))
			goto err;
		fr.file = ks_profile_intern(r->p, s);
		free(s);
	}
	s = NULL;
	if (map) {
		struct entry *me = entry_find(r, seq, ID_MAPPINGS, map);

		if (!me) {
			damaged(r, "a frame names a mapping that is not interned");
			return KS_NONE;
		}
		m = (struct pbr){ me->data, me->data + me->len };
		while ((k = pb_next(&m, &f)) > 0) {
			char *part, *joined;

			if (f.field != MAPPING_PATH_STRING_IDS)
				continue;
			if (!(part = interned_str(r, seq, ID_MAPPING_PATHS, f.v, &bad))) {
				free(s);
				goto err;
			}
			if (!s) {
				s = part;
				continue;
			}
			joined = malloc(strlen(s) + strlen(part) + 2);
			if (joined)
				sprintf(joined, "%s/%s", s, part);
			free(s);
			free(part);
			if (!(s = joined))
				goto err;
		}
		if (k < 0) {
			free(s);
			damaged(r, "a malformed mapping");
			return KS_NONE;
		}
	}
	fr.module = ks_profile_intern(r->p, s ? s : "[unknown]");
	free(s);
	if (fr.function == KS_NONE || fr.module == KS_NONE ||
	    (src && fr.file == KS_NONE))
		goto nomem;
	{
		uint32_t id = ks_profile_frame(r->p, &fr);

		if (id == KS_NONE)
			fail(r, -ENOMEM, "out of memory");
		return id;
	}
err:
	if (bad) {
		damaged(r, "a frame names a string that is not interned");
		return KS_NONE;
	}
nomem:
	fail(r, -ENOMEM, "out of memory");
	return KS_NONE;
}

/* The profile node of a Callstack entry of seq; KS_NONE with the reason
 * set.  Each entry is resolved once. */
static uint32_t node_of(struct rd *r, uint32_t seq, uint64_t iid)
{
	struct entry *e = entry_find(r, seq, ID_CALLSTACKS, iid);
	uint32_t node = KS_NONE;
	struct pbr m;
	struct pbf f;
	int k;

	if (!e) {
		damaged(r, "a sample names a callstack that is not interned");
		return KS_NONE;
	}
	if (e->node != KS_NONE)
		return e->node;
	m = (struct pbr){ e->data, e->data + e->len };
	while ((k = pb_next(&m, &f)) > 0) {
		uint32_t fr;

		if (f.field != CALLSTACK_FRAME_IDS || f.wire != 0)
			continue;
		if ((fr = frame_of(r, seq, f.v)) == KS_NONE)
			return KS_NONE;
		if ((node = ks_profile_node(r->p, node, fr)) == KS_NONE) {
			fail(r, -ENOMEM, "out of memory");
			return KS_NONE;
		}
	}
	if (k < 0) {
		damaged(r, "a malformed callstack");
		return KS_NONE;
	}
	if (node == KS_NONE) {
		damaged(r, "an empty callstack (kscope leaves a sample without one instead)");
		return KS_NONE;
	}
	e->node = node;
	return node;
}

static int perf_sample(struct rd *r, uint32_t seq, int64_t ts, const struct pbf *ps)
{
	struct pbr m = sub(ps);
	struct pbf f;
	uint64_t cs = 0;
	int32_t pid = 0, tid = 0;
	uint32_t thread = KS_NONE, node = KS_NONE;
	struct ks_psample *s;
	int k;

	while ((k = pb_next(&m, &f)) > 0) {
		if (f.field == PS_PID)
			pid = (int32_t)f.v;
		else if (f.field == PS_TID)
			tid = (int32_t)f.v;
		else if (f.field == PS_CALLSTACK_IID)
			cs = f.v;
	}
	if (k < 0)
		return damaged(r, "a malformed sample");
	for (size_t i = 0; i < r->p->n_threads && thread == KS_NONE; i++)
		if (r->p->threads[i].tid == tid &&
		    r->p->processes[r->p->threads[i].process].pid == pid)
			thread = (uint32_t)i;
	if (thread == KS_NONE)
		return fail(r, -EINVAL, "not a trace kscope wrote: packet %" PRIu64 " is a "
			    "sample of thread %" PRId32 " of process %" PRId32 ", which has "
			    "no track", r->packets, tid, pid);
	if (cs && (node = node_of(r, seq, cs)) == KS_NONE)
		return r->err && r->err->code ? r->err->code : -EINVAL;
	if (ts < 0)
		return damaged(r, "a sample before time 0");
	if (!(s = ks_profile_push(r->p, samples)))
		return fail(r, -ENOMEM, "out of memory");
	s->ts = (uint64_t)ts;
	s->thread = thread;
	s->node = node;
	s->counters = KS_NONE;
	r->p->threads[thread].samples++;
	if (r->p->threads[thread].start == UINT64_MAX || s->ts < r->p->threads[thread].start)
		r->p->threads[thread].start = s->ts;
	if (r->p->threads[thread].end == UINT64_MAX || s->ts > r->p->threads[thread].end)
		r->p->threads[thread].end = s->ts;
	return 0;
}

static int pass2_packet(struct rd *r, const struct pbf *pkt)
{
	struct pbr m = sub(pkt);
	struct pbf f;
	uint32_t seq = 0;
	uint64_t ts = 0;
	int rc = 0;

	while (pb_next(&m, &f) > 0) {
		if (f.field == PKT_SEQUENCE_ID)
			seq = (uint32_t)f.v;
		else if (f.field == PKT_TIMESTAMP)
			ts = f.v;
	}
	/* |times| up to 2^62 ns (146 years), as the JSON reader's limit. */
	if (ts > (1ull << 62))
		return damaged(r, "a timestamp past 2^62 ns");
	if ((int64_t)ts > r->last_ts)
		r->last_ts = (int64_t)ts;
	m = sub(pkt);
	while (rc == 0 && pb_next(&m, &f) > 0) {
		if (f.field == PKT_TRACK_EVENT)
			rc = track_event(r, seq, (int64_t)ts, &f);
		else if (f.field == PKT_PERF_SAMPLE)
			rc = perf_sample(r, seq, (int64_t)ts, &f);
	}
	return rc;
}

static int cmp_pslice(const void *a, const void *b)
{
	const struct pslice *x = a, *y = b;

	return (x->key > y->key) - (x->key < y->key);
}

/* The slices to the timeline, in the order the JSON reader adds them. */
static int flush_slices(struct rd *r)
{
	char pid[24], tid[48];

	for (size_t i = 0; i < r->nslices; i++) {
		struct pslice *s = &r->slices[i];
		const struct track *t = &r->tracks[s->track];
		const struct track *th = &r->tracks[t->thread];
		int rc;

		if (s->open) /* never ended: it ends with the trace, as "B" */
			s->dur = r->last_ts > s->start ? (uint64_t)(r->last_ts - s->start) : 0;
		snprintf(pid, sizeof pid, "%" PRId32, th->pid);
		if (t->lane)
			snprintf(tid, sizeof tid, "async:%" PRId32 ".%" PRIu32, th->tid, t->lane);
		else
			snprintf(tid, sizeof tid, "%" PRId32, th->tid);
		rc = kv_tl_slice(r->tl, pid, tid, s->name, s->cat && s->cat[0] ? s->cat : NULL,
				 NULL, s->start, s->dur, s->args, s->args ? strlen(s->args) : 0);
		if (rc < 0)
			return fail(r, rc, "%s", rc == -E2BIG ? "too many slices" :
				    strerror(-rc));
	}
	return 0;
}

/* Walks the Trace: fn on each packet. */
static int each_packet(struct rd *r, const uint8_t *data, size_t len,
		       int (*fn)(struct rd *, const struct pbf *))
{
	struct pbr m = { data, data + len };
	struct pbf f;
	int k, rc;

	r->packets = 0;
	while ((k = pb_next(&m, &f)) > 0) {
		if (f.field != TRACE_PACKET || f.wire != 2)
			return fail(r, -EINVAL, "not a Perfetto trace: at byte %zu, field %" PRIu32
				    " where a packet (field 1) was expected",
				    (size_t)(m.p - data), f.field);
		r->packets++;
		if ((rc = fn(r, &f)))
			return rc;
	}
	if (k < 0)
		return fail(r, -EINVAL, "not a Perfetto trace, or a damaged one: the "
			    "protobuf encoding breaks after packet %" PRIu64, r->packets);
	return 0;
}

int kv_perfetto_load(struct kv_timeline *tl, struct ks_profile *p, const void *data,
		     size_t len, const char *what, struct ks_err *err)
{
	struct rd r = { .what = what, .err = err, .tl = tl, .p = p };
	int rc;

	ks_err_clear(err);
	rc = each_packet(&r, data, len, pass1_packet);
	if (rc == 0 && r.packets == 0)
		rc = fail(&r, -EINVAL, "not a Perfetto trace: no packets");
	if (rc == 0) {
		if (r.nentries > 1)
			qsort(r.entries, r.nentries, sizeof *r.entries, cmp_entry);
		rc = link_tracks(&r);
	}
	if (rc == 0) {
		/* Lanes: a thread's child tracks other than "samples",
		 * numbered from 1 in the order of their descriptors. */
		uint32_t *next = calloc(r.ntracks + 1, sizeof *next);
		size_t *by_order = malloc((r.ntracks + 1) * sizeof *by_order);

		if (!next || !by_order)
			rc = fail(&r, -ENOMEM, "out of memory");
		for (size_t i = 0; next && by_order && i < r.ntracks; i++)
			by_order[r.tracks[i].order] = i;
		for (size_t k = 0; next && by_order && k < r.ntracks; k++) {
			struct track *t = &r.tracks[by_order[k]];

			if (t->kind == TR_OTHER && t->thread != UINT32_MAX && !t->samples)
				t->lane = ++next[t->thread];
		}
		free(next);
		free(by_order);
	}
	if (rc == 0)
		rc = each_packet(&r, data, len, pass2_packet);
	if (rc == 0) {
		if (r.nslices > 1)
			qsort(r.slices, r.nslices, sizeof *r.slices, cmp_pslice);
		rc = flush_slices(&r);
	}
	if (rc == 0 && p) {
		for (size_t i = 0; i < p->n_threads; i++) {
			struct ks_pthread *th = &p->threads[i];
			struct ks_pprocess *pr = &p->processes[th->process];

			if (th->start == UINT64_MAX)
				th->start = th->end = pr->start;
			if (th->end > pr->end)
				pr->end = th->end;
		}
	}
	for (size_t i = 0; i < r.nslices; i++) {
		free(r.slices[i].name);
		free(r.slices[i].cat);
		free(r.slices[i].args);
	}
	free(r.slices);
	for (size_t i = 0; i < r.ntracks; i++)
		free(r.tracks[i].open);
	free(r.tracks);
	free(r.entries);
	return rc;
}
