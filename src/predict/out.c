/*
 * kscope predict's outputs (docs/predict.md, "Outputs"): trace.json (and
 * the same document as visualize_data.bin's 0x02 block), the pipe and
 * instruction statistics, the instruction-time pie chart.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kscope/vizbin.h"
#include "pred_int.h"
#include "textout.h"

/* ------------------------------------------------------------------ */
/* Times                                                               */
/* ------------------------------------------------------------------ */

static double us_of(const struct ks_pred_model *m, double cycles)
{
	return cycles / m->chip.clock_hz * 1e6;
}

/* ------------------------------------------------------------------ */
/* trace.json                                                          */
/* ------------------------------------------------------------------ */

/*
 * A trace of a million slices is a few hundred megabytes, written from
 * many small pieces.  They are put together in a line buffer by inline
 * code and handed to the ks_text writer a line at a time.
 */
#define LB_SIZE 8192

struct lb {
	struct ks_text *t;
	char *p;
	char buf[LB_SIZE];
};

static void lb_flush(struct lb *b)
{
	ks_text_put(b->t, b->buf, (size_t)(b->p - b->buf));
	b->p = b->buf;
}

static inline void lb_put(struct lb *b, const char *s, size_t n)
{
	if (n > LB_SIZE / 2) {
		lb_flush(b);
		ks_text_put(b->t, s, n);
		return;
	}
	if ((size_t)(b->buf + LB_SIZE - b->p) < n + 64)
		lb_flush(b);
	memcpy(b->p, s, n);
	b->p += n;
}

/* A string literal, its length known at compile time. */
#define LIT(b, s) lb_put((b), "" s, sizeof(s) - 1)

static inline void lb_puts(struct lb *b, const char *s)
{
	lb_put(b, s, strlen(s));
}

static inline void lb_u64(struct lb *b, uint64_t v)
{
	char tmp[24], *q = tmp + sizeof(tmp);

	do {
		*--q = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	lb_put(b, q, (size_t)(tmp + sizeof(tmp) - q));
}

/* Microseconds with up to 6 decimals (picoseconds), trailing zeros
 * dropped. */
static inline void lb_us(struct lb *b, double us)
{
	char tmp[40], *q = tmp + sizeof(tmp);
	long long ps;
	int i;

	if (!isfinite(us) || us < 0 || us > 9e12) {
		lb_flush(b);
		ks_text_json_num(b->t, us, 6);
		return;
	}
	ps = llround(us * 1e6);
	for (i = 0; i < 6 && ps % 10 == 0; i++)
		ps /= 10;
	if (i < 6) {
		for (; i < 6; i++) {
			*--q = (char)('0' + ps % 10);
			ps /= 10;
		}
		*--q = '.';
	}
	do {
		*--q = (char)('0' + ps % 10);
		ps /= 10;
	} while (ps);
	lb_put(b, q, (size_t)(tmp + sizeof(tmp) - q));
}

/* A JSON string; the common case, nothing to escape, without the
 * character-by-character path. */
static void lb_json_str(struct lb *b, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	for (; *p; p++)
		if (*p < 0x20 || *p >= 0x80 || *p == '"' || *p == '\\') {
			lb_flush(b);
			ks_text_json_str(b->t, s);
			return;
		}
	lb_put(b, "\"", 1);
	lb_put(b, s, (size_t)(p - (const unsigned char *)s));
	lb_put(b, "\"", 1);
}

/* The location without its directories: "model.kpp:12:5". */
static const char *short_loc(const char *loc)
{
	const char *colon = strchr(loc, ':'), *slash = NULL;

	for (const char *p = loc; *p && (!colon || p < colon); p++)
		if (*p == '/')
			slash = p;
	return slash ? slash + 1 : loc;
}

static void operand_list(struct lb *b, const struct ks_pred_model *m, uint32_t first,
			 unsigned n)
{
	LIT(b, "\"");
	for (unsigned k = 0; k < n; k++) {
		if (k)
			LIT(b, ", ");
		/* names are [A-Za-z0-9_.-] and [i]: nothing to escape */
		lb_puts(b, pred_tensor_name(m, m->operands[first + k]));
	}
	LIT(b, "\"");
}

static void trace_doc(const struct ks_pred_model *m, struct ks_text *t)
{
	struct lb *b = malloc(sizeof(*b));
	uint64_t flow = 0;

	if (!b) {
		t->error = t->error ? t->error : -ENOMEM;
		return;
	}
	b->t = t;
	b->p = b->buf;

	LIT(b, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,"
			"\"tid\":0,\"args\":{\"name\":");
	{
		char name[200];

		snprintf(name, sizeof(name), "kscope predict (%s)", m->chip.name);
		lb_json_str(b, name);
	}
	LIT(b, "}}");
	for (size_t p = 0; p < m->chip.npipes; p++) {
		LIT(b, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":");
		lb_u64(b, p + 1);
		LIT(b, ",\"args\":{\"name\":");
		lb_json_str(b, m->chip.pipes[p]);
		LIT(b, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,"
				"\"tid\":");
		lb_u64(b, p + 1);
		LIT(b, ",\"args\":{\"sort_index\":");
		lb_u64(b, p + 1);
		LIT(b, "}}");
	}
	for (size_t i = 0; i < m->ni; i++) {
		const struct pred_instr *in = &m->in[i];

		LIT(b, ",\n{\"name\":\"");
		lb_puts(b, pred_op_name(m, in->op));
		LIT(b, "\",\"ph\":\"X\",\"pid\":1,\"tid\":");
		lb_u64(b, (uint64_t)in->pipe + 1);
		LIT(b, ",\"ts\":");
		lb_us(b, us_of(m, in->start));
		LIT(b, ",\"dur\":");
		lb_us(b, us_of(m, in->end - in->start));
		LIT(b, ",\"args\":{\"id\":");
		lb_u64(b, i);
		LIT(b, ",\"inputs\":");
		operand_list(b, m, in->operand, in->nin);
		LIT(b, ",\"outputs\":");
		operand_list(b, m, in->operand + in->nin, in->nout);
		LIT(b, ",\"bytes\":");
		lb_u64(b, (uint64_t)in->bytes);
		LIT(b, ",\"ops\":");
		lb_u64(b, (uint64_t)in->ops);
		if (in->loc >= 0) {
			LIT(b, ",\"location\":");
			lb_json_str(b, short_loc(pred_str(m, in->loc)));
		}
		LIT(b, "}}");
		/* The flow arrows: from each instruction waited for (deps.c:
		 * at most one per pipe) when it ran on another pipe (on the
		 * same pipe, the order says it), named by the tensor, or
		 * "flag" for a set_flag. */
		for (uint32_t k = m->dstart[i]; k < m->dstart[i + 1]; k++) {
			int32_t d = m->dep[k].id;

			if (d < 0 || m->in[d].pipe == in->pipe)
				continue;
			flow++;
			LIT(b, ",\n{\"name\":\"");
			lb_puts(b, m->dep[k].kind == DEP_FLAG ? "flag" :
				pred_tensor_name(m, m->dep[k].what));
			LIT(b, "\",\"cat\":\"dep\",\"ph\":\"s\",\"id\":");
			lb_u64(b, flow);
			LIT(b, ",\"pid\":1,\"tid\":");
			lb_u64(b, (uint64_t)m->in[d].pipe + 1);
			LIT(b, ",\"ts\":");
			lb_us(b, us_of(m, m->in[d].start));
			LIT(b, "},\n{\"name\":\"");
			lb_puts(b, m->dep[k].kind == DEP_FLAG ? "flag" :
				pred_tensor_name(m, m->dep[k].what));
			LIT(b, "\",\"cat\":\"dep\",\"ph\":\"f\",\"bp\":\"e\",\"id\":");
			lb_u64(b, flow);
			LIT(b, ",\"pid\":1,\"tid\":");
			lb_u64(b, (uint64_t)in->pipe + 1);
			LIT(b, ",\"ts\":");
			lb_us(b, us_of(m, in->start));
			LIT(b, "}");
		}
	}
	LIT(b, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{\"tool\":\"kscope "
			"predict\",\"chip\":");
	lb_json_str(b, m->chip.name);
	LIT(b, ",\"clock_hz\":");
	lb_flush(b);
	ks_text_json_num(t, m->chip.clock_hz, 0);
	LIT(b, ",\"instructions\":");
	lb_u64(b, m->ni);
	LIT(b, ",\"total_cycles\":");
	lb_flush(b);
	ks_text_json_num(t, m->total, 3);
	LIT(b, ",\"total_us\":");
	lb_us(b, us_of(m, m->total));
	LIT(b, "}}\n");
	lb_flush(b);
	free(b);
}

/* Writes to the trace file and to the open 0x02 block at once. */
struct tee {
	struct ks_outfile *of;
	struct ks_vb_writer *w;
	struct ks_vb_error verr;
};

static int tee_sink(void *ctx, const void *buf, size_t len)
{
	struct tee *t = ctx;
	int rc = ks_outfile_write(t->of, buf, len);

	if (rc)
		return rc;
	return ks_vb_append(t->w, buf, len, &t->verr);
}

static int write_trace(struct ks_pred_model *m, struct ks_rundir *rd, struct ks_err *err)
{
	struct ks_outfile tf, vf;
	struct tee tee = { 0 };
	struct ks_text t;
	int rc;

	rc = ks_outfile_open(rd, "trace.json", &tf, err);
	if (rc)
		return rc;
	rc = ks_outfile_open(rd, "visualize_data.bin", &vf, err);
	if (rc) {
		ks_outfile_abort(&tf);
		return rc;
	}
	tee.of = &tf;
	rc = ks_vb_writer_open(vf.fd, &tee.w, &tee.verr);
	if (!rc)
		rc = ks_vb_begin(tee.w, KS_VB_TRACE, KS_VB_VERSION, NULL, &tee.verr);
	if (rc) {
		ks_err_set(err, rc, "visualize_data.bin: %s", tee.verr.msg);
		goto fail;
	}
	rc = ks_text_open(&t, tee_sink, &tee);
	if (rc) {
		ks_err_set(err, rc, "out of memory");
		goto fail;
	}
	trace_doc(m, &t);
	rc = ks_text_close(&t);
	if (!rc)
		rc = ks_vb_end(tee.w, &tee.verr);
	if (rc) {
		if (tf.error)
			ks_err_set(err, rc, "trace.json: %s", strerror(-rc));
		else
			ks_err_set(err, rc, "visualize_data.bin: %s", tee.verr.msg);
		goto fail;
	}
	ks_vb_writer_free(tee.w);
	tee.w = NULL;
	rc = ks_outfile_commit(&tf, KS_DELIVERABLE_MODE, err);
	if (rc) {
		ks_outfile_abort(&vf);
		return rc;
	}
	return ks_outfile_commit(&vf, KS_DELIVERABLE_MODE, err);
fail:
	ks_vb_writer_free(tee.w);
	ks_outfile_abort(&tf);
	ks_outfile_abort(&vf);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Statistics                                                          */
/* ------------------------------------------------------------------ */

struct group {
	int32_t op;
	int pipe;
	int src, dst;          /* a load's spaces, else -1 */
	uint64_t count;
	double bytes, ops, cycles;
};

struct pipe_stat {
	uint64_t count;
	double bytes, ops, cycles;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->cycles != y->cycles)
		return x->cycles > y->cycles ? -1 : 1;
	if (x->op != y->op)
		return x->op < y->op ? -1 : 1;
	if (x->pipe != y->pipe)
		return x->pipe - y->pipe;
	return x->src != y->src ? x->src - y->src : x->dst - y->dst;
}

/* Groups by (instruction name, pipe), loads also by their source and
 * destination spaces (UB to GM and UB to L1 may share a pipe, and are
 * different transfers), largest total first. */
static struct group *groups_of(const struct ks_pred_model *m, struct pipe_stat *ps,
			       size_t *ng, double *all_cycles)
{
	size_t nops = m->chip.ninstr + OP_CHIP, np = m->chip.npipes, n = 0;
	size_t ns = m->chip.nspaces ? m->chip.nspaces : 1, nall = nops * np + np * ns * ns;
	struct group *g = calloc(nall, sizeof(*g)), *out;

	if (!g)
		return NULL;
	*all_cycles = 0;
	for (size_t i = 0; i < m->ni; i++) {
		const struct pred_instr *in = &m->in[i];
		struct group *e;
		double c = in->end - in->start;
		int src = -1, dst = -1;

		if (in->op == OP_LOAD && in->nin == 1 && in->nout == 1) {
			src = m->t[m->operands[in->operand]].space;
			dst = m->t[m->operands[in->operand + 1]].space;
		}
		if (src >= 0 && dst >= 0 && (size_t)src < ns && (size_t)dst < ns)
			e = &g[nops * np + ((size_t)in->pipe * ns + (size_t)src) * ns + (size_t)dst];
		else
			e = &g[(size_t)in->op * np + (size_t)in->pipe], src = dst = -1;
		e->op = in->op;
		e->pipe = in->pipe;
		e->src = src;
		e->dst = dst;
		e->count++;
		e->bytes += in->bytes;
		e->ops += in->ops;
		e->cycles += c;
		ps[in->pipe].count++;
		ps[in->pipe].bytes += in->bytes;
		ps[in->pipe].ops += in->ops;
		ps[in->pipe].cycles += c;
		*all_cycles += c;
	}
	out = g;
	for (size_t i = 0; i < nall; i++)
		if (g[i].count)
			out[n++] = g[i];
	qsort(out, n, sizeof(*out), group_cmp);
	*ng = n;
	return out;
}

static int write_pipe_csv(const struct ks_pred_model *m, struct ks_rundir *rd,
			  const struct pipe_stat *ps, const struct pred_measured *meas,
			  struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = ks_outfile_open(rd, "Pipe_statistic.csv", &of, err);

	if (rc)
		return rc;
	rc = ks_text_open_outfile(&t, &of);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "out of memory");
	}
	/* An instruction's bytes are all its operands': a load's are read
	 * and written, twice the tensor's size. */
	ks_text_puts(&t, "Pipe,Instructions,Busy (us),Share (%),Bytes (read + written),"
			 "Operations");
	if (meas)
		ks_text_puts(&t, ",Measured (us),Measured/Predicted");
	ks_csv_end(&t);
	for (size_t p = 0; p <= m->chip.npipes; p++) {
		bool total = p == m->chip.npipes;
		const char *name = total ? "total" : m->chip.pipes[p];
		double us = us_of(m, total ? m->total : ps[p].cycles), mus = -1;

		ks_csv_str(&t, true, name);
		ks_csv_u64(&t, total ? m->ni : ps[p].count);
		ks_csv_num(&t, us, 6);
		ks_csv_num(&t, m->total > 0 ? 100.0 * (total ? m->total : ps[p].cycles) /
						      m->total : 0, 2);
		if (total) {
			double b = 0, o = 0;

			for (size_t q = 0; q < m->chip.npipes; q++) {
				b += ps[q].bytes;
				o += ps[q].ops;
			}
			ks_csv_num(&t, b, 0);
			ks_csv_num(&t, o, 0);
		} else {
			ks_csv_num(&t, ps[p].bytes, 0);
			ks_csv_num(&t, ps[p].ops, 0);
		}
		if (meas) {
			if (total)
				mus = meas->total_us;
			for (size_t j = 0; !total && j < meas->n; j++)
				if (strcasecmp(meas->name[j], name) == 0)
					mus = meas->us[j];
			ks_csv_num(&t, mus >= 0 ? mus : NAN, 6);
			ks_csv_num(&t, mus >= 0 && us > 0 ? mus / us : NAN, 4);
		}
		ks_csv_end(&t);
	}
	rc = ks_text_close(&t);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "Pipe_statistic.csv: %s", strerror(-rc));
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

/* A group's name: the instruction's, and a load's spaces ("load UB->GM"). */
static const char *group_name(const struct ks_pred_model *m, const struct group *g,
			      char *buf, size_t size)
{
	if (g->src < 0)
		return pred_op_name(m, g->op);
	snprintf(buf, size, "%s %s->%s", pred_op_name(m, g->op), m->chip.spaces[g->src].name,
		 m->chip.spaces[g->dst].name);
	return buf;
}

static int write_instr_csv(const struct ks_pred_model *m, struct ks_rundir *rd,
			   const struct group *g, size_t ng, double all, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	int rc = ks_outfile_open(rd, "Instruction_statistic.csv", &of, err);

	if (rc)
		return rc;
	rc = ks_text_open_outfile(&t, &of);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "out of memory");
	}
	ks_text_puts(&t, "Instruction,Pipe,Count,Bytes (read + written),Operations,Total (us),"
			 "Mean (us),Share (%)");
	ks_csv_end(&t);
	for (size_t i = 0; i < ng; i++) {
		char name[2 * KS_PRED_MAX_NAME + 64];

		ks_csv_str(&t, true, group_name(m, &g[i], name, sizeof(name)));
		ks_csv_str(&t, false, m->chip.pipes[g[i].pipe]);
		ks_csv_u64(&t, g[i].count);
		ks_csv_num(&t, g[i].bytes, 0);
		ks_csv_num(&t, g[i].ops, 0);
		ks_csv_num(&t, us_of(m, g[i].cycles), 6);
		ks_csv_num(&t, us_of(m, g[i].cycles / (double)g[i].count), 6);
		ks_csv_num(&t, all > 0 ? 100.0 * g[i].cycles / all : 0, 2);
		ks_csv_end(&t);
	}
	rc = ks_text_close(&t);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "Instruction_statistic.csv: %s", strerror(-rc));
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

/* ------------------------------------------------------------------ */
/* The pie chart                                                       */
/* ------------------------------------------------------------------ */

#define PIE_MAX 12  /* slices; the rest are "other" */

static const char *const pie_colors[PIE_MAX + 1] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
	"#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#8cd17d", "#86bcb6", "#d3d3d3",
};

static int write_pie(const struct ks_pred_model *m, struct ks_rundir *rd,
		     const struct group *g, size_t ng, double all, struct ks_err *err)
{
	struct ks_outfile of;
	struct ks_text t;
	const double cx = 200, cy = 210, r = 160;
	size_t n = ng > PIE_MAX ? PIE_MAX : ng;
	double angle = -M_PI / 2, other = 0;
	int rc = ks_outfile_open(rd, "instruction_time.svg", &of, err);

	if (rc)
		return rc;
	rc = ks_text_open_outfile(&t, &of);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "out of memory");
	}
	for (size_t i = n; i < ng; i++)
		other += g[i].cycles;
	ks_text_printf(&t, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"720\" "
			   "height=\"%d\" font-family=\"sans-serif\" font-size=\"13\">\n"
			   "<title>Instruction time: %s</title>\n"
			   "<text x=\"10\" y=\"24\" font-size=\"16\">Instruction time "
			   "(%.3f us in all; predicted %.3f us on %s)</text>\n",
			   (int)(60 + 22 * (n + 1) > 420 ? 60 + 22 * (n + 1) : 420),
			   m->chip.name, us_of(m, all), us_of(m, m->total), m->chip.name);
	if (all <= 0)
		ks_text_puts(&t, "<text x=\"10\" y=\"60\">no instruction took time</text>\n");
	for (size_t i = 0; i <= n && all > 0; i++) {
		double c = i < n ? g[i].cycles : other, frac = c / all, a2;
		char label[2 * KS_PRED_MAX_NAME + 160], name[2 * KS_PRED_MAX_NAME + 64];

		if (i == n && other <= 0)
			break;
		if (i < n)
			snprintf(label, sizeof(label), "%s (%s)",
				 group_name(m, &g[i], name, sizeof(name)), m->chip.pipes[g[i].pipe]);
		else
			snprintf(label, sizeof(label), "other (%zu kinds)", ng - n);
		a2 = angle + 2 * M_PI * frac;
		if (frac >= 0.999999)
			ks_text_printf(&t, "<circle cx=\"%.0f\" cy=\"%.0f\" r=\"%.0f\" fill=\"%s\"/>\n",
				       cx, cy, r, pie_colors[i]);
		else if (frac > 0)
			ks_text_printf(&t, "<path d=\"M%.2f,%.2f L%.2f,%.2f A%.0f,%.0f 0 %d 1 "
					   "%.2f,%.2f Z\" fill=\"%s\" stroke=\"white\"/>\n",
				       cx, cy, cx + r * cos(angle), cy + r * sin(angle), r, r,
				       frac > 0.5 ? 1 : 0, cx + r * cos(a2), cy + r * sin(a2),
				       pie_colors[i]);
		angle = a2;
		ks_text_printf(&t, "<rect x=\"400\" y=\"%zu\" width=\"14\" height=\"14\" "
				   "fill=\"%s\"/>\n<text x=\"420\" y=\"%zu\">",
			       50 + 22 * i, pie_colors[i], 62 + 22 * i);
		ks_text_puts(&t, label);
		ks_text_printf(&t, ": %.1f%%</text>\n", 100 * frac);
	}
	ks_text_puts(&t, "</svg>\n");
	rc = ks_text_close(&t);
	if (rc) {
		ks_outfile_abort(&of);
		return ks_err_set(err, rc, "instruction_time.svg: %s", strerror(-rc));
	}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

/* ------------------------------------------------------------------ */

int pred_write_rundir(struct ks_pred_model *m, struct ks_rundir *rd, const char *measured,
		      struct ks_err *err)
{
	struct pipe_stat ps[PRED_MAX_PIPES];
	struct pred_measured *meas = NULL;
	struct group *g;
	size_t ng = 0;
	double all = 0;
	int rc;

	if (measured) {
		meas = calloc(1, sizeof(*meas));
		if (!meas)
			return ks_err_set(err, -ENOMEM, "out of memory");
		rc = pred_measured_load(measured, meas, err);
		if (!rc)
			rc = pred_measured_check(&m->chip, meas, err);
		if (rc) {
			free(meas);
			return rc;
		}
	}
	memset(ps, 0, sizeof(ps));
	g = groups_of(m, ps, &ng, &all);
	if (!g) {
		free(meas);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	rc = 0;
	if (!(m->outputs_off & KS_PRED_OUT_TRACE))
		rc = write_trace(m, rd, err);
	if (!rc && !(m->outputs_off & KS_PRED_OUT_METRICS)) {
		rc = write_pipe_csv(m, rd, ps, meas, err);
		if (!rc)
			rc = write_instr_csv(m, rd, g, ng, all, err);
		if (!rc)
			rc = write_pie(m, rd, g, ng, all, err);
	}
	free(g);
	free(meas);
	return rc;
}
