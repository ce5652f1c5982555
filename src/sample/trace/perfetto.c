/*
 * The Perfetto trace writer (trace.h): a profile as a protobuf `Trace`,
 * the format ui.perfetto.dev opens natively, with the TrackEvent protos
 * (a stable public API of Perfetto, see protos/perfetto/trace/ in the
 * Perfetto source).
 *
 * A Trace is a sequence of `repeated TracePacket packet = 1`, so the file
 * is streamed: each packet is encoded into one reusable buffer (pb.h) and
 * the buffer goes to the output file whenever it passes WBUF_FLUSH bytes.
 * Memory use is the timeline's indexes plus that buffer, whatever the
 * number of events.
 *
 * Layout of the file, in this order:
 *   per process, on the process's sequence: its track descriptor, then a
 *     counter track descriptor for "CPU %" and "RSS" if it has values;
 *   per thread, on the thread's sequence: its track descriptor, its
 *     slices as begin/end/instant events (with descriptors for any extra
 *     lanes, see trace_int.h, just before their first event), then a
 *     "samples" child track with one instant per sample (named after its
 *     innermost function), then one PerfSample packet per sample with its
 *     whole call stack;
 *   per process, on the process's sequence: its counter values.
 * Event names, categories and annotation names are interned per sequence:
 * an interning id is the profile's string id + 1 (so an id means the same
 * string on every sequence, as Perfetto requires), and an entry is sent
 * in the packet that first uses it on the sequence.  The first packet of
 * a sequence says SEQ_INCREMENTAL_STATE_CLEARED, the others
 * SEQ_NEEDS_INCREMENTAL_STATE.  Timestamps are the profile's nanoseconds,
 * on the default (boot-time) clock.
 *
 * Call stacks use Perfetto's profiling protos (profile_packet.proto,
 * profile_common.proto, interned_data.proto): a PerfSample (TracePacket
 * field 66) names its pid, tid and an interned Callstack, whose frame ids
 * (outermost first) name interned Frames, each with an interned function
 * name, source path and line, and an interned Mapping for its module
 * (path only: kscope keeps module-relative addresses, the frame's
 * rel_pc).  ui.perfetto.dev shows them as the thread's and the process's
 * "perf samples" track with a flame graph of any selection.  Ids follow
 * the rule above: a function name, source path or mapping (and its path)
 * is its string id + 1, a frame its frame id + 1, a callstack its
 * call-path node id + 1.  A sample without a call path has no callstack.
 */
#include "trace.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pb.h"
#include "trace_int.h"

#define WBUF_FLUSH (256 * 1024)

/* ------------------------------------------------------------------ */
/* Field numbers (protos/perfetto/trace/...)                           */
/* ------------------------------------------------------------------ */

enum {
	TRACE_PACKET = 1,              /* Trace.packet */

	PKT_TIMESTAMP = 8,             /* TracePacket */
	PKT_SEQUENCE_ID = 10,          /* trusted_packet_sequence_id */
	PKT_TRACK_EVENT = 11,
	PKT_INTERNED_DATA = 12,
	PKT_SEQUENCE_FLAGS = 13,
	PKT_TRACK_DESCRIPTOR = 60,
	PKT_PERF_SAMPLE = 66,

	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,

	TD_UUID = 1,                   /* TrackDescriptor */
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,
	TD_SIBLING_ORDER_RANK = 12,

	PD_PID = 1,                    /* ProcessDescriptor */
	PD_PROCESS_NAME = 6,
	PD_START_TIMESTAMP_NS = 7,

	THD_PID = 1,                   /* ThreadDescriptor */
	THD_TID = 2,
	THD_THREAD_NAME = 5,

	CD_UNIT = 3,                   /* CounterDescriptor */
	UNIT_SIZE_BYTES = 3,

	TE_CATEGORY_IIDS = 3,          /* TrackEvent */
	TE_DEBUG_ANNOTATIONS = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_TRACK_UUID = 11,
	TE_DOUBLE_COUNTER_VALUE = 44,

	TYPE_SLICE_BEGIN = 1,          /* TrackEvent.Type */
	TYPE_SLICE_END = 2,
	TYPE_INSTANT = 3,
	TYPE_COUNTER = 4,

	DA_NAME_IID = 1,               /* DebugAnnotation */
	DA_UINT_VALUE = 3,
	DA_INT_VALUE = 4,

	ID_EVENT_CATEGORIES = 1,       /* InternedData */
	ID_EVENT_NAMES = 2,
	ID_DEBUG_ANNOTATION_NAMES = 3,
	INTERNED_IID = 1,              /* EventName, EventCategory, ... */
	INTERNED_NAME = 2,             /* also InternedString.str */

	ID_FUNCTION_NAMES = 5,         /* InternedData (profiling) */
	ID_FRAMES = 6,
	ID_CALLSTACKS = 7,
	ID_MAPPING_PATHS = 17,
	ID_SOURCE_PATHS = 18,
	ID_MAPPINGS = 19,

	FRAME_IID = 1,                 /* Frame */
	FRAME_FUNCTION_NAME_ID = 2,
	FRAME_MAPPING_ID = 3,
	FRAME_REL_PC = 4,
	FRAME_SOURCE_PATH_IID = 5,
	FRAME_LINE_NUMBER = 6,

	MAPPING_IID = 1,               /* Mapping */
	MAPPING_PATH_STRING_IDS = 7,

	CALLSTACK_IID = 1,             /* Callstack */
	CALLSTACK_FRAME_IDS = 2,

	PS_PID = 2,                    /* PerfSample */
	PS_TID = 3,
	PS_CALLSTACK_IID = 4,
};

/* Categories: slice kinds 0..4, unknown kinds, samples, calls (kind 5,
 * kscope instrument).  iid = index + 1. */
static const char *const cat_names[] = {
	"region", "range", "mpi", "mark", "pause", "slice", "sample", "call",
};
#define N_CATS (sizeof(cat_names) / sizeof(cat_names[0]))
#define CAT_SAMPLE 6
#define CAT_CALL 7

/* Debug annotation names.  iid = index + 1. */
enum { ANN_BYTES, ANN_PEER, ANN_ID, N_ANNS };
static const char *const ann_names[] = { "bytes", "peer", "id" };

struct pf {
	const struct ks_profile *p;
	const struct ks_timeline *tl;
	struct ks_outfile *of;
	struct ks_pb out;          /* packets not yet written to of */
	int werr;                  /* first write error */

	bool *seq_started;         /* per sequence id: a packet was sent */
	uint32_t *name_seq;        /* per name iid: the last sequence it was
				    * interned on (0: none) */
	uint32_t cat_seq[N_CATS], ann_seq[N_ANNS];
	uint32_t unknown_iid;      /* iid of "[unknown]" (not a profile string) */
	/* Per id of the profiling interned data: the last sequence it was
	 * sent on (0: none). */
	uint32_t *fn_seq;          /* per string: function_names */
	uint32_t *src_seq;         /* per string: source_paths */
	uint32_t *map_seq;         /* per string: mappings and mapping_paths */
	uint32_t *frame_seq;       /* per frame: frames */
	uint32_t *cs_seq;          /* per node: callstacks */
	uint32_t *path;            /* a call path, innermost first */
	size_t cap_path;

	uint64_t next_uuid;        /* next free track uuid for lanes and samples */
	uint32_t thread;           /* the thread being written */
	uint64_t *lane_uuid;       /* its lanes' track uuids; [0] = its track */
	size_t n_lanes, cap_lanes;
};

/* ------------------------------------------------------------------ */
/* Ids                                                                 */
/* ------------------------------------------------------------------ */

static uint64_t process_uuid(const struct pf *pf, uint32_t i)
{
	(void)pf;
	return 1 + (uint64_t)i;
}

static uint64_t thread_uuid(const struct pf *pf, uint32_t t)
{
	return 1 + pf->p->n_processes + (uint64_t)t;
}

static uint64_t counter_uuid(const struct pf *pf, uint32_t i, uint32_t kind)
{
	return 1 + pf->p->n_processes + pf->p->n_threads + 2 * (uint64_t)i +
	       (kind == KS_PCOUNTER_RSS);
}

static uint32_t thread_seq(const struct pf *pf, uint32_t t)
{
	(void)pf;
	return 1 + t;
}

static uint32_t process_seq(const struct pf *pf, uint32_t i)
{
	return 1 + (uint32_t)pf->p->n_threads + i;
}

/* ------------------------------------------------------------------ */
/* Packets                                                             */
/* ------------------------------------------------------------------ */

/* Writes s as a string field, made valid UTF-8 first if need be. */
static void put_text(struct pf *pf, uint32_t field, const char *s)
{
	char *fixed;

	if (ks_utf8_valid(s, strlen(s))) {
		ks_pb_string(&pf->out, field, s);
		return;
	}
	fixed = ks_utf8_fix(s, strlen(s), NULL);
	if (!fixed) {
		pf->out.error = -ENOMEM;
		return;
	}
	ks_pb_string(&pf->out, field, fixed);
	free(fixed);
}

/* Starts a TracePacket on sequence seq; with_ts: it has a timestamp. */
static size_t packet_begin(struct pf *pf, uint32_t seq, bool with_ts, uint64_t ts)
{
	size_t mark = ks_pb_begin(&pf->out, TRACE_PACKET);

	if (with_ts)
		ks_pb_uint(&pf->out, PKT_TIMESTAMP, ts);
	ks_pb_uint(&pf->out, PKT_SEQUENCE_ID, seq);
	ks_pb_uint(&pf->out, PKT_SEQUENCE_FLAGS, pf->seq_started[seq] ?
		   SEQ_NEEDS_INCREMENTAL_STATE : SEQ_INCREMENTAL_STATE_CLEARED);
	pf->seq_started[seq] = true;
	return mark;
}

static int flush(struct pf *pf)
{
	if (pf->out.error)
		return pf->out.error;
	if (pf->out.len && !pf->werr)
		pf->werr = ks_outfile_write(pf->of, pf->out.buf, pf->out.len);
	pf->out.len = 0;
	return pf->werr;
}

static int packet_end(struct pf *pf, size_t mark)
{
	ks_pb_end(&pf->out, mark);
	if (pf->out.error)
		return pf->out.error;
	return pf->out.len >= WBUF_FLUSH ? flush(pf) : pf->werr;
}

/* One interned entry {iid, name} in field of InternedData. */
static void interned(struct pf *pf, uint32_t field, uint64_t iid, const char *name)
{
	size_t m = ks_pb_begin(&pf->out, field);

	ks_pb_uint(&pf->out, INTERNED_IID, iid);
	put_text(pf, INTERNED_NAME, name);
	ks_pb_end(&pf->out, m);
}

/* Sends, in the packet being written on seq, the interned data that an
 * event with name iid name_iid (0: none), category cat (N_CATS: none)
 * and the annotations in ann_mask needs and seq has not had yet.  name is
 * only read if the name is new on seq. */
static void intern(struct pf *pf, uint32_t seq, uint32_t name_iid,
		   const char *name, size_t cat, unsigned ann_mask)
{
	bool new_name = name_iid && pf->name_seq[name_iid] != seq;
	bool new_cat = cat < N_CATS && pf->cat_seq[cat] != seq;
	unsigned new_anns = 0;
	size_t m;

	for (unsigned a = 0; a < N_ANNS; a++)
		if ((ann_mask & (1u << a)) && pf->ann_seq[a] != seq)
			new_anns |= 1u << a;
	if (!new_name && !new_cat && !new_anns)
		return;
	m = ks_pb_begin(&pf->out, PKT_INTERNED_DATA);
	if (new_cat) {
		interned(pf, ID_EVENT_CATEGORIES, cat + 1, cat_names[cat]);
		pf->cat_seq[cat] = seq;
	}
	if (new_name) {
		interned(pf, ID_EVENT_NAMES, name_iid, name);
		pf->name_seq[name_iid] = seq;
	}
	for (unsigned a = 0; a < N_ANNS; a++)
		if (new_anns & (1u << a)) {
			interned(pf, ID_DEBUG_ANNOTATION_NAMES, a + 1, ann_names[a]);
			pf->ann_seq[a] = seq;
		}
	ks_pb_end(&pf->out, m);
}

static void annotation_uint(struct pf *pf, unsigned ann, uint64_t v)
{
	size_t m = ks_pb_begin(&pf->out, TE_DEBUG_ANNOTATIONS);

	ks_pb_uint(&pf->out, DA_NAME_IID, ann + 1);
	ks_pb_uint(&pf->out, DA_UINT_VALUE, v);
	ks_pb_end(&pf->out, m);
}

static void annotation_int(struct pf *pf, unsigned ann, int64_t v)
{
	size_t m = ks_pb_begin(&pf->out, TE_DEBUG_ANNOTATIONS);

	ks_pb_uint(&pf->out, DA_NAME_IID, ann + 1);
	ks_pb_int(&pf->out, DA_INT_VALUE, v);
	ks_pb_end(&pf->out, m);
}

/* ------------------------------------------------------------------ */
/* Track descriptors                                                   */
/* ------------------------------------------------------------------ */

static int process_descriptors(struct pf *pf, uint32_t i)
{
	const struct ks_pprocess *pr = &pf->p->processes[i];
	uint32_t seq = process_seq(pf, i);
	char *name = ks_timeline_process_name(pf->tl, i);
	size_t m, td, pd;
	int rc;

	if (!name)
		return -ENOMEM;
	m = packet_begin(pf, seq, false, 0);
	td = ks_pb_begin(&pf->out, PKT_TRACK_DESCRIPTOR);
	ks_pb_uint(&pf->out, TD_UUID, process_uuid(pf, i));
	/* MPI ranks in rank order, as the JSON trace's process_sort_index. */
	if (pr->rank >= 0)
		ks_pb_int(&pf->out, TD_SIBLING_ORDER_RANK, pr->rank);
	pd = ks_pb_begin(&pf->out, TD_PROCESS);
	ks_pb_int(&pf->out, PD_PID, pf->tl->pid[i]);
	put_text(pf, PD_PROCESS_NAME, name);
	ks_pb_int(&pf->out, PD_START_TIMESTAMP_NS, (int64_t)pr->start);
	ks_pb_end(&pf->out, pd);
	ks_pb_end(&pf->out, td);
	free(name);
	rc = packet_end(pf, m);

	for (uint32_t kind = KS_PCOUNTER_RSS; !rc && kind <= KS_PCOUNTER_CPU_PCT; kind++) {
		size_t cd;

		if (!(pf->tl->counter_kinds[i] & (1u << kind)))
			continue;
		m = packet_begin(pf, seq, false, 0);
		td = ks_pb_begin(&pf->out, PKT_TRACK_DESCRIPTOR);
		ks_pb_uint(&pf->out, TD_UUID, counter_uuid(pf, i, kind));
		ks_pb_uint(&pf->out, TD_PARENT_UUID, process_uuid(pf, i));
		ks_pb_string(&pf->out, TD_NAME, kind == KS_PCOUNTER_RSS ? "RSS" : "CPU %");
		/* An empty CounterDescriptor still makes a counter track. */
		cd = ks_pb_begin(&pf->out, TD_COUNTER);
		if (kind == KS_PCOUNTER_RSS)
			ks_pb_uint(&pf->out, CD_UNIT, UNIT_SIZE_BYTES);
		ks_pb_end(&pf->out, cd);
		ks_pb_end(&pf->out, td);
		rc = packet_end(pf, m);
	}
	return rc;
}

static int thread_descriptor(struct pf *pf, uint32_t t)
{
	const struct ks_pthread *th = &pf->p->threads[t];
	const char *name = ks_profile_str(pf->p, th->name);
	size_t m = packet_begin(pf, thread_seq(pf, t), false, 0);
	size_t td = ks_pb_begin(&pf->out, PKT_TRACK_DESCRIPTOR), d;

	ks_pb_uint(&pf->out, TD_UUID, thread_uuid(pf, t));
	ks_pb_uint(&pf->out, TD_PARENT_UUID, process_uuid(pf, th->process));
	d = ks_pb_begin(&pf->out, TD_THREAD);
	ks_pb_int(&pf->out, THD_PID, pf->tl->pid[th->process]);
	ks_pb_int(&pf->out, THD_TID, th->tid);
	if (name[0])
		put_text(pf, THD_THREAD_NAME, name);
	ks_pb_end(&pf->out, d);
	ks_pb_end(&pf->out, td);
	return packet_end(pf, m);
}

/* A track under the current thread's track (an extra lane, or samples). */
static int child_track(struct pf *pf, uint64_t uuid, const char *name)
{
	size_t m = packet_begin(pf, thread_seq(pf, pf->thread), false, 0);
	size_t td = ks_pb_begin(&pf->out, PKT_TRACK_DESCRIPTOR);

	ks_pb_uint(&pf->out, TD_UUID, uuid);
	ks_pb_uint(&pf->out, TD_PARENT_UUID, thread_uuid(pf, pf->thread));
	ks_pb_string(&pf->out, TD_NAME, name);
	ks_pb_end(&pf->out, td);
	return packet_end(pf, m);
}

/* ------------------------------------------------------------------ */
/* Events                                                              */
/* ------------------------------------------------------------------ */

/* The track of a lane of the current thread, announcing it if new. */
static int lane_track(struct pf *pf, const struct ks_tl_event *ev, uint64_t *uuid)
{
	char name[64];
	int rc;

	if (ev->lane < pf->n_lanes) {
		*uuid = pf->lane_uuid[ev->lane];
		return 0;
	}
	/* Lanes appear in order (trace_int.h). */
	assert(ev->lane == pf->n_lanes);
	if (pf->n_lanes == pf->cap_lanes) {
		size_t cap = pf->cap_lanes ? pf->cap_lanes * 2 : 8;
		uint64_t *u = realloc(pf->lane_uuid, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		pf->lane_uuid = u;
		pf->cap_lanes = cap;
	}
	if (ev->lane == 0) {
		*uuid = thread_uuid(pf, pf->thread);
	} else {
		*uuid = pf->next_uuid++;
		if (ev->family == KS_TL_RANGE && ev->index == 0)
			snprintf(name, sizeof(name), "ranges");
		else if (ev->family == KS_TL_RANGE)
			snprintf(name, sizeof(name), "ranges %u", ev->index + 1);
		else
			snprintf(name, sizeof(name), "overlapping slices %u", ev->index);
		rc = child_track(pf, *uuid, name);
		if (rc)
			return rc;
	}
	pf->lane_uuid[pf->n_lanes++] = *uuid;
	return 0;
}

static int slice_event(void *ctx, const struct ks_tl_event *ev)
{
	struct pf *pf = ctx;
	const struct ks_pslice *s = &pf->p->slices[ev->slice];
	uint32_t seq = thread_seq(pf, pf->thread);
	size_t cat = s->kind <= KS_SLICE_PAUSE ? s->kind
		     : s->kind == KS_SLICE_CALL ? CAT_CALL : 5;
	unsigned anns = 0;
	uint64_t track;
	size_t m, te;
	int rc = lane_track(pf, ev, &track);

	if (rc)
		return rc;
	m = packet_begin(pf, seq, true, ev->ts);
	if (ev->type == KS_TL_END) {
		te = ks_pb_begin(&pf->out, PKT_TRACK_EVENT);
		ks_pb_uint(&pf->out, TE_TYPE, TYPE_SLICE_END);
		ks_pb_uint(&pf->out, TE_TRACK_UUID, track);
		ks_pb_end(&pf->out, te);
		return packet_end(pf, m);
	}
	if (s->kind == KS_SLICE_MPI)
		anns = 1u << ANN_BYTES | 1u << ANN_PEER;
	else if (s->kind == KS_SLICE_RANGE)
		anns = 1u << ANN_ID;
	intern(pf, seq, s->name + 1, ks_profile_str(pf->p, s->name), cat, anns);
	te = ks_pb_begin(&pf->out, PKT_TRACK_EVENT);
	ks_pb_uint(&pf->out, TE_CATEGORY_IIDS, cat + 1);
	ks_pb_uint(&pf->out, TE_NAME_IID, s->name + 1);
	ks_pb_uint(&pf->out, TE_TYPE, ev->type == KS_TL_BEGIN ? TYPE_SLICE_BEGIN
			   : TYPE_INSTANT);
	ks_pb_uint(&pf->out, TE_TRACK_UUID, track);
	if (s->kind == KS_SLICE_MPI) {
		annotation_uint(pf, ANN_BYTES, s->bytes);
		annotation_int(pf, ANN_PEER, s->peer);
	} else if (s->kind == KS_SLICE_RANGE) {
		annotation_uint(pf, ANN_ID, s->id);
	}
	ks_pb_end(&pf->out, te);
	return packet_end(pf, m);
}

/* The name iid of a sample: its function's, or that of "[unknown]" when
 * ks_timeline_sample_name() falls back to it. */
static uint32_t sample_iid(const struct pf *pf, const struct ks_psample *s)
{
	const struct ks_profile *p = pf->p;
	uint32_t fn;

	if (s->node >= p->n_nodes)
		return pf->unknown_iid;
	fn = p->frames[p->nodes[s->node].frame].function;
	return ks_profile_str(p, fn)[0] ? fn + 1 : pf->unknown_iid;
}

static int sample_events(struct pf *pf, uint32_t t)
{
	const struct ks_timeline *tl = pf->tl;
	uint32_t seq = thread_seq(pf, t);
	uint64_t track;
	int rc;

	if (tl->sample_off[t] == tl->sample_off[t + 1])
		return 0;
	track = pf->next_uuid++;
	rc = child_track(pf, track, "samples");
	for (size_t i = tl->sample_off[t]; !rc && i < tl->sample_off[t + 1]; i++) {
		const struct ks_psample *s = &pf->p->samples[tl->samples[i]];
		uint32_t iid = sample_iid(pf, s);
		/* The name is only looked up when it must be interned. */
		const char *name = pf->name_seq[iid] == seq ? NULL :
				   ks_timeline_sample_name(pf->p, s);
		size_t m, te;

		m = packet_begin(pf, seq, true, s->ts);
		intern(pf, seq, iid, name, CAT_SAMPLE, 0);
		te = ks_pb_begin(&pf->out, PKT_TRACK_EVENT);
		ks_pb_uint(&pf->out, TE_CATEGORY_IIDS, CAT_SAMPLE + 1);
		ks_pb_uint(&pf->out, TE_NAME_IID, iid);
		ks_pb_uint(&pf->out, TE_TYPE, TYPE_INSTANT);
		ks_pb_uint(&pf->out, TE_TRACK_UUID, track);
		ks_pb_end(&pf->out, te);
		rc = packet_end(pf, m);
	}
	return rc;
}

/* An InternedString {iid, str} in field of InternedData. */
static void interned_string(struct pf *pf, uint32_t field, uint64_t iid, const char *s)
{
	size_t m = ks_pb_begin(&pf->out, field);

	ks_pb_uint(&pf->out, INTERNED_IID, iid);
	put_text(pf, INTERNED_NAME, s);
	ks_pb_end(&pf->out, m);
}

/* Sends, in the packet being written on seq, the frame f and what it
 * names (function name, source path, mapping) unless seq has them. */
static void intern_frame(struct pf *pf, uint32_t seq, uint32_t f)
{
	const struct ks_pframe *fr = &pf->p->frames[f];
	size_t m;

	if (pf->frame_seq[f] == seq)
		return;
	pf->frame_seq[f] = seq;
	if (pf->fn_seq[fr->function] != seq) {
		pf->fn_seq[fr->function] = seq;
		interned_string(pf, ID_FUNCTION_NAMES, fr->function + 1ull,
				ks_profile_str(pf->p, fr->function));
	}
	if (fr->file != KS_NONE && pf->src_seq[fr->file] != seq) {
		pf->src_seq[fr->file] = seq;
		interned_string(pf, ID_SOURCE_PATHS, fr->file + 1ull,
				ks_profile_str(pf->p, fr->file));
	}
	if (pf->map_seq[fr->module] != seq) {
		pf->map_seq[fr->module] = seq;
		interned_string(pf, ID_MAPPING_PATHS, fr->module + 1ull,
				ks_profile_str(pf->p, fr->module));
		m = ks_pb_begin(&pf->out, ID_MAPPINGS);
		ks_pb_uint(&pf->out, MAPPING_IID, fr->module + 1ull);
		ks_pb_uint(&pf->out, MAPPING_PATH_STRING_IDS, fr->module + 1ull);
		ks_pb_end(&pf->out, m);
	}
	m = ks_pb_begin(&pf->out, ID_FRAMES);
	ks_pb_uint(&pf->out, FRAME_IID, f + 1ull);
	ks_pb_uint(&pf->out, FRAME_FUNCTION_NAME_ID, fr->function + 1ull);
	ks_pb_uint(&pf->out, FRAME_MAPPING_ID, fr->module + 1ull);
	/* rel_pc must be there whenever mapping_id is. */
	ks_pb_uint(&pf->out, FRAME_REL_PC, fr->address);
	if (fr->file != KS_NONE)
		ks_pb_uint(&pf->out, FRAME_SOURCE_PATH_IID, fr->file + 1ull);
	if (fr->line)
		ks_pb_uint(&pf->out, FRAME_LINE_NUMBER, fr->line);
	ks_pb_end(&pf->out, m);
}

/* Sends, in the packet being written on seq, the callstack of node and
 * the frames it needs, unless seq has them.  -EINVAL for a call path
 * that loops or leaves the node array (a damaged profile). */
static int intern_callstack(struct pf *pf, uint32_t seq, uint32_t node)
{
	const struct ks_profile *p = pf->p;
	size_t n = 0, m, cs;

	if (pf->cs_seq[node] == seq)
		return 0;
	for (uint32_t x = node; x != KS_NONE; x = p->nodes[x].parent) {
		if (x >= p->n_nodes || n >= p->n_nodes)
			return -EINVAL;
		if (n == pf->cap_path) {
			size_t cap = pf->cap_path ? 2 * pf->cap_path : 256;
			uint32_t *np = realloc(pf->path, cap * sizeof(*np));

			if (!np)
				return -ENOMEM;
			pf->path = np;
			pf->cap_path = cap;
		}
		pf->path[n++] = x;
	}
	pf->cs_seq[node] = seq;
	m = ks_pb_begin(&pf->out, PKT_INTERNED_DATA);
	for (size_t i = 0; i < n; i++)
		intern_frame(pf, seq, p->nodes[pf->path[i]].frame);
	cs = ks_pb_begin(&pf->out, ID_CALLSTACKS);
	ks_pb_uint(&pf->out, CALLSTACK_IID, node + 1ull);
	/* Outermost frame first ("bottom frame first"). */
	for (size_t i = n; i-- > 0;)
		ks_pb_uint(&pf->out, CALLSTACK_FRAME_IDS, p->nodes[pf->path[i]].frame + 1ull);
	ks_pb_end(&pf->out, cs);
	ks_pb_end(&pf->out, m);
	return 0;
}

/* One PerfSample packet per sample of thread t, in time order. */
static int perf_samples(struct pf *pf, uint32_t t)
{
	const struct ks_timeline *tl = pf->tl;
	const struct ks_pthread *th = &pf->p->threads[t];
	uint32_t seq = thread_seq(pf, t);
	int rc = 0;

	for (size_t i = tl->sample_off[t]; !rc && i < tl->sample_off[t + 1]; i++) {
		const struct ks_psample *s = &pf->p->samples[tl->samples[i]];
		size_t m = packet_begin(pf, seq, true, s->ts), ps;

		if (s->node != KS_NONE && (rc = intern_callstack(pf, seq, s->node)))
			break;
		ps = ks_pb_begin(&pf->out, PKT_PERF_SAMPLE);
		/* uint32 on the wire: a pid or tid is never negative. */
		ks_pb_uint(&pf->out, PS_PID, (uint32_t)pf->tl->pid[th->process]);
		ks_pb_uint(&pf->out, PS_TID, (uint32_t)th->tid);
		if (s->node != KS_NONE)
			ks_pb_uint(&pf->out, PS_CALLSTACK_IID, s->node + 1ull);
		ks_pb_end(&pf->out, ps);
		rc = packet_end(pf, m);
	}
	return rc;
}

static int counter_events(struct pf *pf, uint32_t i)
{
	const struct ks_timeline *tl = pf->tl;
	uint32_t seq = process_seq(pf, i);
	int rc = 0;

	for (size_t k = tl->counter_off[i]; !rc && k < tl->counter_off[i + 1]; k++) {
		const struct ks_pcounter *c = &pf->p->counters[tl->counters[k]];
		size_t m = packet_begin(pf, seq, true, c->ts);
		size_t te = ks_pb_begin(&pf->out, PKT_TRACK_EVENT);

		ks_pb_uint(&pf->out, TE_TYPE, TYPE_COUNTER);
		ks_pb_uint(&pf->out, TE_TRACK_UUID, counter_uuid(pf, i, c->kind));
		ks_pb_double(&pf->out, TE_DOUBLE_COUNTER_VALUE, c->value);
		ks_pb_end(&pf->out, te);
		rc = packet_end(pf, m);
	}
	return rc;
}

/* ------------------------------------------------------------------ */
/* The writer                                                          */
/* ------------------------------------------------------------------ */

int ks_trace_write_perfetto(const struct ks_profile *p, struct ks_outfile *of,
			    struct ks_err *err)
{
	struct ks_timeline tl;
	struct pf pf = { .p = p, .tl = &tl, .of = of };
	size_t n_seq = p->n_threads + p->n_processes + 1;
	int rc = ks_timeline_init(&tl, p, err);

	if (rc)
		return rc;
	pf.seq_started = calloc(n_seq, sizeof(*pf.seq_started));
	pf.name_seq = calloc(p->n_strings + 2, sizeof(*pf.name_seq));
	pf.fn_seq = calloc(p->n_strings + 1, sizeof(*pf.fn_seq));
	pf.src_seq = calloc(p->n_strings + 1, sizeof(*pf.src_seq));
	pf.map_seq = calloc(p->n_strings + 1, sizeof(*pf.map_seq));
	pf.frame_seq = calloc(p->n_frames + 1, sizeof(*pf.frame_seq));
	pf.cs_seq = calloc(p->n_nodes + 1, sizeof(*pf.cs_seq));
	if (!pf.seq_started || !pf.name_seq || !pf.fn_seq || !pf.src_seq ||
	    !pf.map_seq || !pf.frame_seq || !pf.cs_seq) {
		rc = -ENOMEM;
		goto out;
	}
	pf.unknown_iid = (uint32_t)p->n_strings + 1;
	pf.next_uuid = counter_uuid(&pf, (uint32_t)p->n_processes, 0);

	for (uint32_t i = 0; !rc && i < p->n_processes; i++)
		rc = process_descriptors(&pf, i);
	for (uint32_t t = 0; !rc && t < p->n_threads; t++) {
		pf.thread = t;
		pf.n_lanes = 0;
		rc = thread_descriptor(&pf, t);
		if (!rc)
			rc = ks_timeline_walk(&tl, t, slice_event, &pf);
		if (!rc)
			rc = sample_events(&pf, t);
		if (!rc)
			rc = perf_samples(&pf, t);
	}
	for (uint32_t i = 0; !rc && i < p->n_processes; i++)
		rc = counter_events(&pf, i);
	if (!rc)
		rc = flush(&pf);
out:
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory while writing '%s'", of->name);
	else if (rc == -EINVAL)
		ks_err_set(err, rc, "cannot write '%s': a call path of the profile "
			   "loops or names a node that does not exist", of->name);
	else if (rc)
		ks_err_set(err, rc, "cannot write '%s': %s", of->name, strerror(-rc));
	ks_pb_free(&pf.out);
	free(pf.seq_started);
	free(pf.name_seq);
	free(pf.fn_seq);
	free(pf.src_seq);
	free(pf.map_seq);
	free(pf.frame_seq);
	free(pf.cs_seq);
	free(pf.path);
	free(pf.lane_uuid);
	ks_timeline_free(&tl);
	return rc;
}
