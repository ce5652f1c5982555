/*
 * Tests of kscope tune's C API (include/kscope/tune.h) on real searches:
 * examples/tune/planted.c built with the compiler CMake found, its
 * planted best found, failures reported with their output, the notes and
 * the progress heard, tune.csv and tune.json written once, the source
 * unchanged and nothing left behind; bad input refused before anything
 * is written; a stop descriptor that is readable stops the search; and a
 * kscope predict model that selects the top configurations.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kscope/tune.h"
#include "test_util.h"

#define PLANTED KS_TUNE_EXAMPLES "/planted.c"
#define BUILD KS_TUNE_CC " -O0 -I{srcdir} {src} -o {exe}"

struct heard {
	int infos, warns;
	char last_warn[1024];
	bool saw_build, saw_run;
};

static void on_note(void *arg, enum ks_tune_level level, const char *msg)
{
	struct heard *h = arg;

	if (level == KS_TUNE_INFO) {
		h->infos++;
		assert_non_null(strstr(msg, "VERBOSE is not in the space"));
	} else {
		h->warns++;
		snprintf(h->last_warn, sizeof(h->last_warn), "%s", msg);
	}
}

static void on_progress(void *arg, const struct ks_tune_progress *p)
{
	struct heard *h = arg;

	assert_true(p->done <= p->total);
	if (strcmp(p->phase, "build") == 0)
		h->saw_build = true;
	else if (strcmp(p->phase, "run") == 0)
		h->saw_run = true;
	else
		fail_msg("phase '%s'", p->phase);
}

static struct ks_tune_space *space(const char *json)
{
	struct ks_tune_space *s = NULL;
	char err[512];

	if (ks_tune_space_parse(json, strlen(json), NULL, &s, err, sizeof(err)))
		fail_msg("%s", err);
	return s;
}

/* The names in dir, sorted, joined by spaces. */
static void listing(const char *dir, char *buf, size_t size)
{
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	size_t o = 0;

	assert_true(n >= 0);
	buf[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (names[i]->d_name[0] != '.')
			o += (size_t)snprintf(buf + o, size - o, "%s%s", o ? " " : "",
					      names[i]->d_name);
		free(names[i]);
	}
	free(names);
}

static const char *value(const struct ks_tune_result *r, const struct ks_tune_row *w,
			 const char *key)
{
	for (size_t k = 0; k < r->nkeys; k++)
		if (strcmp(r->keys[k], key) == 0)
			return w->values[k];
	fail_msg("no key %s", key);
	return NULL;
}

static const struct ks_tune_row *row(const struct ks_tune_result *r, const char *tile,
				     const char *unroll)
{
	for (size_t i = 0; i < r->nrows; i++)
		if (strcmp(value(r, &r->rows[i], "TILE"), tile) == 0 &&
		    strcmp(value(r, &r->rows[i], "UNROLL"), unroll) == 0)
			return &r->rows[i];
	fail_msg("no row TILE=%s UNROLL=%s", tile, unroll);
	return NULL;
}

static void test_search(void **state)
{
	struct ks_tune_space *s =
		space("{\"TILE\": [8, 13, 32, 3], \"UNROLL\": [1, 4]}");
	char *dir = ks_test_tmpdir(), err[1024], names[1024], path[PATH_MAX];
	size_t before_len, after_len;
	unsigned char *before = ks_test_read_file(PLANTED, &before_len), *after;
	struct ks_tune_result *r = NULL;
	struct ks_tune_opts o;
	struct heard h = { 0 };
	const struct ks_tune_row *w;
	int rc;

	(void)state;
	assert_non_null(before);
	ks_tune_opts_init(&o);
	assert_int_equal(o.warmup, 1);
	assert_int_equal(o.repeat, 5);
	assert_true(o.stop_factor == 3);
	assert_int_equal(o.stop_fd, -1);
	assert_true(o.precision == 5);
	assert_int_equal(o.max_runs, 30);
	assert_null(o.verify);
	o.src = PLANTED;
	o.space = s;
	o.build = BUILD;
	o.run = "{exe}";
	o.warmup = 0;
	o.repeat = 2;
	o.precision = 0;           /* exactly 2 measured runs */
	o.jobs = 2;
	o.stop_factor = 0;
	o.note = on_note;
	o.progress = on_progress;
	o.arg = &h;
	rc = ks_tune(&o, dir, &r, err, sizeof(err));
	if (rc)
		fail_msg("ks_tune: %s", err);
	assert_int_equal(r->nrows, 8);
	assert_int_equal(r->measured, 4);
	assert_int_equal(r->failed, 4);
	assert_int_equal(r->not_selected + r->interrupted, 0);
	assert_false(r->stopped_by_fd);
	assert_int_equal(h.infos, 1);
	assert_int_equal(h.warns, 4);
	assert_true(h.saw_build && h.saw_run);

	/* The planted best, then the others by their planted cost. */
	assert_ptr_equal(r->best, &r->rows[0]);
	assert_string_equal(value(r, r->best, "TILE"), "32");
	assert_string_equal(value(r, r->best, "UNROLL"), "4");
	assert_true(r->best->median_ns == 1000);
	assert_int_equal(r->best->runs, 2);
	assert_int_equal(r->best->timing, KS_TUNE_TIMING_PROGRAM);
	assert_true(r->best->samples_ns[0] == 1000 && r->best->samples_ns[1] == 1000);
	assert_string_equal(value(r, &r->rows[1], "TILE"), "32");  /* 2500 */
	assert_string_equal(value(r, &r->rows[2], "TILE"), "8");   /* 3400 */
	assert_string_equal(value(r, &r->rows[3], "TILE"), "8");   /* 4900 */
	assert_true(r->rows[3].median_ns == 4900);
	assert_int_equal(r->rows[3].status, KS_TUNE_OK);

	/* The failures, last, with what their build or run said. */
	w = row(r, "13", "1");
	assert_int_equal(w->status, KS_TUNE_BUILD_FAILED);
	assert_string_equal(w->message, "exit status 1");
	assert_non_null(strstr(w->output, "TILE 13 does not build"));
	assert_true(w->median_ns < 0);
	assert_int_equal(w->runs, 0);
	w = row(r, "3", "4");
	assert_int_equal(w->status, KS_TUNE_RUN_FAILED);
	assert_string_equal(w->message, "run 1 of 2: exit status 3");
	assert_string_equal(w->output, "planted: TILE 3 is not supported");
	for (size_t i = 4; i < 8; i++)
		assert_true(r->rows[i].status == KS_TUNE_BUILD_FAILED ||
			    r->rows[i].status == KS_TUNE_RUN_FAILED);
	assert_non_null(strstr(h.last_warn, "TILE=3 UNROLL=4: run failed"));

	/* Nothing left but what is written now, once. */
	listing(dir, names, sizeof(names));
	assert_string_equal(names, "");
	assert_int_equal(ks_tune_write(r, dir, err, sizeof(err)), 0);
	listing(dir, names, sizeof(names));
	assert_string_equal(names, "tune.csv tune.json");
	assert_int_equal(ks_tune_write(r, dir, err, sizeof(err)), -EEXIST);
	snprintf(path, sizeof(path), "%s/tune.csv", dir);
	{
		size_t n;
		unsigned char *csv = ks_test_read_file(path, &n);

		assert_non_null(csv);
		assert_non_null(strstr((char *)csv, "rank,config,TILE,UNROLL,status,median (us)"));
		assert_non_null(strstr((char *)csv, "\n1,5,32,4,ok,1.000,1.000,1.000,2,program,1.000,1.000,,,6,,\n"));
		free(csv);
	}
	after = ks_test_read_file(PLANTED, &after_len);
	assert_int_equal(after_len, before_len);
	assert_memory_equal(after, before, before_len);
	free(after);
	free(before);
	ks_tune_result_free(r);
	ks_tune_space_free(s);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_bad_input(void **state)
{
	struct ks_tune_space *s = space("{\"TILE\": [8], \"BLOCK\": [2]}");
	char *dir = ks_test_tmpdir(), err[1024], names[256];
	struct ks_tune_opts o;
	struct ks_tune *t = (struct ks_tune *)1;

	(void)state;
	ks_tune_opts_init(&o);
	o.src = PLANTED;
	o.space = s;
	o.build = BUILD;
	o.run = "{exe}";
	assert_int_equal(ks_tune_new(&o, &t, err, sizeof(err)), -EINVAL);
	assert_null(t);
	assert_non_null(strstr(err, "no tunable line for BLOCK"));
	ks_tune_space_free(s);

	s = space("{\"TILE\": [8]}");
	o.space = s;
	o.run = "./a.out";
	assert_int_equal(ks_tune_new(&o, &t, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "does not name {exe}"));
	o.run = "{exe}";
	o.repeat = 0;
	assert_int_equal(ks_tune_new(&o, &t, err, sizeof(err)), -EINVAL);
	o.repeat = 1;
	o.stop_factor = 0.5;
	assert_int_equal(ks_tune_new(&o, &t, err, sizeof(err)), -EINVAL);
	o.stop_factor = 3;
	o.src = NULL;
	assert_int_equal(ks_tune_new(&o, &t, err, sizeof(err)), -EINVAL);
	listing(dir, names, sizeof(names));
	assert_string_equal(names, "");
	ks_tune_space_free(s);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_stop_fd(void **state)
{
	struct ks_tune_space *s = space("{\"TILE\": [8, 32], \"UNROLL\": [4]}");
	char *dir = ks_test_tmpdir(), err[1024], names[256];
	struct ks_tune_result *r = NULL;
	struct ks_tune_opts o;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(write(fds[1], "x", 1), 1);
	ks_tune_opts_init(&o);
	o.src = PLANTED;
	o.space = s;
	o.build = BUILD;
	o.run = "{exe}";
	o.stop_fd = fds[0];
	assert_int_equal(ks_tune(&o, dir, &r, err, sizeof(err)), -EINTR);
	assert_non_null(r);
	assert_true(r->stopped_by_fd);
	assert_int_equal(r->interrupted, 2);
	assert_int_equal(r->measured, 0);
	assert_null(r->best);
	assert_int_equal(r->rows[0].status, KS_TUNE_INTERRUPTED);
	listing(dir, names, sizeof(names));
	assert_string_equal(names, "");
	ks_tune_result_free(r);
	ks_tune_space_free(s);
	close(fds[0]);
	close(fds[1]);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_predict(void **state)
{
	struct ks_tune_space *s = space("{\"TILE\": [64, 16, 32, 8], \"UNROLL\": [4]}");
	char *dir = ks_test_tmpdir(), err[1024];
	struct ks_tune_result *r = NULL;
	struct ks_tune_opts o;
	int rc;

	(void)state;
	setenv("KSCOPE_CHIP_PATH", KS_TUNE_EXAMPLES, 1);
	ks_tune_opts_init(&o);
	o.src = PLANTED;
	o.space = s;
	o.build = BUILD;
	o.run = "{exe}";
	o.warmup = 0;
	o.repeat = 1;
	o.predict = KS_TUNE_EXAMPLES "/planted.kpp";
	o.top = 2;
	rc = ks_tune(&o, dir, &r, err, sizeof(err));
	if (rc)
		fail_msg("ks_tune: %s", err);
	/* The model's time grows with TILE: 8 and 16 are built, 16 wins. */
	assert_int_equal(r->measured, 2);
	assert_int_equal(r->not_selected, 2);
	assert_string_equal(value(r, &r->rows[0], "TILE"), "16");
	assert_int_equal(r->rows[0].predicted_rank, 2);
	assert_string_equal(value(r, &r->rows[1], "TILE"), "8");
	assert_int_equal(r->rows[1].predicted_rank, 1);
	assert_true(r->rows[1].predicted_us > 0);
	assert_true(r->rows[0].predicted_us > r->rows[1].predicted_us);
	assert_string_equal(value(r, &r->rows[2], "TILE"), "32");
	assert_int_equal(r->rows[2].status, KS_TUNE_NOT_SELECTED);
	assert_int_equal(r->rows[2].runs, 0);
	assert_true(r->rows[3].predicted_us > r->rows[2].predicted_us);
	ks_tune_result_free(r);

	/* A model error is bad input. */
	o.predict = KS_TUNE_EXAMPLES "/planted.c";
	assert_int_equal(ks_tune(&o, dir, &r, err, sizeof(err)), -EINVAL);
	assert_null(r);
	assert_non_null(strstr(err, "option --predict: configuration 0 (TILE=64 UNROLL=4)"));
	ks_tune_space_free(s);
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_stop_fd),
		cmocka_unit_test(test_predict),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
