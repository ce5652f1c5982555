/*
 * For tests/gpu/run.sh: preloaded beside kscope's runtime, prints the
 * stack of a crashing program (SIGSEGV, SIGBUS, SIGABRT, SIGFPE) to
 * stderr before it dies, with each frame as library(+offset), so that a
 * crash on a GPU machine without gdb can be placed with addr2line here.
 * Built there: gcc -shared -fPIC -o segv_bt.so segv_bt.c
 */
#include <execinfo.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_crash(int sig)
{
	void *pc[64];
	int n = backtrace(pc, 64);
	static const char head[] = "segv_bt: crash, stack:\n";

	(void)!write(2, head, sizeof(head) - 1);
	backtrace_symbols_fd(pc, n, 2);
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((constructor)) static void segv_bt_init(void)
{
	static char stack[1 << 16];
	stack_t ss = { .ss_sp = stack, .ss_size = sizeof(stack) };
	struct sigaction sa;
	void *warm[1];

	backtrace(warm, 1);               /* loads libgcc_s now, not in the handler */
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_crash;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGABRT, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
}
