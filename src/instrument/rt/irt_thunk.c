/*
 * The two assembly entry points of libkscope-instr.so (irt_int.h):
 *
 * irt_entry_thunk: every trampoline calls it (call *[rip+...]) before the
 *   moved instructions, so [rsp] is the trampoline's resume address and
 *   [rsp+8] the patched function's return address.  It saves every
 *   general-purpose register the C hook may change (a caller compiled
 *   with inter-procedural register allocation may keep values in
 *   call-clobbered registers the callee is known not to touch), aligns
 *   the stack and calls irt_enter(resume, &return_slot), which is
 *   compiled with -mgeneral-regs-only and so leaves every vector
 *   register alone.  When irt_enter says the thread has no state yet,
 *   irt_thread_start (ordinary C, may call malloc) runs with the x87/SSE
 *   state saved by fxsave, and irt_enter is called again.  Then `ret`
 *   goes to the resume address, a return the CPU predicts.
 *
 * irt_exit_thunk: the address irt_enter puts in place of a function's
 *   return address.  The function returns here with its results in
 *   rax/rdx/xmm0/xmm1/st0; irt_exit(slot) gives back the original return
 *   address, which the thunk jumps to with an indirect jmp rather than a
 *   ret: the return stack buffer no longer matches here (the function's
 *   own ret came to the thunk), while the indirect-branch predictor
 *   learns the few targets a call site has (measured: bench/instrument.sh).
 *   The jmp reads its target 8 bytes below the stack pointer, inside the
 *   red zone, which the kernel leaves alone when it delivers a signal.
 */

/* Written as one file-scope asm block in a C file: the project builds
 * C only (no ASM language in CMake). */
__asm__(
	/* Both thunks keep the same frame: rbp, then every call-clobbered
	 * general-purpose register (9 x 8 = 72 bytes below rbp), the stack
	 * aligned for the C call. */
	"	.macro irt_save\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	push %rax\n"
	"	push %rcx\n"
	"	push %rdx\n"
	"	push %rsi\n"
	"	push %rdi\n"
	"	push %r8\n"
	"	push %r9\n"
	"	push %r10\n"
	"	push %r11\n"
	"	and $-16, %rsp\n"
	"	.endm\n"
	"	.macro irt_restore\n"
	"	lea -72(%rbp), %rsp\n"
	"	pop %r11\n"
	"	pop %r10\n"
	"	pop %r9\n"
	"	pop %r8\n"
	"	pop %rdi\n"
	"	pop %rsi\n"
	"	pop %rdx\n"
	"	pop %rcx\n"
	"	pop %rax\n"
	"	pop %rbp\n"
	"	.endm\n"
	"	.text\n"
	"	.globl irt_entry_thunk\n"
	"	.hidden irt_entry_thunk\n"
	"	.type irt_entry_thunk, @function\n"
	"irt_entry_thunk:\n"
	"	irt_save\n"
	"1:	mov 8(%rbp), %rdi        /* the resume address */\n"
	"	lea 16(%rbp), %rsi       /* the function's return-address slot */\n"
	"	call irt_enter\n"
	"	test %eax, %eax\n"
	"	jz 2f\n"
	"	/* No state for this thread yet: make it, the vector state saved. */\n"
	"	sub $512, %rsp\n"
	"	fxsave64 (%rsp)\n"
	"	call irt_thread_start\n"
	"	fxrstor64 (%rsp)\n"
	"	add $512, %rsp\n"
	"	test %eax, %eax\n"
	"	jz 1b\n"
	"	/* No memory for it: the call goes unrecorded. */\n"
	"2:	irt_restore\n"
	"	ret\n"
	"	.size irt_entry_thunk, .-irt_entry_thunk\n"
	"	/* A byte before the exit thunk so that an unwinder's \"return\n"
	"	 * address minus one\" lands in this object, not in the entry thunk. */\n"
	"	nop\n"
	"	.globl irt_exit_thunk\n"
	"	.hidden irt_exit_thunk\n"
	"	.type irt_exit_thunk, @function\n"
	"irt_exit_thunk:\n"
	"	sub $8, %rsp             /* room for the original return address */\n"
	"	irt_save\n"
	"	lea 8(%rbp), %rdi        /* the slot the function returned through */\n"
	"	call irt_exit\n"
	"	mov %rax, 8(%rbp)\n"
	"	irt_restore\n"
	"	lea 8(%rsp), %rsp\n"
	"	jmp *-8(%rsp)\n"
	"	.size irt_exit_thunk, .-irt_exit_thunk\n"
);
