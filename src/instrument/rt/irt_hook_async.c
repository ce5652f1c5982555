/*
 * The hot path of libkscope-instr.so: what runs at every entry and exit
 * of an instrumented function (irt_int.h).  Compiled with
 * -mgeneral-regs-only so that it never touches a vector or x87 register
 * the program may still need (the thunks save the general-purpose ones),
 * and it calls nothing but the clock.  No I/O, no locks, no allocation:
 * counters and the shadow stack are the thread's own.
 *
 * The shadow stack holds, per open call, where its return address was
 * and what it was.  The real stack grows down, so at any entry or exit a
 * shadow frame whose slot lies below the current one belongs to a call
 * that longjmp (or anything else that skips frames) left: it is closed
 * then, at that moment.  A call that enters with the exit thunk already
 * in its slot is a tail call from the frame on top: that frame ends and
 * the new one inherits its return address.
 *
 * The frame is reserved (depth raised) before it is filled and read
 * before depth is lowered, so that a signal handler that is itself
 * instrumented and interrupts the hook works on other shadow slots.
 * Everything here is async-signal-safe (an instrumented signal handler
 * runs it): no locks, no allocation, only clock_gettime (the thread's
 * CPU clock after a switch), reads of the thread's perf event page and,
 * on the fatal paths, write(2).
 */
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

#include "irt_int.h"

static __thread struct irt_thread *irt_self __attribute__((tls_model("initial-exec")));

#define barrier() __asm__ __volatile__("" ::: "memory")

struct irt_thread *irt_self_get(void)
{
	return irt_self;
}

void irt_self_set(struct irt_thread *t)
{
	irt_self = t;
}

uint64_t irt_now(void)
{
	if (__builtin_expect(irt_g.use_clock, 0)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	}
	return __builtin_ia32_rdtsc();
}

/* A thread's CPU clock (CLOCK_THREAD_CPUTIME_ID of thread tid; the
 * kernel's encoding, as pthread_getcpuclockid makes it), in ns; a
 * system call.  -1 when the thread is gone. */
int64_t irt_thread_cpu_ns(pid_t tid)
{
	struct timespec ts;
	clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6);

	if (clock_gettime(c, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

uint64_t irt_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The thread's off-CPU clock (struct irt_cpu), read again after a
 * switch: now less its CPU clock, the two read with no switch between
 * (the page's lock the same before and after). */
static void cpu_refresh(struct irt_thread *t)
{
	const volatile struct perf_event_mmap_page *pm = t->cpu.pm;

	for (int tries = 0; tries < 4; tries++) {
		uint32_t lock = __atomic_load_n(&pm->lock, __ATOMIC_ACQUIRE);
		int64_t mono = (int64_t)irt_mono_ns(), cpu = irt_thread_cpu_ns(t->tid);

		if (cpu < 0 || __atomic_load_n(&pm->lock, __ATOMIC_ACQUIRE) != lock)
			continue;
		t->cpu.off = mono - cpu + t->cpu.adj;
		barrier();
		t->cpu.lock = lock;
		return;
	}
}

int64_t irt_off(struct irt_thread *t)
{
	if (t->cpu.pm && __atomic_load_n(&t->cpu.pm->lock, __ATOMIC_RELAXED) != t->cpu.lock)
		cpu_refresh(t);
	return t->cpu.off;
}

/* The time now and the off-CPU clock at that same moment: read again
 * when the thread was switched between the two readings (the switch
 * would be in one and not in the other).  A few times at most: a thread
 * single-stepped by a debugger is switched at every instruction. */
static uint64_t now_off(struct irt_thread *t, int64_t *off)
{
	for (int tries = 0;; tries++) {
		int64_t o = irt_off(t);
		uint64_t now = irt_now();

		if (!t->cpu.pm || tries == 3 ||
		    __atomic_load_n(&t->cpu.pm->lock, __ATOMIC_RELAXED) == t->cpu.lock) {
			*off = o;
			return now;
		}
	}
}

uint64_t irt_now_off(struct irt_thread *t, int64_t *off)
{
	return now_off(t, off);
}

int64_t irt_off_of(const struct irt_thread *t, uint64_t mono)
{
	int64_t cpu;

	if (!t->cpu.pm || (cpu = irt_thread_cpu_ns(t->tid)) < 0)
		return t->cpu.off;
	return (int64_t)mono - cpu + t->cpu.adj;
}

/* Accounts one finished call (f, already off the stack) at now, the
 * thread's off-CPU clock reading off. */
static void frame_close(struct irt_thread *t, const struct irt_frame *f, uint64_t now,
			int64_t off)
{
	struct irt_stat *st = &t->stats[f->id];
	uint64_t dur = now > f->t0 ? now - f->t0 : 0;
	uint64_t doff = off > f->off0 ? (uint64_t)(off - f->off0) : 0;

	if (st->active)
		st->active--;
	if (!st->active) {
		st->incl += dur;
		st->offi += doff;
	}
	st->excl += dur > f->child ? dur - f->child : 0;
	st->offx += doff > f->child_off ? doff - f->child_off : 0;
	st->sum += dur;
	if (!st->closed || dur < st->min)
		st->min = dur;
	if (dur > st->max)
		st->max = dur;
	st->closed++;
	if (f->edge != IRT_NO_EDGE && !st->active)
		t->edges[f->edge].incl += dur;
	if (f->ev != IRT_NO_EDGE)
		t->events[f->ev].t1 = now ? now : 1;
	if (t->depth) {
		t->stack[t->depth - 1].child += dur;
		t->stack[t->depth - 1].child_off += doff;
	}
}

/* The edge entry of caller -> callee, made on first use; IRT_NO_EDGE when
 * IRT_EDGE_PROBES entries from its place are all taken by other edges. */
static uint32_t edge_of(struct irt_thread *t, uint32_t caller, uint32_t callee)
{
	uint64_t key = (uint64_t)(uint32_t)(caller + 1) << 32 | (uint64_t)(callee + 1);
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - IRT_EDGE_BITS));

	for (uint32_t n = 0; n < IRT_EDGE_PROBES; n++, h = (h + 1) & (IRT_EDGES - 1)) {
		uint64_t k = __atomic_load_n(&t->edges[h].key, __ATOMIC_RELAXED);

		if (k == 0) {
			if (__atomic_compare_exchange_n(&t->edges[h].key, &k, key, false,
							__ATOMIC_RELAXED, __ATOMIC_RELAXED))
				return h;
		}
		if (k == key)
			return h;
	}
	t->edges_lost++;
	return IRT_NO_EDGE;
}

/* Whether a return address is the kernel's way back from a signal
 * handler: glibc's restorer, `mov $15, %rax; syscall` (rt_sigreturn).
 * The 9 bytes are read only when they lie in one 4 KiB page: a call as
 * the very last instruction of a mapping (of a function that does not
 * return) has its return address at the end of the mapping, and the
 * page after it may not be there. */
static bool is_sigreturn(uintptr_t ret)
{
	const unsigned char *p = (const unsigned char *)ret;
	uint64_t head;

	if ((ret & 4095) > 4096 - 9)
		return false;
	__builtin_memcpy(&head, p, sizeof(head));
	return head == 0x0f0000000fc0c748ull && p[8] == 0x05;
}

/* Pops and closes the top frame. */
static struct irt_frame frame_pop(struct irt_thread *t, uint64_t now, int64_t off)
{
	struct irt_frame f = t->stack[t->depth - 1];

	barrier();
	t->depth--;
	barrier();
	frame_close(t, &f, now, off);
	return f;
}

void irt_thread_close_all(struct irt_thread *t, uint64_t now, int64_t off)
{
	while (t->depth) {
		frame_pop(t, now, off);
		t->unwound++;
	}
}

void irt_thread_pop_below(struct irt_thread *t, uintptr_t limit, uint64_t now, int64_t off)
{
	while (t->depth && (uintptr_t)t->stack[t->depth - 1].slot < limit) {
		frame_pop(t, now, off);
		t->unwound++;
	}
}

static void fatal_write(const char *msg, unsigned long len)
{
	ssize_t r = write(2, msg, len);

	(void)r;
	__builtin_trap();
}

/* Says msg (a string literal) on stderr and stops the program: its
 * stack no longer says where to return. */
#define fatal(msg) fatal_write(msg, sizeof(msg) - 1)

/* Async-signal-safe. */
int irt_enter(uintptr_t resume, uintptr_t *slot)
{
	struct irt_thread *t = irt_self;
	struct irt_frame *f;
	uint64_t now;
	int64_t off;
	uint32_t id, d, caller = 0, edge;
	bool tail = false;
	uintptr_t ret;

	if (__builtin_expect(!t, 0))
		return irt_g.active ? 1 : 0;
	now = now_off(t, &off);
	id = *(const uint32_t *)(resume - IRT_STUB_ID_BACK);
	t->stats[id].calls++;
	/* Frames below this one were left without returning (longjmp). */
	while (t->depth && t->stack[t->depth - 1].slot < slot) {
		frame_pop(t, now, off);
		t->unwound++;
	}
	ret = *slot;
	if (t->depth && t->stack[t->depth - 1].slot == slot) {
		if (ret == irt_g.exit_addr) {
			/* A tail call: the caller ends, its return is ours;
			 * the call graph has the call from it. */
			struct irt_frame from = frame_pop(t, now, off);

			ret = from.ret;
			caller = from.id;
			tail = true;
		} else {
			/* The same slot, reused by a new call: the old frame is gone. */
			frame_pop(t, now, off);
			t->unwound++;
		}
	}
	d = t->depth;
	if (__builtin_expect(d >= IRT_STACK_FRAMES, 0)) {
		t->overflow++;
		if (ret != *slot)
			fatal("kscope instrument: shadow stack full at a tail call\n");
		return 0;
	}
	/* The caller: the frame below, or, for a signal handler (its return
	 * is the signal restorer), the kernel, not the function it cut in. */
	if (!tail)
		caller = is_sigreturn(ret) ? IRT_CALLER_SIGNAL
			 : d ? t->stack[d - 1].id : IRT_CALLER_ROOT;
	edge = edge_of(t, caller, id);
	if (edge != IRT_NO_EDGE)
		t->edges[edge].calls++;
	/* Reserved with a slot above every other until it is filled, so
	 * that an instrumented signal handler that interrupts here neither
	 * takes it for a left frame nor writes into it. */
	f = &t->stack[d];
	f->slot = (uintptr_t *)UINTPTR_MAX;
	barrier();
	t->depth = d + 1;
	barrier();
	f->ret = ret;
	f->t0 = now;
	f->child = 0;
	f->off0 = off;
	f->child_off = 0;
	f->id = id;
	f->edge = edge;
	if (t->nev < irt_g.trace_limit) {
		struct irt_event *e = &t->events[t->nev];

		f->ev = t->nev++;
		e->t0 = now;
		e->t1 = 0;
		e->id = id;
		e->depth = d;
	} else {
		f->ev = IRT_NO_EDGE;
		t->ev_dropped++;
	}
	t->stats[id].active++;
	barrier();
	f->slot = slot;
	*slot = irt_g.exit_addr;
	return 0;
}

/* Async-signal-safe. */
uintptr_t irt_exit(uintptr_t *slot)
{
	struct irt_thread *t = irt_self;
	uint64_t now;
	int64_t off;

	if (!t)
		fatal("kscope instrument: a return through kscope's exit thunk on a thread "
		      "without state\n");
	now = now_off(t, &off);
	while (t->depth && t->stack[t->depth - 1].slot < slot) {
		frame_pop(t, now, off);
		t->unwound++;
	}
	if (!t->depth || t->stack[t->depth - 1].slot != slot)
		fatal("kscope instrument: a return through kscope's exit thunk whose call "
		      "is not on the shadow stack\n");
	return frame_pop(t, now, off).ret;
}
