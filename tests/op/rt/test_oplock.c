/*
 * Unit test of libkscope-op.so's replay lock (src/op/rt/oprt_lock.h):
 * reader threads and writer threads hammer it; a reader must never see a
 * writer inside, a writer never a reader or another writer; a try-lock
 * must fail while a reader is in; a writer must get in while readers keep
 * coming (writers are preferred); a lock held in a forked child's parent
 * is free again after ks_rwl_reinit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "oprt_lock.h"

#define READERS 6
#define WRITERS 2
#define WRITES 2000

static struct ks_rwl lock = KS_RWL_INITIALIZER;
static atomic_int readers_in, writers_in, stop;
static atomic_long reads, bad;
/* Written only under the exclusive lock, read under the shared one. */
static volatile long pair[2];

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		ks_rwl_rdlock(&lock);
		atomic_fetch_add(&readers_in, 1);
		if (atomic_load(&writers_in) != 0 || pair[0] != pair[1])
			atomic_fetch_add(&bad, 1);
		atomic_fetch_sub(&readers_in, 1);
		ks_rwl_rdunlock(&lock);
		atomic_fetch_add(&reads, 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < WRITES; i++) {
		ks_rwl_wrlock(&lock);
		if (atomic_fetch_add(&writers_in, 1) != 0 || atomic_load(&readers_in) != 0)
			atomic_fetch_add(&bad, 1);
		pair[0]++;
		for (volatile int k = 0; k < 50; k++)
			;
		pair[1]++;
		atomic_fetch_sub(&writers_in, 1);
		ks_rwl_wrunlock(&lock);
	}
	return NULL;
}

static void test_exclusion(void **state)
{
	pthread_t r[READERS], w[WRITERS];

	(void)state;
	for (int i = 0; i < READERS; i++)
		assert_int_equal(pthread_create(&r[i], NULL, reader, NULL), 0);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&w[i], NULL, writer, NULL), 0);
	/* The writers finish although readers never stop coming. */
	for (int i = 0; i < WRITERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < READERS; i++)
		pthread_join(r[i], NULL);
	assert_int_equal(atomic_load(&bad), 0);
	assert_int_equal(pair[0], WRITERS * WRITES);
	assert_int_equal(pair[1], WRITERS * WRITES);
	assert_true(atomic_load(&reads) > 0);
	assert_int_equal(atomic_load(&lock.state), 0);
}

static void test_try(void **state)
{
	struct ks_rwl l = KS_RWL_INITIALIZER;

	(void)state;
	ks_rwl_rdlock(&l);
	assert_false(ks_rwl_trywrlock(&l));
	ks_rwl_rdlock(&l);                  /* readers share it */
	ks_rwl_rdunlock(&l);
	ks_rwl_rdunlock(&l);
	assert_true(ks_rwl_trywrlock(&l));
	assert_false(ks_rwl_trywrlock(&l));
	ks_rwl_wrunlock(&l);
	assert_int_equal(atomic_load(&l.state), 0);
}

/* A writer waiting behind a reader blocks new readers until it is done. */
static struct ks_rwl pref = KS_RWL_INITIALIZER;
static atomic_int pref_step;

static void *pref_writer(void *arg)
{
	(void)arg;
	ks_rwl_wrlock(&pref);
	atomic_store(&pref_step, 2);
	ks_rwl_wrunlock(&pref);
	return NULL;
}

static void *pref_reader(void *arg)
{
	(void)arg;
	ks_rwl_rdlock(&pref);
	/* Got in only after the writer was done. */
	if (atomic_load(&pref_step) != 2)
		atomic_store(&pref_step, -1);
	ks_rwl_rdunlock(&pref);
	return NULL;
}

static void test_writer_preferred(void **state)
{
	struct timespec ms = { 0, 20 * 1000 * 1000 };
	pthread_t w, r;

	(void)state;
	ks_rwl_rdlock(&pref);
	assert_int_equal(pthread_create(&w, NULL, pref_writer, NULL), 0);
	while (!(atomic_load(&pref.state) & KS_RWL_WRITER))
		nanosleep(&ms, NULL);
	assert_int_equal(pthread_create(&r, NULL, pref_reader, NULL), 0);
	nanosleep(&ms, NULL);
	assert_int_equal(atomic_load(&pref_step), 0);  /* both still wait */
	ks_rwl_rdunlock(&pref);
	pthread_join(w, NULL);
	pthread_join(r, NULL);
	assert_int_equal(atomic_load(&pref_step), 2);
}

static void test_fork_reinit(void **state)
{
	struct ks_rwl l = KS_RWL_INITIALIZER;
	pid_t pid;
	int status;

	(void)state;
	ks_rwl_wrlock(&l);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ks_rwl_reinit(&l);
		ks_rwl_rdlock(&l);
		ks_rwl_rdunlock(&l);
		ks_rwl_wrlock(&l);
		ks_rwl_wrunlock(&l);
		_exit(atomic_load(&l.state) == 0 ? 0 : 1);
	}
	ks_rwl_wrunlock(&l);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_try),
		cmocka_unit_test(test_writer_preferred),
		cmocka_unit_test(test_exclusion),
		cmocka_unit_test(test_fork_reinit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
