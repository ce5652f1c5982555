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
#include <regex.h>
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

/* The program's code and data in memory, or a library's. */
struct segs {
	uintptr_t bias;
	uintptr_t lo, hi;           /* the loadable segments' extent */
	struct { uintptr_t start, end; int prot; } x[8];
	int nx;
	bool found;
};

/* An object whose functions are patched: the program (first), then the
 * libraries --modules chose.  Function ids run on from one image to the
 * next: funcs[i] of an image is function first + i. */
struct irt_image {
	struct ks_instr_image img;
	struct segs s;
	uint32_t first;
	char path[PATH_MAX];
	uint8_t *tramp;             /* the trampolines' mapping */
	size_t tramp_len;
	bool rewritten;             /* patched in its file (--rewrite): nothing to do */
};

#define IRT_MAX_IMAGES 32
#define IRT_MAX_NOTES 16

/* What the life cycle keeps beside the hot path's state. */
static struct {
	struct irt_image im[IRT_MAX_IMAGES];
	size_t nim;
	bool analysed;
	char dir[PATH_MAX];
	char error[KS_ERR_MSG_MAX];
	char notes[IRT_MAX_NOTES][PATH_MAX + 160]; /* libraries left alone, why */
	size_t nnotes;
	pthread_key_t key;
	uint64_t tsc0, ns0;         /* clock calibration at start */
	char cpu_why[160];          /* why a thread has no CPU clock, the first time */
	bool written;
	bool detached;              /* kscope detached (--pid): nothing more to write */
	uint64_t detach_now;        /* when, in ticks */
	char *block;                /* the configuration kscope wrote (--pid), or NULL */
	pid_t pid;                  /* the process the state is of (not a vfork child) */
} rt;

/* A setting: from the block kscope wrote into the process when it
 * attached ("NAME=VALUE" strings, an empty one last), else from the
 * environment kscope started the program with. */
static const char *conf(const char *name)
{
	size_t n = strlen(name);

	if (!rt.block)
		return getenv(name);
	for (const char *p = rt.block; *p; p += strlen(p) + 1)
		if (!strncmp(p, name, n) && p[n] == '=')
			return p + n + 1;
	return NULL;
}

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

static void write_results(void);

/* ------------------------------------------------------------------ */
/* Threads, and their CPU clocks (struct irt_cpu)                      */
/* ------------------------------------------------------------------ */

static void cpu_refused(const char *what, int e)
{
	irt_lock();
	if (!rt.cpu_why[0])
		snprintf(rt.cpu_why, sizeof(rt.cpu_why), "%s: %s%s", what, strerror(e),
			 e == EACCES || e == EPERM
			 ? " (see /proc/sys/kernel/perf_event_paranoid and perf_event_mlock_kb)"
			 : "");
	irt_unlock();
}

/* A software event of the thread alone, only for its page: the kernel
 * updates the page (its lock) each time the thread is switched in, so a
 * changed lock says "switched since", and the off-CPU clock is read again
 * (irt_hook_async.c).  Only the page is mapped (read-only, no ring), and
 * the descriptor closed: the mapping keeps the event. */
bool irt_cpu_open(struct irt_thread *t, int64_t off)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_DUMMY,
		.exclude_kernel = 1, .exclude_hv = 1,
	};
	size_t len = irt_g.page;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	const volatile struct perf_event_mmap_page *pm;
	void *m;

	if (fd < 0) {
		cpu_refused("perf_event_open", errno);
		return false;
	}
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		cpu_refused("mapping a perf event", errno);
		close(fd);
		return false;
	}
	close(fd);
	pm = m;
	t->cpu.lock = pm->lock;
	/* Continuing from off: the clock of a fork child's thread starts at 0. */
	t->cpu.adj = off - ((int64_t)irt_mono_ns() - irt_thread_cpu_ns(t->tid));
	t->cpu.off = off;
	t->cpu.len = len;
	__atomic_store_n(&t->cpu.pm, pm, __ATOMIC_RELEASE);
	return true;
}

void irt_cpu_close(struct irt_thread *t, int64_t off)
{
	const volatile struct perf_event_mmap_page *pm = t->cpu.pm;

	t->cpu.off = off;
	if (!pm)
		return;
	__atomic_store_n(&t->cpu.pm, NULL, __ATOMIC_RELEASE);
	munmap((void *)(uintptr_t)pm, t->cpu.len);
}

static void thread_end(void *p)
{
	struct irt_thread *t = p;
	int64_t off;
	uint64_t now = irt_now_off(t, &off);

	irt_thread_close_all(t, now, off);
	/* Its CPU clock ends with it: the kernel limits how much perf
	 * memory a user may map at once. */
	irt_cpu_close(t, off);
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
	t->cpu_known = irt_cpu_open(t, 0);
	irt_lock();
	t->next = irt_g.threads;
	irt_g.threads = t;
	irt_unlock();
	pthread_setspecific(rt.key, t);
	irt_self_set(t);
	return 0;
}

/* Before a fork: the forking thread's off-CPU clock read now, for the
 * child's to continue from. */
static void at_fork_prepare(void)
{
	struct irt_thread *self = irt_self_get();

	if (self)
		irt_off(self);
}

/* In the child of a fork: only the forking thread goes on; its counters
 * restart (the parent reports what came before), its open frames stay. */
static void at_fork_child(void)
{
	struct irt_thread *self = irt_self_get();

	irt_g.lock = 0;
	irt_g.threads = self;
	rt.written = rt.detached;
	rt.pid = getpid();
	if (!self)
		return;
	/* The parent's perf mapping is not inherited (the kernel does not
	 * copy it): the child's thread gets its own clock, continuing. */
	self->tid = (pid_t)syscall(SYS_gettid);
	if (self->cpu.pm) {
		self->cpu.pm = NULL;
		self->cpu_known = irt_cpu_open(self, self->cpu.off);
	}
	self->next = NULL;
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

/* Every object loaded now, as dl_iterate_phdr lists them: the program
 * first (name ""), then the vDSO, the preloaded libraries and the
 * program's own. */
struct objs {
	struct { char *name; struct segs s; } v[256];
	size_t n;
};

static int collect_phdr(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct objs *o = arg;
	struct segs *s;

	(void)size;
	if (o->n >= sizeof(o->v) / sizeof(o->v[0]))
		return 1;
	o->v[o->n].name = strdup(info->dlpi_name ? info->dlpi_name : "");
	s = &o->v[o->n].s;
	memset(s, 0, sizeof(*s));
	o->n++;
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
	return 0;
}

static void objs_free(struct objs *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->v[i].name);
	o->n = 0;
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

static void late_refuse(struct irt_image *im, uint32_t i, const char *why)
{
	struct ks_instr_func *f = &im->img.funcs[i];

	f->patch = false;
	snprintf(f->reason, sizeof(f->reason), "%s", why);
	im->img.npatch--;
}

/* Makes the executable segments of im writable (w) or as they were. */
static int code_writable(const struct irt_image *im, bool w, struct ks_err *err)
{
	const struct segs *s = &im->s;
	long page = sysconf(_SC_PAGESIZE);

	for (int k = 0; k < s->nx; k++) {
		uintptr_t a = s->x[k].start & ~((uintptr_t)page - 1);

		if (mprotect((void *)a, s->x[k].end - a, s->x[k].prot | (w ? PROT_WRITE : 0)) != 0 &&
		    w)
			return ks_err_set(err, -errno, "cannot make the code of %s writable "
					  "for the patching: %s", im->path, strerror(errno));
	}
	return 0;
}

/* Writes im's trampolines near its code: one per function to patch,
 * IRT_STUB_SIZE bytes apart in the order of the functions. */
static int tramp_image(struct irt_image *im, struct ks_err *err)
{
	const struct segs *s = &im->s;
	long page = sysconf(_SC_PAGESIZE);
	size_t len;
	uint8_t *tr;
	size_t at;

	if (!s->found || !s->nx)
		return ks_err_set(err, -ENOENT, "cannot find the code of %s in memory",
				  im->path);
	len = (KS_INSTR_TRAMP_HEAD + (size_t)im->img.npatch * IRT_STUB_SIZE + (size_t)page - 1) &
	      ~((size_t)page - 1);
	tr = map_near(s->lo, s->hi, len);
	if (!tr)
		return ks_err_set(err, -ENOMEM, "cannot map trampolines within 2 GiB of the "
				  "code of %s", im->path);
	im->tramp = tr;
	im->tramp_len = len;
	/* The entry thunk's address, which every trampoline calls through. */
	{
		uintptr_t thunk = (uintptr_t)irt_entry_thunk;

		memcpy(tr, &thunk, sizeof(thunk));
	}
	at = KS_INSTR_TRAMP_HEAD;
	for (uint32_t i = 0; i < im->img.nfuncs; i++) {
		struct ks_instr_func *f = &im->img.funcs[i];
		uint8_t *stub = tr + at;
		const uint8_t *mem = (const uint8_t *)(s->bias + f->addr);
		uint32_t id = im->first + i;
		struct ks_err e;

		if (!f->patch)
			continue;
		if (memcmp(mem, f->bytes, f->moved_len) != 0) {
			late_refuse(im, i, "its bytes in memory differ from the file");
			continue;
		}
		if (ks_instr_stub_write(f, id, s->bias, stub, (uint64_t)(uintptr_t)stub,
					(uint64_t)(uintptr_t)tr, &e)) {
			late_refuse(im, i, "a moved instruction cannot reach its target from "
				    "the trampolines");
			continue;
		}
		at += IRT_STUB_SIZE;
	}
	if (mprotect(tr, len, PROT_READ | PROT_EXEC) != 0)
		return ks_err_set(err, -errno, "cannot make the trampolines executable: %s",
				  strerror(errno));
	__builtin___clear_cache((char *)tr, (char *)tr + len);
	return 0;
}

/* Whether a call among f's moved instructions ends inside them: a
 * thread in its callee when kscope attached would return into the
 * patched bytes.  Prefixes (REX, operand size, segment, bnd) skipped;
 * call rel32 (e8) and call r/m (ff /2, /3). */
static bool call_inside(const struct ks_instr_func *f)
{
	for (int k = 0; k + 1 < f->nmoved; k++) {
		const uint8_t *b = f->bytes + f->moved[k].off;
		int n = 0;

		while (n < f->moved[k].len - 1 &&
		       ((b[n] & 0xf0) == 0x40 || b[n] == 0x66 || b[n] == 0x67 || b[n] == 0x2e ||
			b[n] == 0x3e || b[n] == 0xf2 || b[n] == 0xf3))
			n++;
		if (b[n] == 0xe8 ||
		    (b[n] == 0xff && n + 1 < f->moved[k].len && ((b[n + 1] >> 3) & 7) >= 2 &&
		     ((b[n + 1] >> 3) & 7) <= 3))
			return true;
	}
	return false;
}

/* Patches im's functions with a jmp to their trampolines.  pcs (n of
 * them): where the process's threads are stopped, when kscope attached;
 * a function with one inside its patched bytes is left alone, and so is
 * one a thread may return into (call_inside). */
static int jmp_image(struct irt_image *im, const uintptr_t *pcs, size_t npcs, struct ks_err *err)
{
	const struct segs *s = &im->s;
	size_t at = KS_INSTR_TRAMP_HEAD;

	if (code_writable(im, true, err))
		return err->code;
	for (uint32_t i = 0; i < im->img.nfuncs; i++) {
		struct ks_instr_func *f = &im->img.funcs[i];
		uint8_t *fn = (uint8_t *)(s->bias + f->addr);
		uint8_t jmp[5];
		int32_t d;
		bool busy = false;

		if (!f->patch)
			continue;
		for (size_t k = 0; k < npcs && !busy; k++)
			busy = pcs[k] > (uintptr_t)fn && pcs[k] < (uintptr_t)fn + f->moved_len;
		if (busy || (rt.block && call_inside(f))) {
			late_refuse(im, i, busy ? "a thread was stopped in the bytes to patch when "
				    "kscope attached" : "a call among the bytes to patch: a thread "
				    "may be returning into them (--pid)");
			at += IRT_STUB_SIZE;
			continue;
		}
		d = (int32_t)((intptr_t)(im->tramp + at + 4) - (intptr_t)(fn + 5));
		jmp[0] = 0xe9;
		memcpy(jmp + 1, &d, 4);
		memcpy(fn, jmp, 5);
		at += IRT_STUB_SIZE;
	}
	code_writable(im, false, err);
	return 0;
}

/* Puts the original bytes back at im's patched functions. */
static void unjmp_image(struct irt_image *im)
{
	struct ks_err err;

	if (code_writable(im, true, &err))
		return;
	for (uint32_t i = 0; i < im->img.nfuncs; i++) {
		const struct ks_instr_func *f = &im->img.funcs[i];

		if (f->patch)
			memcpy((uint8_t *)(im->s.bias + f->addr), f->bytes, KS_INSTR_PATCH_LEN);
	}
	code_writable(im, false, &err);
}

static void note(const char *path, const char *why)
{
	if (rt.nnotes < IRT_MAX_NOTES)
		snprintf(rt.notes[rt.nnotes++], sizeof(rt.notes[0]), "%s: %s", path, why);
}

/* A library none of whose functions is patched after all, and why. */
static void image_drop(struct irt_image *im, const char *why)
{
	note(im->path, why);
	for (size_t i = 0; i < im->img.nfuncs; i++)
		im->img.funcs[i].patch = false;
	im->img.npatch = 0;
}

/* Analyses the loaded libraries whose path matches re (--modules). */
static void modules_add(struct objs *o, const char *re, const struct ks_instr_sel *sel)
{
	regex_t rx;

	if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0) {
		note(re, "not a regular expression");
		return;
	}
	for (size_t k = 1; k < o->n; k++) {
		const char *name = o->v[k].name;
		struct irt_image *im = &rt.im[rt.nim];
		const char *why;
		struct ks_err e;

		if (!name[0] || regexec(&rx, name, 0, NULL, 0) != 0)
			continue;
		if ((why = ks_instr_module_refused(name))) {
			note(name, why);
			continue;
		}
		if (rt.nim == IRT_MAX_IMAGES) {
			note(name, "more libraries than kscope patches in one process (32)");
			continue;
		}
		ks_err_clear(&e);
		memset(im, 0, sizeof(*im));
		if (ks_instr_analyze(name, sel, &im->img, &e) != 0) {
			note(name, e.msg);
			ks_instr_image_free(&im->img);
			continue;
		}
		snprintf(im->path, sizeof(im->path), "%s", name);
		im->s = o->v[k].s;
		rt.nim++;
	}
	regfree(&rx);
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

/* Reads the settings (conf), analyses the program and the libraries
 * --modules chose, and writes the trampolines; nothing is patched yet.
 * 0; -1 with rt.error set; 1 when there is nothing to patch. */
static int irt_setup(const struct ks_instr_rw *rw)
{
	const char *dir = conf(IRT_ENV_DIR), *v;
	char exe[PATH_MAX];
	struct ks_instr_sel sel = { 0 };
	static struct objs objs;
	struct ks_err err;
	size_t total = 0, npatch = 0;
	ssize_t n;
	int rc;

	if (!dir || !*dir || strlen(dir) >= sizeof(rt.dir))
		return 1;
	snprintf(rt.dir, sizeof(rt.dir), "%s", dir);
	ks_err_clear(&err);
	if ((v = conf(IRT_ENV_MIN)) && *v)
		sel.min_insns = strtoll(v, NULL, 10);
	if ((v = conf(IRT_ENV_INCLUDE)) && *v)
		sel.include = v;
	if ((v = conf(IRT_ENV_EXCLUDE)) && *v)
		sel.exclude = v;
	if ((v = conf(IRT_ENV_TRACE)) && *v) {
		unsigned long long lim = strtoull(v, NULL, 10);

		irt_g.trace_limit = lim > IRT_TRACE_MAX ? IRT_TRACE_MAX : (uint32_t)lim;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0) {
		snprintf(rt.error, sizeof(rt.error), "cannot read /proc/self/exe: %s",
			 strerror(errno));
		return -1;
	}
	exe[n] = '\0';
	if (rw) {
		/* Patched in its file: the functions are the segment's. */
		rc = ks_instr_rw_image(rw, exe, true, &rt.im[0].img, &err);
		rt.im[0].rewritten = true;
		rt.im[0].tramp = (uint8_t *)(uintptr_t)rw->tramp;
	} else {
		rc = ks_instr_analyze(exe, &sel, &rt.im[0].img, &err);
	}
	if (rc) {
		snprintf(rt.error, sizeof(rt.error), "%s", err.msg);
		return -1;
	}
	rt.analysed = true;
	snprintf(rt.im[0].path, sizeof(rt.im[0].path), "%s", exe);
	rt.nim = 1;
	dl_iterate_phdr(collect_phdr, &objs);
	if (objs.n)
		rt.im[0].s = objs.v[0].s;
	if ((v = conf(IRT_ENV_MODULES)) && *v)
		modules_add(&objs, v, &sel);
	objs_free(&objs);
	for (size_t k = 0; k < rt.nim; k++) {
		rt.im[k].first = (uint32_t)total;
		total += rt.im[k].img.nfuncs;
		npatch += rt.im[k].img.npatch;
	}
	if (total > UINT32_MAX / 2) {
		snprintf(rt.error, sizeof(rt.error), "too many functions");
		return -1;
	}
	irt_g.nfuncs = (uint32_t)total;
	irt_g.exit_addr = (uintptr_t)irt_exit_thunk;
	irt_g.use_clock = !tsc_invariant();
	if (pthread_key_create(&rt.key, thread_end) != 0) {
		snprintf(rt.error, sizeof(rt.error), "cannot create a thread key");
		return -1;
	}
	pthread_atfork(at_fork_prepare, NULL, at_fork_child);
	irt_g.page = (size_t)sysconf(_SC_PAGESIZE);
	rt.pid = getpid();
	rt.ns0 = irt_mono_ns();
	rt.tsc0 = irt_now();
	if (!npatch)
		return 1;
	for (size_t k = 0; k < rt.nim; k++) {
		if (!rt.im[k].img.npatch || rt.im[k].rewritten)
			continue;
		rc = tramp_image(&rt.im[k], &err);
		if (rc && k == 0) {
			snprintf(rt.error, sizeof(rt.error), "%s", err.msg);
			return -1;
		}
		if (rc)
			image_drop(&rt.im[k], err.msg);
	}
	return 0;
}

/* Patches every image (irt_setup first); pcs as jmp_image's.  Active
 * before patching: from the first patched call on, threads get their
 * state. */
static int irt_patch(const uintptr_t *pcs, size_t npcs)
{
	struct ks_err err;

	ks_err_clear(&err);
	irt_g.active = true;
	for (size_t k = 0; k < rt.nim; k++) {
		if (!rt.im[k].img.npatch || rt.im[k].rewritten)
			continue;
		if (jmp_image(&rt.im[k], pcs, npcs, &err)) {
			if (k == 0) {
				irt_g.active = false;
				snprintf(rt.error, sizeof(rt.error), "%s", err.msg);
				return -1;
			}
			image_drop(&rt.im[k], err.msg);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* A rewritten program (kscope instrument --rewrite)                   */
/* ------------------------------------------------------------------ */

static int find_rw(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ks_instr_rw *rw = arg;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *p = &info->dlpi_phdr[i];
		struct ks_err e;

		if (p->p_type == PT_LOAD &&
		    ks_instr_rw_parse((const uint8_t *)(info->dlpi_addr + p->p_vaddr), p->p_filesz,
				      rw, &e) == 0)
			return 1;
	}
	return 1;       /* the program is the first object: no further */
}

/* The entry thunk's address into the trampolines' head, which the file
 * could not hold: the page writable meanwhile. */
static void rw_thunk(const struct ks_instr_rw *rw)
{
	uintptr_t slot = (uintptr_t)rw->tramp, thunk = (uintptr_t)irt_entry_thunk;
	uintptr_t pg = slot & ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	size_t len = slot + sizeof(thunk) - pg;

	if (mprotect((void *)pg, len, PROT_READ | PROT_WRITE) != 0)
		return;
	memcpy((void *)slot, &thunk, sizeof(thunk));
	mprotect((void *)pg, len, PROT_READ | PROT_EXEC);
}

/* Run outside kscope: runs itself under the kscope command line the
 * rewrite recorded (kscope sets KSCOPE_INSTR_DIR, so the program it
 * starts records).  Returns only when that exec failed. */
static void rw_exec(const struct ks_instr_rw *rw, int argc, char **argv, char **envp)
{
	char exe[PATH_MAX], msg[PATH_MAX + 256];
	char **v;
	size_t k = 0, nk = 0;
	ssize_t n;
	int (*real)(const char *, char *const[], char *const[]);

	for (const char *a = rw->argv; *a; a += strlen(a) + 1)
		nk++;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	v = calloc(nk + (size_t)(argc > 0 ? argc : 1) + 3, sizeof(*v));
	*(void **)&real = irt_real(IRT_W_EXECVE);
	if (n > 0 && v && nk && real) {
		exe[n] = '\0';
		for (const char *a = rw->argv; *a; a += strlen(a) + 1)
			v[k++] = (char *)(uintptr_t)a;
		v[k++] = (char *)(uintptr_t)"--";
		/* The program as it was named, where that names this file:
		 * its argv[0] stays what it was. */
		{
			char r[PATH_MAX];

			v[k++] = argc > 0 && argv[0] && strchr(argv[0], '/') &&
				 realpath(argv[0], r) && !strcmp(r, exe) ? argv[0] : exe;
		}
		for (int i = 1; i < argc; i++)
			v[k++] = argv[i];
		v[k] = NULL;
		real(v[0], v, envp);
	}
	n = snprintf(msg, sizeof(msg), "kscope: this program was rewritten by kscope "
		     "instrument --rewrite to run under %s, which cannot be started (%s): it "
		     "runs unrecorded\n", nk ? rw->argv : "kscope", strerror(errno));
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		n = 0;
	free(v);
}

/* Preloaded (kscope instrument -- PROGRAM): before the program's own
 * constructors and main, with nothing of the program running.  Or a
 * rewritten program's first library (its DT_NEEDED). */
__attribute__((constructor)) static void irt_init(int argc, char **argv, char **envp)
{
	struct ks_instr_rw rw = { 0 };
	const char *dir = getenv(IRT_ENV_DIR);

	dl_iterate_phdr(find_rw, &rw);
	if (rw.head) {
		rw_thunk(&rw);
		if (!dir || !*dir) {
			rw_exec(&rw, argc, argv, envp);
			return;
		}
	}
	if (irt_setup(rw.head ? &rw : NULL) == 0)
		irt_patch(NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Attaching (kscope instrument --pid)                                 */
/* ------------------------------------------------------------------ */

/* kscope loads this library into a running process with dlopen and then
 * calls the functions below from one of its threads, each through
 * ptrace, in order (docs/instrument.md, "Attaching"):
 *   kscope_instr_attach_setup   the other threads running (it allocates)
 *   kscope_instr_attach_patch   every thread stopped
 * and, when kscope detaches before the process ends:
 *   kscope_instr_detach_unpatch every thread stopped
 *   kscope_instr_detach_write   the other threads running
 * Each returns 0, or -1 with the reason in msg (cap bytes, kscope's). */

static int attach_fail(char *msg, size_t cap, int rc)
{
	if (rc < 0 && msg && cap)
		snprintf(msg, cap, "%s", rt.error[0] ? rt.error : "the runtime failed");
	return rc < 0 ? -1 : 0;
}

/* Also allocates room for npcs_max addresses, where kscope writes the
 * threads' stop addresses for kscope_instr_attach_patch (*pcs_buf). */
__attribute__((visibility("default"))) int kscope_instr_attach_setup(const char *block, size_t len,
								     char *msg, size_t cap,
								     size_t npcs_max,
								     uintptr_t **pcs_buf)
{
	int rc;

	if (rt.dir[0] || rt.block) {
		snprintf(rt.error, sizeof(rt.error), "kscope's runtime is already active in "
			 "this process");
		return attach_fail(msg, cap, -1);
	}
	rt.block = malloc(len + 2);
	if (!rt.block) {
		snprintf(rt.error, sizeof(rt.error), "out of memory");
		return attach_fail(msg, cap, -1);
	}
	memcpy(rt.block, block, len);
	rt.block[len] = rt.block[len + 1] = '\0';
	*pcs_buf = calloc(npcs_max ? npcs_max : 1, sizeof(uintptr_t));
	if (!*pcs_buf) {
		snprintf(rt.error, sizeof(rt.error), "out of memory");
		return attach_fail(msg, cap, -1);
	}
	rc = irt_setup(NULL);
	if (rc == 0 && irt_got_hook() != 0) {
		snprintf(rt.error, sizeof(rt.error), "cannot point the GOT entries of the "
			 "unwinder and of exec at kscope's wrappers");
		rc = -1;
	}
	if (rc == 1 && !rt.dir[0]) {
		snprintf(rt.error, sizeof(rt.error), "no run directory in the settings");
		rc = -1;
	}
	return attach_fail(msg, cap, rc);
}

__attribute__((visibility("default"))) int kscope_instr_attach_patch(const uintptr_t *pcs,
								     size_t npcs, char *msg,
								     size_t cap)
{
	if (!rt.block || !rt.analysed)
		return attach_fail(msg, cap, -1);
	return attach_fail(msg, cap, irt_patch(pcs, npcs));
}

/* The original bytes back; on every thread, the return addresses kscope
 * replaced put back too (every thread is stopped, none inside this
 * library: kscope lets them out first), so that nothing of the process
 * passes through kscope again.  The calls still open stay on the shadow
 * stacks, to be written as open at now. */
__attribute__((visibility("default"))) int kscope_instr_detach_unpatch(void)
{
	uint64_t mono = irt_mono_ns();

	if (!rt.block)
		return -1;
	for (size_t k = 0; k < rt.nim; k++)
		if (rt.im[k].img.npatch)
			unjmp_image(&rt.im[k]);
	rt.detach_now = irt_now();
	for (struct irt_thread *t = irt_g.threads; t; t = t->next) {
		for (uint32_t k = 0; k < t->depth; k++) {
			struct irt_frame *f = &t->stack[k];

			if (f->slot != (uintptr_t *)UINTPTR_MAX && *f->slot == irt_g.exit_addr)
				*f->slot = f->ret;
		}
		irt_cpu_close(t, irt_off_of(t, mono));
	}
	return 0;
}

__attribute__((visibility("default"))) int kscope_instr_detach_write(void)
{
	if (!rt.block || rt.written)
		return -1;
	rt.written = true;
	write_results();
	rt.detached = true;
	return 0;
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

/* Wall ns less off-CPU ns, never below 0 (the two clocks differ by the
 * kernel's few microseconds per switch) nor above most (>= 0: exclusive
 * CPU time is at most inclusive). */
static double cpu_of(double wall, uint64_t off, double most)
{
	double v = wall > (double)off ? wall - (double)off : 0.0;

	return most >= 0 && v > most ? most : v;
}

/* Writes <dir>/<name>, where name is instr.<pid>.txt or, given, name. */
static void write_results_as(const char *name)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 64];
	uint64_t ns1, tsc1, now, mono_now;
	struct irt_thread *self;
	int64_t self_off = 0;
	double tick_ns = 1.0;
	struct irt_stat *copy = NULL;
	struct edge_adj *adj = NULL;
	int fd;

	if (name)
		snprintf(path, sizeof(path), "%s/%s", rt.dir, name);
	else
		snprintf(path, sizeof(path), "%s/instr.%d.txt", rt.dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s/.instr.%d.txt.part", rt.dir, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd < 0)
		return;
	/* Detached: the calls still open end when kscope detached.  Else
	 * now, and each thread's off-CPU clock read at once (the writing
	 * thread's of the same moment), before the calibration's wait. */
	self = irt_self_get();
	now = rt.detach_now ? rt.detach_now : self ? irt_now_off(self, &self_off) : irt_now();
	mono_now = irt_mono_ns();
	irt_lock();
	for (struct irt_thread *t = irt_g.threads; t; t = t->next)
		t->off_end = t == self ? self_off : irt_off_of(t, mono_now);
	irt_unlock();
	if (!irt_g.use_clock) {
		/* At least 5 ms between the two readings, for the rate. */
		while ((ns1 = irt_mono_ns()) - rt.ns0 < 5000000)
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
		rt.im[0].img.path, rt.im[0].img.symtab ? rt.im[0].img.symtab : "none",
		(unsigned long)rt.im[0].s.bias, tick_ns, rt.im[0].img.nfuncs,
		rt.im[0].img.npatch);
	for (size_t k = 0; k < rt.nim; k++) {
		const struct irt_image *im = &rt.im[k];

		if (k)
			dprintf(fd, "module %u %zu %zu 0x%lx %s\n", im->first, im->img.nfuncs,
				im->img.npatch, (unsigned long)im->s.bias, im->path);
		for (size_t i = 0; i < im->img.nfuncs; i++) {
			const struct ks_instr_func *f = &im->img.funcs[i];

			if (f->patch)
				dprintf(fd, "f %zu 0x%lx %lu %u %s\n", im->first + i,
					(unsigned long)f->addr, (unsigned long)f->size, f->ninsns,
					f->name);
			else if (!strncmp(f->reason, "its bytes", 9) ||
				 !strncmp(f->reason, "a moved", 7))
				dprintf(fd, "r %zu %s: %s\n", im->first + i, f->name, f->reason);
		}
	}
	for (size_t i = 0; i < rt.nnotes; i++)
		dprintf(fd, "modnote %s\n", rt.notes[i]);
	if (rt.cpu_why[0])
		dprintf(fd, "cpunote %s\n", rt.cpu_why);
	copy = irt_g.nfuncs ? calloc(irt_g.nfuncs, sizeof(*copy)) : NULL;
	adj = calloc(IRT_STACK_FRAMES, sizeof(*adj));
	irt_lock();
	for (struct irt_thread *t = irt_g.threads; t; t = t->next) {
		uint64_t open_calls = 0;
		uint64_t inner = 0, inner_off = 0; /* the open call above this one */
		int64_t off = rt.detach_now ? t->cpu.off : t->off_end;
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
			uint64_t doff = off > f->off0 ? (uint64_t)(off - f->off0) : 0;
			uint64_t child = f->child + inner, child_off = f->child_off + inner_off;

			open_calls++;
			if (st->active)
				st->active--;
			if (!st->active) {
				st->incl += dur;
				st->offi += doff;
			}
			if (!st->active && f->edge != IRT_NO_EDGE)
				adj[nadj++] = (struct edge_adj){ f->edge, dur };
			st->excl += dur > child ? dur - child : 0;
			st->offx += doff > child_off ? doff - child_off : 0;
			st->sum += dur;
			if (!st->closed || dur < st->min)
				st->min = dur;
			if (dur > st->max)
				st->max = dur;
			st->closed++;
			inner = dur;
			inner_off = doff;
		}
		dprintf(fd, "thread %d overflow %lu unwound %lu open %lu lost %lu cpu %d\n",
			(int)t->tid, (unsigned long)t->overflow, (unsigned long)t->unwound,
			(unsigned long)open_calls, (unsigned long)t->edges_lost, t->cpu_known);
		for (uint32_t i = 0; i < irt_g.nfuncs; i++) {
			const struct irt_stat *st = &copy[i];
			double incl = (double)st->incl * tick_ns, excl = (double)st->excl * tick_ns;

			if (!st->calls)
				continue;
			/* CPU time: wall time less the time switched out; -1 unknown. */
			dprintf(fd, "s %u %lu %lu %.0f %.0f %.0f %.0f %.0f %.0f %.0f\n", i,
				(unsigned long)st->calls, (unsigned long)st->closed, incl, excl,
				(double)st->sum * tick_ns, (double)st->min * tick_ns,
				(double)st->max * tick_ns,
				t->cpu_known ? cpu_of(incl, st->offi, -1) : -1.0,
				t->cpu_known ? cpu_of(excl, st->offx, cpu_of(incl, st->offi, -1))
				: -1.0);
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

static void write_results(void)
{
	write_results_as(NULL);
}

/* ------------------------------------------------------------------ */
/* exec (irt_exec.c)                                                   */
/* ------------------------------------------------------------------ */

/* The file the results went to before an exec, until it succeeds. */
static char exec_file[PATH_MAX + 64];

/* Before the process replaces its program: the results so far are
 * written, as instr.<pid>.exec<K>.txt (the program it runs next writes
 * instr.<pid>.txt, and may exec again).  Async-signal-safe enough for a
 * child between fork and exec: no lock is held there but its own. */
void irt_exec_begin(void)
{
	char name[64];

	exec_file[0] = '\0';
	/* A vfork child shares the parent's memory: it has no results of
	 * its own, and must not mark the parent's written. */
	if (!rt.dir[0] || rt.written || !rt.analysed || getpid() != rt.pid)
		return;
	for (int k = 1; k < 1000; k++) {
		snprintf(name, sizeof(name), "instr.%d.exec%d.txt", (int)getpid(), k);
		snprintf(exec_file, sizeof(exec_file), "%s/%s", rt.dir, name);
		if (access(exec_file, F_OK) != 0)
			break;
	}
	rt.written = true;
	write_results_as(name);
}

/* The exec failed: the program goes on, and writes its results at its
 * end as if nothing had happened. */
void irt_exec_failed(void)
{
	int e = errno;

	if (!exec_file[0])
		return;
	unlink(exec_file);
	exec_file[0] = '\0';
	rt.written = false;
	errno = e;
}

__attribute__((destructor)) static void irt_fini(void)
{
	if (!rt.dir[0] || rt.written)
		return;
	rt.written = true;
	write_results();
}
