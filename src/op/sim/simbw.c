/*
 * The bandwidth deliverables of kscope op --simulate, the transfer
 * bandwidth chart of the MindStudio design with the simulated cache
 * hierarchy's paths in place of GM <-> L1/UB:
 *
 *   bandwidth.csv  long format, one row per thread, bucket and path:
 *                  Thread, Start (us), End (us), Path, Read Bytes,
 *                  Write Bytes, Read GB/s, Write GB/s.  A bucket is the
 *                  tool's interval of simulated cycles, [START, END);
 *                  buckets in which nothing moved are left out.
 *   bandwidth.svg  a line chart of the same, read + write summed over the
 *                  threads: simulated time across, GB/s up, one line per
 *                  path.  Self-contained (no script, no external font) so
 *                  that any browser shows it.
 *
 * Paths, by boundary: 0 "<L0> -> registers" (bytes loaded and stored by
 * the instructions), k "<Lk> -> <Lk-1>", the last "memory -> <last>".
 * GB/s is bytes / the bucket's seconds at the simulated clock / 1e9.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simpost_int.h"

/* Steps of the chart at most (each a horizontal segment, two points). */
#define SIM_BW_STEPS 1000

/* ------------------------------------------------------------------ */
/* bandwidth.csv                                                       */
/* ------------------------------------------------------------------ */

struct bkey {
	uint32_t tid, bi;
	uint64_t bucket;
};

static int bkey_cmp(const void *pa, const void *pb)
{
	const struct bkey *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->bucket != b->bucket)
		return a->bucket < b->bucket ? -1 : 1;
	return a->bi < b->bi ? -1 : a->bi > b->bi;
}

static int write_csv(struct ks_rundir *run, const struct sim *s, struct ks_err *err)
{
	struct bkey *k = malloc((s->nbw ? s->nbw : 1) * sizeof(*k));
	uint64_t *sum = malloc(BW(s) * sizeof(*sum));
	double secs = (double)s->interval / s->clock_hz;
	struct ks_outfile of;
	struct ks_text t;
	int rc;

	if (!k || !sum) {
		free(k);
		free(sum);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nbw; i++) {
		k[i].tid = s->threads[s->bw[i].th].tid;
		k[i].bucket = s->bw[i].bucket;
		k[i].bi = (uint32_t)i;
	}
	qsort(k, s->nbw, sizeof(*k), bkey_cmp);
	rc = sim_open(run, "bandwidth.csv", &of, &t, err);
	if (rc) {
		free(k);
		free(sum);
		return rc;
	}
	ks_text_puts(&t, "Thread,Start (us),End (us),Path,Read Bytes,Write Bytes,"
		     "Read GB/s,Write GB/s\n");
	for (size_t i = 0; i < s->nbw;) {
		size_t j = i;

		/* A bucket the tool wrote twice is summed. */
		memset(sum, 0, BW(s) * sizeof(*sum));
		for (; j < s->nbw && k[j].tid == k[i].tid && k[j].bucket == k[i].bucket; j++)
			for (size_t f = 0; f < BW(s); f++)
				sum[f] += sim_bwv(s, k[j].bi)[f];
		for (unsigned p = 0; p <= s->levels; p++) {
			char path[64];

			sim_path_name(s, p, path, sizeof(path));
			ks_text_u64(&t, k[i].tid);
			ks_csv_num(&t, sim_us(s, (double)k[i].bucket * (double)s->interval), 6);
			ks_csv_num(&t, sim_us(s, ((double)k[i].bucket + 1) * (double)s->interval),
				   6);
			ks_csv_str(&t, false, path);
			ks_csv_u64(&t, sum[2 * p]);
			ks_csv_u64(&t, sum[2 * p + 1]);
			ks_csv_num(&t, (double)sum[2 * p] / secs / 1e9, 6);
			ks_csv_num(&t, (double)sum[2 * p + 1] / secs / 1e9, 6);
			ks_csv_end(&t);
		}
		i = j;
	}
	free(k);
	free(sum);
	return sim_commit(&of, &t, err);
}

/* ------------------------------------------------------------------ */
/* bandwidth.svg                                                       */
/* ------------------------------------------------------------------ */

#define W 960
#define PLOT_L 80
#define PLOT_R (W - 30)
#define PLOT_T 50
#define PLOT_B 420

static const char *const colors[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
};

/* Text for an SVG text node or attribute. */
static void xml(struct ks_text *t, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': ks_text_puts(t, "&amp;"); break;
		case '<': ks_text_puts(t, "&lt;"); break;
		case '>': ks_text_puts(t, "&gt;"); break;
		case '"': ks_text_puts(t, "&quot;"); break;
		default: ks_text_put(t, s, 1); break;
		}
}

/* A round step (1, 2 or 5 times a power of ten) giving about n ticks
 * over [0, max]. */
static double tick_step(double max, int n)
{
	double raw = max / n, mag = pow(10, floor(log10(raw))), f = raw / mag;

	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void axes(struct ks_text *t, double xmax, double ymax)
{
	double xs = tick_step(xmax, 8), ys = tick_step(ymax, 6);

	ks_text_printf(t, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		       "fill=\"none\" stroke=\"#444\"/>\n", PLOT_L, PLOT_T,
		       PLOT_R - PLOT_L, PLOT_B - PLOT_T);
	for (int i = 0; i * xs <= xmax * (1 + 1e-9); i++) {
		double x = PLOT_L + i * xs / xmax * (PLOT_R - PLOT_L);

		ks_text_printf(t, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			       "stroke=\"#444\"/><text x=\"%.1f\" y=\"%d\" "
			       "text-anchor=\"middle\">%g</text>\n", x, PLOT_B, x, PLOT_B + 5,
			       x, PLOT_B + 20, i * xs);
	}
	for (int i = 0; i * ys <= ymax * (1 + 1e-9); i++) {
		double y = PLOT_B - i * ys / ymax * (PLOT_B - PLOT_T);

		ks_text_printf(t, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			       "stroke=\"#ddd\"/><text x=\"%d\" y=\"%.1f\" "
			       "text-anchor=\"end\">%g</text>\n", PLOT_L, y, PLOT_R, y,
			       PLOT_L - 6, y + 4, i * ys);
	}
	ks_text_printf(t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">simulated time "
		       "(us)</text>\n", (PLOT_L + PLOT_R) / 2, PLOT_B + 42);
	ks_text_printf(t, "<text x=\"20\" y=\"%d\" text-anchor=\"middle\" "
		       "transform=\"rotate(-90 20 %d)\">GB/s (read + write, all "
		       "threads)</text>\n", (PLOT_T + PLOT_B) / 2, (PLOT_T + PLOT_B) / 2);
}

static int write_svg(struct ks_rundir *run, const struct sim *s, struct ks_err *err)
{
	unsigned npaths = s->levels + 1;
	uint64_t nb = 0, g;
	size_t nsteps;
	double *gbs = NULL, xmax, ymax = 0;
	struct ks_outfile of;
	struct ks_text t;
	int rc, height = PLOT_B + 70 + 20 * (int)npaths;

	for (size_t i = 0; i < s->nbw; i++)
		if (s->bw[i].bucket >= nb)
			nb = s->bw[i].bucket + 1;
	/* Buckets are grouped g at a time so that the chart has
	 * SIM_BW_STEPS steps at most. */
	g = nb ? (nb + SIM_BW_STEPS - 1) / SIM_BW_STEPS : 1;
	nsteps = nb ? (size_t)((nb + g - 1) / g) : 0;
	gbs = calloc(npaths * (nsteps ? nsteps : 1), sizeof(*gbs));
	if (!gbs)
		return ks_err_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < s->nbw; i++) {
		size_t st = (size_t)(s->bw[i].bucket / g);

		for (unsigned p = 0; p < npaths; p++)
			gbs[p * nsteps + st] += (double)sim_bwv(s, i)[2 * p] +
						(double)sim_bwv(s, i)[2 * p + 1];
	}
	for (size_t st = 0; st < nsteps; st++) {
		uint64_t b0 = st * g, b1 = b0 + g < nb ? b0 + g : nb;
		double secs = (double)(b1 - b0) * (double)s->interval / s->clock_hz;

		for (unsigned p = 0; p < npaths; p++) {
			gbs[p * nsteps + st] /= secs * 1e9;
			if (gbs[p * nsteps + st] > ymax)
				ymax = gbs[p * nsteps + st];
		}
	}
	xmax = nb ? sim_us(s, (double)nb * (double)s->interval) : 1;
	ymax = ymax > 0 ? ymax * 1.05 : 1;

	rc = sim_open(run, "bandwidth.svg", &of, &t, err);
	if (rc) {
		free(gbs);
		return rc;
	}
	ks_text_printf(&t, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		       "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		       "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		       "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">"
		       "kscope op --simulate: bandwidth per path</text>\n",
		       W, height, W, height, W / 2);
	axes(&t, xmax, ymax);
	if (!nsteps)
		ks_text_printf(&t, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
			       "fill=\"#888\">no bytes moved: the raw file has no bandwidth "
			       "records</text>\n", (PLOT_L + PLOT_R) / 2, (PLOT_T + PLOT_B) / 2);
	for (unsigned p = 0; p < npaths; p++) {
		const char *color = colors[p % (sizeof(colors) / sizeof(colors[0]))];
		char path[64];
		int ly = PLOT_B + 62 + 20 * (int)p;

		if (nsteps) {
			ks_text_printf(&t, "<polyline fill=\"none\" stroke=\"%s\" "
				       "stroke-width=\"1.5\" points=\"", color);
			for (size_t st = 0; st < nsteps; st++) {
				uint64_t b1 = (st + 1) * g < nb ? (st + 1) * g : nb;
				double x0 = PLOT_L + sim_us(s, (double)(st * g) * (double)s->interval)
					    / xmax * (PLOT_R - PLOT_L);
				double x1 = PLOT_L + sim_us(s, (double)b1 * (double)s->interval)
					    / xmax * (PLOT_R - PLOT_L);
				double y = PLOT_B - gbs[p * nsteps + st] / ymax * (PLOT_B - PLOT_T);

				ks_text_printf(&t, "%s%.1f,%.1f %.1f,%.1f", st ? " " : "", x0, y,
					       x1, y);
			}
			ks_text_puts(&t, "\"/>\n");
		}
		sim_path_name(s, p, path, sizeof(path));
		ks_text_printf(&t, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			       "stroke=\"%s\" stroke-width=\"3\"/><text x=\"%d\" y=\"%d\">",
			       PLOT_L, ly - 4, PLOT_L + 30, ly - 4, color, PLOT_L + 38, ly);
		xml(&t, path);
		ks_text_puts(&t, "</text>\n");
	}
	ks_text_puts(&t, "</svg>\n");
	free(gbs);
	return sim_commit(&of, &t, err);
}

int sim_write_bw(struct ks_rundir *run, const struct sim *s, struct ks_err *err)
{
	int rc = write_csv(run, s, err);
	struct ks_err e;
	int r2 = write_svg(run, s, rc ? &e : err);

	return rc ? rc : r2;
}
