/*
 * The models of tests/predict/lang/models/ (.kpp files) written with the C API
 * (include/kscope/predict.h), for three_ways.py, which checks that the
 * text language, the C API and the Python module schedule them the same.
 * Prints the schedule as kpp_driver --schedule does.
 *
 *   kpp_capi CHIP MODEL      (MODEL: two_pipes, double_buffer, mmad,
 *                             registered, tiled_add, flags, cache, cores)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kscope/predict.h"

/* Any failed call ends the program with the library's message. */
static struct ks_pred_model *M;

static int ok(int rc, int line)
{
	if (rc < 0) {
		fprintf(stderr, "kpp_capi.c:%d: %s\n", line, ks_pred_error(M));
		exit(1);
	}
	return rc;
}

#define OK(call) ok((call), __LINE__)

static int tensor(const char *name, const char *space, const char *dtype, int64_t d0,
		  int64_t d1, const char *format)
{
	int64_t shape[2] = { d0, d1 };

	return OK(ks_pred_tensor(M, name, space, dtype, shape, d1 ? 2 : 1, format));
}

static void load(int dst, int src)
{
	OK(ks_pred_load(M, dst, src));
}

static void instr(const char *name, int a, int b, int out)
{
	int in[2] = { a, b };

	OK(ks_pred_instr(M, name, in, b < 0 ? 1 : 2, &out, 1));
}

static int split(int t, int axis, int parts)
{
	int *ids = malloc((size_t)parts * sizeof(*ids));
	int first;

	if (!ids)
		abort();
	first = OK(ks_pred_split(M, t, axis, parts, ids));
	free(ids);
	return first;
}

static void two_pipes(void)
{
	const int64_t n = 4096;
	int x = tensor("x", "GM", "fp16", n, 0, NULL);
	int y = tensor("y", "GM", "fp16", n, 0, NULL);
	int xu = tensor("xu", "UB", "fp16", n, 0, NULL);
	int yu = tensor("yu", "UB", "fp16", n, 0, NULL);

	load(xu, x);
	instr("vexp", xu, -1, yu);
	load(y, yu);
}

static void double_buffer(void)
{
	const int64_t n = 32768, tile = 2048, t = n / tile;
	int x = tensor("x", "GM", "fp16", n, 0, NULL);
	int z = tensor("z", "GM", "fp16", n, 0, NULL);
	int xs = split(x, 0, (int)t), zs = split(z, 0, (int)t);
	int xbuf = tensor("xbuf", "UB", "fp16", 2, tile, NULL);
	int zbuf = tensor("zbuf", "UB", "fp16", 2, tile, NULL);
	int xb = split(xbuf, 0, 2), zb = split(zbuf, 0, 2);

	for (int i = 0; i < t; i++) {
		int b = i % 2;

		load(xb + b, xs + i);
		instr("vrelu", xb + b, -1, zb + b);
		load(zs + i, zb + b);
	}
}

static void mmad(void)
{
	const int64_t m = 64, k = 256, n = 64, kt = 64, ks = (k + kt - 1) / kt;
	int a = tensor("a", "GM", "fp16", m, k, NULL);
	int b = tensor("b", "GM", "fp16", k, n, NULL);
	int c = tensor("c", "GM", "fp32", m, n, NULL);
	int a1 = tensor("a1", "L1", "fp16", m, k, "NZ");
	int b1 = tensor("b1", "L1", "fp16", k, n, "NZ");
	int as, bs, acc;

	load(a1, a);
	load(b1, b);
	as = split(a1, 1, (int)ks);
	bs = split(b1, 0, (int)ks);
	acc = tensor("acc", "L0C", "fp32", m, n, NULL);
	for (int i = 0; i < ks; i++) {
		int a0 = tensor("a0", "L0A", "fp16", m, kt, "NZ");
		int b0 = tensor("b0", "L0B", "fp16", kt, n, "NZ");

		load(a0, as + i);
		load(b0, bs + i);
		instr("mmad", a0, b0, acc);
	}
	load(c, acc);
}

static void registered(void)
{
	const double sizes[] = { 256, 4096 }, tput[] = { 4, 32.5 };
	const int64_t n = 8192;
	int x, y, xu, yu, zu;

	OK(ks_pred_register(M, "vsquare", "VECTOR", "size / 32 + 8", NULL, NULL, 0, 1));
	OK(ks_pred_register(M, "vgelu", "VECTOR", NULL, sizes, tput, 2, 8));
	x = tensor("x", "GM", "fp16", n, 0, NULL);
	y = tensor("y", "GM", "fp16", n, 0, NULL);
	xu = tensor("xu", "UB", "fp16", n, 0, NULL);
	yu = tensor("yu", "UB", "fp16", n, 0, NULL);
	zu = tensor("zu", "UB", "fp16", n, 0, NULL);
	load(xu, x);
	OK(ks_pred_scalar(M, 16, NULL, 0, NULL, 0));
	instr("vsquare", xu, -1, yu);
	instr("vgelu", yu, -1, zu);
	instr("vadd", zu, yu, yu);
	OK(ks_pred_scalar(M, 40, &yu, 1, &zu, 1));
	load(y, yu);
}

static void tiled_add(void)
{
	const int64_t n = 65536, tile = 4096, t = n / tile;
	int x = tensor("x", "GM", "fp16", n, 0, NULL);
	int y = tensor("y", "GM", "fp16", n, 0, NULL);
	int z = tensor("z", "GM", "fp16", n, 0, NULL);
	int xs = split(x, 0, (int)t), ys = split(y, 0, (int)t), zs = split(z, 0, (int)t);

	for (int i = 0; i < t; i++) {
		int xu = tensor("xu", "UB", "fp16", tile, 0, NULL);
		int yu = tensor("yu", "UB", "fp16", tile, 0, NULL);
		int zu = tensor("zu", "UB", "fp16", tile, 0, NULL);

		load(xu, xs + i);
		load(yu, ys + i);
		instr("vadd", xu, yu, zu);
		load(zs + i, zu);
	}
}

static void flags(void)
{
	const int64_t n = 4096;
	int x = tensor("x", "GM", "fp16", n, 0, NULL);
	int y = tensor("y", "GM", "fp16", n, 0, NULL);
	int z = tensor("z", "GM", "fp16", n, 0, NULL);
	int xu = tensor("xu", "UB", "fp16", n, 0, NULL);
	int yu = tensor("yu", "UB", "fp16", n, 0, NULL);

	load(xu, x);
	OK(ks_pred_set_flag(M, "MTE2", "VECTOR", 0));
	OK(ks_pred_wait_flag(M, "MTE2", "VECTOR", 0));
	instr("vexp", xu, -1, yu);
	OK(ks_pred_wait_flag(M, "MTE3", "VECTOR", 1));
	instr("vabs", yu, -1, xu);
	load(y, yu);
	OK(ks_pred_set_flag(M, "MTE3", "VECTOR", 1));
	load(z, xu);
}

static void cache(void)
{
	const int64_t n = 8192, tile = 2048, t = n / tile;
	int x, y, xs, ys;

	OK(ks_pred_set_cache_hit_ratio(M, 0.6));
	x = tensor("x", "GM", "fp16", n, 0, NULL);
	y = tensor("y", "GM", "fp16", n, 0, NULL);
	xs = split(x, 0, (int)t);
	ys = split(y, 0, (int)t);
	for (int i = 0; i < t; i++) {
		int xu = tensor("xu", "UB", "fp16", tile, 0, NULL);
		int yu = tensor("yu", "UB", "fp16", tile, 0, NULL);

		load(xu, xs + i);
		instr("vexp", xu, -1, yu);
		load(ys + i, yu);
	}
}

static void cores(void)
{
	const int64_t n = 16384, tile = 4096, t = n / tile, h = t / 2;
	int x = tensor("x", "GM", "fp16", n, 0, NULL);
	int y = tensor("y", "GM", "fp16", n, 0, NULL);
	int z = tensor("z", "GM", "fp16", n, 0, NULL);
	int xs = split(x, 0, (int)t), ys = split(y, 0, (int)t), zs = split(z, 0, (int)t);

	for (int c = 0; c < 2; c++) {
		OK(ks_pred_set_core(M, c ? "AIV1" : "AIV0"));
		for (int i = 0; i < h; i++) {
			int xu = tensor("xu", "UB", "fp16", tile, 0, NULL);
			int yu = tensor("yu", "UB", "fp16", tile, 0, NULL);
			int zu = tensor("zu", "UB", "fp16", tile, 0, NULL);
			int k = c * (int)h + i;

			load(xu, xs + k);
			load(yu, ys + k);
			instr("vadd", xu, yu, zu);
			load(zs + k, zu);
		}
	}
}

static const struct {
	const char *name;
	void (*build)(void);
} models[] = {
	{ "two_pipes", two_pipes }, { "double_buffer", double_buffer }, { "mmad", mmad },
	{ "registered", registered }, { "tiled_add", tiled_add }, { "flags", flags },
	{ "cache", cache }, { "cores", cores },
};

int main(int argc, char **argv)
{
	char err[4096];
	double cycles;
	size_t i;

	if (argc != 3) {
		fprintf(stderr, "usage: kpp_capi CHIP MODEL\n");
		return 2;
	}
	for (i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (strcmp(models[i].name, argv[2]) == 0)
			break;
	if (i == sizeof(models) / sizeof(models[0])) {
		fprintf(stderr, "kpp_capi: no model %s\n", argv[2]);
		return 2;
	}
	M = ks_pred_model_new(argv[1], err, sizeof(err));
	if (!M) {
		fprintf(stderr, "%s\n", err);
		return 2;
	}
	models[i].build();
	OK(ks_pred_run(M, &cycles));
	for (size_t k = 0; k < ks_pred_count(M); k++) {
		struct ks_pred_slice s;

		OK(ks_pred_slice(M, (int)k, &s));
		printf("%zu\t%s\t%s\t%.17g\t%.17g\t%s\n", k, s.name, s.pipe, s.start, s.end,
		       s.location);
	}
	printf("cycles\t%.17g\n", cycles);
	ks_pred_model_free(M);
	return 0;
}
