/*
 * The program tests/cli/progrun.py runs under every kscope command
 * that runs a program: it writes a known, sizeable, deterministic output
 * (about 13 KiB) to standard output, through stdio and through write(2)
 * in turn, with bytes of every value, long and short lines, and a last
 * line without a newline, so that the test can compare it byte for byte
 * with what it writes without kscope.  Options make it do what the exit
 * status tests need:
 *
 *     progout [--opencl] [--heap-error] [--exit N] [--signal N]
 *
 * --opencl runs one small kernel on the first OpenCL device (for
 * kscope op) and prints its checksum; --heap-error reads one byte past a
 * heap block (a memcheck finding; its value does not change the output);
 * --exit N exits with status N; --signal N ends the program with signal
 * N, after the output is written.  It writes a line to stderr too, which
 * the test ignores.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clx.h"

/* All of buf on fd 1, or exit 4. */
static void write_all(const unsigned char *buf, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, buf, n);

		if (w <= 0) {
			perror("progout: write");
			exit(4);
		}
		buf += w;
		n -= (size_t)w;
	}
}

/* Every byte value, then pseudo-random bytes from a fixed seed. */
static void binary_block(unsigned char *buf, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1664525u + 1013904223u;
		buf[i] = i < 256 ? (unsigned char)i : (unsigned char)(seed >> 24);
	}
}

static const char *const kernel_src =
	"__kernel void twice(__global const int *in, __global int *out)\n"
	"{\n"
	"\tsize_t i = get_global_id(0);\n"
	"\tout[i] = 2 * in[i] + 1;\n"
	"}\n";

/* One launch of twice() on 256 ints; prints the result's checksum. */
static void run_opencl(void)
{
	enum { N = 256 };
	int in[N], out[N];
	size_t global = N;
	cl_int err;
	cl_device_id dev = clx_device(NULL);
	cl_context ctx = clx_context(dev);
	cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
	cl_program prog;
	cl_kernel k;
	cl_mem bin, bout;

	clx_check_create("clCreateCommandQueue", err);
	for (int i = 0; i < N; i++)
		in[i] = i * 7 - 300;
	prog = clx_build(ctx, dev, kernel_src, NULL);
	k = clCreateKernel(prog, "twice", &err);
	clx_check_create("clCreateKernel", err);
	bin = clCreateBuffer(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof(in), in, &err);
	clx_check_create("clCreateBuffer", err);
	bout = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, sizeof(out), NULL, &err);
	clx_check_create("clCreateBuffer", err);
	CLX_CHECK(clSetKernelArg(k, 0, sizeof(bin), &bin));
	CLX_CHECK(clSetKernelArg(k, 1, sizeof(bout), &bout));
	CLX_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
	CLX_CHECK(clEnqueueReadBuffer(q, bout, CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL));
	for (int i = 0; i < N; i++)
		if (out[i] != 2 * in[i] + 1) {
			fprintf(stderr, "progout: twice() gave %d at %d\n", out[i], i);
			exit(5);
		}
	printf("opencl: twice ok, fnv1a=%08x\n",
	       (unsigned)clx_fnv1a(CLX_FNV_INIT, out, sizeof(out)));
	clReleaseMemObject(bin);
	clReleaseMemObject(bout);
	clReleaseKernel(k);
	clReleaseProgram(prog);
	clReleaseCommandQueue(q);
	clReleaseContext(ctx);
}

/* Reads one byte past a 16-byte heap block; returns 0 whatever it read,
 * so the output does not depend on it. */
static int heap_error(void)
{
	char *p = malloc(16);
	volatile size_t past = 16; /* not a constant the compiler could check */
	volatile char v;

	if (!p)
		exit(4);
	memset(p, 'x', 16);
	v = p[past];
	free(p);
	return v & 0;
}

int main(int argc, char **argv)
{
	static unsigned char bin[6000];
	int exit_code = 0, sig = 0, opencl = 0, herr = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--opencl"))
			opencl = 1;
		else if (!strcmp(argv[i], "--heap-error"))
			herr = 1;
		else if (!strcmp(argv[i], "--exit") && i + 1 < argc)
			exit_code = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--signal") && i + 1 < argc)
			sig = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: progout [--opencl] [--heap-error] "
				"[--exit N] [--signal N]\n");
			return 2;
		}
	}
	fprintf(stderr, "progout: to stderr, which the test ignores\n");

	/* stdio: numbered lines of growing length. */
	for (int i = 0; i < 120; i++)
		printf("stdio line %03d %.*s\n", i, i % 61,
		       "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ");
	/* An unfinished line, flushed before write(2) goes on with it. */
	printf("unfinished stdio line ->");
	fflush(stdout);
	binary_block(bin, sizeof(bin), 12345);
	write_all(bin, 3000);
	write_all((const unsigned char *)"\nwrite(2) line\r\n", 16);
	/* stdio again, with control bytes and a NUL. */
	fwrite("esc \x1b[0m nul \0 del \x7f high \xff\xfe\n", 1, 30, stdout);
	fwrite(bin + 3000, 1, 3000, stdout);
	if (herr)
		printf("heap: %d\n", heap_error());
	if (opencl) {
		fflush(stdout);
		run_opencl();
	}
	fflush(stdout);
	write_all((const unsigned char *)"last write(2) bytes, then stdio\n", 32);
	printf("the end, with no newline");
	fflush(stdout);
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return exit_code;
}
