/*
 * Unwinding through instrumented frames: the wrappers of libgcc's
 * _Unwind_RaiseException, _Unwind_ForcedUnwind (pthread_exit,
 * pthread_cancel) and _Unwind_Backtrace (backtrace()), which this
 * library interposes on when preloaded; when kscope attaches to a
 * running process (--pid), irt_got.c points the loaded objects' GOT
 * entries of those functions at them instead.
 *
 * An unwinder reads return addresses from the stack, and where kscope
 * put its exit thunk there it would find no unwind information and stop
 * (a C++ exception would end in std::terminate).  So before the real
 * function runs, every return address of the calling thread that kscope
 * replaced is put back.  Those calls then return (or are unwound)
 * without passing the exit thunk; each is closed when a later entry or
 * exit on the thread sees that its stack slot has been left or reused,
 * as after a longjmp (irt_hook_async.c): counts stay exact, and their end
 * times are those of the next instrumented event on the thread.
 */
#include <stdint.h>
#include <unwind.h>

#include "irt_int.h"

/* Puts back the original return addresses of the calling thread's open
 * calls.  Shadow frames below this function's own frame belong to calls
 * a longjmp left: their slots may now be this very call chain's stack,
 * so they are closed, never written. */
__attribute__((noinline)) static void restore_returns(void)
{
	struct irt_thread *t = irt_self_get();
	uint64_t now;
	int64_t off;

	if (!t)
		return;
	now = irt_now_off(t, &off);
	irt_thread_pop_below(t, (uintptr_t)__builtin_frame_address(0), now, off);
	for (uint32_t k = 0; k < t->depth; k++) {
		struct irt_frame *f = &t->stack[k];

		if (*f->slot == irt_g.exit_addr)
			*f->slot = f->ret;
	}
}

_Unwind_Reason_Code irt_wrap_raise(struct _Unwind_Exception *e)
{
	_Unwind_Reason_Code (*real)(struct _Unwind_Exception *);

	*(void **)&real = irt_real(IRT_W_RAISE);
	restore_returns();
	return real ? real(e) : _URC_FATAL_PHASE1_ERROR;
}

_Unwind_Reason_Code irt_wrap_forced(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop, void *arg)
{
	_Unwind_Reason_Code (*real)(struct _Unwind_Exception *, _Unwind_Stop_Fn, void *);

	*(void **)&real = irt_real(IRT_W_FORCED);
	restore_returns();
	return real ? real(e, stop, arg) : _URC_FATAL_PHASE1_ERROR;
}

_Unwind_Reason_Code irt_wrap_backtrace(_Unwind_Trace_Fn fn, void *arg)
{
	_Unwind_Reason_Code (*real)(_Unwind_Trace_Fn, void *);

	*(void **)&real = irt_real(IRT_W_BACKTRACE);
	restore_returns();
	return real ? real(fn, arg) : _URC_END_OF_STACK;
}

/* Preloaded, the program's calls find these first. */
__attribute__((visibility("default"), alias("irt_wrap_raise"))) _Unwind_Reason_Code
_Unwind_RaiseException(struct _Unwind_Exception *e);
__attribute__((visibility("default"), alias("irt_wrap_forced"))) _Unwind_Reason_Code
_Unwind_ForcedUnwind(struct _Unwind_Exception *e, _Unwind_Stop_Fn stop, void *arg);
__attribute__((visibility("default"), alias("irt_wrap_backtrace"))) _Unwind_Reason_Code
_Unwind_Backtrace(_Unwind_Trace_Fn fn, void *arg);
