/*
 * causal.svg: the best-ranked speedup curves drawn as small multiples,
 * one panel per curve: the line speedup across (0 to 100%), the
 * predicted program speedup up (a scale shared by every panel, so that
 * panels compare), each point with its 95% interval as a bar, the
 * baseline's band shaded around 0.  Plain SVG 1.1 with no script, so that
 * a browser, an image viewer or a document shows it as it is.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "causal_post.h"

#define PANEL_W 300.0
#define PANEL_H 200.0
#define MARGIN_L 48.0       /* room for the y labels */
#define MARGIN_T 34.0       /* room for the title */
#define MARGIN_B 34.0       /* room for the x labels */
#define GAP 16.0
#define COLS 3

/* Text for SVG: &, < and > escaped, control characters as '?'. */
static void put_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			fputs("&amp;", out);
		else if (*s == '<')
			fputs("&lt;", out);
		else if (*s == '>')
			fputs("&gt;", out);
		else
			fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
	}
}

/* The basename of a path: panels are narrow. */
static const char *base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The y range every panel shares: the points and their intervals, 0 and
 * 10 included, widened to whole tens. */
static void y_range(const struct ks_causal_result *r, size_t n, double *lo, double *hi)
{
	*lo = 0;
	*hi = 10;
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < r->curves[i].n; j++) {
			const struct ks_causal_point_result *p = &r->curves[i].v[j];
			double a = isnan(p->ci_low_pct) ? p->program_speedup_pct : p->ci_low_pct;
			double b = isnan(p->ci_high_pct) ? p->program_speedup_pct : p->ci_high_pct;

			if (a < *lo)
				*lo = a;
			if (b > *hi)
				*hi = b;
		}
	*lo = floor(*lo / 10) * 10;
	*hi = ceil(*hi / 10) * 10;
	if (*lo < -100)
		*lo = -100;
	if (*hi > 100)
		*hi = 100;
}

static void panel(FILE *out, const struct ks_causal_curve *c, const struct ks_causal_line *lines,
		  bool several_points, double x0, double y0, double lo, double hi)
{
	double w = PANEL_W - MARGIN_L, h = PANEL_H - MARGIN_T - MARGIN_B;
	double left = x0 + MARGIN_L, top = y0 + MARGIN_T;
#define PX(s) (left + (s) / 100.0 * w)
#define PY(v) (top + (hi - ((v) < lo ? lo : (v) > hi ? hi : (v))) / (hi - lo) * h)
	const struct ks_causal_point_result *b = &c->v[0];
	double step = hi - lo > 60 ? 20 : 10;

	fprintf(out, "<g class=\"curve\">\n<text x=\"%.1f\" y=\"%.1f\" class=\"title\">",
		x0 + MARGIN_L, y0 + 14);
	put_text(out, base(lines[c->line].file));
	fprintf(out, ":%d", lines[c->line].line);
	if (lines[c->line].function) {
		fputs(" ", out);
		put_text(out, lines[c->line].function);
	}
	fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" class=\"sub\">impact %.1f%%",
		x0 + MARGIN_L, y0 + 27, c->impact_pct);
	if (several_points) {
		fputs(", point ", out);
		put_text(out, c->point);
	}
	fputs("</text>\n", out);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"frame\"/>\n",
		left, top, w, h);
	/* The baseline's own noise, as a band around 0. */
	if (!isnan(b->ci_low_pct) && !isnan(b->ci_high_pct))
		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"class=\"band\"/>\n", left, PY(b->ci_high_pct), w,
			PY(b->ci_low_pct) - PY(b->ci_high_pct));
	/* Ticks at multiples of the step, so that 0 is one of them. */
	for (int t = (int)(ceil(lo / step) * step); t <= (int)hi; t += (int)step) {
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"%s\"/>\n",
			left, PY(t), left + w, PY(t), t == 0 ? "zero" : "grid");
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"ylab\">%d%%</text>\n",
			left - 4, PY(t) + 4, t);
	}
	for (int s = 0; s <= 100; s += 25)
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"xlab\">%d%%</text>\n", PX(s),
			top + h + 14, s);
	fputs("<polyline class=\"line\" points=\"", out);
	for (size_t i = 0; i < c->n; i++)
		fprintf(out, "%s%.1f,%.1f", i ? " " : "", PX(c->v[i].line_speedup_pct),
			PY(c->v[i].program_speedup_pct));
	fputs("\"/>\n", out);
	for (size_t i = 0; i < c->n; i++) {
		const struct ks_causal_point_result *p = &c->v[i];

		if (!isnan(p->ci_low_pct) && !isnan(p->ci_high_pct))
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
				"class=\"ci\"/>\n", PX(p->line_speedup_pct), PY(p->ci_low_pct),
				PX(p->line_speedup_pct), PY(p->ci_high_pct));
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"><title>line +%u%%: "
			"program %+.1f%% (%zu experiments)</title></circle>\n",
			PX(p->line_speedup_pct), PY(p->program_speedup_pct), p->line_speedup_pct,
			p->program_speedup_pct, p->experiments);
	}
	fputs("</g>\n", out);
#undef PX
#undef PY
}

int ks_causal_write_svg(FILE *out, const struct ks_causal_result *r,
			const struct ks_causal_line *lines, size_t max_curves, struct ks_err *err)
{
	size_t n = max_curves && r->ncurves > max_curves ? max_curves : r->ncurves;
	size_t cols = n < COLS ? (n ? n : 1) : COLS, rows = n ? (n + COLS - 1) / COLS : 1;
	double width = cols * PANEL_W + (cols + 1) * GAP, height = rows * PANEL_H + (rows + 1) * GAP + 20;
	double lo, hi;
	bool several = false;

	for (size_t i = 1; i < n; i++)
		several |= strcmp(r->curves[i].point, r->curves[0].point) != 0;
	y_range(r, n, &lo, &hi);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
		"font-size=\"11\">\n<style>\n"
		".title{font-weight:bold;font-size:12px}.sub{fill:#555}"
		".frame{fill:none;stroke:#999}.band{fill:#ddd}.grid{stroke:#eee}"
		".zero{stroke:#888}.ylab{text-anchor:end;fill:#555}"
		".xlab{text-anchor:middle;fill:#555}"
		".line{fill:none;stroke:#1f5fa8;stroke-width:1.5}.ci{stroke:#1f5fa8}"
		"circle{fill:#1f5fa8}\n</style>\n", width, height, width, height);
	fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#333\">program speedup (up) against "
		"line speedup (across), 95%% intervals; grey: the baseline's</text>\n", GAP,
		GAP + 4);
	if (n == 0) {
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", GAP, GAP + 30);
		put_text(out, r->why[0] ? r->why : "no curves");
		fputs("</text>\n", out);
	}
	for (size_t i = 0; i < n; i++)
		panel(out, &r->curves[i], lines, several, GAP + (double)(i % COLS) * (PANEL_W + GAP),
		      GAP + 20 + (double)(i / COLS) * (PANEL_H + GAP), lo, hi);
	fputs("</svg>\n", out);
	if (fflush(out) != 0 || ferror(out))
		return ks_err_set(err, -EIO, "cannot write causal.svg: %s", strerror(errno));
	return 0;
}
