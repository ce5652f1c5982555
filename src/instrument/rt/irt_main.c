/*
 * libkscope-instr.so's life cycle (irt_int.h): before main, analyse the
 * program it is loaded in (ks_instr, the same analysis as kscope
 * instrument --list), write a trampoline per function that can be
 * patched into memory within reach of a rel32 jmp, and patch the
 * functions' entries; per thread, its state on its first instrumented
 * call; at the thread's end, its open frames closed; at fork, the
 * child's counters restarted; at exit, instr.<pid>.txt written to the
 * run directory (docs/instrument.md has the format).
 *
 * Nothing is done unless KSCOPE_INSTR_DIR is set: the library does not
 * act on a program kscope did not start.  Errors of the analysis or the
 * patching are written into instr.<pid>.txt ("error" line) rather than on
 * the program's stderr; the program then runs unpatched.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "instr.h"
#include "irt_int.h"

struct irt_global irt_g;

/* A trampoline's id and call, then what the moved instructions become. */
_Static_assert(IRT_STUB_SIZE >= IRT_STUB_ID_BACK + KS_INSTR_MAX_RELOC_BYTES,
	       "a trampoline holds the largest relocation");

/* What the life cycle keeps beside the hot path's state. */
static struct {
	struct ks_instr_image img;
	bool analysed;
	char dir[PATH_MAX];
	char error[KS_ERR_MSG_MAX];
	uintptr_t bias;
	uint8_t *tramp;             /* the trampolines' mapping */
	size_t tramp_len;
	pthread_key_t key;
	uint64_t tsc0, ns0;         /* clock calibration at start */
	char **late_reason;         /* per function: why patching failed here */
	bool written;
} rt;

void irt_lock(void)
{
	while (__atomic_exchange_n(&irt_g.lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(&irt_g.lock, __ATOMIC_RELAXED))
			__builtin_ia32_pause();
}

void irt_unlock(void)
{
	__atomic_store_n(&irt_g.lock, 0, __ATOMIC_RELEASE);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------------ */
/* Threads                                                             */
/* ------------------------------------------------------------------ */

static void thread_end(void *p)
{
	struct irt_thread *t = p;

	irt_thread_close_all(t, irt_now());
	t->ended = true;
}

/* Called from the entry thunk with the vector registers saved; allocates
 * with mmap, never malloc (the program's own malloc may be instrumented). */
int irt_thread_start(void)
{
	struct irt_thread *t;
	size_t stack_len = IRT_STACK_FRAMES * sizeof(struct irt_frame);
	size_t stats_len = (size_t)irt_g.nfuncs * sizeof(struct irt_stat);
	size_t edges_len = IRT_EDGES * sizeof(struct irt_edge);
	size_t events_len = (size_t)irt_g.trace_limit * sizeof(struct irt_event);
	void *m;

	if (!irt_g.active)
		return -1;
	/* Only the pages used are ever backed: the tables are sparse, and
	 * the trace fills from its start. */
	m = mmap(NULL, sizeof(*t) + stack_len + edges_len + events_len + stats_len,
		 PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -1;
	t = m;
	t->stack = (struct irt_frame *)((char *)m + sizeof(*t));
	t->edges = (struct irt_edge *)((char *)t->stack + stack_len);
	t->events = (struct irt_event *)((char *)t->edges + edges_len);
	t->stats = (struct irt_stat *)((char *)t->events + events_len);
	t->tid = (pid_t)syscall(SYS_gettid);
	irt_lock();
	t->next = irt_g.threads;
	irt_g.threads = t;
	irt_unlock();
	pthread_setspecific(rt.key, t);
	irt_self_set(t);
	return 0;
}

/* In the child of a fork: only the forking thread goes on; its counters
 * restart (the parent reports what came before), its open frames stay. */
static void at_fork_child(void)
{
	struct irt_thread *self = irt_self_get();

	irt_g.lock = 0;
	irt_g.threads = self;
	rt.written = false;
	if (!self)
		return;
	self->next = NULL;
	self->tid = (pid_t)syscall(SYS_gettid);
	self->overflow = self->unwound = self->edges_lost = 0;
	for (uint32_t i = 0; i < irt_g.nfuncs; i++) {
		uint32_t active = self->stats[i].active;

		memset(&self->stats[i], 0, sizeof(self->stats[i]));
		self->stats[i].active = active;
	}
	/* The call graph starts again too, without touching its pages; the
	 * open calls' edges belong to the parent's. */
	madvise(self->edges, IRT_EDGES * sizeof(struct irt_edge), MADV_DONTNEED);
	if (self->nev)
		madvise(self->events, (size_t)self->nev * sizeof(struct irt_event),
			MADV_DONTNEED);
	self->nev = 0;
	self->ev_dropped = 0;
	for (uint32_t k = 0; k < self->depth; k++) {
		self->stack[k].edge = IRT_NO_EDGE;
		self->stack[k].ev = IRT_NO_EDGE;
	}
}

/* ------------------------------------------------------------------ */
/* Patching                                                            */
/* ------------------------------------------------------------------ */

struct segs {
	uintptr_t bias;
	uintptr_t lo, hi;           /* the executable segments' extent */
	struct { uintptr_t start, end; int prot; } x[8];
	int nx;
	bool found;
};

static int main_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct segs *s = arg;

	(void)size;
	/* The first object is the program itself. */
	s->bias = info->dlpi_addr;
	s->lo = UINTPTR_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		uintptr_t a, b;

		if (p->p_type != PT_LOAD)
			continue;
		a = info->dlpi_addr + p->p_vaddr;
		b = a + p->p_memsz;
		if (a < s->lo)
			s->lo = a;
		if (b > s->hi)
			s->hi = b;
		if ((p->p_flags & PF_X) && s->nx < 8) {
			s->x[s->nx].start = a;
			s->x[s->nx].end = b;
			s->x[s->nx].prot = PROT_EXEC | (p->p_flags & PF_R ? PROT_READ : 0) |
					   (p->p_flags & PF_W ? PROT_WRITE : 0);
			s->nx++;
		}
	}
	s->found = true;
	return 1;
}

/* A mapping of len bytes within reach of rel32 from all of [lo, hi):
 * tried just above the program, then just below it. */
static void *map_near(uintptr_t lo, uintptr_t hi, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t step = 1u << 20;

	for (uintptr_t k = 0; k < 1024; k++) {
		uintptr_t want[2];

		want[0] = ((hi + (uintptr_t)page - 1) & ~((uintptr_t)page - 1)) + k * step;
		want[1] = ((lo & ~((uintptr_t)page - 1)) - len - k * step) & ~((uintptr_t)page - 1);
		for (int w = 0; w < 2; w++) {
			void *m;

			if (w == 1 && lo < len + k * step + (1u << 16))
				continue;
			m = mmap((void *)want[w], len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
			if (m == MAP_FAILED)
				continue;
			if ((uintptr_t)m != want[w]) {
				/* A kernel without MAP_FIXED_NOREPLACE takes it as a hint. */
				munmap(m, len);
				continue;
			}
			return m;
		}
	}
	return NULL;
}

static void late_refuse(uint32_t i, const char *why)
{
	struct ks_instr_func *f = &rt.img.funcs[i];

	f->patch = false;
	snprintf(f->reason, sizeof(f->reason), "%s", why);
	rt.img.npatch--;
}

static int patch_all(struct ks_err *err)
{
	struct segs s = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	uint8_t *tr;
	size_t at;

	dl_iterate_phdr(main_phdr, &s);
	if (!s.found || !s.nx)
		return ks_err_set(err, -ENOENT, "cannot find the program's code in memory");
	rt.bias = s.bias;
	len = (16 + (size_t)rt.img.npatch * IRT_STUB_SIZE + (size_t)page - 1) &
	      ~((size_t)page - 1);
	tr = map_near(s.lo, s.hi, len);
	if (!tr)
		return ks_err_set(err, -ENOMEM, "cannot map trampolines within 2 GiB of the "
				  "program's code");
	rt.tramp = tr;
	rt.tramp_len = len;
	/* The entry thunk's address, which every trampoline calls through. */
	{
		uintptr_t thunk = (uintptr_t)irt_entry_thunk;

		memcpy(tr, &thunk, sizeof(thunk));
	}
	at = 16;
	for (uint32_t i = 0; i < rt.img.nfuncs; i++) {
		struct ks_instr_func *f = &rt.img.funcs[i];
		uint8_t *stub = tr + at;
		const uint8_t *mem = (const uint8_t *)(rt.bias + f->addr);
		int32_t d;
		int n;
		struct ks_err e;

		if (!f->patch)
			continue;
		if (memcmp(mem, f->bytes, f->moved_len) != 0) {
			late_refuse(i, "its bytes in memory differ from the file");
			continue;
		}
		memcpy(stub, &i, 4);
		stub[4] = 0xff;
		stub[5] = 0x15;
		d = (int32_t)((intptr_t)tr - (intptr_t)(stub + 10));
		memcpy(stub + 6, &d, 4);
		n = ks_instr_relocate(f, rt.bias, stub + 10, (uint64_t)(uintptr_t)(stub + 10),
				      IRT_STUB_SIZE - 10, &e);
		if (n < 0) {
			late_refuse(i, "a moved instruction cannot reach its target from the "
				    "trampolines");
			continue;
		}
		at += IRT_STUB_SIZE;
	}
	if (mprotect(tr, len, PROT_READ | PROT_EXEC) != 0)
		return ks_err_set(err, -errno, "cannot make the trampolines executable: %s",
				  strerror(errno));
	/* The program's code writable for the patching, then as it was.
	 * Nothing of the program runs meanwhile: this is the constructor of
	 * a preloaded library, before the program's own. */
	for (int k = 0; k < s.nx; k++) {
		uintptr_t a = s.x[k].start & ~((uintptr_t)page - 1);

		if (mprotect((void *)a, s.x[k].end - a, s.x[k].prot | PROT_WRITE) != 0)
			return ks_err_set(err, -errno, "cannot make the program's code writable "
					  "for the patching: %s", strerror(errno));
	}
	at = 16;
	for (uint32_t i = 0; i < rt.img.nfuncs; i++) {
		struct ks_instr_func *f = &rt.img.funcs[i];
		uint8_t *fn = (uint8_t *)(rt.bias + f->addr);
		uint8_t jmp[5];
		int32_t d;

		if (!f->patch)
			continue;
		d = (int32_t)((intptr_t)(tr + at + 4) - (intptr_t)(fn + 5));
		jmp[0] = 0xe9;
		memcpy(jmp + 1, &d, 4);
		memcpy(fn, jmp, 5);
		at += IRT_STUB_SIZE;
	}
	for (int k = 0; k < s.nx; k++) {
		uintptr_t a = s.x[k].start & ~((uintptr_t)page - 1);

		mprotect((void *)a, s.x[k].end - a, s.x[k].prot);
	}
	__builtin___clear_cache((char *)tr, (char *)tr + len);
	return 0;
}

/* Whether the CPU's time-stamp counter runs at a constant rate through
 * sleep states (invariant TSC: constant_tsc and nonstop_tsc). */
static bool tsc_invariant(void)
{
	char buf[8192];
	ssize_t n;
	int fd = open("/proc/cpuinfo", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return strstr(buf, " constant_tsc") && strstr(buf, " nonstop_tsc");
}

__attribute__((constructor)) static void irt_init(void)
{
	const char *dir = getenv(IRT_ENV_DIR), *v;
	char exe[PATH_MAX];
	struct ks_instr_sel sel = { 0 };
	struct ks_err err;
	ssize_t n;
	int rc;

	if (!dir || !*dir || strlen(dir) >= sizeof(rt.dir))
		return;
	snprintf(rt.dir, sizeof(rt.dir), "%s", dir);
	ks_err_clear(&err);
	if ((v = getenv(IRT_ENV_MIN)) && *v)
		sel.min_insns = strtoll(v, NULL, 10);
	if ((v = getenv(IRT_ENV_INCLUDE)) && *v)
		sel.include = v;
	if ((v = getenv(IRT_ENV_EXCLUDE)) && *v)
		sel.exclude = v;
	if ((v = getenv(IRT_ENV_TRACE)) && *v) {
		unsigned long long lim = strtoull(v, NULL, 10);

		irt_g.trace_limit = lim > IRT_TRACE_MAX ? IRT_TRACE_MAX : (uint32_t)lim;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(rt.error, sizeof(rt.error), "cannot read /proc/self/exe: %s",
			 strerror(errno));
		return;
	}
	exe[n] = '\0';
	rc = ks_instr_analyze(exe, &sel, &rt.img, &err);
	if (rc) {
		snprintf(rt.error, sizeof(rt.error), "%s", err.msg);
		return;
	}
	rt.analysed = true;
	if (rt.img.nfuncs > UINT32_MAX / 2) {
		snprintf(rt.error, sizeof(rt.error), "too many functions");
		return;
	}
	irt_g.nfuncs = (uint32_t)rt.img.nfuncs;
	irt_g.exit_addr = (uintptr_t)irt_exit_thunk;
	irt_g.use_clock = !tsc_invariant();
	if (pthread_key_create(&rt.key, thread_end) != 0) {
		snprintf(rt.error, sizeof(rt.error), "cannot create a thread key");
		return;
	}
	pthread_atfork(NULL, NULL, at_fork_child);
	rt.ns0 = mono_ns();
	rt.tsc0 = irt_now();
	if (!rt.img.npatch)
		return;
	/* Active before patching: from the first patched call on, threads
	 * get their state. */
	irt_g.active = true;
	rc = patch_all(&err);
	if (rc) {
		irt_g.active = false;
		snprintf(rt.error, sizeof(rt.error), "%s", err.msg);
	}
}

/* ------------------------------------------------------------------ */
/* The results                                                         */
/* ------------------------------------------------------------------ */

/* Writes instr.<pid>.txt (under a temporary name first). */
/* What a call still open at the end adds to its edge's time. */
struct edge_adj {
	uint32_t edge;
	uint64_t dur;
};

static int cmp_adj(const void *pa, const void *pb)
{
	const struct edge_adj *a = pa, *b = pb;

	return a->edge < b->edge ? -1 : a->edge > b->edge;
}

/* The thread's call graph: "e CALLER CALLEE CALLS INCL_NS", CALLER -1
 * for code kscope did not instrument and -2 for a signal's delivery;
 * adj (the open calls' time, any order) is added as the end. */
static void edges_write(int fd, const struct irt_thread *t, struct edge_adj *adj, size_t nadj,
			double tick_ns)
{
	size_t a = 0;

	if (nadj)
		qsort(adj, nadj, sizeof(*adj), cmp_adj);
	for (uint32_t h = 0; h < IRT_EDGES; h++) {
		const struct irt_edge *e = &t->edges[h];
		uint64_t key = __atomic_load_n(&e->key, __ATOMIC_RELAXED), incl = e->incl;
		uint32_t caller = (uint32_t)(key >> 32) - 1, callee = (uint32_t)key - 1;

		while (a < nadj && adj[a].edge < h)
			a++;
		for (; a < nadj && adj[a].edge == h; a++)
			incl += adj[a].dur;
		if (!key)
			continue;
		dprintf(fd, "e %ld %u %lu %.0f\n",
			caller == IRT_CALLER_ROOT ? -1L : caller == IRT_CALLER_SIGNAL ? -2L
			: (long)caller, callee, (unsigned long)e->calls, (double)incl * tick_ns);
	}
}

static void full_write(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* A tick as nanoseconds of CLOCK_MONOTONIC (ticks are nanoseconds already
 * without an invariant TSC). */
static uint64_t tick_to_ns(uint64_t tick, double tick_ns)
{
	if (irt_g.use_clock)
		return tick;
	if (tick < rt.tsc0)
		return rt.ns0;
	return rt.ns0 + (uint64_t)((double)(int64_t)(tick - rt.tsc0) * tick_ns);
}

/* The thread's trace: "trace CALLS DROPPED", then "c ID DEPTH START END"
 * per call, times in nanoseconds of CLOCK_MONOTONIC; a call still open
 * ends at now. */
static void trace_write(int fd, const struct irt_thread *t, uint64_t now, double tick_ns)
{
	char buf[8192];
	size_t len = 0;

	if (!irt_g.trace_limit)
		return;
	dprintf(fd, "trace %u %lu\n", t->nev, (unsigned long)t->ev_dropped);
	for (uint32_t i = 0; i < t->nev; i++) {
		const struct irt_event *e = &t->events[i];
		uint64_t t1 = e->t1 ? e->t1 : now;
		int n;

		if (len + 128 > sizeof(buf)) {
			full_write(fd, buf, len);
			len = 0;
		}
		n = snprintf(buf + len, sizeof(buf) - len, "c %u %u %llu %llu\n", e->id, e->depth,
			     (unsigned long long)tick_to_ns(e->t0, tick_ns),
			     (unsigned long long)tick_to_ns(t1 > e->t0 ? t1 : e->t0, tick_ns));
		if (n > 0)
			len += (size_t)n;
	}
	full_write(fd, buf, len);
}

static void write_results(void)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64];
	uint64_t ns1, tsc1, now;
	double tick_ns = 1.0;
	struct irt_stat *copy = NULL;
	struct edge_adj *adj = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s/instr.%d.txt", rt.dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s/.instr.%d.txt.part", rt.dir, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return;
	now = irt_now();
	if (!irt_g.use_clock) {
		/* At least 5 ms between the two readings, for the rate. */
		while ((ns1 = mono_ns()) - rt.ns0 < 5000000)
			;
		tsc1 = irt_now();
		if (tsc1 > rt.tsc0)
			tick_ns = (double)(ns1 - rt.ns0) / (double)(tsc1 - rt.tsc0);
	}
	dprintf(fd, "kscope-instrument 1\npid %d\n", (int)getpid());
	if (rt.error[0])
		dprintf(fd, "error %s\n", rt.error);
	if (!rt.analysed) {
		dprintf(fd, "end\n");
		goto done;
	}
	dprintf(fd, "exe %s\nsymtab %s\nbias 0x%lx\ntick_ns %.9f\nfunctions %zu %zu\n",
		rt.img.path, rt.img.symtab ? rt.img.symtab : "none", (unsigned long)rt.bias,
		tick_ns, rt.img.nfuncs, rt.img.npatch);
	for (size_t i = 0; i < rt.img.nfuncs; i++) {
		const struct ks_instr_func *f = &rt.img.funcs[i];

		if (f->patch)
			dprintf(fd, "f %zu 0x%lx %lu %u %s\n", i, (unsigned long)f->addr,
				(unsigned long)f->size, f->ninsns, f->name);
		else if (!strncmp(f->reason, "its bytes", 9) || !strncmp(f->reason, "a moved", 7))
			dprintf(fd, "r %zu %s: %s\n", i, f->name, f->reason);
	}
	copy = irt_g.nfuncs ? calloc(irt_g.nfuncs, sizeof(*copy)) : NULL;
	adj = calloc(IRT_STACK_FRAMES, sizeof(*adj));
	irt_lock();
	for (struct irt_thread *t = irt_g.threads; t; t = t->next) {
		uint64_t open_calls = 0;
		uint64_t inner = 0;     /* the open call above this one */
		size_t nadj = 0;

		if (!copy || !adj)
			break;
		/* Frames still open (exit() from a deep call, threads still
		 * running) are counted as ending now, in a copy: the live
		 * stack stays as it is for the returns still to come. */
		memcpy(copy, t->stats, irt_g.nfuncs * sizeof(*copy));
		for (uint32_t k = t->depth; k > 0; k--) {
			const struct irt_frame *f = &t->stack[k - 1];
			struct irt_stat *st = &copy[f->id];
			uint64_t dur = now > f->t0 ? now - f->t0 : 0;
			uint64_t child = f->child + inner;

			open_calls++;
			if (st->active)
				st->active--;
			if (!st->active)
				st->incl += dur;
			if (!st->active && f->edge != IRT_NO_EDGE)
				adj[nadj++] = (struct edge_adj){ f->edge, dur };
			st->excl += dur > child ? dur - child : 0;
			st->sum += dur;
			if (!st->closed || dur < st->min)
				st->min = dur;
			if (dur > st->max)
				st->max = dur;
			st->closed++;
			inner = dur;
		}
		dprintf(fd, "thread %d overflow %lu unwound %lu open %lu lost %lu\n", (int)t->tid,
			(unsigned long)t->overflow, (unsigned long)t->unwound,
			(unsigned long)open_calls, (unsigned long)t->edges_lost);
		for (uint32_t i = 0; i < irt_g.nfuncs; i++) {
			const struct irt_stat *st = &copy[i];

			if (!st->calls)
				continue;
			dprintf(fd, "s %u %lu %lu %.0f %.0f %.0f %.0f %.0f\n", i,
				(unsigned long)st->calls, (unsigned long)st->closed,
				(double)st->incl * tick_ns, (double)st->excl * tick_ns,
				(double)st->sum * tick_ns, (double)st->min * tick_ns,
				(double)st->max * tick_ns);
		}
		edges_write(fd, t, adj, nadj, tick_ns);
		trace_write(fd, t, now, tick_ns);
	}
	irt_unlock();
	free(adj);
	free(copy);
	dprintf(fd, "end\n");
done:
	fsync(fd);
	close(fd);
	rename(tmp, path);
}

__attribute__((destructor)) static void irt_fini(void)
{
	if (!rt.dir[0] || rt.written)
		return;
	rt.written = true;
	write_results();
}
