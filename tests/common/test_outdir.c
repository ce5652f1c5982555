/*
 * Unit tests for safe output (src/common/outdir.c): run directory names
 * and modes whatever the umask, reserved directories made later,
 * all-or-nothing files, failed writes
 * (through a file size limit), and a symbolic link planted after the
 * checks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "outdir.h"
#include "test_util.h"

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

static void test_rundir_name_and_modes(void **state)
{
	static const mode_t masks[] = { 0, 022, 077, 0777 };
	char *dir = ks_test_tmpdir(), out[PATH_MAX], pat[PATH_MAX + 64];
	struct ks_rundir rd;
	struct ks_err e;
	regex_t re;

	(void)state;
	snprintf(out, sizeof(out), "%s/a/b", dir);
	snprintf(pat, sizeof(pat), "^%s/pack_[0-9]{8}_[0-9]{6}_%ld(\\.[0-9]+)?$", out,
		 (long)getpid());
	assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
	for (size_t i = 0; i < sizeof(masks) / sizeof(masks[0]); i++) {
		mode_t old = umask(masks[i]);

		assert_int_equal(ks_rundir_create(out, "pack", 0, &rd, &e), 0);
		umask(old);
		assert_int_equal(regexec(&re, rd.path, 0, NULL, 0), 0);
		assert_int_equal(mode_of(rd.path), 0750);
		assert_int_equal(mode_of(out), 0750);
		snprintf(pat, sizeof(pat), "%s/a", dir);
		assert_int_equal(mode_of(pat), 0750);
		ks_rundir_close(&rd);
	}
	regfree(&re);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_rundir_fixed_time_and_collision(void **state)
{
	char *dir = ks_test_tmpdir(), want[PATH_MAX];
	struct ks_rundir a, b;
	struct ks_err e;
	struct tm tm = { .tm_year = 126, .tm_mon = 10, .tm_mday = 22, .tm_hour = 10,
			 .tm_min = 30, .tm_sec = 5, .tm_isdst = -1 };
	time_t t = mktime(&tm);

	(void)state;
	assert_int_equal(ks_rundir_create(dir, "sample", t, &a, &e), 0);
	snprintf(want, sizeof(want), "%s/sample_20261122_103005_%ld", dir, (long)getpid());
	assert_string_equal(a.path, want);
	/* Same command, same second, same process: a new directory anyway. */
	assert_int_equal(ks_rundir_create(dir, "sample", t, &b, &e), 0);
	assert_string_not_equal(a.path, b.path);
	snprintf(want, sizeof(want), "%s/sample_20261122_103005_%ld.1", dir, (long)getpid());
	assert_string_equal(b.path, want);
	ks_rundir_close(&a);
	ks_rundir_close(&b);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_outfile_commit(void **state)
{
	char *dir = ks_test_tmpdir(), p[PATH_MAX], *data;
	struct ks_rundir rd;
	struct ks_outfile of;
	struct ks_err e;
	size_t n;

	(void)state;
	assert_int_equal(ks_rundir_create(dir, "t", 0, &rd, &e), 0);
	assert_int_equal(ks_outfile_open(&rd, "result.csv", &of, &e), 0);
	snprintf(p, sizeof(p), "%s/.result.csv.part", rd.path);
	assert_int_equal(mode_of(p), 0640);
	snprintf(p, sizeof(p), "%s/result.csv", rd.path);
	assert_int_equal(access(p, F_OK), -1); /* not there until complete */
	assert_int_equal(ks_outfile_printf(&of, "a,b\n%d,%s\n", 1, "x"), 0);
	assert_int_equal(ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e), 0);
	assert_int_equal(mode_of(p), 0440);
	data = (char *)ks_test_read_file(p, &n);
	assert_int_equal(n, 8);
	assert_memory_equal(data, "a,b\n1,x\n", 8);
	free(data);
	snprintf(p, sizeof(p), "%s/.result.csv.part", rd.path);
	assert_int_equal(access(p, F_OK), -1);

	/* An ordinary (not read-only) file. */
	assert_int_equal(ks_outfile_put(&rd, "log.txt", "x", 1, KS_FILE_MODE, &e), 0);
	snprintf(p, sizeof(p), "%s/log.txt", rd.path);
	assert_int_equal(mode_of(p), 0640);

	/* Abort leaves nothing. */
	assert_int_equal(ks_outfile_open(&rd, "gone.json", &of, &e), 0);
	ks_outfile_abort(&of);
	snprintf(p, sizeof(p), "%s/.gone.json.part", rd.path);
	assert_int_equal(access(p, F_OK), -1);

	/* Bad names. */
	assert_int_equal(ks_outfile_open(&rd, "../x", &of, &e), -EINVAL);
	assert_int_equal(ks_outfile_open(&rd, ".hidden", &of, &e), -EINVAL);
	assert_int_equal(ks_outfile_open(&rd, "", &of, &e), -EINVAL);
	/* A commit never replaces a file that took the final name meanwhile. */
	assert_int_equal(ks_outfile_open(&rd, "taken.txt", &of, &e), 0);
	assert_int_equal(ks_outfile_write(&of, "new", 3), 0);
	snprintf(p, sizeof(p), "%s/taken.txt", rd.path);
	ks_test_write_file(p, "old", 0640);
	assert_int_equal(ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e), -EEXIST);
	data = (char *)ks_test_read_file(p, &n);
	assert_int_equal(n, 3);
	assert_memory_equal(data, "old", 3);
	free(data);
	snprintf(p, sizeof(p), "%s/.taken.txt.part", rd.path);
	assert_int_equal(access(p, F_OK), -1);

	/* An existing file is never overwritten. */
	assert_int_equal(ks_outfile_open(&rd, "x", &of, &e), 0);
	assert_int_equal(ks_outfile_open(&rd, "x", &of, &e), -EEXIST);
	ks_outfile_abort(&of);
	ks_rundir_close(&rd);
	ks_test_rmtree(dir);
	free(dir);
}

/* In a child with a 4 KiB file size limit, a 64 KiB write must fail, be
 * reported, and leave neither the file nor its temporary name. */
static void test_discard(void **state)
{
	char *dir = ks_test_tmpdir(), *kept;
	struct ks_rundir rd;
	struct ks_err e;

	(void)state;
	/* An empty run directory of a failed run is removed ... */
	assert_int_equal(ks_rundir_create(dir, "t", 0, &rd, &e), 0);
	kept = strdup(rd.path);
	ks_rundir_discard(&rd);
	assert_int_equal(access(kept, F_OK), -1);
	free(kept);
	/* ... one with files in it is kept. */
	assert_int_equal(ks_rundir_create(dir, "t", 0, &rd, &e), 0);
	assert_int_equal(ks_outfile_put(&rd, "partial.txt", "x", 1, KS_FILE_MODE, &e), 0);
	kept = strdup(rd.path);
	ks_rundir_discard(&rd);
	assert_int_equal(access(kept, F_OK), 0);
	free(kept);
	ks_test_rmtree(dir);
	free(dir);
}

/* A reserved run directory exists only once made; discarding one never
 * made removes nothing, even an empty directory someone else made at its
 * name; making it fails if the name was taken in between. */
static void test_reserve(void **state)
{
	char *dir = ks_test_tmpdir(), *kept;
	struct ks_rundir rd, other;
	struct ks_err e;

	(void)state;
	/* Reserved, made, written: like ks_rundir_create's. */
	assert_int_equal(ks_rundir_reserve(dir, "op", &rd, &e), 0);
	assert_true(rd.pending);
	assert_int_equal(rd.dirfd, -1);
	assert_int_equal(access(rd.path, F_OK), -1);
	assert_int_equal(ks_rundir_make(&rd, &e), 0);
	assert_false(rd.pending);
	assert_int_equal(mode_of(rd.path), 0750);
	assert_int_equal(ks_outfile_put(&rd, "a.txt", "x", 1, KS_FILE_MODE, &e), 0);
	/* A second reservation in the same second skips the taken name. */
	assert_int_equal(ks_rundir_reserve(dir, "op", &other, &e), 0);
	assert_string_not_equal(other.path, rd.path);
	ks_rundir_close(&other);
	ks_rundir_close(&rd);

	/* Never made: discard leaves what another process put there. */
	assert_int_equal(ks_rundir_reserve(dir, "never", &rd, &e), 0);
	kept = strdup(rd.path);
	assert_int_equal(mkdir(kept, 0700), 0);
	ks_rundir_discard(&rd);
	assert_int_equal(access(kept, F_OK), 0);
	free(kept);

	/* Taken in between: make fails and says so. */
	assert_int_equal(ks_rundir_reserve(dir, "race", &rd, &e), 0);
	assert_int_equal(mkdir(rd.path, 0700), 0);
	assert_int_equal(ks_rundir_make(&rd, &e), -EEXIST);
	assert_non_null(strstr(e.msg, "another process made it"));
	assert_int_equal(rd.dirfd, -1);
	kept = strdup(rd.path);
	ks_rundir_discard(&rd);
	assert_int_equal(access(kept, F_OK), 0);
	free(kept);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_failed_write(void **state)
{
	char *dir = ks_test_tmpdir();
	pid_t pid;
	int status;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 4096, 4096 };
		struct ks_rundir rd;
		struct ks_outfile of;
		struct ks_err e;
		char p[PATH_MAX], *big = calloc(1, 65536);

		signal(SIGXFSZ, SIG_IGN);
		if (ks_rundir_create(dir, "t", 0, &rd, &e) != 0)
			_exit(1);
		setrlimit(RLIMIT_FSIZE, &rl);
		if (ks_outfile_open(&rd, "big.bin", &of, &e) != 0)
			_exit(2);
		ks_outfile_write(&of, big, 65536);
		if (ks_outfile_commit(&of, KS_DELIVERABLE_MODE, &e) != -EFBIG)
			_exit(3);
		if (!strstr(e.msg, "writing 'big.bin' failed: File too large"))
			_exit(4);
		snprintf(p, sizeof(p), "%s/big.bin", rd.path);
		if (access(p, F_OK) == 0)
			_exit(5);
		snprintf(p, sizeof(p), "%s/.big.bin.part", rd.path);
		if (access(p, F_OK) == 0)
			_exit(6);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	ks_test_rmtree(dir);
	free(dir);
}

static void test_planted_symlink(void **state)
{
	char *dir = ks_test_tmpdir(), out[PATH_MAX], elsewhere[PATH_MAX];
	struct ks_rundir rd;
	struct ks_err e;

	(void)state;
	/* The output location was checked as a new path, then someone made
	 * it a link to elsewhere: kscope must refuse, not follow. */
	snprintf(elsewhere, sizeof(elsewhere), "%s/elsewhere", dir);
	assert_int_equal(mkdir(elsewhere, 0700), 0);
	snprintf(out, sizeof(out), "%s/out", dir);
	assert_int_equal(symlink(elsewhere, out), 0);
	assert_int_not_equal(ks_rundir_create(out, "t", 0, &rd, &e), 0);
	assert_non_null(strstr(e.msg, "cannot open 'out'"));
	/* And the output directory is re-checked for safety. */
	assert_int_equal(chmod(elsewhere, 0777), 0);
	assert_int_not_equal(ks_rundir_create(elsewhere, "t", 0, &rd, &e), 0);
	assert_non_null(strstr(e.msg, "writable by group or others"));
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rundir_name_and_modes),
		cmocka_unit_test(test_rundir_fixed_time_and_collision),
		cmocka_unit_test(test_outfile_commit),
		cmocka_unit_test(test_discard),
		cmocka_unit_test(test_reserve),
		cmocka_unit_test(test_failed_write),
		cmocka_unit_test(test_planted_symlink),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
