/*
 * Heap accesses far from any block, for kscope memcheck --heap-map
 * (tests/memtools/memcheck_heapmap.py).  Each mode makes invalid accesses
 * beyond Memcheck's redzone, in unallocated heap, then changes the heap
 * so that it differs at exit from what it was at the access (the blocks
 * near it freed, others allocated over the address), and writes what
 * was true at the moment of each access to the file TRUTH, one line per
 * access:
 *
 *     TAG ADDR below BLOCK SIZE   the nearest block below, which ADDR is after
 *     TAG ADDR above BLOCK SIZE   the nearest block above, which ADDR is before
 *     TAG ADDR none               no block of the program within 1 MiB
 *     TAG ADDR covered BLOCK SIZE a block allocated later that holds ADDR
 *
 * (addresses in hex, as the program saw them under Valgrind), and on
 * standard output only words that do not depend on addresses.
 *
 *     mt_heapmap basic TRUTH     a write 3000 bytes past a 50-byte block,
 *                                a read 2000 bytes before a 64-byte block
 *                                whose neighbour below was freed, and,
 *                                last, a write 3000 bytes past a 64 KiB
 *                                block after which nothing is allocated;
 *                                exits 5
 *     mt_heapmap fork TRUTH      a child that allocates and exits without
 *                                exec (it must not spoil the parent's map),
 *                                then a write past a block, then a child
 *                                that execs "mt_heapmap basic TRUTH.child"
 *     mt_heapmap threads TRUTH   4 threads allocating and freeing, each
 *                                writing past a block of its own once
 *     mt_heapmap exec TRUTH      a write past a block, then (allocating
 *                                nothing more) an exec of "mt_heapmap basic
 *                                TRUTH.child" in the same process
 *
 * The blocks a mode names are the last it allocated at that moment,
 * from the top of Memcheck's arena (blocks freed stay in Memcheck's
 * 20 MB queue of freed blocks, so nothing is placed in a hole): the
 * address past one is unallocated.  Not meant to run without Memcheck,
 * where the accesses may crash the program.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAST 3000     /* bytes past the end of a block written */
#define BEFORE 2000   /* bytes before a block read */
#define LAST 65536    /* basic's last block */

static FILE *truth;
static char *tail; /* basic's last block, still reachable at exit */

/* The truth about one access at addr, with a block of the program
 * (addresses as numbers, taken before the blocks are freed). */
static void tell(const char *tag, uintptr_t addr, const char *rel, uintptr_t block, size_t size)
{
	fprintf(truth, "%s 0x%" PRIxPTR " %s 0x%" PRIxPTR " %zu\n", tag, addr, rel, block, size);
}

/* Whether [block, block + size) holds addr. */
static int holds(const void *block, size_t size, uintptr_t a)
{
	uintptr_t b = (uintptr_t)block;

	return a >= b && a - b < size;
}

/* ------------------------------------------------------------------ */
/* basic                                                               */
/* ------------------------------------------------------------------ */

/* Where the invalid read of basic() goes. */
static volatile char heapmap_sink;

static int basic(void)
{
	enum { NLATER = 64 };
	char *a = malloc(40), *b = calloc(10, 20), *c = malloc(1000), *moved;
	void *al = NULL;
	char *gap, *r, *p, *later[NLATER];
	volatile char *w, *rd;
	uintptr_t wa, ra;
	char got;

	if (!a || !b || !c || posix_memalign(&al, 64, 96))
		return 1;
	memset(a, 1, 40);
	moved = realloc(b, 600); /* moved: a free and an allocation */
	if (!moved)
		return 1;
	b = moved;
	gap = malloc(200000);
	r = malloc(64);
	p = malloc(50);
	if (!b || !gap || !r || !p)
		return 1;
	memset(p, 2, 50);
	memset(r, 3, 64);

	/* The write: 3000 bytes past p, the last block. */
	w = p + 50 + PAST;
	wa = (uintptr_t)w;
	*w = 9; /* DEFECT: invalid-write */
	tell("write", wa, "below", (uintptr_t)p, 50);

	/* gap freed, then pushed out of Memcheck's queue of freed blocks by
	 * 27 MB of others (kscope's --freelist-vol is 20 MiB): its place is
	 * unallocated heap. */
	free(gap);
	for (int i = 0; i < 30; i++)
		free(malloc(900000));
	rd = r - BEFORE;
	ra = (uintptr_t)rd;
	got = *rd; /* DEFECT: invalid-read */
	tell("read", ra, "above", (uintptr_t)r, 64);
	tell("read", ra, "below", (uintptr_t)b, 600); /* gap's neighbour, moved there by realloc */

	/* The heap changes: the blocks named are freed, others allocated,
	 * some over the addresses accessed. */
	free(p);
	free(r);
	for (int i = 0; i < NLATER; i++) {
		size_t size = i < 8 ? 200000 : 300;

		later[i] = malloc(size);
		if (later[i] && holds(later[i], size, wa))
			tell("write", wa, "covered", (uintptr_t)later[i], size);
		if (later[i] && holds(later[i], size, ra))
			tell("read", ra, "covered", (uintptr_t)later[i], size);
	}
	for (int i = 0; i < NLATER; i++)
		free(later[i]);
	free(a);
	free(b);
	free(c);
	free(al);
	/* The invalid read's value goes somewhere, so that no compiler
	 * drops the read; what it was is not printed (it is garbage). */
	heapmap_sink = got;
	printf("mt_heapmap basic: done (1)\n");
	fflush(stdout);

	/* Last, a write after which the program allocates and frees
	 * nothing (the truth file closed first): only the exit is after it.
	 * The block is too big for the small holes the blocks released from
	 * Memcheck's queue left (past one of those, the write would land in
	 * a freed block): it takes a hole of the 900000-byte blocks, whose
	 * rest is unallocated. */
	if (!(tail = malloc(LAST)))
		return 1;
	w = tail + LAST + PAST;
	tell("last", (uintptr_t)w, "below", (uintptr_t)tail, LAST);
	fclose(truth);
	truth = NULL;
	*w = 9; /* DEFECT: invalid-write */
	return 5;
}

/* ------------------------------------------------------------------ */
/* fork                                                                */
/* ------------------------------------------------------------------ */

static int forked(const char *self, const char *truth_path)
{
	char *keep = malloc(100), *p, child_truth[4096];
	volatile char *w;
	uintptr_t wa;
	pid_t pid;
	int status;

	/* A child that allocates and frees, and exits without exec. */
	fflush(NULL);
	if ((pid = fork()) == 0) {
		for (int i = 0; i < 500; i++)
			free(malloc((size_t)(i % 7 + 1) * 100));
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 1;
	p = malloc(50);
	if (!keep || !p)
		return 1;
	w = p + 50 + PAST;
	wa = (uintptr_t)w;
	*w = 9; /* DEFECT: invalid-write */
	tell("parent", wa, "below", (uintptr_t)p, 50);
	free(p);
	for (int i = 0; i < 32; i++) {
		char *q = malloc(300);

		if (q && holds(q, 300, wa))
			tell("parent", wa, "covered", (uintptr_t)q, 300);
		free(q);
	}
	/* A child that execs this program's basic mode. */
	snprintf(child_truth, sizeof(child_truth), "%s.child", truth_path);
	fflush(NULL);
	if ((pid = fork()) == 0) {
		execl(self, "mt_heapmap", "basic", child_truth, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 5)
		return 1;
	free(keep);
	printf("mt_heapmap fork: done\n");
	return 0;
}

/* ------------------------------------------------------------------ */
/* exec                                                                */
/* ------------------------------------------------------------------ */

static int exec_self(const char *self, const char *truth_path)
{
	char *p = malloc(50), child_truth[4096];
	volatile char *w;

	if (!p)
		return 1;
	w = p + 50 + PAST;
	tell("image0", (uintptr_t)w, "below", (uintptr_t)p, 50);
	snprintf(child_truth, sizeof(child_truth), "%s.child", truth_path);
	fflush(NULL);
	/* From here on nothing is allocated before the exec: the write is
	 * the image's last event. */
	*w = 9; /* DEFECT: invalid-write */
	execl(self, "mt_heapmap", "basic", child_truth, (char *)NULL);
	return 1;
}

/* ------------------------------------------------------------------ */
/* threads                                                             */
/* ------------------------------------------------------------------ */

enum { NTHREADS = 4, ROUNDS = 200 };

static pthread_mutex_t heap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t start;

/* Four writes on four lines: four error contexts for Memcheck. */
static void write_past(int t, volatile char *w)
{
	switch (t) {
	case 0: *w = 0; break; /* DEFECT: invalid-write */
	case 1: *w = 1; break; /* DEFECT: invalid-write */
	case 2: *w = 2; break; /* DEFECT: invalid-write */
	default: *w = 3; break; /* DEFECT: invalid-write */
	}
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char *mine[16] = { NULL };
	unsigned seed = (unsigned)t * 7919u + 1;

	pthread_barrier_wait(&start);
	for (int i = 0; i < ROUNDS; i++) {
		int k = i % 16;

		/* The program's own lock makes the truth exact: under it no
		 * other thread allocates between the block and the write.
		 * Between rounds the threads interleave as Valgrind runs them. */
		pthread_mutex_lock(&heap_lock);
		free(mine[k]);
		seed = seed * 1103515245u + 12345u;
		mine[k] = malloc(16 + (seed >> 16) % 600);
		if (i == 40 + 37 * t) {
			char *p = malloc(50);
			volatile char *w = p + 50 + PAST;

			char tag[16];

			write_past(t, w);
			snprintf(tag, sizeof(tag), "thread%d", t);
			tell(tag, (uintptr_t)w, "below", (uintptr_t)p, 50);
			free(p);
		}
		pthread_mutex_unlock(&heap_lock);
		sched_yield();
	}
	for (int k = 0; k < 16; k++)
		free(mine[k]);
	return NULL;
}

static int threads(void)
{
	pthread_t tid[NTHREADS];

	if (pthread_barrier_init(&start, NULL, NTHREADS + 1))
		return 1;
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&tid[t], NULL, worker, (void *)(intptr_t)t))
			return 1;
	pthread_barrier_wait(&start);
	for (int t = 0; t < NTHREADS; t++)
		pthread_join(tid[t], NULL);
	printf("mt_heapmap threads: done\n");
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (argc != 3 || (strcmp(argv[1], "basic") && strcmp(argv[1], "fork") &&
			  strcmp(argv[1], "threads") && strcmp(argv[1], "exec"))) {
		fprintf(stderr, "usage: mt_heapmap basic|fork|threads|exec TRUTH\n");
		return 2;
	}
	/* Opened first: its buffer is allocated before anything is
	 * measured, and unbuffered it allocates nothing more. */
	if (!(truth = fopen(argv[2], "w")))
		return 1;
	setvbuf(truth, NULL, _IONBF, 0);
	if (!strcmp(argv[1], "basic"))
		rc = basic();
	else if (!strcmp(argv[1], "fork"))
		rc = forked(argv[0], argv[2]);
	else if (!strcmp(argv[1], "exec"))
		rc = exec_self(argv[0], argv[2]);
	else
		rc = threads();
	if (truth)
		fclose(truth);
	return rc;
}
