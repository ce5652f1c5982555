/*
 * Unit tests of kscope causal's post-processing (src/causal/causal_post.c):
 * raw files written to a private temporary directory, read back, and the
 * curves checked against numbers worked out by hand (the pooled speedups
 * and, where the experiments are few enough to list every resample, the
 * bootstrap intervals' exact ends); two files accumulating; profile.coz
 * and the CSV compared whole; the errors, the truncated last line, the
 * records and keys of a newer runtime, and unusable experiments.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "causal_post.h"
#include "test_util.h"

/* The line table of every test: ids 0..7. */
static const struct ks_causal_line lines[] = {
	{ "/src/a.c", 10, NULL }, { "/src/a.c", 11, NULL }, { "/src/a.c", 12, NULL },
	{ "/src/a.c", 33, "work" }, { "/src/b.c", 1, NULL }, { "/src/b.c", 19, NULL },
	{ "/src/b.c", 20, NULL }, { "/src/x,y.c", 7, "f<int>, g" },
};
#define NLINES (sizeof(lines) / sizeof(lines[0]))

/* The private directory of one test. */
struct fixture {
	char *dir;
	char path[PATH_MAX];
};

static int setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fixture *f = calloc(1, sizeof(*f));
	char tmpl[PATH_MAX];

	if (!f)
		return -1;
	snprintf(tmpl, sizeof(tmpl), "%s/kscope-causal.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpl)) {
		free(f);
		return -1;
	}
	f->dir = strdup(tmpl);
	*state = f;
	return f->dir ? 0 : -1;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ks_test_rmtree(f->dir);
	free(f->dir);
	free(f);
	return 0;
}

/* Writes the raw file `name` in the test's directory; its path. */
static const char *raw(void **state, const char *name, const char *text)
{
	struct fixture *f = *state;

	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, name);
	ks_test_write_file(f->path, text, 0600);
	return f->path;
}

/* Reads text as raw file `name` into d (which it starts when fresh). */
static void read_ok(void **state, struct ks_causal_data *d, const char *name,
		    const char *text)
{
	struct ks_err err;
	int rc;

	ks_err_clear(&err);
	rc = ks_causal_data_read(d, raw(state, name, text), &err);
	if (rc)
		fail_msg("%s: %d %s", name, rc, err.msg);
}

static void analyze_ok(const struct ks_causal_data *d, const char *point,
		       struct ks_causal_result *r)
{
	struct ks_err err;

	ks_err_clear(&err);
	if (ks_causal_analyze(d, point, r, &err))
		fail_msg("analyze: %s", err.msg);
}

#define assert_near(a, b) assert_true(fabs((a) - (b)) < 1e-9)

/* What each writer wrote, as a malloc'd string. */
static char *capture_coz(const struct ks_causal_data *d)
{
	struct ks_err err;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(ks_causal_write_coz(f, d, lines, &err), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *capture_csv(const struct ks_causal_result *r)
{
	struct ks_err err;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(ks_causal_write_csv(f, r, lines, &err), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *capture_report(const struct ks_causal_result *r, size_t max)
{
	struct ks_err err;
	char *buf = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&buf, &size);

	assert_non_null(f);
	assert_int_equal(ks_causal_write_report(f, r, lines, max, &err), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

/* ------------------------------------------------------------------ */
/* (1) Known answers                                                   */
/* ------------------------------------------------------------------ */

/* Baseline: D = 450 and 550 ms, 100 visits each: p0 = 5 ms per visit.
 * Line 3 at 25%: D = 350 and 400 ms (wall minus delay), 100 visits
 * each: 3.75 ms, 25% exactly.  Line 5 at 50%: D = 500 ms, 100 visits:
 * 0%.  The experiments' lines at 0% differ: the baseline pools them. */
static const char known[] =
	"process\tpid=1234\tperiod_ns=1000000\tstart_ns=1000\n"
	"experiment\tline=0\tspeedup=0\twall_ns=450000000\tdelay_ns=0\tsamples=10\n"
	"point\tname=round\tkind=throughput\tdelta=100\n"
	"experiment\tline=1\tspeedup=0\twall_ns=600000000\tdelay_ns=50000000\tsamples=10\n"
	"point\tname=round\tkind=throughput\tdelta=100\n"
	"experiment\tline=3\tspeedup=25\twall_ns=400000000\tdelay_ns=50000000\tsamples=480\n"
	"point\tname=round\tkind=throughput\tdelta=100\n"
	"experiment\tline=5\tspeedup=50\twall_ns=700000000\tdelay_ns=200000000\tsamples=9\n"
	"point\tname=round\tkind=throughput\tdelta=100\n"
	"experiment\tline=3\tspeedup=25\twall_ns=500000000\tdelay_ns=100000000\tsamples=470\n"
	"point\tname=round\tkind=throughput\tdelta=100\n"
	"samples\tline=3\tcount=5789\n"
	"samples\tline=5\tcount=12\n"
	"end\tns=6656700518\n";

static void test_known_answer(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r, again;
	const struct ks_causal_curve *c;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "known.raw", known);
	assert_int_equal(d.nprocesses, 1);
	assert_int_equal(d.nexperiments, 5);
	assert_int_equal(d.npoints, 5);
	assert_int_equal(d.nnames, 1);
	assert_true(d.processes[0].ended);
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.points, 1);
	assert_int_equal(r.unusable, 0);
	assert_int_equal(r.total_samples, 5801);
	assert_string_equal(r.why, "");
	assert_int_equal(r.ncurves, 2);

	/* Line 3 ranks first: impact 25% against 0%. */
	c = &r.curves[0];
	assert_int_equal(c->line, 3);
	assert_string_equal(c->point, "round");
	assert_int_equal(c->line_samples, 5789);
	assert_int_equal(c->n, 2);
	assert_near(c->impact_pct, 25.0);
	/* The origin: 0%, the whole baseline behind it. */
	assert_int_equal(c->v[0].line_speedup_pct, 0);
	assert_true(c->v[0].program_speedup_pct == 0);
	assert_int_equal(c->v[0].experiments, 2);
	assert_int_equal(c->v[0].visits, 200);
	assert_near(c->v[0].effective_s, 1.0);
	/* Two independent resamples of the baseline, each 4.5, 5 or 5.5 ms:
	 * the extremes (4.5 - 5.5) / 4.5 and (5.5 - 4.5) / 5.5 each come
	 * 1 time in 16, more than the 2.5% each tail cuts. */
	assert_near(c->v[0].ci_low_pct, -100.0 / 4.5);
	assert_near(c->v[0].ci_high_pct, 100.0 / 5.5);
	assert_int_equal(c->v[1].line_speedup_pct, 25);
	assert_true(c->v[1].program_speedup_pct == 25.0);
	assert_int_equal(c->v[1].experiments, 2);
	assert_int_equal(c->v[1].visits, 200);
	assert_near(c->v[1].effective_s, 0.75);
	/* p0 resampled in {4.5, 5, 5.5}, p_25 in {3.5, 3.75, 4}: the ends
	 * are (4.5 - 4) / 4.5 and (5.5 - 3.5) / 5.5. */
	assert_near(c->v[1].ci_low_pct, 50.0 / 4.5);
	assert_near(c->v[1].ci_high_pct, 200.0 / 5.5);
	assert_true(c->v[1].ci_low_pct < 25 && 25 < c->v[1].ci_high_pct);

	/* Line 5: one experiment, so its interval is the baseline's
	 * alone: (4.5 - 5) / 4.5 to (5.5 - 5) / 5.5. */
	c = &r.curves[1];
	assert_int_equal(c->line, 5);
	assert_int_equal(c->n, 2);
	assert_true(c->v[1].program_speedup_pct == 0);
	assert_near(c->impact_pct, 0);
	assert_int_equal(c->v[1].experiments, 1);
	assert_near(c->v[1].ci_low_pct, -50.0 / 4.5);
	assert_near(c->v[1].ci_high_pct, 50.0 / 5.5);

	/* The same data give the same intervals: the seed is fixed. */
	analyze_ok(&d, "round", &again);
	assert_int_equal(again.ncurves, 2);
	for (size_t i = 0; i < 2; i++)
		for (size_t k = 0; k < 2; k++) {
			assert_true(again.curves[i].v[k].ci_low_pct == r.curves[i].v[k].ci_low_pct);
			assert_true(again.curves[i].v[k].ci_high_pct == r.curves[i].v[k].ci_high_pct);
		}
	ks_causal_result_free(&again);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* A bootstrap over many varied experiments: a real interval around the
 * value, narrower with more data. */
static void test_interval_width(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	char text[16384];
	size_t off = 0;
	const struct ks_causal_point_result *pt;

	off += (size_t)snprintf(text + off, sizeof(text) - off,
				"process\tpid=1\tstart_ns=0\n");
	for (int i = 0; i < 20; i++) {
		/* Baseline around 5 ms per visit, line 2 at 40% around 4. */
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"experiment\tline=4\tspeedup=0\twall_ns=%d\tdelay_ns=0\t"
					"samples=1\npoint\tname=p\tkind=throughput\tdelta=100\n"
					"experiment\tline=2\tspeedup=40\twall_ns=%d\t"
					"delay_ns=100000000\tsamples=1\n"
					"point\tname=p\tkind=throughput\tdelta=100\n",
					500000000 + (i % 5 - 2) * 10000000,
					500000000 + (i % 4 - 1) * 10000000);
	}
	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "wide.raw", text);
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 1);
	pt = &r.curves[0].v[1];
	assert_int_equal(pt->line_speedup_pct, 40);
	assert_int_equal(pt->experiments, 20);
	assert_true(pt->ci_low_pct < pt->program_speedup_pct);
	assert_true(pt->program_speedup_pct < pt->ci_high_pct);
	assert_true(pt->ci_high_pct - pt->ci_low_pct > 0.1);
	assert_true(pt->ci_high_pct - pt->ci_low_pct < 5);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* The interval's ends are the 2.5th and 97.5th percentiles: a value
 * that comes 1 time in 27 fills the outer 2.5% but not the outer 5%. */
static void test_interval_tail(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	const struct ks_causal_point_result *pt;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	/* p0 = 5 ms, always.  Line 2 at 20%: 3, 4 and 5 ms per visit, so a
	 * resample of three is 3 ms (40%) 1 time in 27 and 5 ms (0%) 1 time
	 * in 27; the next values in are 33.3% and 6.7%. */
	read_ok(state, &d, "tail.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=p\tkind=throughput\tdelta=100\n"
		"experiment\tline=2\tspeedup=20\twall_ns=300000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=p\tkind=throughput\tdelta=100\n"
		"experiment\tline=2\tspeedup=20\twall_ns=500000000\tdelay_ns=100000000\t"
		"samples=0\n"
		"point\tname=p\tkind=throughput\tdelta=100\n"
		"experiment\tline=2\tspeedup=20\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=p\tkind=throughput\tdelta=100\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 1);
	pt = &r.curves[0].v[1];
	assert_near(pt->program_speedup_pct, 20);
	assert_near(pt->ci_low_pct, 0);
	assert_near(pt->ci_high_pct, 40);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* ------------------------------------------------------------------ */
/* (2) Several files                                                   */
/* ------------------------------------------------------------------ */

static void test_two_files(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	const struct ks_causal_curve *c;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "p1.raw",
		"process\tpid=1\tperiod_ns=1000000\tstart_ns=100\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=25\twall_ns=375000000\tdelay_ns=0\tsamples=5\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		/* A later total replaces an earlier one. */
		"samples\tline=3\tcount=40\n"
		"samples\tline=1\tcount=7\n"
		"samples\tline=3\tcount=100\n"
		"end\tns=1100\n");
	read_ok(state, &d, "p2.raw",
		"process\tpid=2\tperiod_ns=1000000\tstart_ns=200\tsampler=timer\n"
		"experiment\tline=1\tspeedup=0\twall_ns=1000000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=200\n"
		"experiment\tline=3\tspeedup=25\twall_ns=475000000\tdelay_ns=100000000\t"
		"samples=5\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"samples\tline=3\tcount=50\n");
	assert_int_equal(d.nprocesses, 2);
	assert_int_equal(d.nexperiments, 4);
	assert_int_equal(d.processes[0].pid, 1);
	assert_int_equal(d.processes[1].pid, 2);
	assert_int_equal(d.processes[1].first_experiment, 2);
	assert_int_equal(d.processes[1].nexperiments, 2);
	assert_true(d.processes[0].ended);
	assert_false(d.processes[1].ended);
	/* sampler=timer marks the coarse sampler; absent is the precise one. */
	assert_false(d.processes[0].coarse);
	assert_true(d.processes[1].coarse);
	/* Process 1's samples, by line, the last total of line 3 kept. */
	assert_int_equal(d.processes[0].nsamples, 2);
	assert_int_equal(d.samples[0].line, 1);
	assert_int_equal(d.samples[1].line, 3);
	assert_int_equal(d.samples[1].count, 100);
	assert_int_equal(d.nnames, 1);

	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 1);
	c = &r.curves[0];
	assert_int_equal(c->line, 3);
	assert_int_equal(c->line_samples, 150);
	assert_int_equal(c->v[0].experiments, 2);
	assert_int_equal(c->v[0].visits, 300);
	assert_int_equal(c->v[1].experiments, 2);
	assert_true(c->v[1].program_speedup_pct == 25.0);
	assert_int_equal(r.total_samples, 157);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* Two sections in one file, the first with a line's samples twice: its
 * end drops one record, and the second section's samples must still be
 * its own (found by fuzz/causal). */
static void test_two_sections(void **state)
{
	struct ks_causal_data d;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "two.raw",
		"process\tpid=1\tperiod_ns=1000000\tstart_ns=100\n"
		"samples\tline=1\tcount=5\n"
		"samples\tline=1\tcount=9\n"
		"end\tns=2000\n"
		"process\tpid=1\tperiod_ns=1000000\tstart_ns=3000\n"
		"samples\tline=3\tcount=7\n"
		"samples\tline=2\tcount=4\n"
		"end\tns=4000\n");
	assert_int_equal(d.nprocesses, 2);
	assert_int_equal(d.processes[0].nsamples, 1);
	assert_int_equal(d.samples[d.processes[0].first_samples].count, 9);
	assert_int_equal(d.processes[1].first_samples, 1);
	assert_int_equal(d.processes[1].nsamples, 2);
	assert_int_equal(d.samples[1].line, 2);
	assert_int_equal(d.samples[2].line, 3);
	assert_int_equal(d.nsamples, 3);
	ks_causal_data_free(&d);
}

/* An experiment with no record of a point says nothing of its pace: a
 * run before the point existed (kscope causal's first run of a program
 * without progress points) must not stretch the baseline. */
static void test_point_unknown_left_out(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "unknown.raw",
		"process\tpid=1\tperiod_ns=1000000\tstart_ns=100\n"
		"experiment\tline=2\tspeedup=0\twall_ns=1000000000\tdelay_ns=0\tsamples=0\n"
		"experiment\tline=3\tspeedup=25\twall_ns=1000000000\tdelay_ns=0\tsamples=0\n"
		"process\tpid=2\tperiod_ns=1000000\tstart_ns=100\n"
		"experiment\tline=2\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=end-to-end\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=25\twall_ns=375000000\tdelay_ns=0\tsamples=9\n"
		"point\tname=end-to-end\tkind=throughput\tdelta=100\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 1);
	assert_int_equal(r.curves[0].v[0].experiments, 1);
	assert_int_equal(r.curves[0].v[1].experiments, 1);
	assert_true(r.curves[0].v[1].program_speedup_pct == 25.0);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* causal.svg of the known answer: one panel per curve, best first, each
 * point where the scale puts it.  The shared y scale runs from -30% to
 * 40% here (the intervals widened to tens): a panel's plot area is
 * 252 x 132 from (64, 70), so line +25% is at x = 64 + 0.25 x 252 = 127
 * and program +25% at y = 70 + (40 - 25) / 70 x 132 = 98.3. */
static void test_svg(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "known.raw", known);
	analyze_ok(&d, NULL, &r);
	mem = open_memstream(&buf, &len);
	assert_non_null(mem);
	assert_int_equal(ks_causal_write_svg(mem, &r, lines, 0, NULL), 0);
	fclose(mem);
	assert_non_null(strstr(buf, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	assert_int_equal(count_of(buf, "<g class=\"curve\">"), 2);
	/* Line 3 (a.c... see lines[]) first, then line 5. */
	assert_true(strstr(buf, ">impact 25.0%<") < strstr(buf, ">impact 0.0%<"));
	assert_non_null(strstr(buf, "<text x=\"60.0\" y=\"74.0\" class=\"ylab\">40%</text>"));
	assert_non_null(strstr(buf, "<circle cx=\"127.0\" cy=\"98.3\" r=\"3\"><title>line +25%: "
			       "program +25.0% (2 experiments)</title></circle>"));
	assert_true(strstr(buf, "</svg>\n") == buf + len - 7);
	free(buf);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* ------------------------------------------------------------------ */
/* (3) profile.coz                                                     */
/* ------------------------------------------------------------------ */

static void test_coz_output(void **state)
{
	struct ks_causal_data d;
	char *text;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "coz.raw",
		"process\tpid=7\tperiod_ns=1000000\tstart_ns=1000\n"
		"experiment\tline=3\tspeedup=25\twall_ns=500000000\tdelay_ns=120000000\t"
		"samples=480\n"
		"point\tname=round\tkind=throughput\tdelta=86\n"
		"point\tname=req\tkind=latency\tarrivals=40\tdepartures=38\tdifference=2\n"
		"experiment\tline=5\tspeedup=0\twall_ns=300\tdelay_ns=0\tsamples=3\n"
		"point\tname=round\tkind=throughput\tdelta=5\n"
		"point\tname=req\tkind=latency\tarrivals=1\tdepartures=4\tdifference=-3\n"
		/* Unusable: left out of profile.coz. */
		"experiment\tline=1\tspeedup=100\twall_ns=100\tdelay_ns=100\tsamples=3\n"
		"point\tname=round\tkind=throughput\tdelta=9\n"
		"samples\tline=5\tcount=12\n"
		"samples\tline=3\tcount=5789\n"
		"samples\tline=2\tcount=0\n"
		"end\tns=6656700518\n");
	read_ok(state, &d, "coz2.raw",
		"process\tpid=8\tstart_ns=50\n"
		"experiment\tline=6\tspeedup=5\twall_ns=1000\tdelay_ns=10\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=1\n"
		"samples\tline=6\tcount=1\n");
	text = capture_coz(&d);
	assert_string_equal(text,
		"startup\ttime=1000\n"
		"experiment\tselected=/src/a.c:33\tspeedup=0.25\tduration=380000000\t"
		"selected-samples=480\n"
		"throughput-point\tname=round\tdelta=86\n"
		"latency-point\tname=req\tarrivals=40\tdepartures=38\tdifference=2\n"
		"experiment\tselected=/src/b.c:19\tspeedup=0.00\tduration=300\t"
		"selected-samples=3\n"
		"throughput-point\tname=round\tdelta=5\n"
		"latency-point\tname=req\tarrivals=1\tdepartures=4\tdifference=-3\n"
		"runtime\ttime=6656699518\n"
		"samples\tlocation=/src/a.c:33\tcount=5789\n"
		"samples\tlocation=/src/b.c:19\tcount=12\n"
		"startup\ttime=50\n"
		"experiment\tselected=/src/b.c:20\tspeedup=0.05\tduration=990\t"
		"selected-samples=0\n"
		"throughput-point\tname=round\tdelta=1\n"
		"samples\tlocation=/src/b.c:20\tcount=1\n");
	free(text);
	ks_causal_data_free(&d);
}

/* ------------------------------------------------------------------ */
/* (4) The CSV and the report                                          */
/* ------------------------------------------------------------------ */

static const char quoted[] =
	"process\tpid=1\tstart_ns=0\n"
	"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
	"point\tname=a,\"b\"\tkind=throughput\tdelta=100\n"
	"experiment\tline=7\tspeedup=25\twall_ns=375000000\tdelay_ns=0\tsamples=1\n"
	"point\tname=a,\"b\"\tkind=throughput\tdelta=100\n";

static void test_csv_quoting(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	char *text;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "quoted.raw", quoted);
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 1);
	assert_string_equal(r.curves[0].point, "a,\"b\"");
	text = capture_csv(&r);
	/* One experiment each side: every resample is the same, so the
	 * interval is the value itself. */
	assert_string_equal(text,
		"point,file,line,line_speedup_pct,program_speedup_pct,ci_low_pct,"
		"ci_high_pct,experiments,visits,effective_s,function\n"
		"\"a,\"\"b\"\"\",\"/src/x,y.c\",7,0,0.000,0.000,0.000,1,100,0.500000,"
		"\"f<int>, g\"\n"
		"\"a,\"\"b\"\"\",\"/src/x,y.c\",7,25,25.000,25.000,25.000,1,100,0.375000,"
		"\"f<int>, g\"\n");
	free(text);
	text = capture_report(&r, 0);
	assert_string_equal(text,
		"/src/x,y.c:7 in f<int>, g  impact 25.0%  (0 samples)\n"
		"  line +0%  program +0.0% [0.0, 0.0]  (1 experiment, 100 visits)\n"
		"  line +25%  program +25.0% [25.0, 25.0]  (1 experiment, 100 visits)\n");
	free(text);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

static void test_report(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	char *text;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "known.raw", known);
	analyze_ok(&d, NULL, &r);
	text = capture_report(&r, 1);
	assert_string_equal(text,
		"/src/a.c:33 in work  impact 25.0%  (5789 samples)\n"
		"  line +0%  program +0.0% [-22.2, 18.2]  (2 experiments, 200 visits)\n"
		"  line +25%  program +25.0% [11.1, 36.4]  (2 experiments, 200 visits)\n"
		"(1 more curve not shown)\n");
	free(text);
	ks_causal_result_free(&r);

	/* No curves: one line, why. */
	analyze_ok(&d, "nosuch", &r);
	assert_int_equal(r.ncurves, 0);
	text = capture_report(&r, 0);
	assert_string_equal(text, "no throughput progress point named 'nosuch' was recorded\n");
	free(text);
	text = capture_csv(&r);
	assert_string_equal(text, "point,file,line,line_speedup_pct,program_speedup_pct,"
			    "ci_low_pct,ci_high_pct,experiments,visits,effective_s,function\n");
	free(text);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* A writer's failure comes back (/dev/full fails every flush). */
static void test_write_error(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	struct ks_err err;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "known.raw", known);
	analyze_ok(&d, NULL, &r);
	ks_err_clear(&err);
	assert_int_equal(ks_causal_write_csv(f, &r, lines, &err), -ENOSPC);
	assert_non_null(strstr(err.msg, "cannot write the causal CSV"));
	fclose(f);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* ------------------------------------------------------------------ */
/* (5) Errors                                                          */
/* ------------------------------------------------------------------ */

/* Reading text as `name` fails with -EINVAL, a message naming the file
 * and line `lineno` and containing want, and leaves d as it was. */
static void read_fails(void **state, struct ks_causal_data *d, const char *name,
		       const char *text, int lineno, const char *want)
{
	struct ks_causal_data before = *d;
	struct ks_err err;
	char where[PATH_MAX + 32];
	const char *path = raw(state, name, text);

	ks_err_clear(&err);
	assert_int_equal(ks_causal_data_read(d, path, &err), -EINVAL);
	snprintf(where, sizeof(where), "%s:%d: ", path, lineno);
	if (!strstr(err.msg, where) || !strstr(err.msg, want))
		fail_msg("%s: message '%s' lacks '%s' or '%s'", name, err.msg, where, want);
	assert_int_equal(d->nprocesses, before.nprocesses);
	assert_int_equal(d->nexperiments, before.nexperiments);
	assert_int_equal(d->npoints, before.npoints);
	assert_int_equal(d->nsamples, before.nsamples);
	assert_int_equal(d->nnames, before.nnames);
	assert_int_equal(d->truncated, before.truncated);
}

static void test_errors(void **state)
{
	struct ks_causal_data d;
	struct ks_err err;
	char path[PATH_MAX];

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "known.raw", known);
	read_fails(state, &d, "early-point.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "samples\tline=1\tcount=3\n"
		   "point\tname=new\tkind=throughput\tdelta=1\n", 3,
		   "before the process's first experiment");
	/* A new process starts without an experiment, whatever came before. */
	read_fails(state, &d, "early-point2.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		   "point\tname=new\tkind=throughput\tdelta=1\n"
		   "process\tpid=2\tstart_ns=0\n"
		   "point\tname=new\tkind=throughput\tdelta=1\n", 5, "first experiment");
	read_fails(state, &d, "range.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=8\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n", 2,
		   "line=8 is out of range (the line table has 8 lines)");
	read_fails(state, &d, "range2.raw",
		   "process\tpid=1\tstart_ns=0\n\n"
		   "samples\tline=4294967296\tcount=1\n", 3, "out of range");
	read_fails(state, &d, "nan.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=12x\tdelay_ns=0\tsamples=0\n", 2,
		   "wall_ns='12x' is not a non-negative integer");
	read_fails(state, &d, "neg.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=5\tdelay_ns=-1\tsamples=0\n", 2,
		   "delay_ns='-1'");
	read_fails(state, &d, "big.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=18446744073709551616\tdelay_ns=0\t"
		   "samples=0\n", 2, "wall_ns=");
	read_fails(state, &d, "pct.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=101\twall_ns=5\tdelay_ns=0\tsamples=0\n", 2,
		   "speedup=101 is not a percentage");
	read_fails(state, &d, "missing.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=5\tsamples=0\n", 2, "lacks delay_ns=");
	read_fails(state, &d, "lat.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=1\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		   "point\tname=q\tkind=latency\tarrivals=1\tdepartures=1\tdifference=x\n", 3,
		   "difference='x' is not an integer");
	read_fails(state, &d, "noproc.raw",
		   "experiment\tline=1\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n", 1,
		   "before any process record");
	read_fails(state, &d, "twice.raw",
		   "process\tpid=1\tstart_ns=0\tpid=2\n", 1, "pid= is given twice");
	read_fails(state, &d, "noeq.raw",
		   "process\tpid=1\tstart_ns\n", 1, "is not key=value");
	read_fails(state, &d, "endbefore.raw",
		   "process\tpid=1\tstart_ns=100\nend\tns=99\n", 2, "before the process's start");

	/* A file that cannot be read is its errno. */
	snprintf(path, sizeof(path), "%s/nosuch.raw", ((struct fixture *)*state)->dir);
	ks_err_clear(&err);
	assert_int_equal(ks_causal_data_read(&d, path, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "nosuch.raw"));
	assert_int_equal(d.nexperiments, 5);
	ks_causal_data_free(&d);
	/* A line table too large for a line id. */
	assert_int_equal(ks_causal_data_init(&d, (size_t)UINT32_MAX + 1), -EINVAL);
}

/* ------------------------------------------------------------------ */
/* (6), (7), (8) Truncation, newer runtimes, unusable experiments      */
/* ------------------------------------------------------------------ */

static void test_truncated(void **state)
{
	struct ks_causal_data d;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	/* The last line would be an error were it complete. */
	read_ok(state, &d, "cut.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=3\tspeedup=25\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=1\n"
		"experiment\tline=3\tspeedup=2");
	assert_int_equal(d.truncated, 1);
	assert_int_equal(d.nexperiments, 1);
	assert_int_equal(d.npoints, 1);
	read_ok(state, &d, "cut2.raw", "proc");
	assert_int_equal(d.truncated, 2);
	assert_int_equal(d.nprocesses, 1);
	read_ok(state, &d, "empty.raw", "");
	assert_int_equal(d.truncated, 2);
	ks_causal_data_free(&d);
}

static void test_unknown_skipped(void **state)
{
	struct ks_causal_data d;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "future.raw",
		"header\tversion=9\n"
		"process\tpid=5\tstart_ns=10\thost=box\tperiod_ns=2000\n"
		"checkpoint\n"
		"experiment\tcolor=blue\tline=3\tspeedup=25\twall_ns=500\tdelay_ns=100\t"
		"samples=4\tcpu=3\n"
		"point\tname=hist\tkind=histogram\tbins=3\n"
		"point\tname=round\tkind=throughput\tdelta=7\tunit=req\n"
		"gc\tpaused_ns=100\n"
		"\n"
		"samples\tline=3\tcount=9\tthread=2\n"
		"end\tns=100\treason=exit\n");
	assert_int_equal(d.nprocesses, 1);
	assert_int_equal(d.processes[0].pid, 5);
	assert_int_equal(d.processes[0].period_ns, 2000);
	assert_int_equal(d.processes[0].end_ns, 100);
	assert_int_equal(d.nexperiments, 1);
	assert_int_equal(d.experiments[0].line, 3);
	assert_int_equal(d.experiments[0].speedup_pct, 25);
	assert_int_equal(d.experiments[0].wall_ns, 500);
	assert_int_equal(d.experiments[0].delay_ns, 100);
	assert_int_equal(d.experiments[0].samples, 4);
	/* The point of an unknown kind is left out. */
	assert_int_equal(d.npoints, 1);
	assert_int_equal(d.experiments[0].npoints, 1);
	assert_int_equal(d.nnames, 1);
	assert_string_equal(d.names[d.points[0].name], "round");
	assert_int_equal(d.points[0].delta, 7);
	assert_int_equal(d.nsamples, 1);
	assert_int_equal(d.samples[0].count, 9);
	assert_int_equal(d.truncated, 0);
	ks_causal_data_free(&d);
}

static void test_unusable(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	/* Were the unusable experiments counted, the baseline's 1000 visits
	 * and line 3's would move both paces. */
	read_ok(state, &d, "unusable.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=500000000\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=1000\n"
		"experiment\tline=3\tspeedup=25\twall_ns=375000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=25\twall_ns=5\tdelay_ns=6\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=1000\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.unusable, 2);
	assert_int_equal(r.ncurves, 1);
	assert_int_equal(r.curves[0].v[0].experiments, 1);
	assert_int_equal(r.curves[0].v[1].experiments, 1);
	assert_true(r.curves[0].v[1].program_speedup_pct == 25.0);
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);

	/* Nothing usable at all: no curves, and why. */
	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "none.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=5\tdelay_ns=5\tsamples=0\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.unusable, 1);
	assert_int_equal(r.ncurves, 0);
	assert_non_null(strstr(r.why, "unusable"));
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* The threads' run-queue wait: its share over every experiment that
 * measured it, the warning above 10%, none from an older runtime's
 * records, and one key without the other an error. */
static void test_ready_wait(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;
	char msg[512];

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	/* 2 threads x 0.5 s + 1 thread x 1 s = 2 s of thread time, 0.3 s
	 * waited: 15%; the experiment without the keys does not count. */
	read_ok(state, &d, "wait.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500000000\tdelay_ns=0\tsamples=0"
		"\tready_wait_ns=100000000\tthreads=2\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=25\twall_ns=1000000000\tdelay_ns=0\tsamples=0"
		"\tready_wait_ns=200000000\tthreads=1\n"
		"point\tname=round\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=25\twall_ns=9000000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=100\n");
	analyze_ok(&d, NULL, &r);
	assert_true(fabs(r.ready_wait_share - 0.15) < 1e-12);
	assert_true(ks_causal_busy_warning(&r, msg, sizeof(msg)));
	assert_non_null(strstr(msg, "waited for a CPU 15% of the time"));
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);

	/* 5%: no warning. */
	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "wait5.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=1000000000\tdelay_ns=0\tsamples=0"
		"\tready_wait_ns=100000000\tthreads=2\n"
		"point\tname=round\tkind=throughput\tdelta=100\n");
	analyze_ok(&d, NULL, &r);
	assert_true(fabs(r.ready_wait_share - 0.05) < 1e-12);
	assert_false(ks_causal_busy_warning(&r, msg, sizeof(msg)));
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);

	/* An older runtime's records: unknown, no warning. */
	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "nowait.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=1000000000\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=100\n");
	analyze_ok(&d, NULL, &r);
	assert_true(isnan(r.ready_wait_share));
	assert_false(ks_causal_busy_warning(&r, msg, sizeof(msg)));
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_fails(state, &d, "halfwait.raw",
		   "process\tpid=1\tstart_ns=0\n"
		   "experiment\tline=0\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0"
		   "\tthreads=2\n", 2, "experiment record lacks ready_wait_ns=");
	ks_causal_data_free(&d);
}

/* No baseline, a baseline without visits, no point, no experiment. */
static void test_no_curves(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 0);
	assert_string_equal(r.why, "no experiment was recorded");
	ks_causal_result_free(&r);
	read_ok(state, &d, "nobase.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=3\tspeedup=25\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=1\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 0);
	assert_non_null(strstr(r.why, "no baseline"));
	ks_causal_result_free(&r);
	read_ok(state, &d, "novisit.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=3\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		"point\tname=round\tkind=throughput\tdelta=0\n");
	analyze_ok(&d, "round", &r);
	assert_int_equal(r.ncurves, 0);
	assert_non_null(strstr(r.why, "'round' was not visited during the baseline"));
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "latonly.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=3\tspeedup=0\twall_ns=5\tdelay_ns=0\tsamples=0\n"
		"point\tname=q\tkind=latency\tarrivals=1\tdepartures=1\tdifference=0\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.ncurves, 0);
	assert_string_equal(r.why, "no throughput progress point was recorded");
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

/* Two throughput points: a curve per line and point, ranked together. */
static void test_two_points(void **state)
{
	struct ks_causal_data d;
	struct ks_causal_result r;

	assert_int_equal(ks_causal_data_init(&d, NLINES), 0);
	read_ok(state, &d, "two.raw",
		"process\tpid=1\tstart_ns=0\n"
		"experiment\tline=0\tspeedup=0\twall_ns=500\tdelay_ns=0\tsamples=0\n"
		"point\tname=a\tkind=throughput\tdelta=100\n"
		"point\tname=b\tkind=throughput\tdelta=100\n"
		"experiment\tline=3\tspeedup=50\twall_ns=500\tdelay_ns=0\tsamples=0\n"
		"point\tname=a\tkind=throughput\tdelta=200\n"
		"point\tname=b\tkind=throughput\tdelta=125\n");
	analyze_ok(&d, NULL, &r);
	assert_int_equal(r.points, 2);
	assert_int_equal(r.ncurves, 2);
	assert_string_equal(r.curves[0].point, "a");
	assert_near(r.curves[0].impact_pct, 50);
	assert_string_equal(r.curves[1].point, "b");
	assert_near(r.curves[1].impact_pct, 20);
	ks_causal_result_free(&r);
	analyze_ok(&d, "b", &r);
	assert_int_equal(r.points, 1);
	assert_int_equal(r.ncurves, 1);
	assert_string_equal(r.curves[0].point, "b");
	ks_causal_result_free(&r);
	ks_causal_data_free(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_known_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interval_width, setup, teardown),
		cmocka_unit_test_setup_teardown(test_interval_tail, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_sections, setup, teardown),
		cmocka_unit_test_setup_teardown(test_svg, setup, teardown),
		cmocka_unit_test_setup_teardown(test_point_unknown_left_out, setup, teardown),
		cmocka_unit_test_setup_teardown(test_coz_output, setup, teardown),
		cmocka_unit_test_setup_teardown(test_csv_quoting, setup, teardown),
		cmocka_unit_test_setup_teardown(test_report, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unknown_skipped, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unusable, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ready_wait, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_curves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_two_points, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
