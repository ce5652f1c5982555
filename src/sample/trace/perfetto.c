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
 *     "samples" child track with one instant per sample;
 *   per process, on the process's sequence: its counter values.
 * Event names, categories and annotation names are interned per sequence:
 * an interning id is the profile's string id + 1 (so an id means the same
 * string on every sequence, as Perfetto requires), and an entry is sent
 * in the packet that first uses it on the sequence.  The first packet of
 * a sequence says SEQ_INCREMENTAL_STATE_CLEARED, the others
 * SEQ_NEEDS_INCREMENTAL_STATE.  Timestamps are the profile's nanoseconds,
 * on the default (boot-time) clock.
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

	SEQ_INCREMENTAL_STATE_CLEARED = 1,
	SEQ_NEEDS_INCREMENTAL_STATE = 2,

	TD_UUID = 1,                   /* TrackDescriptor */
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_PARENT_UUID = 5,
	TD_COUNTER = 8,

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
	INTERNED_NAME = 2,
};

/* Categories: slice kinds 0..4, unknown kinds, samples.  iid = index + 1. */
static const char *const cat_names[] = {
	"region", "range", "mpi", "mark", "pause", "slice", "sample",
};
#define N_CATS (sizeof(cat_names) / sizeof(cat_names[0]))
#define CAT_SAMPLE 6

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
	size_t cat = s->kind <= KS_SLICE_PAUSE ? s->kind : 5;
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
	if (!pf.seq_started || !pf.name_seq) {
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
	}
	for (uint32_t i = 0; !rc && i < p->n_processes; i++)
		rc = counter_events(&pf, i);
	if (!rc)
		rc = flush(&pf);
out:
	if (rc == -ENOMEM)
		ks_err_set(err, rc, "out of memory while writing '%s'", of->name);
	else if (rc)
		ks_err_set(err, rc, "cannot write '%s': %s", of->name, strerror(-rc));
	ks_pb_free(&pf.out);
	free(pf.seq_started);
	free(pf.name_seq);
	free(pf.lane_uuid);
	ks_timeline_free(&tl);
	return rc;
}
