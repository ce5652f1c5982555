/*
 * The PTX kernels of the CUDA calibration (calib_cuda.c), written here as
 * text: the driver compiles PTX for whatever device it runs on, so kscope
 * needs neither nvcc at build time nor a binary per GPU generation.
 *
 * The kernels are generated rather than spelled out line by line: the
 * FMA kernels are KS_CALIB_PTX_CHAINS independent chains unrolled
 * KS_CALIB_PTX_UNROLL times, the same shape for three data types, and a
 * generator keeps the three identical but for the instruction and how a
 * value is packed.  tests/op/calib checks every text with ptxas where the
 * CUDA toolkit is installed, so a syntax error fails the build's tests,
 * not a user's calibration.
 *
 *   ks_read      (in, rounds, passes, out): each thread adds up the 32-bit
 *                words of KS_CALIB_PTX_READ_UNROLL 16-byte elements a
 *                round (ld.global.v4.u32), the element of thread t in
 *                slot s of round r being (r * UNROLL + s) * threads + t:
 *                neighbouring threads read neighbouring elements
 *                (coalesced), and the grid covers rounds * UNROLL *
 *                threads elements, passes times over.  A block adds its
 *                threads' sums (warp shuffles, then shared memory) and
 *                thread 0 adds the block's with one 64-bit atomic to *out.
 *   ks_fma_TYPE  (out, rounds, m, c): CHAINS chains of a = a * m + c per
 *                thread, UNROLL times each a round (fma.rn.f32,
 *                fma.rn.f16x2 or fma.rn.bf16x2 on two lanes a register),
 *                the chains starting apart by thread and lane; the sum of
 *                the final values as an f32 goes to out[thread], so no
 *                compiler can drop the work.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "calib_int.h"

const struct ks_calib_ptx_info ks_calib_ptx_info[KS_CALIB_NPTX] = {
	[KS_CALIB_PTX_READ] = { "ks_read", "sm_75", 1 },
	[KS_CALIB_PTX_FP32] = { "ks_fma_fp32", "sm_75", 1 },
	[KS_CALIB_PTX_FP16] = { "ks_fma_fp16", "sm_75", 2 },
	/* fma.rn.bf16x2 needs PTX ISA 7.0 and sm_80. */
	[KS_CALIB_PTX_BF16] = { "ks_fma_bf16", "sm_80", 2 },
};

/* A text being appended to; a full buffer makes ok false. */
struct ptx {
	char *buf;
	size_t size, len;
	bool ok;
};

__attribute__((format(printf, 2, 3)))
static void emit(struct ptx *p, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!p->ok)
		return;
	va_start(ap, fmt);
	n = vsnprintf(p->buf + p->len, p->size - p->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= p->size - p->len) {
		p->ok = false;
		return;
	}
	p->len += (size_t)n;
}

/* A float as PTX writes an exact f32 constant: 0f and its bits in hex. */
static void f32_bits(float v, char out[11])
{
	unsigned int u;

	memcpy(&u, &v, sizeof(u));
	snprintf(out, 11, "0f%08X", u);
}

static void header(struct ptx *p, enum ks_calib_ptx k)
{
	emit(p, "//\n// kscope calibrate: %s (src/op/calib/calib_cuda_ptx.c)\n//\n"
	     ".version 7.0\n.target %s\n.address_size 64\n\n",
	     ks_calib_ptx_info[k].entry, ks_calib_ptx_info[k].target);
}

static void read_kernel(struct ptx *p)
{
	static const char *const acc[2] = { "%r5", "%r6" };
	int reg = 8;

	header(p, KS_CALIB_PTX_READ);
	emit(p, ".visible .entry ks_read(\n"
	     "\t.param .u64 ks_in,\n"
	     "\t.param .u64 ks_rounds,\n"
	     "\t.param .u32 ks_passes,\n"
	     "\t.param .u64 ks_out\n"
	     ")\n{\n"
	     "\t.reg .pred %%p<4>;\n"
	     "\t.reg .b32 %%r<%d>;\n"
	     "\t.reg .b64 %%rd<20>;\n"
	     "\t.shared .align 4 .b32 ks_warp_sums[32];\n\n",
	     8 + 4 * KS_CALIB_PTX_READ_UNROLL + 8);
	emit(p, "\tld.param.u64 %%rd1, [ks_in];\n"
	     "\tld.param.u64 %%rd2, [ks_rounds];\n"
	     "\tld.param.u32 %%r7, [ks_passes];\n"
	     "\tld.param.u64 %%rd3, [ks_out];\n"
	     "\tcvta.to.global.u64 %%rd1, %%rd1;\n"
	     "\tcvta.to.global.u64 %%rd3, %%rd3;\n"
	     "\tmov.u32 %%r1, %%ctaid.x;\n"
	     "\tmov.u32 %%r2, %%ntid.x;\n"
	     "\tmov.u32 %%r3, %%tid.x;\n"
	     "\tmov.u32 %%r4, %%nctaid.x;\n"
	     "\tmul.wide.u32 %%rd4, %%r1, %%r2;\n"
	     "\tcvt.u64.u32 %%rd5, %%r3;\n"
	     "\tadd.u64 %%rd4, %%rd4, %%rd5;\t\t// this thread in the grid\n"
	     "\tmul.wide.u32 %%rd6, %%r4, %%r2;\t\t// threads in the grid\n"
	     "\tshl.b64 %%rd7, %%rd4, 4;\n"
	     "\tadd.u64 %%rd7, %%rd1, %%rd7;\t\t// this thread's first element\n"
	     "\tshl.b64 %%rd9, %%rd6, 4;\t\t// bytes to its next element\n"
	     "\tmov.u32 %%r5, 0;\n"
	     "\tmov.u32 %%r6, 0;\n"
	     "\tsetp.eq.u64 %%p1, %%rd2, 0;\n"
	     "\tsetp.eq.u32 %%p2, %%r7, 0;\n"
	     "\tor.pred %%p1, %%p1, %%p2;\n"
	     "\t@%%p1 bra $L_sum;\n"
	     "$L_pass:\n"
	     "\tmov.u64 %%rd8, %%rd7;\n"
	     "\tmov.u64 %%rd10, %%rd2;\n"
	     "$L_round:\n");
	/* All loads first, so that UNROLL of them are in flight at once. */
	for (int s = 0; s < KS_CALIB_PTX_READ_UNROLL; s++) {
		emit(p, "\tld.global.v4.u32 {%%r%d, %%r%d, %%r%d, %%r%d}, [%%rd8];\n",
		     reg + 4 * s, reg + 4 * s + 1, reg + 4 * s + 2, reg + 4 * s + 3);
		emit(p, "\tadd.u64 %%rd8, %%rd8, %%rd9;\n");
	}
	for (int w = 0; w < 4 * KS_CALIB_PTX_READ_UNROLL; w++)
		emit(p, "\tadd.u32 %s, %s, %%r%d;\n", acc[w % 2], acc[w % 2], reg + w);
	reg += 4 * KS_CALIB_PTX_READ_UNROLL;
	emit(p, "\tsub.u64 %%rd10, %%rd10, 1;\n"
	     "\tsetp.ne.u64 %%p1, %%rd10, 0;\n"
	     "\t@%%p1 bra $L_round;\n"
	     "\tsub.u32 %%r7, %%r7, 1;\n"
	     "\tsetp.ne.u32 %%p1, %%r7, 0;\n"
	     "\t@%%p1 bra $L_pass;\n"
	     "$L_sum:\n"
	     "\tadd.u32 %%r5, %%r5, %%r6;\n");
	/* The warp's sum in its lane 0. */
	for (int d = 16; d >= 1; d /= 2)
		emit(p, "\tshfl.sync.down.b32 %%r%d, %%r5, %d, 31, 0xffffffff;\n"
		     "\tadd.u32 %%r5, %%r5, %%r%d;\n", reg, d, reg);
	/* Lane 0 of each warp leaves it in shared memory; thread 0 adds the
	 * warps' sums as 64-bit and adds that to *out. */
	emit(p, "\tand.b32 %%r%d, %%r3, 31;\n"
	     "\tshr.u32 %%r%d, %%r3, 5;\n"
	     "\tsetp.eq.u32 %%p3, %%r%d, 0;\n"
	     "\tmov.u64 %%rd11, ks_warp_sums;\n"
	     "\tmul.wide.u32 %%rd12, %%r%d, 4;\n"
	     "\tadd.u64 %%rd12, %%rd11, %%rd12;\n"
	     "\t@%%p3 st.shared.u32 [%%rd12], %%r5;\n"
	     "\tbar.sync 0;\n"
	     "\tsetp.ne.u32 %%p3, %%r3, 0;\n"
	     "\t@%%p3 bra $L_end;\n"
	     "\tshr.u32 %%r%d, %%r2, 5;\t\t// warps in the block\n"
	     "\tmov.u64 %%rd13, 0;\n"
	     "$L_warps:\n"
	     "\tld.shared.u32 %%r%d, [%%rd11];\n"
	     "\tcvt.u64.u32 %%rd14, %%r%d;\n"
	     "\tadd.u64 %%rd13, %%rd13, %%rd14;\n"
	     "\tadd.u64 %%rd11, %%rd11, 4;\n"
	     "\tsub.u32 %%r%d, %%r%d, 1;\n"
	     "\tsetp.ne.u32 %%p3, %%r%d, 0;\n"
	     "\t@%%p3 bra $L_warps;\n"
	     "\tatom.global.add.u64 %%rd15, [%%rd3], %%rd13;\n"
	     "$L_end:\n"
	     "\tret;\n}\n",
	     reg + 1, reg + 2, reg + 1, reg + 2, reg + 3, reg + 4, reg + 4,
	     reg + 3, reg + 3, reg + 3);
}

/* ks_fma_fp32, _fp16 or _bf16. */
static void fma_kernel(struct ptx *p, enum ks_calib_ptx k)
{
	const char *entry = ks_calib_ptx_info[k].entry;
	char c001[11], lo[11], hi[11];

	header(p, k);
	f32_bits(0.001f, c001);
	emit(p, ".visible .entry %s(\n"
	     "\t.param .u64 ks_out,\n"
	     "\t.param .u32 ks_rounds,\n"
	     "\t.param .b32 ks_m,\n"
	     "\t.param .b32 ks_c\n"
	     ")\n{\n"
	     "\t.reg .pred %%p<2>;\n"
	     "\t.reg .b32 %%r<12>;\n"
	     "\t.reg .f32 %%f<8>;\n"
	     "\t.reg .b16 %%h<4>;\n"
	     "\t.reg .b64 %%rd<4>;\n"
	     "\t.reg %s %%a<%d>;\n\n",
	     entry, k == KS_CALIB_PTX_FP32 ? ".f32" : ".b32", KS_CALIB_PTX_CHAINS);
	emit(p, "\tld.param.u64 %%rd1, [ks_out];\n"
	     "\tld.param.u32 %%r1, [ks_rounds];\n"
	     "\tld.param.b32 %%r2, [ks_m];\n"
	     "\tld.param.b32 %%r3, [ks_c];\n"
	     "\tmov.b32 %%f2, %%r2;\n"
	     "\tmov.b32 %%f3, %%r3;\n"
	     "\tmov.u32 %%r4, %%ctaid.x;\n"
	     "\tmov.u32 %%r5, %%ntid.x;\n"
	     "\tmov.u32 %%r6, %%tid.x;\n"
	     "\tmad.lo.u32 %%r4, %%r4, %%r5, %%r6;\t// this thread in the grid\n"
	     "\tand.b32 %%r5, %%r4, 15;\n"
	     "\tcvt.rn.f32.u32 %%f1, %%r5;\n"
	     "\tmul.f32 %%f1, %%f1, %s;\t// threads start apart\n", c001);
	/* Chain i starts at 0.001 * (thread & 15) + 0.1 * i, its second lane
	 * 0.05 higher: below 1, where a * m + c converges to. */
	for (int i = 0; i < KS_CALIB_PTX_CHAINS; i++) {
		f32_bits(0.1f * (float)i, lo);
		f32_bits(0.1f * (float)i + 0.05f, hi);
		if (k == KS_CALIB_PTX_FP32) {
			emit(p, "\tadd.f32 %%a%d, %%f1, %s;\n", i, lo);
			continue;
		}
		emit(p, "\tadd.f32 %%f4, %%f1, %s;\n\tadd.f32 %%f5, %%f1, %s;\n", lo, hi);
		if (k == KS_CALIB_PTX_FP16)
			emit(p, "\tcvt.rn.f16.f32 %%h1, %%f4;\n"
			     "\tcvt.rn.f16.f32 %%h2, %%f5;\n"
			     "\tmov.b32 %%a%d, {%%h1, %%h2};\n", i);
		else /* bf16: the upper half of the f32, truncated */
			emit(p, "\tmov.b32 %%r7, %%f4;\n"
			     "\tshr.u32 %%r7, %%r7, 16;\n"
			     "\tmov.b32 %%r8, %%f5;\n"
			     "\tand.b32 %%r8, %%r8, 0xFFFF0000;\n"
			     "\tor.b32 %%a%d, %%r7, %%r8;\n", i);
	}
	emit(p, "$L_round:\n");
	for (int u = 0; u < KS_CALIB_PTX_UNROLL; u++)
		for (int i = 0; i < KS_CALIB_PTX_CHAINS; i++) {
			if (k == KS_CALIB_PTX_FP32)
				emit(p, "\tfma.rn.f32 %%a%d, %%a%d, %%f2, %%f3;\n", i, i);
			else
				emit(p, "\tfma.rn.%s %%a%d, %%a%d, %%r2, %%r3;\n",
				     k == KS_CALIB_PTX_FP16 ? "f16x2" : "bf16x2", i, i);
		}
	emit(p, "\tsub.u32 %%r1, %%r1, 1;\n"
	     "\tsetp.ne.u32 %%p1, %%r1, 0;\n"
	     "\t@%%p1 bra $L_round;\n"
	     "\tmov.f32 %%f6, 0f00000000;\n");
	/* The sum of every lane of every chain, in f32. */
	for (int i = 0; i < KS_CALIB_PTX_CHAINS; i++) {
		if (k == KS_CALIB_PTX_FP32) {
			emit(p, "\tadd.f32 %%f6, %%f6, %%a%d;\n", i);
			continue;
		}
		if (k == KS_CALIB_PTX_FP16)
			emit(p, "\tmov.b32 {%%h1, %%h2}, %%a%d;\n"
			     "\tcvt.f32.f16 %%f4, %%h1;\n"
			     "\tcvt.f32.f16 %%f5, %%h2;\n", i);
		else
			emit(p, "\tshl.b32 %%r7, %%a%d, 16;\n"
			     "\tand.b32 %%r8, %%a%d, 0xFFFF0000;\n"
			     "\tmov.b32 %%f4, %%r7;\n"
			     "\tmov.b32 %%f5, %%r8;\n", i, i);
		emit(p, "\tadd.f32 %%f6, %%f6, %%f4;\n\tadd.f32 %%f6, %%f6, %%f5;\n");
	}
	emit(p, "\tcvta.to.global.u64 %%rd1, %%rd1;\n"
	     "\tmul.wide.u32 %%rd2, %%r4, 4;\n"
	     "\tadd.u64 %%rd1, %%rd1, %%rd2;\n"
	     "\tst.global.f32 [%%rd1], %%f6;\n"
	     "\tret;\n}\n");
}

int ks_calib_ptx_text(enum ks_calib_ptx k, char *buf, size_t size)
{
	struct ptx p = { .buf = buf, .size = size, .len = 0, .ok = size > 0 };

	if (size > 0)
		buf[0] = '\0';
	if (k == KS_CALIB_PTX_READ)
		read_kernel(&p);
	else
		fma_kernel(&p, k);
	return p.ok ? (int)p.len : -ENOSPC;
}
