/*
 * libFuzzer target for kscope op's deliverables (src/op/post): the raw
 * files come from the program under test, so every byte of them is
 * untrusted.  The first input byte picks what the rest is:
 *
 *   0  a --flops expression, parsed and evaluated over fixed names
 *   1  context.json (measure.json is a valid one)
 *   2  measure.json (context.json is a valid one)
 *   3  both, split at the first NUL byte: context.json, then measure.json
 *
 * For 1 to 3 the deliverables are written (replacing the previous
 * iteration's) with a calibration and a --flops expression, so every
 * writer runs.  Nothing may crash, read out of bounds or leak; the
 * container written must read back with every payload checked.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kscope/vizbin.h>

#include "oppost.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ctx_ok[] =
	"{\"kind\":\"kernel\",\"name\":\"k\",\"index\":1,\"pid\":2,"
	"\"device\":{\"name\":\"d\"},\"program\":{\"origin\":\"source\","
	"\"file\":\"kernel.cl\"},\"work\":{\"dim\":2,\"global\":[64,32],"
	"\"local\":[8,8]},\"args\":[{\"index\":0,\"name\":\"a\",\"kind\":\"buffer\","
	"\"buffer\":{\"bytes\":256,\"flags\":[\"CL_MEM_READ_WRITE\"]}},"
	"{\"index\":1,\"name\":\"N\",\"kind\":\"scalar\",\"value\":64}]}";
static const char measure_ok[] =
	"{\"mode\":\"kernel\",\"status\":\"ok\",\"warmup\":1,\"passes\":2,"
	"\"flush\":true,\"pass_ns\":[1000,2000],\"pass_queued_ns\":[10,3000],"
	"\"warmup_ns\":[500],\"buffers\":[{\"arg\":0,\"bytes\":256,"
	"\"backed_up\":true,\"bytes_read\":256,\"bytes_written\":128}],"
	"\"counters\":{\"supported\":true,\"per_pass\":[{\"cycles\":5},{\"cycles\":6}]}}";

static char dir[64];
static struct ks_rundir run = { .path = NULL, .dirfd = -1 };

static void put(const char *name, const void *buf, size_t len)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/1/k_1/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || (len && write(fd, buf, len) != (ssize_t)len))
		abort();
	close(fd);
}

/* Removes what setup made (at exit: libFuzzer ends with exit()). */
static void cleanup(void)
{
	char path[128];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/1/k_1", dir);
	d = opendir(path);
	while (d && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			char f[400];

			snprintf(f, sizeof(f), "%s/%s", path, de->d_name);
			unlink(f);
		}
	if (d)
		closedir(d);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/1", dir);
	rmdir(path);
	rmdir(dir);
}

static void setup(void)
{
	char path[128];

	snprintf(dir, sizeof(dir), "/tmp/kscope-fuzz-oppost.XXXXXX");
	if (!mkdtemp(dir))
		abort();
	snprintf(path, sizeof(path), "%s/1", dir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/1/k_1", dir);
	mkdir(path, 0700);
	run.path = strdup(dir);
	run.dirfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (!run.path || run.dirfd < 0)
		abort();
	put("kernel.cl", "kernel void k() {}\n", 19);
	atexit(cleanup);
}

static void fuzz_flops(const uint8_t *data, size_t size)
{
	static const struct ks_expr_var vars[] = { { "M", 3 }, { "N", 1e200 }, { "z", 0 } };
	char *text = strndup((const char *)data, size);
	struct ks_expr *f;
	struct ks_err err;
	double v;

	if (!text)
		return;
	if (ks_expr_parse(text, &f, &err) == 0) {
		if (ks_expr_eval(f, vars, 3, &v, &err) == 0 && !(v >= 0))
			abort(); /* a value is a non-negative number */
		if (strcmp(ks_expr_text(f), text) != 0)
			abort();
		ks_expr_free(f);
	}
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_calib calib = {
		.nmem = 2, .mem = { { "L1", 1e11, "", 0 }, { "DRAM", 1e10, "", 0 } },
		.ncompute = 1, .compute = { { "CPU FP32 FMA", 1e11, "", 0 } },
	};
	struct ks_oppost_opts o = { .calib = &calib, .replace = true };
	struct ks_oppost_result res;
	struct ks_expr *flops;
	struct ks_vb_reader *r;
	struct ks_vb_error verr;
	struct ks_err err;
	char path[160];

	if (!run.path)
		setup();
	if (size == 0)
		return 0;
	if (data[0] % 4 == 0) {
		fuzz_flops(data + 1, size - 1);
		return 0;
	}
	data++;
	size--;
	switch (data[-1] % 4) {
	case 1:
		put("context.json", data, size);
		put("measure.json", measure_ok, sizeof(measure_ok) - 1);
		break;
	case 2:
		put("context.json", ctx_ok, sizeof(ctx_ok) - 1);
		put("measure.json", data, size);
		break;
	default: {
		const uint8_t *nul = memchr(data, 0, size);
		size_t n = nul ? (size_t)(nul - data) : size;

		put("context.json", data, n);
		put("measure.json", nul ? nul + 1 : data, nul ? size - n - 1 : 0);
		break;
	}
	}
	if (ks_expr_parse("2*N*gx/lx+gy", &flops, &err) != 0)
		abort();
	o.flops = flops;
	if (ks_oppost_launch(&run, "1/k_1", &o, &res, &err) != 0)
		abort(); /* bad raw files are warnings, never errors */
	snprintf(path, sizeof(path), "%s/1/k_1/visualize_data.bin", dir);
	if (ks_vb_open(path, KS_VB_CHECK_PAYLOADS, &r, &verr) != 0)
		abort();
	ks_vb_close(r);
	ks_expr_free(flops);
	return 0;
}
