/*
 * ks_predict through its C API: schedules computed by hand on the test
 * chip (chips/test.json: GM->UB 2 bytes/cycle on MTE2, UB->GM 4 bytes/cycle
 * on MTE3, vadd 1 element/cycle on VECTOR), interpolation at, between,
 * below and above table entries, readiness rules (read-after-write,
 * write-after-read, write-after-write, split pieces both ways),
 * set_flag/wait_flag, deadlocks, bad input and the outputs.
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "kscope/predict.h"
#include "test_util.h"

#ifndef KS_CHIPS
#error "KS_CHIPS must name tests/predict/unit/chips"
#endif
#define TEST_CHIP KS_CHIPS "/test.json"
#define FOOT_CHIP KS_CHIPS "/footprint.json"
#define CORES_CHIP KS_CHIPS "/cores.json"

static struct ks_pred_model *model(const char *chip)
{
	char err[1024];
	struct ks_pred_model *m = ks_pred_model_new(chip, err, sizeof(err));

	if (!m)
		fail_msg("%s", err);
	return m;
}

static int tensor(struct ks_pred_model *m, const char *name, const char *space,
		  const char *dtype, int64_t n)
{
	int id = ks_pred_tensor(m, name, space, dtype, &n, 1, NULL);

	if (id < 0)
		fail_msg("tensor %s: %s", name, ks_pred_error(m));
	return id;
}

static int load(struct ks_pred_model *m, int dst, int src)
{
	int id = ks_pred_load(m, dst, src);

	if (id < 0)
		fail_msg("load: %s", ks_pred_error(m));
	return id;
}

static int instr(struct ks_pred_model *m, const char *name, int a, int b, int out)
{
	int in[2] = { a, b }, o[1] = { out };
	int id = ks_pred_instr(m, name, in, b < 0 ? 1 : 2, o, 1);

	if (id < 0)
		fail_msg("%s: %s", name, ks_pred_error(m));
	return id;
}

static void expect(struct ks_pred_model *m, int id, const char *pipe, double start,
		   double end)
{
	struct ks_pred_slice s;

	assert_int_equal(ks_pred_slice(m, id, &s), 0);
	if (strcmp(s.pipe, pipe) || s.start != start || s.end != end)
		fail_msg("#%d %s: %s [%g, %g], expected %s [%g, %g]", id, s.name, s.pipe,
			 s.start, s.end, pipe, start, end);
}

static double run(struct ks_pred_model *m)
{
	double c = -1;

	if (ks_pred_run(m, &c))
		fail_msg("run: %s", ks_pred_error(m));
	return c;
}

/* ---- golden schedules ---- */

/* z = x + y for 8 fp16 elements: load x, load y (MTE2, 16 bytes each at
 * 2 bytes/cycle: 8 cycles), vadd (8 cycles, after both loads), store
 * (16 bytes at 4 bytes/cycle: 4 cycles). */
static void test_two_pipes(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, y, z, xu, yu, zu, i0, i1, i2, i3;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 8);
	y = tensor(m, "y", "GM", "fp16", 8);
	z = tensor(m, "z", "GM", "fp16", 8);
	xu = tensor(m, "xu", "UB", "fp16", 8);
	yu = tensor(m, "yu", "UB", "fp16", 8);
	zu = tensor(m, "zu", "UB", "fp16", 8);
	i0 = load(m, xu, x);
	i1 = load(m, yu, y);
	i2 = instr(m, "vadd", xu, yu, zu);
	i3 = load(m, z, zu);
	assert_true(run(m) == 28);
	expect(m, i0, "MTE2", 0, 8);
	expect(m, i1, "MTE2", 8, 16);
	expect(m, i2, "VECTOR", 16, 24);
	expect(m, i3, "MTE3", 24, 28);
	ks_pred_model_free(m);
}

/* Four tiles of 8 through two UB buffers (ping, pong).  Loads: [0,8]
 * [8,16] [16,24] [24,32].  vadd reads its own tile's load, not the later
 * load into the same buffer: [8,16] [16,24] [24,32] [32,40].  Stores of
 * 16 bytes at 4 bytes/cycle: [16,20] [24,28] [32,36] [40,44]. */
static void test_double_buffering(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int xs[4], buf[2], out[2], z[4], ld[4], va[4], st[4];
	int64_t shape[1] = { 32 };
	int x;

	(void)state;
	x = ks_pred_tensor(m, "x", "GM", "fp16", shape, 1, "ND");
	assert_true(x >= 0);
	assert_int_equal(ks_pred_split(m, x, 0, 4, xs), x + 1);
	for (int i = 0; i < 4; i++) {
		char n[16];

		snprintf(n, sizeof(n), "z%d", i);
		z[i] = tensor(m, n, "GM", "fp16", 8);
	}
	buf[0] = tensor(m, "ping", "UB", "fp16", 8);
	buf[1] = tensor(m, "pong", "UB", "fp16", 8);
	out[0] = tensor(m, "out0", "UB", "fp16", 8);
	out[1] = tensor(m, "out1", "UB", "fp16", 8);
	for (int i = 0; i < 4; i++) {
		ld[i] = load(m, buf[i % 2], xs[i]);
		va[i] = instr(m, "vadd", buf[i % 2], buf[i % 2], out[i % 2]);
		st[i] = load(m, z[i], out[i % 2]);
	}
	assert_true(run(m) == 44);
	for (int i = 0; i < 4; i++) {
		expect(m, ld[i], "MTE2", 8.0 * i, 8.0 * i + 8);
		expect(m, va[i], "VECTOR", 8.0 * i + 8, 8.0 * i + 16);
		expect(m, st[i], "MTE3", 8.0 * i + 16, 8.0 * i + 20);
	}
	ks_pred_model_free(m);
}

/* A forward reference: vadd reads a, which a later instruction writes. */
static void test_forward(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, a, b, c, i0, i1;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 8);
	a = tensor(m, "a", "UB", "fp16", 8);
	b = tensor(m, "b", "UB", "fp16", 8);
	c = tensor(m, "c", "UB", "fp16", 8);
	(void)b;
	i0 = instr(m, "vadd", a, a, c);
	i1 = load(m, a, x);
	assert_true(run(m) == 16);
	expect(m, i1, "MTE2", 0, 8);
	expect(m, i0, "VECTOR", 8, 16);
	ks_pred_model_free(m);
}

/* Deadlocks: a pipe waiting for an instruction behind it; a tensor that
 * nothing writes. */
static void test_deadlock(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int a, b, c, x, y;

	(void)state;
	a = tensor(m, "a", "UB", "fp16", 8);
	b = tensor(m, "b", "UB", "fp16", 8);
	c = tensor(m, "c", "UB", "fp16", 8);
	instr(m, "vadd", a, a, b);   /* #0 waits for #1 */
	instr(m, "vadd", c, c, a);   /* #1 waits for #2 */
	x = tensor(m, "x", "GM", "fp16", 8);
	load(m, c, x);               /* #2 runs */
	assert_int_equal(ks_pred_run(m, NULL), -EDEADLK);
	assert_non_null(strstr(ks_pred_error(m), "the model deadlocks: 2 instructions"));
	assert_non_null(strstr(ks_pred_error(m), "pipe VECTOR waits at #0 vadd for a, "
					       "written by #1 vadd on VECTOR"));
	ks_pred_model_free(m);

	m = model(TEST_CHIP);
	a = tensor(m, "a", "UB", "fp16", 8);
	b = tensor(m, "b", "UB", "fp16", 8);
	y = tensor(m, "y", "GM", "fp16", 8);
	ks_pred_set_location(m, "m.kpp", 3, 5);
	instr(m, "vadd", a, a, b);
	load(m, y, b);
	assert_int_equal(ks_pred_run(m, NULL), -EDEADLK);
	assert_non_null(strstr(ks_pred_error(m), "pipe VECTOR waits at #0 vadd (m.kpp:3:5) "
					       "for a, which nothing writes (UB does not "
					       "start ready)"));
	assert_non_null(strstr(ks_pred_error(m), "pipe MTE3 waits at #1 load (m.kpp:3:5) "
					       "for b, written by #0 vadd"));
	ks_pred_model_free(m);
}

/* Equal ends: the pipe listed first runs first; its clock is its own. */
static void test_ties(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, xu, a, b, i0, i1, i2;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 4);   /* 8 bytes: 4 cycles on MTE2 */
	xu = tensor(m, "xu", "UB", "fp16", 4);
	a = tensor(m, "a", "UB", "fp16", 4);
	b = tensor(m, "b", "GM", "fp16", 4);
	i0 = load(m, xu, x);                   /* MTE2 [0,4] */
	i1 = instr(m, "vadd", xu, xu, a);      /* VECTOR [4,8] */
	i2 = load(m, b, xu);                   /* MTE3: 8 bytes at 4: [4,6] */
	assert_true(run(m) == 8);
	expect(m, i0, "MTE2", 0, 4);
	expect(m, i1, "VECTOR", 4, 8);
	expect(m, i2, "MTE3", 4, 6);
	ks_pred_model_free(m);
}

/* Split pieces of a UB tensor wait for the load of their parent. */
static void test_split_readiness(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, u, p[2], o, i0, i1;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 16);
	u = tensor(m, "u", "UB", "fp16", 16);
	assert_true(ks_pred_split(m, u, 0, 2, p) >= 0);
	o = tensor(m, "o", "UB", "fp16", 8);
	i0 = instr(m, "vadd", p[1], p[1], o);   /* waits for the later load of u */
	i1 = load(m, u, x);                     /* 32 bytes: [0,16] */
	assert_true(run(m) == 24);
	expect(m, i1, "MTE2", 0, 16);
	expect(m, i0, "VECTOR", 16, 24);
	ks_pred_model_free(m);
}

/* ---- buffer reuse: write-after-read and write-after-write ---- */

/* The double-buffering model of docs/predict.md with nb buffers, 4 tiles
 * of 8 fp16 elements: xbuf [nb * 8] and obuf [nb * 8] split into nb
 * pieces, tile i using piece i % nb.  Costs on the test chip: a load of
 * 16 bytes at 2 bytes/cycle is L = 8 cycles (MTE2), vadd of 8 elements V =
 * 8 (VECTOR), a store of 16 bytes at 4 bytes/cycle S = 4 (MTE3).
 *
 * nb = 1: the load of tile i+1 overwrites xb[0], which vadd i reads, so it
 * waits for vadd i to end (write-after-read); vadd i+1 overwrites ob[0],
 * which store i reads.  ld0 [0,8] va0 [8,16] st0 [16,20]; ld1 waits for
 * va0: [16,24]; va1 after ld1 (24) and st0 (20): [24,32]; st1 [32,36];
 * ld2 [32,40] va2 [40,48] st2 [48,52]; ld3 [48,56] va3 [56,64] st3
 * [64,68]: ld_i [16i, 16i+8], va_i [16i+8, 16i+16], st_i [16i+16,
 * 16i+20], 68 cycles.  (Without the hazard every nb gave 44.)
 *
 * nb = 2: ld0 [0,8] ld1 [8,16]; ld2 overwrites xb[0] after va0 ends (16):
 * [16,24]; ld3 after va1 ends (24): [24,32]; va_i after ld_i, va2 also
 * after st0 (20), va3 after st1 (28): [8,16] [16,24] [24,32] [32,40];
 * st_i right after va_i: [16,20] [24,28] [32,36] [40,44]: 44 cycles.  Each
 * stage costs the same every tile, so the second buffer is enough: the
 * waits it adds (ld2 until 16, ld3 until 24) are where MTE2 is anyway.
 *
 * nb = 4: no buffer is used twice; the same 44 cycles. */
static void check_buffers(int nb, double total)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int64_t shape[1] = { 32 }, bshape[1] = { 8 * nb };
	int x, z, xbuf, obuf, xs[4], zs[4], xb[4], ob[4], ld[4], va[4], st[4];

	x = ks_pred_tensor(m, "x", "GM", "fp16", shape, 1, NULL);
	z = ks_pred_tensor(m, "z", "GM", "fp16", shape, 1, NULL);
	xbuf = ks_pred_tensor(m, "xbuf", "UB", "fp16", bshape, 1, NULL);
	obuf = ks_pred_tensor(m, "obuf", "UB", "fp16", bshape, 1, NULL);
	assert_true(x >= 0 && z >= 0 && xbuf >= 0 && obuf >= 0);
	assert_true(ks_pred_split(m, x, 0, 4, xs) >= 0);
	assert_true(ks_pred_split(m, z, 0, 4, zs) >= 0);
	assert_true(ks_pred_split(m, xbuf, 0, nb, xb) >= 0);
	assert_true(ks_pred_split(m, obuf, 0, nb, ob) >= 0);
	for (int i = 0; i < 4; i++) {
		ld[i] = load(m, xb[i % nb], xs[i]);
		va[i] = instr(m, "vadd", xb[i % nb], xb[i % nb], ob[i % nb]);
		st[i] = load(m, zs[i], ob[i % nb]);
	}
	assert_true(run(m) == total);
	for (int i = 0; i < 4; i++) {
		if (nb == 1) {
			expect(m, ld[i], "MTE2", 16.0 * i, 16.0 * i + 8);
			expect(m, va[i], "VECTOR", 16.0 * i + 8, 16.0 * i + 16);
			expect(m, st[i], "MTE3", 16.0 * i + 16, 16.0 * i + 20);
		} else {
			expect(m, ld[i], "MTE2", 8.0 * i, 8.0 * i + 8);
			expect(m, va[i], "VECTOR", 8.0 * i + 8, 8.0 * i + 16);
			expect(m, st[i], "MTE3", 8.0 * i + 16, 8.0 * i + 20);
		}
	}
	ks_pred_model_free(m);
}

static void test_buffer_reuse(void **state)
{
	(void)state;
	check_buffers(1, 68);
	check_buffers(2, 44);
	check_buffers(4, 44);
}

/* Write-after-write across pipes: vadd writes o (VECTOR [16,24] after
 * the load of a), then a load from GM writes o again on MTE2: it waits
 * for vadd (MTE2's clock is 16; without the hazard it would run [16,24]
 * beside vadd), [24,32]. */
static void test_waw(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, y, a, b, o, i2, i3;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 8);
	y = tensor(m, "y", "GM", "fp16", 8);
	a = tensor(m, "a", "UB", "fp16", 8);
	b = tensor(m, "b", "UB", "fp16", 8);
	o = tensor(m, "o", "UB", "fp16", 8);
	load(m, a, x);                        /* [0,8] */
	load(m, b, y);                        /* [8,16] */
	i2 = instr(m, "vadd", a, b, o);       /* [16,24] */
	i3 = load(m, o, x);                   /* waits for #2: [24,32] */
	assert_true(run(m) == 32);
	expect(m, i2, "VECTOR", 16, 24);
	expect(m, i3, "MTE2", 24, 32);
	ks_pred_model_free(m);
}

/* ---- split pieces and their parent ---- */

/* Pieces to parent.  buf [16] split into bp[0], bp[1] (8 each).  Loads
 * into both pieces, then vadd reads buf: it waits for both (it used to
 * deadlock: "buf, which nothing writes").  With an earlier load of all
 * of buf [0,16], the piece loads overwrite it, [16,24] and [24,32], and
 * vadd (16 elements: 16 cycles) waits for them: [32,48], not [16,32]. */
static void test_split_pieces_to_parent(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, x8, y8, buf, bp[2], o, i2, i3;

	(void)state;
	x8 = tensor(m, "x8", "GM", "fp16", 8);
	y8 = tensor(m, "y8", "GM", "fp16", 8);
	buf = tensor(m, "buf", "UB", "fp16", 16);
	o = tensor(m, "o", "UB", "fp16", 16);
	assert_true(ks_pred_split(m, buf, 0, 2, bp) >= 0);
	load(m, bp[0], x8);                          /* [0,8] */
	load(m, bp[1], y8);                          /* [8,16] */
	i2 = instr(m, "vadd", buf, buf, o);          /* [16,32] */
	assert_true(run(m) == 32);
	expect(m, i2, "VECTOR", 16, 32);
	ks_pred_model_free(m);

	m = model(TEST_CHIP);
	x = tensor(m, "x", "GM", "fp16", 16);
	x8 = tensor(m, "x8", "GM", "fp16", 8);
	y8 = tensor(m, "y8", "GM", "fp16", 8);
	buf = tensor(m, "buf", "UB", "fp16", 16);
	o = tensor(m, "o", "UB", "fp16", 16);
	assert_true(ks_pred_split(m, buf, 0, 2, bp) >= 0);
	load(m, buf, x);                             /* 32 bytes: [0,16] */
	load(m, bp[0], x8);                          /* [16,24] */
	i2 = load(m, bp[1], y8);                     /* [24,32] */
	i3 = instr(m, "vadd", buf, buf, o);          /* [32,48] */
	assert_true(run(m) == 48);
	expect(m, i2, "MTE2", 24, 32);
	expect(m, i3, "VECTOR", 32, 48);
	ks_pred_model_free(m);

	/* One piece only, in UB: the other half is never written. */
	m = model(TEST_CHIP);
	x8 = tensor(m, "x8", "GM", "fp16", 8);
	buf = tensor(m, "buf", "UB", "fp16", 16);
	o = tensor(m, "o", "UB", "fp16", 16);
	assert_true(ks_pred_split(m, buf, 0, 2, bp) >= 0);
	load(m, bp[0], x8);
	instr(m, "vadd", buf, buf, o);
	assert_int_equal(ks_pred_run(m, NULL), -EDEADLK);
	assert_non_null(strstr(ks_pred_error(m), "for buf, which nothing writes"));
	ks_pred_model_free(m);
}

/* Parent to pieces.  A load of buf [0,16]; vadd reads bp[1] [16,24]; a
 * second load of buf must not overwrite bp[1] before that vadd has read
 * it (write-after-read through the parent): [24,40], not [16,32]; vadd
 * on bp[0] reads the second load's data: [40,48].  Then a load into
 * bp[0] after a vadd that reads all of buf waits for it: buf's readers
 * are bp[0]'s too. */
static void test_split_parent_to_pieces(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, y, x8, buf, bp[2], o8, o16, i1, i2, i3;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 16);
	y = tensor(m, "y", "GM", "fp16", 16);
	buf = tensor(m, "buf", "UB", "fp16", 16);
	o8 = tensor(m, "o8", "UB", "fp16", 8);
	assert_true(ks_pred_split(m, buf, 0, 2, bp) >= 0);
	load(m, buf, x);                             /* [0,16] */
	i1 = instr(m, "vadd", bp[1], bp[1], o8);     /* [16,24] */
	i2 = load(m, buf, y);                        /* [24,40] */
	i3 = instr(m, "vadd", bp[0], bp[0], o8);     /* [40,48] */
	assert_true(run(m) == 48);
	expect(m, i1, "VECTOR", 16, 24);
	expect(m, i2, "MTE2", 24, 40);
	expect(m, i3, "VECTOR", 40, 48);
	ks_pred_model_free(m);

	m = model(TEST_CHIP);
	x = tensor(m, "x", "GM", "fp16", 16);
	x8 = tensor(m, "x8", "GM", "fp16", 8);
	buf = tensor(m, "buf", "UB", "fp16", 16);
	o16 = tensor(m, "o16", "UB", "fp16", 16);
	assert_true(ks_pred_split(m, buf, 0, 2, bp) >= 0);
	load(m, buf, x);                             /* [0,16] */
	i1 = instr(m, "vadd", buf, buf, o16);        /* [16,32] */
	i2 = load(m, bp[0], x8);                     /* [32,40], not [16,24] */
	assert_true(run(m) == 40);
	expect(m, i1, "VECTOR", 16, 32);
	expect(m, i2, "MTE2", 32, 40);
	ks_pred_model_free(m);
}

/* ---- set_flag / wait_flag ---- */

/* Builds a model from .kpp text on the test chip and runs it; rc gets
 * ks_pred_run's result. */
static struct ks_pred_model *kpp_model(const char *text, int *rc)
{
	char *dir = ks_test_tmpdir(), path[4400], err[1024];
	struct ks_pred_model *m;

	snprintf(path, sizeof(path), "%s/m.kpp", dir);
	ks_test_write_file(path, text, 0644);
	m = ks_pred_parse_file(path, TEST_CHIP, NULL, NULL, 0, 0, err, sizeof(err));
	if (!m)
		fail_msg("%s", err);
	*rc = ks_pred_run(m, NULL);
	ks_test_rmtree(dir);
	free(dir);
	return m;
}

/* A wait before its set in program order; two events; the k-th wait of
 * an event takes its k-th set.  MTE2: #0 load [0,8], #1 set e0 at 8, #2
 * load [8,16], #3 set e1 at 16.  SCALAR (2 cycles an operation): #4 waits
 * for e1 [16,16], #5 scalar 3 [16,22], #6 waits for e0 (set at 8) [22,22],
 * #7 scalar 1 [22,24].  VECTOR: #8 waits for e0's second set (#11, after
 * #10's load [16,24]) [24,24], #9 vadd [24,32] (its input u was ready at
 * 8). */
static void test_flags(void **state)
{
	struct ks_pred_model *m;
	int rc;

	(void)state;
	m = kpp_model("tensor x GM fp16 [8]\n"
		      "tensor u UB fp16 [8]\n"
		      "tensor w UB fp16 [8]\n"
		      "tensor q UB fp16 [8]\n"
		      "tensor o UB fp16 [8]\n"
		      "load x -> u\n"
		      "set_flag MTE2 SCALAR 0\n"
		      "load x -> w\n"
		      "set_flag MTE2 SCALAR 1\n"
		      "wait_flag MTE2 SCALAR 1\n"
		      "scalar 3\n"
		      "wait_flag MTE2 SCALAR 0\n"
		      "scalar 1\n"
		      "wait_flag MTE2 VECTOR 0\n"
		      "vadd u u -> o\n"
		      "load x -> q\n"
		      "set_flag MTE2 VECTOR 0\n", &rc);
	if (rc)
		fail_msg("%s", ks_pred_error(m));
	expect(m, 1, "MTE2", 8, 8);
	expect(m, 3, "MTE2", 16, 16);
	expect(m, 4, "SCALAR", 16, 16);
	expect(m, 5, "SCALAR", 16, 22);
	expect(m, 6, "SCALAR", 22, 22);
	expect(m, 7, "SCALAR", 22, 24);
	expect(m, 8, "VECTOR", 24, 24);
	expect(m, 9, "VECTOR", 24, 32);
	expect(m, 10, "MTE2", 16, 24);
	expect(m, 11, "MTE2", 24, 24);
	ks_pred_model_free(m);

	/* A wait whose set is missing: a deadlock that names the flag. */
	m = kpp_model("tensor x GM fp16 [8]\n"
		      "tensor u UB fp16 [8]\n"
		      "load x -> u\n"
		      "set_flag MTE2 VECTOR 5\n"
		      "wait_flag MTE2 VECTOR 5\n"
		      "wait_flag MTE2 VECTOR 5\n", &rc);
	assert_int_equal(rc, -EDEADLK);
	assert_non_null(strstr(ks_pred_error(m), "the model deadlocks: 1 instruction cannot "
					       "run; pipe VECTOR waits at #3 wait_flag"));
	assert_non_null(strstr(ks_pred_error(m), "m.kpp:6:1) for set_flag(MTE2, VECTOR, 5), "
					       "which nothing sets"));
	ks_pred_model_free(m);

	/* A wait on the pipe that sets, before the set: it waits forever. */
	m = kpp_model("wait_flag VECTOR VECTOR 0\n"
		      "set_flag VECTOR VECTOR 0\n", &rc);
	assert_int_equal(rc, -EDEADLK);
	assert_non_null(strstr(ks_pred_error(m), "for set_flag(VECTOR, VECTOR, 0) #1 set_flag"));
	ks_pred_model_free(m);

	/* A set nothing waits for: a warning. */
	m = kpp_model("set_flag MTE3 VECTOR 2\n", &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(ks_pred_warnings(m), "set_flag(MTE3, VECTOR, 2) is set 1 time "
						  "but waited for 0 times"));
	ks_pred_model_free(m);
}

/* ---- interpolation ---- */

static double cost_of(const char *chip, const char *name, const char *dtype, int64_t n)
{
	struct ks_pred_model *m = model(chip);
	int a = tensor(m, "a", "UB", dtype, n), b = tensor(m, "b", "UB", dtype, n);
	int x = tensor(m, "x", "GM", dtype, n);
	struct ks_pred_slice s;
	double c;

	load(m, a, x);
	instr(m, name, a, strcmp(name, "vexp") ? a : -1, b);
	run(m);
	assert_int_equal(ks_pred_slice(m, 1, &s), 0);
	c = s.end - s.start;
	ks_pred_model_free(m);
	return c;
}

/* vmul fp16: [[100, 10], [200, 20]] elements/cycle, "above": largest;
 * vexp [[100, 20], [200, 10]] with "above": last; fp32 has only a peak
 * of 5. */
static void test_interpolation(void **state)
{
	(void)state;
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 100) == 10);     /* at */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 200) == 10);     /* at */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 150) == 10);     /* 150/15 */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 120) == 10);     /* 120/12 */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 50) == 5);       /* below: 50/10 */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp16", 400) == 20);     /* above: 400/20 */
	assert_true(cost_of(TEST_CHIP, "vexp", "fp16", 150) == 10);     /* 150/15 */
	assert_true(cost_of(TEST_CHIP, "vexp", "fp16", 400) == 40);     /* last: 400/10 */
	assert_true(cost_of(TEST_CHIP, "vmul", "fp32", 100) == 20);     /* peak: 100/5 */
}

/* GM->L1: [[64, 2], [128, 4]] bytes/cycle, above: the peak 8; ND->NZ
 * conversion [[64, 1], [128, 2]]. */
static void test_path_interpolation(void **state)
{
	static const struct { int64_t n; const char *fmt; double cycles; } cases[] = {
		{ 32, "ND", 32 },     /* 64 bytes at 2 */
		{ 48, "ND", 32 },     /* 96 bytes at 3 */
		{ 16, "ND", 16 },     /* 32 bytes, below: at 2 */
		{ 256, "ND", 64 },    /* 512 bytes, above: the peak 8 */
		{ 32, "NZ", 64 },     /* converted: 64 bytes at 1 */
		{ 48, "NZ", 64 },     /* 96 bytes at 1.5 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ks_pred_model *m = model(TEST_CHIP);
		int64_t n = cases[i].n;
		int x = ks_pred_tensor(m, "x", "GM", "fp16", &n, 1, "ND");
		int l = ks_pred_tensor(m, "l", "L1", "fp16", &n, 1, cases[i].fmt);
		struct ks_pred_slice s;

		load(m, l, x);
		run(m);
		assert_int_equal(ks_pred_slice(m, 0, &s), 0);
		if (s.end != cases[i].cycles)
			fail_msg("case %zu: %g cycles, expected %g", i, s.end, cases[i].cycles);
		ks_pred_model_free(m);
	}
}

/* Footprint paths: the model's GM bytes decide, not the load's size. */
static void test_footprint(void **state)
{
	struct ks_pred_model *m = model(FOOT_CHIP);
	int x, y, xu, i0;
	struct ks_pred_slice s;

	(void)state;
	x = tensor(m, "x", "GM", "fp32", 250);   /* 1000 bytes */
	y = tensor(m, "y", "GM", "fp32", 500);   /* 2000 bytes: footprint 3000 */
	xu = tensor(m, "xu", "UB", "fp32", 250);
	(void)y;
	i0 = load(m, xu, x);
	run(m);
	assert_int_equal(ks_pred_slice(m, i0, &s), 0);
	assert_true(s.end == 1000.0 / 4.5);      /* between 2000 (5) and 4000 (4) */
	ks_pred_model_free(m);

	m = model(FOOT_CHIP);
	x = tensor(m, "x", "GM", "fp32", 5000);  /* 20000 bytes: above, last: 4 */
	xu = tensor(m, "xu", "UB", "fp32", 5000);
	i0 = load(m, xu, x);
	run(m);
	assert_int_equal(ks_pred_slice(m, i0, &s), 0);
	assert_true(s.end == 5000);
	ks_pred_model_free(m);
}

/* ---- user-defined instructions ---- */

static void test_register(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	double sz[2] = { 10, 20 }, tp[2] = { 1, 2 };
	int a, b, i0, i1;
	struct ks_pred_slice s;

	(void)state;
	assert_int_equal(ks_pred_register(m, "vgelu", "VECTOR", "size / 4 + 10", NULL, NULL,
					  0, 8), 0);
	assert_int_equal(ks_pred_register(m, "vtab", "MTE3", NULL, sz, tp, 2, 1), 0);
	assert_int_equal(ks_pred_register(m, "vgelu", "VECTOR", "1", NULL, NULL, 0, 1), -EEXIST);
	assert_int_equal(ks_pred_register(m, "vbad", "NOPE", "1", NULL, NULL, 0, 1), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "is not one of chip test's: MTE2, VECTOR"));
	assert_int_equal(ks_pred_register(m, "vbad", "VECTOR", "size /", NULL, NULL, 0, 1),
			 -EINVAL);
	a = tensor(m, "a", "GM", "fp16", 40);
	b = tensor(m, "b", "GM", "fp16", 15);
	i0 = instr(m, "vgelu", a, -1, a);          /* 40/4 + 10 = 20 cycles */
	i1 = instr(m, "vtab", b, -1, b);           /* 15 / 1.5 = 10 cycles */
	run(m);
	assert_int_equal(ks_pred_slice(m, i0, &s), 0);
	assert_true(s.end - s.start == 20);
	assert_true(s.ops == 320);
	assert_int_equal(ks_pred_slice(m, i1, &s), 0);
	assert_true(s.end - s.start == 10);
	ks_pred_model_free(m);

	/* Division by zero in a formula: refused, by name. */
	m = model(TEST_CHIP);
	assert_int_equal(ks_pred_register(m, "vz", "VECTOR", "size / (d1 - 1)", NULL, NULL, 0,
					  1), 0);
	a = tensor(m, "a", "UB", "fp16", 8);
	{
		int in[1] = { a };

		assert_int_equal(ks_pred_instr(m, "vz", in, 1, in, 1), -EDOM);
		assert_non_null(strstr(ks_pred_error(m), "divides by zero"));
	}
	ks_pred_model_free(m);
}

/* ---- bad input ---- */

static void test_bad_input(void **state)
{
	struct ks_pred_model *m;
	char err[1024];
	int64_t shape[2] = { 4, 8 }, neg = -3, huge[2] = { INT64_C(1) << 40, INT64_C(1) << 40 };
	int a, b, c, in[2], out[1];

	(void)state;
	assert_null(ks_pred_model_new("no-such-chip", err, sizeof(err)));
	assert_non_null(strstr(err, "unknown chip \"no-such-chip\""));
	assert_null(ks_pred_model_new("/nonexistent/chip.json", err, sizeof(err)));
	assert_non_null(strstr(err, "/nonexistent/chip.json"));

	m = model(TEST_CHIP);
	assert_int_equal(ks_pred_tensor(m, "n", "GM", "fp16", &neg, 1, NULL), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "dimension 0 is -3"));
	assert_int_equal(ks_pred_tensor(m, "h", "GM", "fp16", huge, 2, NULL), -EOVERFLOW);
	assert_int_equal(ks_pred_tensor(m, "s", "HBM", "fp16", shape, 2, NULL), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "is not one of chip test's: GM, UB, L1"));
	assert_int_equal(ks_pred_tensor(m, "s", "GM", "fp12", shape, 2, NULL), -EINVAL);
	a = ks_pred_tensor(m, "a", "UB", "fp16", shape, 2, NULL);
	b = tensor(m, "b", "UB", "fp16", 16);
	c = tensor(m, "c", "UB", "fp16", 32);
	in[0] = a;
	in[1] = b;
	out[0] = c;
	assert_int_equal(ks_pred_instr(m, "vadd", in, 2, out, 1), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "shape mismatch: vadd: a is [4, 8] but b "
					       "is [16]"));
	assert_int_equal(ks_pred_instr(m, "vfoo", in, 2, out, 1), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "unknown instruction \"vfoo\""));
	assert_int_equal(ks_pred_instr(m, "vsub", in, 2, out, 1), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "chip test does not run vsub"));
	in[1] = 99;
	assert_int_equal(ks_pred_instr(m, "vadd", in, 2, out, 1), -EINVAL);
	assert_int_equal(ks_pred_split(m, b, 0, 17, NULL), -EINVAL);
	assert_int_equal(ks_pred_split(m, b, 1, 2, NULL), -EINVAL);
	assert_int_equal(ks_pred_scalar(m, 0, NULL, 0, NULL, 0), -EINVAL);
	/* Nothing was added by the failed calls. */
	assert_int_equal(ks_pred_count(m), 0);
	assert_int_equal(ks_pred_scalar(m, 5, NULL, 0, NULL, 0), 0);
	assert_true(run(m) == 10);
	assert_int_equal(ks_pred_scalar(m, 5, NULL, 0, NULL, 0), -EINVAL);
	ks_pred_model_free(m);
}

/* ---- outputs ---- */

/* A file's text, NUL-terminated. */
static char *text_of(const char *path)
{
	size_t size;
	unsigned char *raw = ks_test_read_file(path, &size);
	char *t;

	assert_non_null(raw);
	t = strndup((const char *)raw, size);
	free(raw);
	return t;
}

static void test_outputs(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	char *dir = ks_test_tmpdir(), path[4400], out[4096];
	int x, xu, y;
	json_t *j;
	json_error_t je;
	char *text;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 8);
	xu = tensor(m, "xu", "UB", "fp16", 8);
	y = tensor(m, "y", "GM", "fp16", 8);
	ks_pred_set_location(m, "v.kpp", 2, 1);
	load(m, xu, x);
	instr(m, "vadd", xu, xu, xu);
	load(m, y, xu);
	assert_int_equal(ks_pred_write(m, dir, NULL), -EINVAL); /* not run yet */
	run(m);
	snprintf(out, sizeof(out), "%s/a/b", dir);
	snprintf(path, sizeof(path), "%s/pipes.csv", dir);
	/* A pipe the chip does not have is refused, not left out unsaid. */
	ks_test_write_file(path, "Pipe,Time (us)\nVECTR,0.016\ntotal,0.05\n", 0644);
	assert_int_equal(ks_pred_write(m, out, path), -EINVAL);
	ks_test_write_file(path, "Pipe,Time (us)\nVECTOR,0.016\ntotal,0.05\n", 0644);
	assert_int_equal(ks_pred_write(m, out, path), 0);
	snprintf(path, sizeof(path), "%s/trace.json", out);
	j = json_load_file(path, 0, &je);
	assert_non_null(j);
	/* process, 2 per pipe, 3 slices, 2 flows of 2 events (the load to
	 * vadd, once for its two inputs; vadd to the store) */
	assert_int_equal(json_array_size(json_object_get(j, "traceEvents")), 1 + 8 + 3 + 2 * 2);
	json_decref(j);
	snprintf(path, sizeof(path), "%s/Pipe_statistic.csv", out);
	text = text_of(path);
	assert_string_equal(text,
			    "Pipe,Instructions,Busy (us),Share (%),Bytes (read + written),Operations,"
			    "Measured (us),Measured/Predicted\n"
			    "MTE2,1,0.008000,40.00,32,0,,\n"
			    "VECTOR,1,0.008000,40.00,48,8,0.016000,2.0000\n"
			    "MTE3,1,0.004000,20.00,32,0,,\n"
			    "SCALAR,0,0.000000,0.00,0,0,,\n"
			    "total,3,0.020000,100.00,112,8,0.050000,2.5000\n");
	free(text);
	snprintf(path, sizeof(path), "%s/Instruction_statistic.csv", out);
	text = text_of(path);
	assert_string_equal(text,
			    "Instruction,Pipe,Count,Bytes (read + written),Operations,Total (us),Mean (us),"
			    "Share (%)\n"
			    "load GM->UB,MTE2,1,32,0,0.008000,0.008000,40.00\n"
			    "vadd,VECTOR,1,48,8,0.008000,0.008000,40.00\n"
			    "load UB->GM,MTE3,1,32,0,0.004000,0.004000,20.00\n");
	free(text);
	snprintf(path, sizeof(path), "%s/instruction_time.svg", out);
	text = text_of(path);
	assert_non_null(strstr(text, "vadd (VECTOR): 40.0%"));
	free(text);
	/* Written again: replaced. */
	assert_int_equal(ks_pred_write(m, out, NULL), 0);
	ks_pred_model_free(m);
	ks_test_rmtree(dir);
	free(dir);
}

/* ---- the cache hit ratio ---- */

/* test.json's GM has a cache 4 times as fast as memory (tables: misses).
 * x is 64 fp16 = 128 bytes; GM->UB at 2 bytes/cycle takes 64 cycles at
 * ratio 0, 64 * (1 - 0.5 + 0.5/4) = 40 at 0.5 and 64 / 4 = 16 at 1; vadd
 * 64 elements at 1/cycle takes 64; the store (UB->GM: it writes GM, it
 * does not read it) 128 / 4 = 32 whatever the ratio. */
static struct ks_pred_model *cache_model(double first, double second, int *ids)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, y, xu, yu;

	x = tensor(m, "x", "GM", "fp16", 64);
	y = tensor(m, "y", "GM", "fp16", 64);
	xu = tensor(m, "xu", "UB", "fp16", 64);
	yu = tensor(m, "yu", "UB", "fp16", 64);
	if (first >= 0)
		assert_int_equal(ks_pred_set_cache_hit_ratio(m, first), 0);
	ids[0] = load(m, xu, x);
	ids[1] = instr(m, "vadd", xu, xu, yu);
	ids[2] = load(m, y, yu);
	/* a model-level setting: it applies to the load before it too */
	if (second >= 0)
		assert_int_equal(ks_pred_set_cache_hit_ratio(m, second), 0);
	return m;
}

static void test_cache_hit_ratio(void **state)
{
	static const struct {
		double first, second, load, total;
	} cases[] = {
		{ -1, -1, 64, 160 },  /* not set: the tables as they are */
		{ 0, -1, 64, 160 },
		{ -1, 0.5, 40, 136 },
		{ 0.25, 1, 16, 112 }, /* the last setting wins */
	};
	struct ks_pred_model *m;
	int ids[3];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		double l = cases[i].load, total;

		m = cache_model(cases[i].first, cases[i].second, ids);
		total = run(m);
		if (total != cases[i].total)
			fail_msg("case %zu: total %g, expected %g", i, total, cases[i].total);
		expect(m, ids[0], "MTE2", 0, l);
		expect(m, ids[1], "VECTOR", l, l + 64);
		expect(m, ids[2], "MTE3", l + 64, l + 96);
		ks_pred_model_free(m);
	}
	/* Outside 0..1, not a number: refused, the model unchanged. */
	m = cache_model(0.5, -1, ids);
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, 1.5), -EINVAL);
	assert_string_equal(ks_pred_error(m), "cache_hit_ratio: 1.5 is not from 0 to 1 (the "
			    "fraction of reads from a cached space that hit the cache)");
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, -0.25), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "-0.25 is not from 0 to 1"));
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, NAN), -EINVAL);
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, INFINITY), -EINVAL);
	assert_true(run(m) == 136);
	/* after scheduling: nothing changes any more */
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, 1), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "already scheduled"));
	ks_pred_model_free(m);
	/* A chip without a cache says so. */
	m = model(FOOT_CHIP);
	assert_int_equal(ks_pred_set_cache_hit_ratio(m, 0.5), -EINVAL);
	assert_string_equal(ks_pred_error(m), "cache_hit_ratio: chip footprint describes no "
			    "cache (none of its spaces has \"cache\"), so a hit ratio would "
			    "change nothing");
	ks_pred_model_free(m);
}

/* Cores (chips/cores.json: test.json with AIC0 {MTE2, SCALAR; L1} and
 * AIV0, AIV1 {MTE2, VECTOR, MTE3, SCALAR; UB}, GM shared).  z = x + y on
 * 64 fp16, split between the two vector cores, 32 elements (64 bytes)
 * each: a load is 64 / 2 = 32 cycles, vadd 32 / 1 = 32, the store
 * 64 / 4 = 16; each core 32 + 32 + 32 + 16 = 112, and so the total, as
 * the cores run side by side.  One core doing all 64 elements: 128 bytes
 * per load (64 cycles each), vadd 64, store 32: 224, twice as long. */
static void test_cores(void **state)
{
	struct ks_pred_model *m = model(CORES_CHIP);
	struct ks_pred_slice sl;
	double cycles;
	int x, y, z, xs, ys, zs, id;

	(void)state;
	x = tensor(m, "x", "GM", "fp16", 64);
	y = tensor(m, "y", "GM", "fp16", 64);
	z = tensor(m, "z", "GM", "fp16", 64);
	xs = ks_pred_split(m, x, 0, 2, NULL);
	ys = ks_pred_split(m, y, 0, 2, NULL);
	zs = ks_pred_split(m, z, 0, 2, NULL);
	for (int c = 0; c < 2; c++) {
		int xu, yu, zu;

		assert_int_equal(ks_pred_set_core(m, c ? "aiv1" : "AIV0"), 0);
		xu = tensor(m, "xu", "UB", "fp16", 32);
		yu = tensor(m, "yu", "UB", "fp16", 32);
		zu = tensor(m, "zu", "UB", "fp16", 32);
		load(m, xu, xs + c);
		load(m, yu, ys + c);
		instr(m, "vadd", xu, yu, zu);
		load(m, zs + c, zu);
	}
	assert_int_equal(ks_pred_run(m, &cycles), 0);
	assert_true(fabs(cycles - 112) < 1e-9);
	for (int k = 0; k < 8; k++) {
		static const double start[4] = { 0, 32, 64, 96 }, end[4] = { 32, 64, 96, 112 };
		static const char *const pipe[4] = { "MTE2", "MTE2", "VECTOR", "MTE3" };
		char want[32];

		assert_int_equal(ks_pred_slice(m, k, &sl), 0);
		snprintf(want, sizeof(want), "AIV%d.%s", k / 4, pipe[k % 4]);
		assert_string_equal(sl.pipe, want);
		assert_true(fabs(sl.start - start[k % 4]) < 1e-9 && fabs(sl.end - end[k % 4]) < 1e-9);
	}
	ks_pred_model_free(m);

	/* The same on one core: 224. */
	m = model(CORES_CHIP);
	assert_int_equal(ks_pred_set_core(m, "AIV0"), 0);
	x = tensor(m, "x", "GM", "fp16", 64);
	y = tensor(m, "y", "GM", "fp16", 64);
	z = tensor(m, "z", "GM", "fp16", 64);
	xs = tensor(m, "xu", "UB", "fp16", 64);
	ys = tensor(m, "yu", "UB", "fp16", 64);
	zs = tensor(m, "zu", "UB", "fp16", 64);
	load(m, xs, x);
	load(m, ys, y);
	instr(m, "vadd", xs, ys, zs);
	load(m, z, zs);
	/* GM orders work across cores: AIV1 reads z after AIV0 wrote it. */
	assert_int_equal(ks_pred_set_core(m, "AIV1"), 0);
	x = tensor(m, "zv", "UB", "fp16", 64);
	id = load(m, x, z);
	assert_int_equal(ks_pred_run(m, &cycles), 0);
	assert_int_equal(ks_pred_slice(m, 3, &sl), 0);
	assert_true(fabs(sl.end - 224) < 1e-9);
	assert_int_equal(ks_pred_slice(m, id, &sl), 0);
	assert_string_equal(sl.pipe, "AIV1.MTE2");
	assert_true(fabs(sl.start - 224) < 1e-9 && fabs(sl.end - 288) < 1e-9);
	ks_pred_model_free(m);
}

static void test_cores_refused(void **state)
{
	struct ks_pred_model *m = model(TEST_CHIP);
	int x, xu, a, b, id;
	double cycles;

	(void)state;
	/* A chip without cores. */
	assert_int_equal(ks_pred_set_core(m, "AIV0"), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "chip test describes no cores"));
	ks_pred_model_free(m);

	m = model(CORES_CHIP);
	assert_int_equal(ks_pred_set_core(m, "AIV7"), -EINVAL);
	assert_string_equal(ks_pred_error(m), "core \"AIV7\" is not one of chip cores's: "
			    "AIC0, AIV0, AIV1");
	x = tensor(m, "x", "GM", "fp16", 64);
	xu = tensor(m, "xu", "UB", "fp16", 64);
	a = tensor(m, "a", "UB", "fp16", 64);
	b = tensor(m, "b", "UB", "fp16", 64);
	/* A pipe the core lacks. */
	assert_int_equal(ks_pred_set_core(m, "AIC0"), 0);
	assert_int_equal(ks_pred_instr(m, "vadd", (int[]){ a, b }, 2, &xu, 1), -EINVAL);
	assert_string_equal(ks_pred_error(m), "vadd: core AIC0 has no VECTOR pipe; its "
			    "pipes: MTE2, SCALAR");
	/* A space the core lacks. */
	assert_int_equal(ks_pred_load(m, xu, x), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "xu is in UB, which core AIC0 does not have"));
	/* Another core's buffer. */
	assert_int_equal(ks_pred_set_core(m, "AIV0"), 0);
	load(m, xu, x);
	assert_int_equal(ks_pred_set_core(m, "AIV1"), 0);
	assert_int_equal(ks_pred_instr(m, "vadd", (int[]){ xu, b }, 2, &a, 1), -EINVAL);
	assert_string_equal(ks_pred_error(m), "vadd: xu is in AIV0's UB, but this instruction "
			    "is issued to core AIV1; UB is per core: pass data between cores "
			    "through a shared space (GM)");
	/* The refused call took nothing: a and b are no core's yet, so AIV0
	 * may use them. */
	assert_int_equal(ks_pred_set_core(m, "AIV0"), 0);
	id = ks_pred_instr(m, "vadd", (int[]){ xu, b }, 2, &a, 1);
	assert_true(id >= 0);
	ks_pred_model_free(m);

	/* No core selected after cores were used; a core after instructions
	 * issued to the chip as one core. */
	m = model(CORES_CHIP);
	x = tensor(m, "x", "GM", "fp16", 64);
	xu = tensor(m, "xu", "UB", "fp16", 64);
	assert_int_equal(ks_pred_set_core(m, "AIV0"), 0);
	assert_int_equal(ks_pred_set_core(m, NULL), 0);
	assert_int_equal(ks_pred_load(m, xu, x), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "none is selected"));
	ks_pred_model_free(m);
	m = model(CORES_CHIP);
	x = tensor(m, "x", "GM", "fp16", 64);
	xu = tensor(m, "xu", "UB", "fp16", 64);
	load(m, xu, x);
	assert_int_equal(ks_pred_set_core(m, "AIV0"), -EINVAL);
	assert_non_null(strstr(ks_pred_error(m), "1 instructions were issued before it"));
	/* Without core, the chip's own pipes, as before. */
	assert_int_equal(ks_pred_run(m, &cycles), 0);
	assert_true(fabs(cycles - 64) < 1e-9);
	ks_pred_model_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_pipes),
		cmocka_unit_test(test_double_buffering),
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_deadlock),
		cmocka_unit_test(test_ties),
		cmocka_unit_test(test_split_readiness),
		cmocka_unit_test(test_buffer_reuse),
		cmocka_unit_test(test_waw),
		cmocka_unit_test(test_split_pieces_to_parent),
		cmocka_unit_test(test_split_parent_to_pieces),
		cmocka_unit_test(test_flags),
		cmocka_unit_test(test_interpolation),
		cmocka_unit_test(test_path_interpolation),
		cmocka_unit_test(test_footprint),
		cmocka_unit_test(test_register),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_outputs),
		cmocka_unit_test(test_cache_hit_ratio),
		cmocka_unit_test(test_cores),
		cmocka_unit_test(test_cores_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
