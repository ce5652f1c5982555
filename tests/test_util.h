/*
 * Small helpers shared by kscope's unit tests: temporary directories and
 * files.  Test-only code; aborts on failure since a broken fixture is not
 * a test result.
 */
#ifndef KS_TEST_UTIL_H
#define KS_TEST_UTIL_H

#include <stddef.h>
#include <sys/types.h>

/* A new private directory under /tmp (mode 0700); malloc'd path. */
char *ks_test_tmpdir(void);
/* Creates or replaces path with content and sets mode. */
void ks_test_write_file(const char *path, const char *content, mode_t mode);
/* Reads a whole file; malloc'd, *size set; NULL if it cannot be read. */
unsigned char *ks_test_read_file(const char *path, size_t *size);
/* Removes a directory tree (restoring permissions first). */
void ks_test_rmtree(const char *path);

#endif
