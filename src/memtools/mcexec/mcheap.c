/*
 * libkscope-mcheap.so: preloaded by kscope memcheck --heap-map into the
 * program that runs under Valgrind's Memcheck, it records the program's
 * heap as it changes, so that kscope can say which block lay nearest to
 * an invalid access that Memcheck relates to no block (an overflow past
 * the redzone), as the heap was at the moment of that access.
 *
 * Memcheck's XML has no heap map, so the program's allocation functions
 * are wrapped here (malloc, calloc, realloc, reallocarray, free, the
 * aligned ones, and the C++ operators new and delete that libstdc++
 * exports and Memcheck replaces): each forwards to the next definition,
 * the C library's or libstdc++'s, which Valgrind has redirected to
 * Memcheck's allocator, so Memcheck still sees every block.  Around the
 * call the wrapper
 *
 *   - asks Memcheck how many errors it has found (VALGRIND_COUNT_ERRORS,
 *     every occurrence counted); when the count grew since the last
 *     call, the new errors happened with the heap as the events logged
 *     so far left it, and a marker saying so goes into Memcheck's XML
 *     (VALGRIND_PRINTF, a <clientmsg> in order with the <error>s);
 *   - appends the change to RUN/heapmap.<pid>.log (mcheap.h has the
 *     format and the markers' meaning), a file mapped MAP_SHARED, so that
 *     what was written survives a crash of the program or of Valgrind.
 *
 * One lock orders the calls of all threads: a call's check, its real
 * call, its check after and its records happen as one step against the
 * other threads' calls.  An error of another thread can still happen
 * between the check and the real call (Valgrind may switch threads
 * there): the check after the call says so with a "d" marker, and the
 * reader weighs both heaps (docs/memtools.md, "Heap map").
 *
 * Nothing here allocates from the program's heap: the log is a file
 * mapping and the state is static.  Active only when kscope set
 * KSCOPE_MC_HEAPMAP=1 and KSCOPE_MC_RUNDIR; otherwise every wrapper just
 * forwards.  A forked child stops logging: Memcheck does not report it
 * (kscope runs it with --child-silent-after-fork=yes) and it must not
 * write into its parent's log; the program it execs starts a log of its
 * own (libkscope-mcexec.so sets the image's log aside before an exec,
 * with its XML).  errno is what the real call left.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <valgrind.h>

#include "mcheap.h"

/* The exported names.  Valgrind 3.19 replaces the allocation functions
 * of whichever object first defines them in the global scope, by name,
 * and this library, preloaded, is that object: its malloc would never
 * run.  Valgrind only looks at symbols typed as functions or objects,
 * while the dynamic linker binds untyped ones too.  So each wrapper is
 * a hidden function mch_NAME, and NAME an untyped global symbol on a
 * jump to it (no frame of its own). */
#if defined(__x86_64__)
#if defined(__CET__)
#define JUMP_TO "endbr64\n\tjmp "
#else
#define JUMP_TO "jmp "
#endif
#elif defined(__aarch64__)
#define JUMP_TO "b "
#else
#error "libkscope-mcheap.so: no jump for this architecture (amd64, arm64)"
#endif
#define EXPORT_UNTYPED(name)                                                  \
	__asm__(".text\n\t.globl " #name "\n\t.type " #name ", %notype\n"      \
		"\t.globl mch_sym_" #name "\n\t.hidden mch_sym_" #name "\n"        \
		#name ":\nmch_sym_" #name ":\n\t" JUMP_TO "mch_" #name              \
		"\n\t.size " #name ", .-" #name "\n")
/* mch_sym_NAME: the address of the exported NAME (a hidden second label,
 * since NAME itself, interposable, may resolve elsewhere). */
#define SYM_DECL(name) extern const char mch_sym_##name[];
KS_MCHEAP_NAMES(SYM_DECL)
/* A wrapper: mch_NAME, exported as NAME. */
#define WRAPPER(ret, name, params) \
	ret mch_##name params;     \
	EXPORT_UNTYPED(name);      \
	ret mch_##name params
/* initial-exec: the library is preloaded, so its TLS is static and no
 * access calls __tls_get_addr (which may allocate). */
#define TLS_IE __thread __attribute__((tls_model("initial-exec")))
#define CHUNK_BYTES ((size_t)KS_MCHEAP_CHUNK_RECS * sizeof(struct ks_mcheap_rec))
#define EARLY_MAX 256     /* events kept before the library knows whether to log */
#define BOOT_BYTES 16384  /* what dlsym may allocate while the real functions are looked up */

_Static_assert(sizeof(size_t) == 8, "the C++ operators below are the LP64 manglings");

/* ------------------------------------------------------------------ */
/* State                                                               */
/* ------------------------------------------------------------------ */

enum { UNDECIDED, ON, OFF };

/* The process image's heap map.  A global: a preload library has no
 * caller to hand it a context, and every wrapper of every thread shares
 * it (under lock). */
static struct {
	int state;                  /* UNDECIDED until the environment can be read */
	pthread_mutex_t lock;       /* orders the logged calls of all threads */
	char path[PATH_MAX];        /* RUN/heapmap.<pid>.log */
	int pid;
	struct ks_mcheap_rec *chunk;   /* the chunk being written, mapped */
	uint64_t chunk_no;
	size_t used;                /* records written in chunk */
	bool lost;                  /* the log could not grow: nothing more is written */
	uint64_t seq;               /* the next event's number */
	unsigned errors;            /* VALGRIND_COUNT_ERRORS at the last check */
	bool fork_locked;           /* the lock is held across a fork */
	/* Events before the environment could be read (the dynamic linker's
	 * and the C library's start-up), logged once it can be. */
	struct ks_mcheap_rec early[EARLY_MAX];
	size_t nearly;
	bool early_lost;
} hm = { .lock = PTHREAD_MUTEX_INITIALIZER, .seq = 1 };

/* The calls of this thread under way in the wrappers: a nested call (the
 * C library's reallocarray calls realloc, a signal handler allocates) is
 * forwarded without logging, its outer call says what changed. */
static TLS_IE int depth;
/* This thread is looking the real functions up: what dlsym allocates
 * comes from boot. */
static TLS_IE bool resolving;

/* ------------------------------------------------------------------ */
/* The real functions                                                  */
/* ------------------------------------------------------------------ */

static struct {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	bool done;
} real;

static char boot[BOOT_BYTES] __attribute__((aligned(16)));
static size_t boot_used;

/* Memory for dlsym while the real functions are not known: never freed,
 * zeroed (it is static and never reused).  Each block is preceded by its
 * size, for realloc. */
static void *boot_alloc(size_t n)
{
	size_t need = ((n + 15) & ~(size_t)15) + 16;
	char *p;

	if (n > BOOT_BYTES || need > BOOT_BYTES - boot_used)
		return NULL;
	p = boot + boot_used;
	boot_used += need;
	*(size_t *)p = n;
	return p + 16;
}

static bool in_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + BOOT_BYTES;
}

static void resolve(void)
{
	if (real.done || resolving)
		return;
	resolving = true;
	real.malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	real.calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	real.realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	real.reallocarray = (void *(*)(void *, size_t, size_t))dlsym(RTLD_NEXT, "reallocarray");
	real.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	real.memalign = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "memalign");
	real.posix_memalign = (int (*)(void **, size_t, size_t))dlsym(RTLD_NEXT,
								       "posix_memalign");
	real.aligned_alloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "aligned_alloc");
	real.valloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "valloc");
	real.pvalloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "pvalloc");
	resolving = false;
	real.done = real.malloc && real.calloc && real.realloc && real.free;
}

/* A C++ operator of libstdc++ (or LLVM's libc++), looked up on first
 * use: the library may be loaded after this one, or only locally with a
 * plugin (then RTLD_NEXT does not see it, but RTLD_NOLOAD does).  Both
 * are the ones Memcheck replaces. */
static void *real_cxx(void **slot, const char *name)
{
	static const char *const libs[] = { "libstdc++.so.6", "libc++.so.1" };
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (f)
		return f;
	depth++; /* what dlsym and dlopen allocate is not the program's doing */
	f = dlsym(RTLD_NEXT, name);
	for (size_t i = 0; !f && i < sizeof(libs) / sizeof(libs[0]); i++) {
		void *h = dlopen(libs[i], RTLD_LAZY | RTLD_NOLOAD);

		if (h) {
			f = dlsym(h, name);
			dlclose(h);
		}
	}
	depth--;
	if (f)
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	return f;
}

/* ------------------------------------------------------------------ */
/* The log                                                             */
/* ------------------------------------------------------------------ */

/* Maps chunk k of the log at path, growing the file to hold it; the
 * descriptor is closed at once (a program that closes every descriptor
 * cannot lose it, nor have it reused under a file of its own). */
static struct ks_mcheap_rec *map_chunk(uint64_t k, bool create)
{
	int fd = open(hm.path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0), 0600);
	void *p = MAP_FAILED;

	if (fd < 0)
		return NULL;
	if (ftruncate(fd, (off_t)((k + 1) * CHUNK_BYTES)) == 0)
		p = mmap(NULL, CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 (off_t)(k * CHUNK_BYTES));
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static void rec_put(struct ks_mcheap_rec *slot, const struct ks_mcheap_rec *r)
{
	struct ks_mcheap_rec c = *r;

	c.check = ks_mcheap_check(&c);
	*slot = c;
}

/* Appends r (lock held).  The last slot of each chunk is kept for what
 * comes next: NEXT when the file grew, LOST when it could not. */
static void log_put(const struct ks_mcheap_rec *r)
{
	struct ks_mcheap_rec mark = { .seq = r->seq };

	if (hm.lost)
		return;
	if (hm.used == KS_MCHEAP_CHUNK_RECS - 1) {
		struct ks_mcheap_rec *next = map_chunk(hm.chunk_no + 1, false);

		mark.type = next ? KS_MCHEAP_NEXT : KS_MCHEAP_LOST;
		mark.fn = next ? 0 : KS_MCHEAP_LOST_FULL;
		rec_put(&hm.chunk[hm.used], &mark);
		munmap(hm.chunk, CHUNK_BYTES);
		hm.chunk = next;
		hm.used = 0;
		hm.chunk_no++;
		if (!next) {
			hm.lost = true;
			return;
		}
	}
	rec_put(&hm.chunk[hm.used++], r);
}

/* Whether Memcheck found errors since the last check; if so the marker
 * (mcheap.h) goes into its XML.  Lock held, logging on. */
static void check_errors(char phase)
{
	unsigned n = (unsigned)VALGRIND_COUNT_ERRORS;

	if (n == hm.errors)
		return;
	hm.errors = n;
	VALGRIND_PRINTF(KS_MCHEAP_MAGIC " %d %llu %c\n", hm.pid, (unsigned long long)hm.seq,
			phase);
}

/* Whether the program's calls of an allocation function reach this
 * library's: not when the program (or a library preloaded before this
 * one) defines its own, which Memcheck replaces and this one never sees.
 * The log then says so and is not trusted at all.  The global name may
 * also resolve to the program's own PLT entry (a non-PIE program that
 * takes malloc's address: the entry is its canonical address, an
 * undefined symbol with a value), whose calls still reach this library:
 * a definition is a symbol with a section. */
static void own_allocator(void)
{
	static const struct {
		const char *name;
		const char *ours;
	} fns[] = {
#define SYM_ENTRY(name) { #name, mch_sym_##name },
		KS_MCHEAP_NAMES(SYM_ENTRY)
#undef SYM_ENTRY
	};

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]) && !hm.lost; i++) {
		const void *global = dlsym(RTLD_DEFAULT, fns[i].name);
		void *entry = NULL;     /* dladdr1 hands over a const ElfW(Sym) * */
		const ElfW(Sym) *sym;
		Dl_info info;

		if (global && global != (const void *)fns[i].ours &&
		    dladdr1(global, &info, &entry, RTLD_DL_SYMENT) && (sym = entry) &&
		    sym->st_shndx != SHN_UNDEF && info.dli_sname &&
		    !strcmp(info.dli_sname, fns[i].name)) {
			struct ks_mcheap_rec lost = { .seq = 1, .type = KS_MCHEAP_LOST,
						      .fn = KS_MCHEAP_LOST_OWN, .size = i };

			log_put(&lost);
			hm.lost = true;
		}
	}
}

/* Reads the environment once the C library has it: logging starts
 * (the events kept so far first) or never does. */
static void decide(void)
{
	extern char **environ;
	const char *on, *dir;
	struct ks_mcheap_rec head = { .type = KS_MCHEAP_HEADER, .caller = KS_MCHEAP_MAGIC64,
				      .size = KS_MCHEAP_VERSION };
	int n;

	if (hm.state != UNDECIDED || !environ)
		return;
	on = getenv(KS_MCHEAP_ENV);
	dir = getenv("KSCOPE_MC_RUNDIR");
	hm.state = OFF;
	if (!on || strcmp(on, "1") || !dir || dir[0] != '/')
		return;
	hm.pid = (int)getpid();
	n = snprintf(hm.path, sizeof(hm.path), "%s/heapmap.%d.log", dir, hm.pid);
	if (n < 0 || (size_t)n >= sizeof(hm.path) || !(hm.chunk = map_chunk(0, true)))
		return;
	head.addr = (uint64_t)hm.pid;
	rec_put(&hm.chunk[0], &head);
	hm.used = 1;
	hm.state = ON;
	if (hm.early_lost) {
		struct ks_mcheap_rec lost = { .seq = 1, .type = KS_MCHEAP_LOST,
					      .fn = KS_MCHEAP_LOST_EARLY };

		log_put(&lost);
		hm.lost = true;
	}
	own_allocator();
	for (size_t i = 0; i < hm.nearly; i++)
		log_put(&hm.early[i]);
	/* Errors before this point: when they happened is not known. */
	if ((unsigned)VALGRIND_COUNT_ERRORS != hm.errors)
		check_errors('u');
}

/* ------------------------------------------------------------------ */
/* Around each call                                                    */
/* ------------------------------------------------------------------ */

enum mode {
	FORWARD,  /* not logged: nested, or logging off */
	LOGGED,   /* logged, the lock held */
	EARLY,    /* kept until the environment can be read (one thread yet) */
};

/* Starts a call: whether it is logged; if so, with the lock held and the
 * errors before it marked. */
static enum mode enter(void)
{
	int saved = errno;

	if (depth++ || hm.state == OFF)
		return FORWARD;
	if (hm.state == UNDECIDED) {
		/* Under the lock: a thread a library started in its own
		 * constructor, before this one's, may get here too. */
		pthread_mutex_lock(&hm.lock);
		decide();
		pthread_mutex_unlock(&hm.lock);
		errno = saved;
	}
	if (hm.state == UNDECIDED)
		return EARLY;
	if (hm.state == OFF)
		return FORWARD;
	pthread_mutex_lock(&hm.lock);
	check_errors('b');
	return LOGGED;
}

/* Ends a call entered: the errors during it marked, then its changes
 * logged (n records; a realloc that moved a block is one event of two). */
static void leave(enum mode m, int n, const struct ks_mcheap_rec *recs)
{
	int saved = errno;

	if (m == LOGGED)
		check_errors('d');
	if (m != FORWARD) {
		for (int i = 0; i < n; i++) {
			struct ks_mcheap_rec r = recs[i];

			r.seq = hm.seq;
			if (m == LOGGED)
				log_put(&r);
			else if (hm.nearly < EARLY_MAX)
				hm.early[hm.nearly++] = r;
			else
				hm.early_lost = true;
		}
		if (n)
			hm.seq++;
	}
	if (m == LOGGED)
		pthread_mutex_unlock(&hm.lock);
	depth--;
	errno = saved;
}

#define ALLOC_REC(p, n, f, c) \
	{ .type = KS_MCHEAP_ALLOC, .fn = (f), .addr = KS_MCHEAP_HIDE(p), .size = (n), \
	  .caller = (uintptr_t)(c) }
#define FREE_REC(p, f) { .type = KS_MCHEAP_FREE, .fn = (f), .addr = KS_MCHEAP_HIDE(p) }

/* An allocation of n bytes by fn that returned p. */
static void *done_alloc(enum mode logged, void *p, size_t n, uint16_t fn, void *caller)
{
	struct ks_mcheap_rec r = ALLOC_REC(p, n, fn, caller);

	leave(logged, p ? 1 : 0, &r);
	return p;
}

static void done_free(enum mode logged, void *p, uint16_t fn)
{
	struct ks_mcheap_rec r = FREE_REC(p, fn);

	leave(logged, p ? 1 : 0, &r);
}

/* ------------------------------------------------------------------ */
/* The C library's functions                                           */
/* ------------------------------------------------------------------ */

WRAPPER(void *, malloc, (size_t n))
{
	enum mode logged;

	resolve();
	if (!real.malloc)
		return boot_alloc(n);
	logged = enter();
	return done_alloc(logged, real.malloc(n), n, KS_MCHEAP_MALLOC,
			  __builtin_return_address(0));
}

WRAPPER(void *, calloc, (size_t k, size_t n))
{
	enum mode logged;

	resolve();
	if (!real.calloc) {
		/* dlsym's own calloc while the functions are looked up */
		if (n && k > SIZE_MAX / n)
			return NULL;
		return boot_alloc(k * n);
	}
	logged = enter();
	return done_alloc(logged, real.calloc(k, n), k * n, KS_MCHEAP_CALLOC,
			  __builtin_return_address(0));
}

/* realloc and reallocarray: what changed for old -> p of n bytes. */
static void *done_realloc(enum mode logged, void *old, void *p, size_t n, uint16_t fn,
			  void *caller)
{
	struct ks_mcheap_rec r[2] = { FREE_REC(old, fn), ALLOC_REC(p, n, fn, caller) };

	if (p && old)
		leave(logged, 2, r);
	else if (p)
		leave(logged, 1, &r[1]);
	else if (old && !n)
		leave(logged, 1, r);    /* realloc(old, 0) frees old */
	else
		leave(logged, 0, r);    /* failed: old is still there */
	return p;
}

WRAPPER(void *, realloc, (void *old, size_t n))
{
	enum mode logged;

	resolve();
	if (!real.realloc || in_boot(old)) {
		void *p = real.malloc ? mch_malloc(n) : boot_alloc(n);

		if (p && old) {
			size_t had = *(const size_t *)((const char *)old - 16);

			memcpy(p, old, had < n ? had : n);
		}
		return p;
	}
	logged = enter();
	return done_realloc(logged, old, real.realloc(old, n), n, KS_MCHEAP_REALLOC,
			    __builtin_return_address(0));
}

WRAPPER(void *, reallocarray, (void *old, size_t k, size_t n))
{
	enum mode logged;

	resolve();
	if (!real.reallocarray) {
		if (n && k > SIZE_MAX / n) {
			errno = ENOMEM;
			return NULL;
		}
		return mch_realloc(old, k * n);
	}
	logged = enter();
	return done_realloc(logged, old, real.reallocarray(old, k, n), k * n,
			    KS_MCHEAP_REALLOCARRAY, __builtin_return_address(0));
}

WRAPPER(void, free, (void *p))
{
	enum mode logged;

	if (in_boot(p))
		return;
	resolve();
	if (!real.free)
		return;
	logged = enter();
	real.free(p);
	done_free(logged, p, KS_MCHEAP_FREE_FN);
}

WRAPPER(void *, memalign, (size_t align, size_t n))
{
	enum mode logged;

	resolve();
	if (!real.memalign)
		return NULL;
	logged = enter();
	return done_alloc(logged, real.memalign(align, n), n, KS_MCHEAP_MEMALIGN,
			  __builtin_return_address(0));
}

WRAPPER(int, posix_memalign, (void **out, size_t align, size_t n))
{
	enum mode logged;
	int rc;

	resolve();
	if (!real.posix_memalign)
		return ENOMEM;
	logged = enter();
	rc = real.posix_memalign(out, align, n);
	done_alloc(logged, rc == 0 ? *out : NULL, n, KS_MCHEAP_POSIX_MEMALIGN,
		   __builtin_return_address(0));
	return rc;
}

WRAPPER(void *, aligned_alloc, (size_t align, size_t n))
{
	enum mode logged;

	resolve();
	if (!real.aligned_alloc)
		return NULL;
	logged = enter();
	return done_alloc(logged, real.aligned_alloc(align, n), n, KS_MCHEAP_ALIGNED_ALLOC,
			  __builtin_return_address(0));
}

WRAPPER(void *, valloc, (size_t n))
{
	enum mode logged;

	resolve();
	if (!real.valloc)
		return NULL;
	logged = enter();
	return done_alloc(logged, real.valloc(n), n, KS_MCHEAP_VALLOC,
			  __builtin_return_address(0));
}

/* (Valgrind 3.19's pvalloc ends the program: forwarded all the same.) */
WRAPPER(void *, pvalloc, (size_t n))
{
	enum mode logged;

	resolve();
	if (!real.pvalloc)
		return NULL;
	logged = enter();
	return done_alloc(logged, real.pvalloc(n), n, KS_MCHEAP_PVALLOC,
			  __builtin_return_address(0));
}

/* ------------------------------------------------------------------ */
/* The C++ operators (those of libstdc++ that Memcheck replaces)       */
/* ------------------------------------------------------------------ */

/* std::nothrow_t const & and std::align_val_t travel as a pointer and a
 * size_t in the C calling convention. */
#define NEW_OP(name, fnkind, params, args)                                        \
	WRAPPER(void *, name, params)                                                  \
	{                                                                              \
		static void *slot;                                                     \
		void *(*f) params = (void *(*) params)real_cxx(&slot, #name);          \
		enum mode logged;                                                           \
                                                                                       \
		if (!f) /* no C++ library to forward to: malloc's block */             \
			return mch_malloc(n);                                          \
		logged = enter();                                                      \
		return done_alloc(logged, f args, n, fnkind, __builtin_return_address(0)); \
	}

#define DELETE_OP(name, fnkind, params, args)                                          \
	WRAPPER(void, name, params)                                                    \
	{                                                                              \
		static void *slot;                                                     \
		void (*f) params = (void (*) params)real_cxx(&slot, #name);            \
		enum mode logged;                                                           \
                                                                                       \
		if (!f) {                                                              \
			mch_free(p);                                                   \
			return;                                                        \
		}                                                                      \
		logged = enter();                                                      \
		f args;                                                                \
		done_free(logged, p, fnkind);                                          \
	}

NEW_OP(_Znwm, KS_MCHEAP_NEW, (size_t n), (n))
NEW_OP(_ZnwmRKSt9nothrow_t, KS_MCHEAP_NEW, (size_t n, const void *nt), (n, nt))
NEW_OP(_ZnwmSt11align_val_t, KS_MCHEAP_NEW, (size_t n, size_t al), (n, al))
NEW_OP(_ZnwmSt11align_val_tRKSt9nothrow_t, KS_MCHEAP_NEW,
       (size_t n, size_t al, const void *nt), (n, al, nt))
NEW_OP(_Znam, KS_MCHEAP_NEW_ARRAY, (size_t n), (n))
NEW_OP(_ZnamRKSt9nothrow_t, KS_MCHEAP_NEW_ARRAY, (size_t n, const void *nt), (n, nt))
NEW_OP(_ZnamSt11align_val_t, KS_MCHEAP_NEW_ARRAY, (size_t n, size_t al), (n, al))
NEW_OP(_ZnamSt11align_val_tRKSt9nothrow_t, KS_MCHEAP_NEW_ARRAY,
       (size_t n, size_t al, const void *nt), (n, al, nt))

DELETE_OP(_ZdlPv, KS_MCHEAP_DELETE, (void *p), (p))
DELETE_OP(_ZdlPvRKSt9nothrow_t, KS_MCHEAP_DELETE, (void *p, const void *nt), (p, nt))
DELETE_OP(_ZdlPvSt11align_val_t, KS_MCHEAP_DELETE, (void *p, size_t al), (p, al))
DELETE_OP(_ZdlPvSt11align_val_tRKSt9nothrow_t, KS_MCHEAP_DELETE,
	  (void *p, size_t al, const void *nt), (p, al, nt))
DELETE_OP(_ZdlPvm, KS_MCHEAP_DELETE, (void *p, size_t n), (p, n))
DELETE_OP(_ZdlPvmSt11align_val_t, KS_MCHEAP_DELETE, (void *p, size_t n, size_t al),
	  (p, n, al))
DELETE_OP(_ZdaPv, KS_MCHEAP_DELETE_ARRAY, (void *p), (p))
DELETE_OP(_ZdaPvRKSt9nothrow_t, KS_MCHEAP_DELETE_ARRAY, (void *p, const void *nt), (p, nt))
DELETE_OP(_ZdaPvSt11align_val_t, KS_MCHEAP_DELETE_ARRAY, (void *p, size_t al), (p, al))
DELETE_OP(_ZdaPvSt11align_val_tRKSt9nothrow_t, KS_MCHEAP_DELETE_ARRAY,
	  (void *p, size_t al, const void *nt), (p, al, nt))
DELETE_OP(_ZdaPvm, KS_MCHEAP_DELETE_ARRAY, (void *p, size_t n), (p, n))
DELETE_OP(_ZdaPvmSt11align_val_t, KS_MCHEAP_DELETE_ARRAY, (void *p, size_t n, size_t al),
	  (p, n, al))

/* ------------------------------------------------------------------ */
/* Start, fork, exit                                                   */
/* ------------------------------------------------------------------ */

static void fork_prepare(void)
{
	if (hm.state == ON) {
		pthread_mutex_lock(&hm.lock);
		hm.fork_locked = true;
	}
}

static void fork_parent(void)
{
	if (hm.fork_locked) {
		hm.fork_locked = false;
		pthread_mutex_unlock(&hm.lock);
	}
}

/* The child is not reported by Memcheck, and its parent's log is not its
 * to write: it forwards from now on (the mapping is its own copy to drop). */
static void fork_child(void)
{
	if (hm.state == ON) {
		hm.state = OFF;
		if (hm.chunk)
			munmap(hm.chunk, CHUNK_BYTES);
		hm.chunk = NULL;
	}
	hm.fork_locked = false;
	pthread_mutex_init(&hm.lock, NULL);
}

__attribute__((constructor)) static void mcheap_init(void)
{
	/* What dlsym and the log's set-up allocate is forwarded (a nested
	 * call): it is kscope's, and the log is not open yet. */
	depth++;
	resolve();
	pthread_mutex_lock(&hm.lock);
	decide();
	pthread_mutex_unlock(&hm.lock);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	depth--;
}

/* At exit: the errors since the last call happened with the heap as it
 * is now.  The log stays open for the destructors and leak check after.
 * Only if the lock is free: errors after the last marker are read with
 * the heap the whole log leaves anyway, so the marker is never needed,
 * and exit() from a signal handler that interrupted a call must not
 * wait for the lock that call holds. */
__attribute__((destructor)) static void mcheap_fini(void)
{
	if (hm.state != ON || depth || pthread_mutex_trylock(&hm.lock))
		return;
	check_errors('b');
	pthread_mutex_unlock(&hm.lock);
}
