/*
 * Functions whose first instructions kscope instrument must move or
 * refuse, written in assembly so that their bytes are known (the tests
 * check both the verdicts of --list and that the moved ones still
 * compute the same results):
 *   riprel_first  starts with a RIP-relative load (moved, re-encoded)
 *   jcc_first     starts with test + je rel8 (moved, the je widened)
 *   call_first    starts with call rel32 (moved, re-encoded)
 *   helper_plus1  lea + ret: exactly 5 bytes (moved, ret included)
 *   jmp_first     starts with jmp rel8 over 3 nops (moved)
 *   branch_into   a loop jumps back to +2 (refused: a branch into the
 *                 patched bytes)
 *   loop_first    starts with `loop` (refused: cannot be moved)
 *   short_fn      3 bytes (refused: too short)
 * Usage: entries [N]
 */
#include <stdio.h>
#include <stdlib.h>

long rip_value = 1000;

long riprel_first(long x);
long jcc_first(long x);
long call_first(long x);
long helper_plus1(long x);
long jmp_first(long x);
long branch_into(long x);
long loop_first(long x);
long short_fn(long x);

__asm__(
	"	.text\n"
	"	.globl riprel_first\n"
	"	.type riprel_first, @function\n"
	"riprel_first:\n"
	"	mov rip_value(%rip), %rax\n"
	"	add %rdi, %rax\n"
	"	ret\n"
	"	.size riprel_first, .-riprel_first\n"
	"	.globl jcc_first\n"
	"	.type jcc_first, @function\n"
	"jcc_first:\n"
	"	test %edi, %edi\n"
	"	je 1f\n"
	"	mov $7, %eax\n"
	"	ret\n"
	"1:	mov $9, %eax\n"
	"	ret\n"
	"	.size jcc_first, .-jcc_first\n"
	"	.globl helper_plus1\n"
	"	.type helper_plus1, @function\n"
	"helper_plus1:\n"
	"	lea 1(%rdi), %rax\n"
	"	ret\n"
	"	.size helper_plus1, .-helper_plus1\n"
	"	.globl call_first\n"
	"	.type call_first, @function\n"
	"call_first:\n"
	"	call helper_plus1\n"
	"	add $10, %rax\n"
	"	ret\n"
	"	.size call_first, .-call_first\n"
	"	.globl jmp_first\n"
	"	.type jmp_first, @function\n"
	"jmp_first:\n"
	"	jmp 2f\n"
	"	nop\n"
	"	nop\n"
	"	nop\n"
	"2:	lea 5(%rdi), %rax\n"
	"	ret\n"
	"	.size jmp_first, .-jmp_first\n"
	"	.globl branch_into\n"
	"	.type branch_into, @function\n"
	"branch_into:\n"
	"	xor %eax, %eax\n"
	"3:	add $1, %eax\n"
	"	cmp %edi, %eax\n"
	"	jl 3b\n"
	"	ret\n"
	"	.size branch_into, .-branch_into\n"
	"	.globl loop_first\n"
	"	.type loop_first, @function\n"
	"loop_first:\n"
	"	loop 4f\n"
	"4:	mov %rdi, %rax\n"
	"	ret\n"
	"	.size loop_first, .-loop_first\n"
	"	.globl short_fn\n"
	"	.type short_fn, @function\n"
	"short_fn:\n"
	"	mov %edi, %eax\n"
	"	ret\n"
	"	.size short_fn, .-short_fn\n");

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	long acc = 0;

	for (long i = 0; i < n; i++) {
		acc += riprel_first(i);
		acc += jcc_first(i % 2);
		acc += call_first(i);
		acc += jmp_first(i);
		acc += branch_into(i + 1);
		acc += short_fn(i);
	}
	printf("acc %ld\n", acc);
	return 0;
}
