/*
 * What the CUDA examples share: checking every CUDA call, the FNV-1a
 * checksum they print, and the one exit status that says "this machine
 * cannot run CUDA" (no driver, no device), so that a test can tell that
 * apart from a wrong result.
 *
 * Exit status of every example: 0 results correct, 1 a wrong result,
 * 3 CUDA unusable here (the message names the CUDA error), 4 any other
 * CUDA error.
 */
#ifndef KS_CUX_H
#define KS_CUX_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

enum { CUX_WRONG = 1, CUX_NO_CUDA = 3, CUX_CUDA_ERROR = 4 };

#define CUX(call) cux_check((call), #call, __FILE__, __LINE__)

static inline void cux_check(cudaError_t e, const char *what, const char *file, int line)
{
	if (e == cudaSuccess)
		return;
	fprintf(stderr, "%s:%d: %s: %s (%s)\n", file, line, what, cudaGetErrorString(e),
		cudaGetErrorName(e));
	exit(CUX_CUDA_ERROR);
}

/* The first CUDA call of every example: exits 3, naming the error, when
 * there is no driver or no device. */
static inline void cux_init(const char *prog)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n == 0) {
		fprintf(stderr, "%s: no usable CUDA device: %s\n", prog,
			e != cudaSuccess ? cudaGetErrorString(e) : "no device");
		exit(CUX_NO_CUDA);
	}
	CUX(cudaSetDevice(0));
}

/* FNV-1a over len bytes, continuing from h (start with CUX_FNV0). */
#define CUX_FNV0 1469598103934665603ull
static inline uint64_t cux_fnv(uint64_t h, const void *data, size_t len)
{
	const unsigned char *p = (const unsigned char *)data;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static inline long cux_arg(int argc, char **argv, int i, long def)
{
	return argc > i ? strtol(argv[i], NULL, 10) : def;
}

/* The last lines of every example: "NAME: ok|FAILED" and the checksum. */
static inline int cux_finish(const char *prog, int ok, uint64_t sum)
{
	printf("%s: %s\n", prog, ok ? "ok" : "FAILED");
	printf("%s: checksum %016llx\n", prog, (unsigned long long)sum);
	return ok ? 0 : CUX_WRONG;
}

#endif
