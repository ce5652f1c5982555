/*
 * kscope predict's scheduler rate, for bench/predict_speed.sh: builds a
 * model of N instructions through the C API (a double-buffered vector
 * kernel: per tile a load, a vadd and a store, over two UB buffers, on the
 * chip given) and times ks_pred_run alone.  Prints
 * "instructions=N build_s=B schedule_s=S rate=R" (R: instructions
 * scheduled per second).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kscope/predict.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	char err[1024];
	struct ks_pred_model *m;
	long long n, tiles;
	int64_t tile = 256, shape[1];
	int x, z, buf[2], out[2];
	double t0, t1, t2, cycles;

	if (argc != 3 || (n = atoll(argv[2])) < 3) {
		fprintf(stderr, "usage: predict_rate CHIP INSTRUCTIONS (at least 3)\n");
		return 2;
	}
	tiles = n / 3;
	t0 = now();
	m = ks_pred_model_new(argv[1], err, sizeof(err));
	if (!m) {
		fprintf(stderr, "predict_rate: %s\n", err);
		return 1;
	}
	shape[0] = tile;
	x = ks_pred_tensor(m, "x", "GM", "fp16", shape, 1, NULL);
	z = ks_pred_tensor(m, "z", "GM", "fp16", shape, 1, NULL);
	buf[0] = ks_pred_tensor(m, "ping", "UB", "fp16", shape, 1, NULL);
	buf[1] = ks_pred_tensor(m, "pong", "UB", "fp16", shape, 1, NULL);
	out[0] = ks_pred_tensor(m, "out0", "UB", "fp16", shape, 1, NULL);
	out[1] = ks_pred_tensor(m, "out1", "UB", "fp16", shape, 1, NULL);
	for (long long i = 0; i < tiles; i++) {
		int in[2] = { buf[i % 2], buf[i % 2] }, o[1] = { out[i % 2] };

		if (ks_pred_load(m, buf[i % 2], x) < 0 || ks_pred_instr(m, "vadd", in, 2, o, 1) < 0 ||
		    ks_pred_load(m, z, out[i % 2]) < 0) {
			fprintf(stderr, "predict_rate: %s\n", ks_pred_error(m));
			return 1;
		}
	}
	t1 = now();
	if (ks_pred_run(m, &cycles)) {
		fprintf(stderr, "predict_rate: %s\n", ks_pred_error(m));
		return 1;
	}
	t2 = now();
	printf("instructions=%zu build_s=%.4f schedule_s=%.4f rate=%.0f cycles=%.0f\n",
	       ks_pred_count(m), t1 - t0, t2 - t1, (double)ks_pred_count(m) / (t2 - t1),
	       cycles);
	ks_pred_model_free(m);
	return 0;
}
