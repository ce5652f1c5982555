/*
 * kscope's own kernels for the CUDA backend's replays, as PTX the driver
 * compiles for the device (cuda_replay.c loads them in the program's
 * context): ks_hold (spins on the global timer for the nanoseconds it is
 * given) and ks_flush_read (reads a buffer; see the flush in
 * cuda_replay.c).  A header of its own so that tests/op/cuda can hand the
 * text to ptxas where the toolkit has it.
 */
#ifndef KS_CUDA_PTX_H
#define KS_CUDA_PTX_H

static const char ks_cu_ptx[] =
	".version 6.4\n"
	".target sm_75\n"
	".address_size 64\n"
	".visible .entry ks_hold(.param .u64 ks_hold_ns)\n"
	"{\n"
	"	.reg .pred %p;\n"
	"	.reg .b64 %rd<5>;\n"
	"	ld.param.u64 %rd1, [ks_hold_ns];\n"
	"	mov.u64 %rd2, %globaltimer;\n"
	"$L_spin:\n"
	"	mov.u64 %rd3, %globaltimer;\n"
	"	sub.u64 %rd4, %rd3, %rd2;\n"
	"	setp.lt.u64 %p, %rd4, %rd1;\n"
	"	@%p bra $L_spin;\n"
	"	ret;\n"
	"}\n"
	/* ks_flush_read(buf, n): reads n 16-byte words of buf, grid-stride,
	 * and stores their XOR into buf only if it is 0xdeadbeef, which a
	 * buffer of one repeated byte never gives: the loads cannot be left
	 * out, and nothing is written. */
	".visible .entry ks_flush_read(.param .u64 ks_buf, .param .u64 ks_n)\n"
	"{\n"
	"	.reg .pred %p<3>;\n"
	"	.reg .b32 %r<10>;\n"
	"	.reg .b64 %rd<12>;\n"
	"	ld.param.u64 %rd1, [ks_buf];\n"
	"	ld.param.u64 %rd2, [ks_n];\n"
	"	mov.u32 %r1, %ctaid.x;\n"
	"	mov.u32 %r2, %ntid.x;\n"
	"	mov.u32 %r3, %tid.x;\n"
	"	mov.u32 %r4, %nctaid.x;\n"
	"	cvt.u64.u32 %rd3, %r1;\n"
	"	cvt.u64.u32 %rd4, %r2;\n"
	"	cvt.u64.u32 %rd5, %r3;\n"
	"	cvt.u64.u32 %rd6, %r4;\n"
	"	mad.lo.u64 %rd7, %rd3, %rd4, %rd5;\n"
	"	mul.lo.u64 %rd8, %rd6, %rd4;\n"
	"	mov.u32 %r5, 0;\n"
	"$L_read:\n"
	"	setp.ge.u64 %p1, %rd7, %rd2;\n"
	"	@%p1 bra $L_done;\n"
	"	shl.b64 %rd9, %rd7, 4;\n"
	"	add.u64 %rd10, %rd1, %rd9;\n"
	"	ld.global.v4.u32 {%r6, %r7, %r8, %r9}, [%rd10];\n"
	"	xor.b32 %r5, %r5, %r6;\n"
	"	xor.b32 %r5, %r5, %r7;\n"
	"	xor.b32 %r5, %r5, %r8;\n"
	"	xor.b32 %r5, %r5, %r9;\n"
	"	add.u64 %rd7, %rd7, %rd8;\n"
	"	bra $L_read;\n"
	"$L_done:\n"
	"	setp.ne.u32 %p2, %r5, -559038737;\n"
	"	@%p2 bra $L_end;\n"
	"	st.global.u32 [%rd1], %r5;\n"
	"$L_end:\n"
	"	ret;\n"
	"}\n";

#endif
