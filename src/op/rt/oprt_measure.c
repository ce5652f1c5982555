/*
 * One measurement (kernel replay, range replay, or application replay's
 * run 0) as it is being made, and its measure.json (opraw.h).  Times are
 * from the runtime's profiling events; START times are kept so that
 * trace.json can lay the passes out as they ran, relative to the first
 * warm-up (or the first pass when there is none).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oprt_int.h"

int ks_oprt_measure_init(struct ks_oprt_measure *m, const char *mode, unsigned warmup,
			 unsigned passes, bool flush)
{
	memset(m, 0, sizeof(*m));
	m->mode = mode;
	m->warmup = warmup;
	m->passes = passes;
	m->flush = flush;
	m->pass_ns = calloc(passes + 1, sizeof(uint64_t));
	m->pass_start = calloc(passes + 1, sizeof(uint64_t));
	m->warm_ns = calloc(warmup + 1, sizeof(uint64_t));
	m->warm_start = calloc(warmup + 1, sizeof(uint64_t));
	m->ctr_values = calloc((size_t)(passes + 1) * KS_OPRT_NCOUNTERS, sizeof(uint64_t));
	if (!m->pass_ns || !m->pass_start || !m->warm_ns || !m->warm_start || !m->ctr_values) {
		ks_oprt_measure_fini(m);
		return -ENOMEM;
	}
	return 0;
}

void ks_oprt_measure_fini(struct ks_oprt_measure *m)
{
	free(m->pass_ns);
	free(m->pass_start);
	free(m->warm_ns);
	free(m->warm_start);
	free(m->ctr_values);
	m->pass_ns = m->pass_start = m->warm_ns = m->warm_start = m->ctr_values = NULL;
	ks_oprt_counters_close(&m->ctr);
}

static void u64_array(struct ks_oprt_json *j, const char *key, const uint64_t *v, unsigned n,
		      uint64_t base)
{
	ks_oprt_json_arr_open(j, key);
	for (unsigned i = 0; i < n; i++)
		ks_oprt_json_u64(j, NULL, v[i] >= base ? v[i] - base : 0);
	ks_oprt_json_arr_close(j);
}

void ks_oprt_measure_json(const struct ks_oprt_measure *m, struct ks_oprt_json *j)
{
	uint64_t base = m->nwarm ? m->warm_start[0] : m->npass ? m->pass_start[0] : 0;

	ks_oprt_json_obj_open(j, NULL);
	ks_oprt_json_str(j, "mode", m->mode);
	ks_oprt_json_str(j, "status", m->failed ? "failed" : "ok");
	if (m->failed)
		ks_oprt_json_str(j, "error", m->error);
	ks_oprt_json_u64(j, "warmup", m->warmup);
	ks_oprt_json_u64(j, "passes", m->passes);
	ks_oprt_json_bool(j, "flush", m->flush);
	ks_oprt_json_u64(j, "flush_bytes", m->flush_bytes);
	if (m->have_original)
		ks_oprt_json_u64(j, "original_ns", m->original_ns);
	else
		ks_oprt_json_null(j, "original_ns");
	u64_array(j, "pass_ns", m->pass_ns, m->npass, 0);
	u64_array(j, "pass_queued_ns", m->pass_start, m->npass, base);
	u64_array(j, "warmup_ns", m->warm_ns, m->nwarm, 0);
	/* Not in opraw.h: the warm-ups' START times on the same timeline. */
	u64_array(j, "warmup_queued_ns", m->warm_start, m->nwarm, base);
	ks_oprt_json_u64(j, "replay_wall_ns", m->replay_wall_ns);
	ks_oprt_json_u64(j, "backup_bytes", m->backup_bytes);
	ks_oprt_json_arr_open(j, "buffers");
	for (size_t i = 0; i < m->nbufs; i++) {
		const struct ks_oprt_buf *b = &m->bufs[i];

		ks_oprt_json_obj_open(j, NULL);
		if (m->range)
			ks_oprt_json_u64(j, "launch", b->launch);
		if (b->not_arg) {
			char hex[24];

			snprintf(hex, sizeof(hex), "0x%" PRIx64, b->base);
			ks_oprt_json_null(j, "arg");
			ks_oprt_json_str(j, "base", hex);
		} else {
			ks_oprt_json_u64(j, "arg", b->arg);
		}
		ks_oprt_json_u64(j, "bytes", b->bytes);
		ks_oprt_json_bool(j, "backed_up", b->backed_up);
		ks_oprt_json_bool(j, "may_read", b->may_read);
		ks_oprt_json_bool(j, "may_write", b->may_write);
		if (b->not_arg)
			ks_oprt_json_null(j, "bytes_read");
		else
			ks_oprt_json_u64(j, "bytes_read", b->bytes_read);
		if (b->written_known || !b->may_write)
			ks_oprt_json_u64(j, "bytes_written", b->bytes_written);
		else
			ks_oprt_json_null(j, "bytes_written");
		ks_oprt_json_str(j, "read_basis", b->read_basis);
		ks_oprt_json_str(j, "write_basis", b->write_basis);
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_arr_close(j);
	ks_oprt_json_obj_open(j, "counters");
	ks_oprt_json_bool(j, "supported", m->ctr.supported);
	if (!m->ctr.supported) {
		ks_oprt_json_str(j, "reason", m->ctr.reason);
	} else {
		ks_oprt_json_arr_open(j, "per_pass");
		for (unsigned p = 0; p < m->npass; p++) {
			ks_oprt_json_obj_open(j, NULL);
			for (int i = 0; i < KS_OPRT_NCOUNTERS; i++)
				ks_oprt_json_u64(j, ks_oprt_counter_names[i],
						 m->ctr_values[p * KS_OPRT_NCOUNTERS + i]);
			ks_oprt_json_obj_close(j);
		}
		ks_oprt_json_arr_close(j);
	}
	ks_oprt_json_obj_close(j);
	if (m->hw.tried) {
		ks_oprt_json_obj_open(j, "hardware");
		ks_oprt_json_bool(j, "supported", m->hw.have);
		if (m->hw.have) {
			ks_oprt_json_str(j, "source", m->hw.source);
			ks_oprt_json_obj_open(j, "metrics");
			for (size_t i = 0; i < m->hw.n; i++)
				ks_oprt_json_num(j, m->hw.names[i], m->hw.values[i]);
			ks_oprt_json_obj_close(j);
		} else {
			ks_oprt_json_str(j, "reason", m->hw.why);
		}
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_obj_close(j);
}
