/*
 * Unit tests of the calibration library (src/op/calib): the cache file's
 * path, writing and reading it back, every kind of damage the reader
 * must report (with the file and the problem named), the cache
 * directory's safety check, the machine key (unchanged without CUDA
 * devices, changed by them) and the NVIDIA GPUs read for it, the "cuda"
 * object, the CUDA calibration's PTX texts, the assignment of sweep
 * points to cache levels on a made-up machine, each instruction set's
 * kernels on this CPU, and the thread team.  Files live in a temporary
 * directory that XDG_CACHE_HOME points to.
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
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "calib.h"
#include "calib_int.h"
#include "test_util.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

static char *use_tmp_cache(void)
{
	char *dir = ks_test_tmpdir();

	assert_int_equal(setenv("XDG_CACHE_HOME", dir, 1), 0);
	return dir;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_mode & 07777;
}

/* ---------------------------------------------------------------------
 * Path, save, load
 * --------------------------------------------------------------------- */

static void test_path(void **state)
{
	char *dir = use_tmp_cache(), path[4096], want[4096], cwd[4096];
	char *home = ks_test_tmpdir();
	struct ks_calib_machine m;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	assert_int_equal(strlen(m.key), 16);
	assert_int_equal(strspn(m.key, "0123456789abcdef"), 16);
	assert_int_equal(ks_calib_path(path, sizeof(path), &e), 0);
	snprintf(want, sizeof(want), "%s/kscope/calibration-%s.json", dir, m.key);
	assert_string_equal(path, want);

	/* A relative XDG_CACHE_HOME is ignored (XDG base directory spec).
	 * The OpenCL driver listing the devices may not ignore it: run in
	 * the temporary directory. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(home), 0);
	assert_int_equal(setenv("XDG_CACHE_HOME", "relative/cache", 1), 0);
	assert_int_equal(setenv("HOME", home, 1), 0);
	assert_int_equal(ks_calib_path(path, sizeof(path), &e), 0);
	snprintf(want, sizeof(want), "%s/.cache/kscope/calibration-%s.json", home,
		 m.key);
	assert_string_equal(path, want);
	assert_int_equal(unsetenv("XDG_CACHE_HOME"), 0);
	assert_int_equal(ks_calib_path(path, sizeof(path), &e), 0);
	assert_string_equal(path, want);
	assert_int_equal(chdir(cwd), 0);

	ks_test_rmtree(dir);
	ks_test_rmtree(home);
	free(dir);
	free(home);
}

static void test_machine_probe(void **state)
{
	struct ks_calib_machine a, b;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_machine_probe(&a, &e), 0);
	assert_int_equal(ks_calib_machine_probe(&b, &e), 0);
	/* The key is stable and covers what the machine is. */
	assert_string_equal(a.key, b.key);
	assert_true(a.cpu[0] != '\0');
	assert_true(a.cpus >= 1);
	assert_true(a.memory_bytes > 0);
	for (size_t i = 1; i < a.ncaches; i++)
		assert_true(a.caches[i].level > a.caches[i - 1].level);
	for (size_t i = 0; i < a.ncaches; i++) {
		assert_true(a.caches[i].bytes > 0);
		assert_true(a.caches[i].shared_cpus >= 1);
		assert_true(strcmp(a.caches[i].type, "Data") == 0 ||
			    strcmp(a.caches[i].type, "Unified") == 0);
	}
	if (access("/sys/devices/system/cpu/cpu0/cache/index0/size", R_OK) == 0)
		assert_true(a.ncaches >= 1);
}

static void test_load_missing(void **state)
{
	char *dir = use_tmp_cache();
	struct ks_calib c;
	struct ks_err e;

	(void)state;
	ks_err_clear(&e);
	assert_int_equal(ks_calib_load(&c, &e), -ENOENT);
	assert_non_null(strstr(e.msg, "kscope calibrate"));
	assert_non_null(strstr(e.msg, dir));
	assert_int_equal(c.nmem, 0);
	ks_test_rmtree(dir);
	free(dir);
}

/* A calibration with made-up figures, memory deliberately not sorted. */
static void fill(struct ks_calib *c)
{
	static const char *const mem[] = { "L2", "L1", "DRAM" };
	static const double bw[] = { 150e9, 400e9, 20e9 };

	for (size_t i = 0; i < 3; i++) {
		snprintf(c->mem[i].name, sizeof(c->mem[i].name), "%s", mem[i]);
		c->mem[i].per_s = bw[i];
		c->mem[i].working_set = (i + 1) * 65536;
		snprintf(c->mem[i].how, sizeof(c->mem[i].how), "C, test, 2 threads");
	}
	c->nmem = 3;
	snprintf(c->compute[0].name, sizeof(c->compute[0].name), "CPU FP32 FMA");
	c->compute[0].per_s = 2.5e11;
	snprintf(c->compute[0].how, sizeof(c->compute[0].how), "C, AVX2 FMA, 2 threads");
	snprintf(c->compute[1].name, sizeof(c->compute[1].name), "OpenCL FP32 (dev)");
	c->compute[1].per_s = 1.25e11;
	c->ncompute = 2;
	c->have_opencl = 1;
	snprintf(c->opencl_device, sizeof(c->opencl_device), "dev");
	snprintf(c->opencl_driver, sizeof(c->opencl_driver), "1.0");
	c->opencl_bytes_per_s = 1.5e10;
	c->opencl_flops_per_s = 1.25e11;
	c->quick = true;
	c->threads = 2;
	snprintf(c->created, sizeof(c->created), "2026-01-02T03:04:05Z");
}

static void test_save_load(void **state)
{
	char *dir = use_tmp_cache(), kdir[4096];
	static struct ks_calib c, r;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_prepare(&c, &e), 0);
	snprintf(kdir, sizeof(kdir), "%s/kscope", dir);
	assert_int_equal(mode_of(kdir), 0700);
	fill(&c);
	assert_int_equal(ks_calib_save(&c, &e), 0);
	assert_int_equal(mode_of(c.path), 0600);

	assert_int_equal(ks_calib_load(&r, &e), 0);
	assert_string_equal(r.path, c.path);
	assert_string_equal(r.key, c.key);
	assert_string_equal(r.created, "2026-01-02T03:04:05Z");
	assert_int_equal(r.nmem, 3);
	/* Fastest first, whatever the file's order. */
	assert_string_equal(r.mem[0].name, "L1");
	assert_string_equal(r.mem[1].name, "L2");
	assert_string_equal(r.mem[2].name, "DRAM");
	assert_true(r.mem[0].per_s == 400e9);
	assert_true(r.mem[2].per_s == 20e9);
	assert_int_equal(r.mem[0].working_set, 2 * 65536);
	assert_string_equal(r.mem[0].how, "C, test, 2 threads");
	assert_int_equal(r.ncompute, 2);
	assert_string_equal(r.compute[0].name, "CPU FP32 FMA");
	assert_true(r.compute[0].per_s == 2.5e11);
	assert_string_equal(r.compute[0].how, "C, AVX2 FMA, 2 threads");
	assert_int_equal(r.have_opencl, 1);
	assert_string_equal(r.opencl_device, "dev");
	assert_string_equal(r.opencl_driver, "1.0");
	assert_true(r.opencl_bytes_per_s == 1.5e10);
	assert_true(r.opencl_flops_per_s == 1.25e11);
	assert_true(r.quick);
	assert_int_equal(r.threads, 2);
	assert_false(r.have_cuda);

	/* With a CUDA device: its object and ceilings come back. */
	c.have_cuda = true;
	snprintf(c.cuda.device, sizeof(c.cuda.device), "NVIDIA H200");
	snprintf(c.cuda.driver, sizeof(c.cuda.driver), "580.159.04, CUDA 13.0");
	snprintf(c.cuda.cc, sizeof(c.cuda.cc), "9.0");
	c.cuda.sms = 132;
	c.cuda.bytes_per_s = 4.25e12;
	c.cuda.fp32 = 6.5e13;
	c.cuda.fp16 = 1.25e14;
	c.cuda.bf16 = 1.5e14;
	snprintf(c.cuda.bytes_how, sizeof(c.cuda.bytes_how), "PTX, read");
	snprintf(c.cuda.fp32_how, sizeof(c.cuda.fp32_how), "PTX, f32");
	snprintf(c.cuda.fp16_how, sizeof(c.cuda.fp16_how), "PTX, f16x2");
	snprintf(c.cuda.bf16_how, sizeof(c.cuda.bf16_how), "PTX, bf16x2");
	snprintf(c.compute[2].name, sizeof(c.compute[2].name), "CUDA FP32 FMA (NVIDIA H200)");
	c.compute[2].per_s = 6.5e13;
	c.ncompute = 3;
	assert_int_equal(ks_calib_save(&c, &e), 0);
	memset(&r, 0xa5, sizeof(r));
	assert_int_equal(ks_calib_load(&r, &e), 0);
	assert_true(r.have_cuda);
	assert_string_equal(r.cuda.device, "NVIDIA H200");
	assert_string_equal(r.cuda.driver, "580.159.04, CUDA 13.0");
	assert_string_equal(r.cuda.cc, "9.0");
	assert_int_equal(r.cuda.sms, 132);
	assert_true(r.cuda.bytes_per_s == 4.25e12);
	assert_true(r.cuda.fp32 == 6.5e13);
	assert_true(r.cuda.fp16 == 1.25e14);
	assert_true(r.cuda.bf16 == 1.5e14);
	assert_string_equal(r.cuda.bytes_how, "PTX, read");
	assert_string_equal(r.cuda.fp32_how, "PTX, f32");
	assert_string_equal(r.cuda.fp16_how, "PTX, f16x2");
	assert_string_equal(r.cuda.bf16_how, "PTX, bf16x2");
	assert_int_equal(r.ncompute, 3);
	assert_string_equal(r.compute[2].name, "CUDA FP32 FMA (NVIDIA H200)");
	/* Not measured BF16 (a device before sm_80): absent, read as 0. */
	c.cuda.bf16 = 0;
	assert_int_equal(ks_calib_save(&c, &e), 0);
	assert_int_equal(ks_calib_load(&r, &e), 0);
	assert_true(r.have_cuda);
	assert_true(r.cuda.bf16 == 0);
	assert_string_equal(r.cuda.bf16_how, "");
	c.have_cuda = false;
	c.ncompute = 2;

	/* Saving again replaces the file; without OpenCL it is null. */
	c.have_opencl = 0;
	c.quick = false;
	assert_int_equal(ks_calib_save(&c, &e), 0);
	assert_int_equal(ks_calib_load(&r, &e), 0);
	assert_int_equal(r.have_opencl, 0);
	assert_false(r.quick);
	{
		size_t n;
		char *text = (char *)ks_test_read_file(c.path, &n);

		assert_non_null(text);
		text[n] = '\0';
		assert_non_null(strstr(text, "\"opencl\": null"));
		assert_non_null(strstr(text, "\"cuda\": null"));
		free(text);
	}
	/* No temporary file is left next to it. */
	{
		char tmp[4200];

		snprintf(tmp, sizeof(tmp), "%s/kscope", dir);
		assert_int_equal(mode_of(tmp), 0700);
	}
	ks_test_rmtree(dir);
	free(dir);
}

static void test_prepare_unsafe_dir(void **state)
{
	char *dir = use_tmp_cache(), kdir[4096];
	static struct ks_calib c;
	struct ks_err e;

	(void)state;
	snprintf(kdir, sizeof(kdir), "%s/kscope", dir);
	assert_int_equal(mkdir(kdir, 0700), 0);
	assert_int_equal(chmod(kdir, 0777), 0);
	ks_err_clear(&e);
	assert_int_equal(ks_calib_prepare(&c, &e), -EPERM);
	assert_non_null(strstr(e.msg, "writable by other users"));
	assert_int_equal(chmod(kdir, 0700), 0);
	assert_int_equal(ks_calib_prepare(&c, &e), 0);

	/* A missing XDG_CACHE_HOME is created, private. */
	ks_test_rmtree(dir);
	assert_int_equal(ks_calib_prepare(&c, &e), 0);
	assert_int_equal(mode_of(dir), 0700);
	assert_int_equal(mode_of(kdir), 0700);
	ks_test_rmtree(dir);
	free(dir);
}

/* ---------------------------------------------------------------------
 * Damaged files
 * --------------------------------------------------------------------- */

/* A valid document for this machine, as JSON, to damage. */
static json_t *valid_doc(const char *key)
{
	json_t *mem = json_array(), *compute = json_array();

	for (int i = 0; i < 2; i++)
		json_array_append_new(mem, json_pack("{s:s, s:f, s:i}", "name",
						     i ? "L2" : "L1", "bytes_per_s",
						     i ? 1.5e11 : 4e11, "working_set",
						     32768));
	json_array_append_new(compute, json_pack("{s:s, s:f, s:s}", "name",
						 "CPU FP32 FMA", "flops_per_s", 2e11,
						 "how", "C"));
	return json_pack("{s:i, s:s, s:{s:s, s:s, s:i}, s:o, s:o, s:n}",
			 "kscope_calibration", 1, "created", "2026-01-01T00:00:00Z",
			 "machine", "key", key, "cpu", "test", "cpus", 2,
			 "memory", mem, "compute", compute, "opencl");
}

enum damage {
	D_TRUNCATED, D_ARRAY, D_DUPLICATE, D_VERSION, D_NO_CREATED, D_OTHER_KEY,
	D_BAD_KEY, D_MEM_OBJECT, D_MEM_EMPTY, D_MEM_TOO_MANY, D_NEGATIVE,
	D_ZERO, D_STRING_RATE, D_EMPTY_NAME, D_LONG_NAME, D_CONTROL_NAME,
	D_NO_COMPUTE, D_COMPUTE_NOT_OBJECT, D_OPENCL_NUMBER, D_OPENCL_NEGATIVE,
	D_QUICK_TEXT, D_THREADS_ZERO, D_WORKING_SET, D_HUGE, D_CUDA_NUMBER,
	D_CUDA_NO_DEVICE, D_CUDA_NO_FP32, D_CUDA_NEGATIVE_BF16, D_CUDA_SMS, D_COUNT
};

/* What the message must say for each damage. */
static const char *const damage_msg[D_COUNT] = {
	[D_TRUNCATED] = "invalid JSON at line",
	[D_ARRAY] = "not a JSON object",
	[D_DUPLICATE] = "invalid JSON",
	[D_VERSION] = "format version 2 is not one this kscope reads",
	[D_NO_CREATED] = "\"created\"",
	[D_OTHER_KEY] = "made for another machine (key 0000000000000000",
	[D_BAD_KEY] = "machine.key is not 16 hex digits",
	[D_MEM_OBJECT] = "\"memory\" is of the wrong type, not an array",
	[D_MEM_EMPTY] = "\"memory\" has no ceilings",
	[D_MEM_TOO_MANY] = "\"memory\" has 17 ceilings, at most 16",
	[D_NEGATIVE] = "memory[1].bytes_per_s (L2) is not a positive finite number",
	[D_ZERO] = "memory[0].bytes_per_s (L1) is not a positive finite number",
	[D_STRING_RATE] = "compute[0].flops_per_s (CPU FP32 FMA) is not a positive",
	[D_EMPTY_NAME] = "memory[0].name is not a name",
	[D_LONG_NAME] = "compute[0].name is not a name of 1 to 95",
	[D_CONTROL_NAME] = "memory[1].name is not a name",
	[D_NO_COMPUTE] = "\"compute\" is missing",
	[D_COMPUTE_NOT_OBJECT] = "compute[0] is not an object",
	[D_OPENCL_NUMBER] = "\"opencl\" is neither null nor an object",
	[D_OPENCL_NEGATIVE] = "opencl.flops_per_s is not a positive finite number",
	[D_QUICK_TEXT] = "\"quick\" is not true or false",
	[D_THREADS_ZERO] = "\"threads\" is not a positive integer",
	[D_WORKING_SET] = "memory[0].working_set is not a positive integer",
	[D_HUGE] = "larger than 1048576 bytes",
	[D_CUDA_NUMBER] = "\"cuda\" is neither null nor an object",
	[D_CUDA_NO_DEVICE] = "cuda.device is not a name",
	[D_CUDA_NO_FP32] = "cuda.fp32_flops_per_s is not a positive finite number",
	[D_CUDA_NEGATIVE_BF16] = "cuda.bf16_flops_per_s is not a positive finite number",
	[D_CUDA_SMS] = "cuda.sms is not a positive integer",
};

static char *damaged_text(enum damage d, const char *key)
{
	json_t *doc = valid_doc(key), *mem = json_object_get(doc, "memory");
	json_t *m0 = json_array_get(mem, 0), *m1 = json_array_get(mem, 1);
	json_t *c0 = json_array_get(json_object_get(doc, "compute"), 0);
	char *text, name[200];

	switch (d) {
	case D_TRUNCATED:
		json_decref(doc);
		return strdup("{\"kscope_calibration\": 1,\n \"created\": ");
	case D_ARRAY:
		json_decref(doc);
		return strdup("[1, 2]");
	case D_DUPLICATE:
		json_decref(doc);
		return strdup("{\"kscope_calibration\": 1, \"kscope_calibration\": 1}");
	case D_HUGE:
		json_decref(doc);
		text = malloc((2u << 20) + 1);
		memset(text, ' ', 2u << 20);
		text[2u << 20] = '\0';
		text[0] = '{';
		text[(2u << 20) - 1] = '}';
		return text;
	case D_VERSION:
		json_object_set_new(doc, "kscope_calibration", json_integer(2));
		break;
	case D_NO_CREATED:
		json_object_del(doc, "created");
		break;
	case D_OTHER_KEY:
		json_object_set_new(json_object_get(doc, "machine"), "key",
				    json_string("0000000000000000"));
		break;
	case D_BAD_KEY:
		json_object_set_new(json_object_get(doc, "machine"), "key",
				    json_string("not-a-key"));
		break;
	case D_MEM_OBJECT:
		json_object_set_new(doc, "memory", json_object());
		break;
	case D_MEM_EMPTY:
		json_array_clear(mem);
		break;
	case D_MEM_TOO_MANY:
		for (int i = 0; i < 15; i++)
			json_array_append(mem, m1);
		break;
	case D_NEGATIVE:
		json_object_set_new(m1, "bytes_per_s", json_real(-5));
		break;
	case D_ZERO:
		json_object_set_new(m0, "bytes_per_s", json_integer(0));
		break;
	case D_STRING_RATE:
		json_object_set_new(c0, "flops_per_s", json_string("fast"));
		break;
	case D_EMPTY_NAME:
		json_object_set_new(m0, "name", json_string(""));
		break;
	case D_LONG_NAME:
		memset(name, 'x', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		json_object_set_new(c0, "name", json_string(name));
		break;
	case D_CONTROL_NAME:
		json_object_set_new(m1, "name", json_string("L2\n"));
		break;
	case D_NO_COMPUTE:
		json_object_del(doc, "compute");
		break;
	case D_COMPUTE_NOT_OBJECT:
		json_array_set_new(json_object_get(doc, "compute"), 0, json_integer(1));
		break;
	case D_OPENCL_NUMBER:
		json_object_set_new(doc, "opencl", json_integer(5));
		break;
	case D_OPENCL_NEGATIVE:
		json_object_set_new(doc, "opencl",
				    json_pack("{s:s, s:f, s:f}", "device", "d",
					      "bytes_per_s", 1e10, "flops_per_s", -1.0));
		break;
	case D_QUICK_TEXT:
		json_object_set_new(doc, "quick", json_string("yes"));
		break;
	case D_THREADS_ZERO:
		json_object_set_new(doc, "threads", json_integer(0));
		break;
	case D_WORKING_SET:
		json_object_set_new(m0, "working_set", json_integer(-1));
		break;
	case D_CUDA_NUMBER:
		json_object_set_new(doc, "cuda", json_integer(5));
		break;
	case D_CUDA_NO_DEVICE:
		json_object_set_new(doc, "cuda", json_pack("{s:f, s:f}", "bytes_per_s", 1e12,
							   "fp32_flops_per_s", 1e13));
		break;
	case D_CUDA_NO_FP32:
		json_object_set_new(doc, "cuda", json_pack("{s:s, s:f}", "device", "d",
							   "bytes_per_s", 1e12));
		break;
	case D_CUDA_NEGATIVE_BF16:
		json_object_set_new(doc, "cuda",
				    json_pack("{s:s, s:f, s:f, s:f}", "device", "d",
					      "bytes_per_s", 1e12, "fp32_flops_per_s", 1e13,
					      "bf16_flops_per_s", -1.0));
		break;
	case D_CUDA_SMS:
		json_object_set_new(doc, "cuda",
				    json_pack("{s:s, s:f, s:f, s:s}", "device", "d",
					      "bytes_per_s", 1e12, "fp32_flops_per_s", 1e13,
					      "sms", "many"));
		break;
	case D_COUNT:
		break;
	}
	text = json_dumps(doc, JSON_INDENT(2));
	json_decref(doc);
	return text;
}

static void test_damaged(void **state)
{
	char *dir = use_tmp_cache();
	static struct ks_calib c;
	struct ks_calib_machine m;
	char path[4096];
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_prepare(&c, &e), 0);
	assert_int_equal(ks_calib_machine_probe(&m, &e), 0);
	snprintf(path, sizeof(path), "%s", c.path);
	for (int d = 0; d < D_COUNT; d++) {
		char *text = damaged_text((enum damage)d, m.key);

		ks_test_write_file(path, text, 0600);
		free(text);
		ks_err_clear(&e);
		if (ks_calib_load(&c, &e) != -EINVAL || !strstr(e.msg, damage_msg[d]) ||
		    !strstr(e.msg, path))
			fail_msg("damage %d: got '%s', want -EINVAL and '%s'", d, e.msg,
				 damage_msg[d]);
		/* Nothing half read. */
		assert_int_equal(c.nmem, 0);
		assert_int_equal(c.ncompute, 0);
		assert_string_equal(c.path, path);
	}

	/* The undamaged document loads; keys kscope does not know are fine,
	 * and so are integers for rates and a missing "opencl". */
	{
		json_t *doc = valid_doc(m.key);
		char *text;

		json_object_set_new(doc, "future_key", json_string("ignored"));
		json_object_set_new(json_array_get(json_object_get(doc, "memory"), 0),
				    "bytes_per_s", json_integer(1000000000000));
		json_object_del(doc, "opencl");
		text = json_dumps(doc, 0);
		json_decref(doc);
		ks_test_write_file(path, text, 0600);
		free(text);
		assert_int_equal(ks_calib_load(&c, &e), 0);
		assert_int_equal(c.nmem, 2);
		assert_true(c.mem[0].per_s == 1e12);
		assert_int_equal(c.have_opencl, 0);
		assert_int_equal(c.threads, 0);
		/* A file of before CUDA, without the key: valid, no CUDA. */
		assert_false(c.have_cuda);
	}

	/* A directory where the file should be. */
	unlink(path);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(ks_calib_load(&c, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "not a regular file"));
	ks_test_rmtree(dir);
	free(dir);
}

/* ---------------------------------------------------------------------
 * The machine key and CUDA
 * --------------------------------------------------------------------- */

/* The key of a made-up machine.  The expected values were computed from
 * the key's text as kscope wrote it before CUDA devices were hashed
 * (FNV-1a of "cpu=Test CPU\ncpus=2\ncache=L1 Data 32768 1\n..."): a
 * machine without NVIDIA GPUs must keep its key, or every calibration
 * file made before would be measured again. */
static void test_machine_key(void **state)
{
	struct ks_calib_machine m, g;

	(void)state;
	memset(&m, 0, sizeof(m));
	snprintf(m.cpu, sizeof(m.cpu), "Test CPU");
	m.cpus = 2;
	m.ncaches = 3;
	m.caches[0] = (struct ks_calib_cache){ 1, "Data", 32 * KIB, 1 };
	m.caches[1] = (struct ks_calib_cache){ 2, "Unified", 1 * MIB, 1 };
	m.caches[2] = (struct ks_calib_cache){ 3, "Unified", 36 * MIB, 2 };
	m.memory_bytes = 8 * 1024 * MIB;
	ks_calib_machine_key(&m);
	assert_string_equal(m.key, "d0ea389cd0e3fb42");
	m.ndevices = 1;
	snprintf(m.devices[0], sizeof(m.devices[0]), "dev | 1.0");
	ks_calib_machine_key(&m);
	assert_string_equal(m.key, "89416625bbe5f194");

	/* A GPU gives another key; another driver another again. */
	g = m;
	g.ncuda = 1;
	snprintf(g.cuda_devices[0], sizeof(g.cuda_devices[0]), "NVIDIA H200 | 580.159.04");
	ks_calib_machine_key(&g);
	assert_string_not_equal(g.key, m.key);
	{
		char first[17];

		memcpy(first, g.key, sizeof(first));
		snprintf(g.cuda_devices[0], sizeof(g.cuda_devices[0]),
			 "NVIDIA H200 | 580.160.01");
		ks_calib_machine_key(&g);
		assert_string_not_equal(g.key, first);
	}

	/* This machine's probe agrees with its facts (no NVIDIA driver
	 * here: the key is the one of before). */
	{
		struct ks_calib_machine p, q;
		struct ks_err e;

		assert_int_equal(ks_calib_machine_probe(&p, &e), 0);
		q = p;
		ks_calib_machine_key(&q);
		assert_string_equal(q.key, p.key);
		if (access("/proc/driver/nvidia/gpus", F_OK) != 0) {
			assert_int_equal(p.ncuda, 0);
		} else {
			q.ncuda = 0;
			ks_calib_machine_key(&q);
			assert_true(p.ncuda == 0 || strcmp(q.key, p.key) != 0);
		}
	}
}

/* The NVIDIA GPUs of a made-up /proc/driver/nvidia. */
static void test_cuda_device_ids(void **state)
{
	char *dir = ks_test_tmpdir(), path[4200], ids[KS_CALIB_MAX_DEVICES][256];

	(void)state;
	assert_int_equal(ks_calib_cuda_device_ids(dir, ids, KS_CALIB_MAX_DEVICES), 0);
	snprintf(path, sizeof(path), "mkdir -p '%s/gpus/0000:1a:00.0' "
		 "'%s/gpus/0000:05:00.0' '%s/gpus/0000:06:00.0'", dir, dir, dir);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/gpus/0000:1a:00.0/information", dir);
	ks_test_write_file(path, "Model: \t\t NVIDIA H200\nIRQ:   \t\t 42\n", 0600);
	snprintf(path, sizeof(path), "%s/gpus/0000:05:00.0/information", dir);
	ks_test_write_file(path, "Model: \t\t NVIDIA H100 80GB HBM3\n", 0600);
	/* 0000:06:00.0 has no information: left out. */
	snprintf(path, sizeof(path), "%s/version", dir);
	ks_test_write_file(path, "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
			   "580.159.04  Release Build  (dvs-builder@U22)  Thu Oct  9 2025\n"
			   "GCC version:  gcc version 12.2.0\n", 0600);
	assert_int_equal(ks_calib_cuda_device_ids(dir, ids, KS_CALIB_MAX_DEVICES), 2);
	/* PCI order, whatever the directory's. */
	assert_string_equal(ids[0], "NVIDIA H100 80GB HBM3 | 580.159.04");
	assert_string_equal(ids[1], "NVIDIA H200 | 580.159.04");
	assert_int_equal(ks_calib_cuda_device_ids(dir, ids, 1), 1);
	/* No version file: the GPUs still count. */
	unlink(path);
	assert_int_equal(ks_calib_cuda_device_ids(dir, ids, KS_CALIB_MAX_DEVICES), 2);
	assert_string_equal(ids[1], "NVIDIA H200 | unknown driver");
	ks_test_rmtree(dir);
	free(dir);
}

/* The PTX texts: complete, one entry point each, of the target the
 * kernel needs (ptxas checks them in op/calib_cuda_ptx where the CUDA
 * toolkit is installed). */
static void test_ptx_texts(void **state)
{
	static char buf[KS_CALIB_PTX_MAX];
	char want[128];

	(void)state;
	for (int k = 0; k < KS_CALIB_NPTX; k++) {
		int n = ks_calib_ptx_text((enum ks_calib_ptx)k, buf, sizeof(buf));

		assert_true(n > 0 && (size_t)n < sizeof(buf));
		assert_int_equal(strlen(buf), (size_t)n);
		snprintf(want, sizeof(want), ".visible .entry %s(", ks_calib_ptx_info[k].entry);
		assert_non_null(strstr(buf, want));
		snprintf(want, sizeof(want), ".target %s\n", ks_calib_ptx_info[k].target);
		assert_non_null(strstr(buf, want));
		assert_non_null(strstr(buf, ".version 7.0\n"));
		/* Too small a buffer is refused, not cut. */
		assert_int_equal(ks_calib_ptx_text((enum ks_calib_ptx)k, buf, 100), -ENOSPC);
	}
	assert_string_equal(ks_calib_ptx_info[KS_CALIB_PTX_BF16].target, "sm_80");
	assert_int_equal(ks_calib_ptx_text(KS_CALIB_PTX_BF16, buf, sizeof(buf)) > 0, 1);
	assert_non_null(strstr(buf, "fma.rn.bf16x2 "));
	assert_int_equal(ks_calib_ptx_text(KS_CALIB_PTX_FP16, buf, sizeof(buf)) > 0, 1);
	assert_non_null(strstr(buf, "fma.rn.f16x2 "));
	assert_int_equal(ks_calib_ptx_text(KS_CALIB_PTX_READ, buf, sizeof(buf)) > 0, 1);
	assert_non_null(strstr(buf, "ld.global.v4.u32 "));
	assert_non_null(strstr(buf, "atom.global.add.u64 "));
}

/* ---------------------------------------------------------------------
 * Levels and working sets on a made-up machine
 * --------------------------------------------------------------------- */

/* Two CPUs: 32 KiB L1 and 1 MiB L2 each, a 36 MiB L3 they share. */
static void made_up_machine(struct ks_calib_machine *m)
{
	memset(m, 0, sizeof(*m));
	m->cpus = 2;
	m->ncaches = 3;
	m->caches[0] = (struct ks_calib_cache){ 1, "Data", 32 * KIB, 1 };
	m->caches[1] = (struct ks_calib_cache){ 2, "Unified", 1 * MIB, 1 };
	m->caches[2] = (struct ks_calib_cache){ 3, "Unified", 36 * MIB, 2 };
}

static void test_levels(void **state)
{
	struct ks_calib_level l[KS_CALIB_MAX_CACHES + 1];
	struct ks_calib_machine m;

	(void)state;
	made_up_machine(&m);
	assert_int_equal(ks_calib_llc_total(&m), 36 * MIB);
	assert_int_equal(ks_calib_mem_levels(&m, 2, l), 4);
	assert_string_equal(l[0].name, "L1");
	assert_int_equal(l[0].lo, 0);
	assert_int_equal(l[0].hi, 16 * KIB);
	assert_string_equal(l[1].name, "L2");
	assert_int_equal(l[1].lo, 64 * KIB);
	assert_int_equal(l[1].hi, 512 * KIB);
	/* The shared L3: each of the two threads has half of it. */
	assert_string_equal(l[2].name, "L3");
	assert_int_equal(l[2].cap, 18 * MIB);
	assert_int_equal(l[2].lo, 2 * MIB);
	assert_int_equal(l[2].hi, 9 * MIB);
	assert_string_equal(l[3].name, "DRAM");
	assert_int_equal(l[3].total_min, 4 * 36 * MIB);

	/* One thread has the whole L3. */
	assert_int_equal(ks_calib_mem_levels(&m, 1, l), 4);
	assert_int_equal(l[2].cap, 36 * MIB);
	assert_int_equal(l[2].hi, 18 * MIB);

	/* No cache information: DRAM only, from 256 MiB. */
	m.ncaches = 0;
	assert_int_equal(ks_calib_mem_levels(&m, 2, l), 1);
	assert_string_equal(l[0].name, "DRAM");
	assert_int_equal(l[0].total_min, 256 * MIB);
}

static void check_sizes(const struct ks_calib_machine *m, bool quick, int threads,
			uint64_t limit, uint64_t want_top)
{
	struct ks_calib_plan plan = { .quick = quick, .threads = threads,
				      .mem_limit = limit };
	struct ks_calib_level l[KS_CALIB_MAX_CACHES + 1];
	uint64_t sizes[96];
	size_t n = ks_calib_mem_sizes(m, &plan, sizes, 96),
	       nl = ks_calib_mem_levels(m, threads, l);

	assert_true(n >= 4);
	assert_true(sizes[0] >= 16 * KIB);
	assert_true(sizes[0] <= 32 * KIB * (uint64_t)threads);
	assert_int_equal(sizes[n - 1], want_top);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(sizes[i] % (4096 * (uint64_t)threads), 0);
		if (i)
			assert_true(sizes[i] > sizes[i - 1]);
	}
	/* Every cache level has a point in its window. */
	for (size_t k = 0; k + 1 < nl; k++) {
		bool found = false;

		for (size_t i = 0; i < n; i++) {
			uint64_t share = sizes[i] / (uint64_t)threads;

			found |= share >= l[k].lo && share <= l[k].hi;
		}
		assert_true(found);
	}
}

static void test_sizes(void **state)
{
	struct ks_calib_machine m;

	(void)state;
	made_up_machine(&m);
	/* Quick: up to DRAM's threshold, 4 x 36 MiB. */
	check_sizes(&m, true, 2, 1ull << 34, 144 * MIB);
	/* Full: twice that, at least 256 MiB. */
	check_sizes(&m, false, 2, 1ull << 34, 288 * MIB);
	check_sizes(&m, false, 1, 1ull << 34, 288 * MIB);
	/* Little memory: the sweep stops at the limit. */
	check_sizes(&m, false, 2, 100 * MIB, 100 * MIB);
}

static void test_pick(void **state)
{
	struct ks_calib_level l[KS_CALIB_MAX_CACHES + 1];
	struct ks_calib_machine m;
	/* Totals for two threads. */
	struct ks_calib_mem_point pts[] = {
		{ 16 * KIB, 300e9, false },    /* L1 */
		{ 32 * KIB, 320e9, false },    /* L1, the best */
		{ 64 * KIB, 250e9, false },    /* 32 KiB a thread: the edge of L1 */
		{ 256 * KIB, 150e9, false },   /* L2 */
		{ 1 * MIB, 160e9, false },     /* L2, the best */
		{ 8 * MIB, 50e9, false },      /* L3 */
		{ 16 * MIB, 45e9, false },     /* L3 */
		{ 144 * MIB, 20e9, false },    /* DRAM */
		{ 288 * MIB, 21e9, false },    /* DRAM, the best */
	};
	size_t n = sizeof(pts) / sizeof(pts[0]);

	(void)state;
	made_up_machine(&m);
	assert_int_equal(ks_calib_mem_levels(&m, 2, l), 4);
	assert_int_equal(ks_calib_mem_pick(&l[0], 2, pts, n), 1);
	assert_int_equal(ks_calib_mem_pick(&l[1], 2, pts, n), 4);
	assert_int_equal(ks_calib_mem_pick(&l[2], 2, pts, n), 5);
	assert_int_equal(ks_calib_mem_pick(&l[3], 2, pts, n), 8);
	/* Without a point in L2's window, the wider one (above L1, within
	 * L2) is used; without any, the level is not measured. */
	assert_int_equal(ks_calib_mem_pick(&l[1], 2, pts, 3), -1);
	{
		struct ks_calib_mem_point edge[] = { { 96 * KIB, 100e9, false } };

		assert_int_equal(ks_calib_mem_pick(&l[1], 2, edge, 1), 0);
	}
	/* No DRAM-sized point. */
	assert_int_equal(ks_calib_mem_pick(&l[3], 2, pts, 7), -1);
}

/* ---------------------------------------------------------------------
 * Kernels and the team
 * --------------------------------------------------------------------- */

static void test_read_kernels(void **state)
{
	size_t n = 4096; /* a multiple of every granule */
	double *p, want = 0;

	(void)state;
	assert_int_equal(posix_memalign((void **)&p, 64, n * sizeof(double)), 0);
	for (size_t i = 0; i < n; i++) {
		p[i] = (double)(i % 7);
		want += p[i];
	}
	for (const struct ks_calib_read_kernel *k = ks_calib_read_kernels; k->isa; k++) {
		if (!k->supported())
			continue;
		assert_int_equal(n % k->granule, 0);
		if (k->sum(p, n, 1) != want || k->sum(p, n, 3) != 3 * want)
			fail_msg("%s: sum %g, want %g", k->isa, k->sum(p, n, 1), want);
	}
	/* The last one runs everywhere. */
	assert_true(ks_calib_read_kernel_best()->supported());
	free(p);
}

static void test_fma_kernels(void **state)
{
	(void)state;
	for (const struct ks_calib_fma_kernel *k = ks_calib_fma_kernels; k->isa; k++) {
		double few, many, lanes;

		if (!k->supported())
			continue;
		/* a -> c / (1 - m) = 1: after 8000 rounds with m = 0.999 every
		 * value is within 0.1% of 1, after 4 rounds far from it. */
		lanes = KS_CALIB_FMA_CHAINS * k->lanes32;
		few = k->f32(4, 0.999f, 0.001f);
		many = k->f32(8000, 0.999f, 0.001f);
		if (!(fabs(many / lanes - 1) < 0.005) || !(few / lanes < 0.5))
			fail_msg("%s FP32: %g after 4 rounds, %g after 8000 (%g lanes)",
				 k->isa, few, many, lanes);
		lanes = KS_CALIB_FMA_CHAINS * k->lanes64;
		few = k->f64(4, 0.999, 0.001);
		many = k->f64(8000, 0.999, 0.001);
		if (!(fabs(many / lanes - 1) < 0.005) || !(few / lanes < 0.5))
			fail_msg("%s FP64: %g after 4 rounds, %g after 8000 (%g lanes)",
				 k->isa, few, many, lanes);
	}
}

struct team_job {
	int hits[8];
};

static void mark(void *arg, int tid)
{
	struct team_job *j = arg;

	__atomic_add_fetch(&j->hits[tid], 1, __ATOMIC_RELAXED);
}

static void test_team(void **state)
{
	struct ks_calib_team *t;
	struct team_job j;
	struct ks_err e;

	(void)state;
	memset(&j, 0, sizeof(j));
	/* More threads than this machine may have CPUs: still runs. */
	assert_int_equal(ks_calib_team_start(&t, 5, &e), 0);
	assert_int_equal(ks_calib_team_size(t), 5);
	for (int r = 0; r < 3; r++)
		assert_true(ks_calib_team_run(t, mark, &j) >= 0);
	ks_calib_team_stop(t);
	for (int i = 0; i < 5; i++)
		assert_int_equal(j.hits[i], 3);
	assert_int_equal(j.hits[5], 0);
	assert_int_equal(ks_calib_team_start(&t, 0, &e), -EINVAL);
}

static void nap(void *arg, int tid)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	(void)arg;
	if (tid == 1)
		nanosleep(&ts, NULL);
}

/* A member that waits rather than computes had its CPU for a small share
 * of its time: the trial counts as disturbed. */
static void test_team_cpu_share(void **state)
{
	struct ks_calib_team *t;
	struct ks_err e;

	(void)state;
	assert_int_equal(ks_calib_team_start(&t, 2, &e), 0);
	assert_true(ks_calib_team_run(t, nap, NULL) >= 0.02);
	assert_true(ks_calib_team_cpu_share(t) < 0.5);
	assert_true(ks_calib_team_cpu_share(t) < KS_CALIB_UNDISTURBED);
	ks_calib_team_stop(t);
}

static void test_fmt_bytes(void **state)
{
	char b[32];

	(void)state;
	ks_calib_fmt_bytes(512, b, sizeof(b));
	assert_string_equal(b, "512 bytes");
	ks_calib_fmt_bytes(32 * KIB, b, sizeof(b));
	assert_string_equal(b, "32 KiB");
	ks_calib_fmt_bytes(36608 * KIB, b, sizeof(b));
	assert_string_equal(b, "35.8 MiB");
	ks_calib_fmt_bytes(2 * 1024 * MIB, b, sizeof(b));
	assert_string_equal(b, "2 GiB");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_machine_probe),
		cmocka_unit_test(test_load_missing),
		cmocka_unit_test(test_save_load),
		cmocka_unit_test(test_prepare_unsafe_dir),
		cmocka_unit_test(test_damaged),
		cmocka_unit_test(test_machine_key),
		cmocka_unit_test(test_cuda_device_ids),
		cmocka_unit_test(test_ptx_texts),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_pick),
		cmocka_unit_test(test_read_kernels),
		cmocka_unit_test(test_fma_kernels),
		cmocka_unit_test(test_team),
		cmocka_unit_test(test_team_cpu_share),
		cmocka_unit_test(test_fmt_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
