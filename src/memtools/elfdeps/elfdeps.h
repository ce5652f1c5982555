/*
 * What an ELF program or shared library says about how it runs: the
 * libraries it needs (DT_NEEDED), where it asks the loader to look for
 * them (DT_RUNPATH, DT_RPATH), and whether it defines or refers to given
 * symbols.  kscope memcheck asks whether a program was built with
 * AddressSanitizer (src/memtools/asan), kscope contention and falseshare
 * which front end a program is for: ThreadSanitizer's instrumentation
 * calls (__tsan_func_entry...) without ThreadSanitizer's runtime
 * (src/cli/mtrun.c).  Read with libelf.
 */
#ifndef KS_ELFDEPS_H
#define KS_ELFDEPS_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define KS_ELFDEPS_MAX_SYMS 16

struct ks_elfdeps {
	char **needed;           /* DT_NEEDED names, in order; malloc'd */
	size_t nneeded;
	char *runpath;           /* DT_RUNPATH, else DT_RPATH, else NULL */
	bool runpath_is_rpath;   /* it came from DT_RPATH */
	unsigned defines;        /* bit i: syms[i] is defined in .dynsym or .symtab */
	unsigned refers;         /* bit i: syms[i] is referred to, undefined */
};

/* Reads path; syms is a NULL-terminated list of at most
 * KS_ELFDEPS_MAX_SYMS names.  0, -ENOEXEC (with err set) when the file is
 * not ELF, or another negative errno with err set.  Free *out with
 * ks_elfdeps_free (also after an error). */
int ks_elfdeps_read(const char *path, const char *const *syms, struct ks_elfdeps *out,
		    struct ks_err *err);
void ks_elfdeps_free(struct ks_elfdeps *d);

/* Whether one of d's DT_NEEDED names starts with prefix; the name. */
const char *ks_elfdeps_needs(const struct ks_elfdeps *d, const char *prefix);

/* The file the dynamic loader would load for DT_NEEDED name of the
 * object at path (d is that object's): a name with a slash as it is;
 * otherwise the first regular file named so in DT_RPATH (when there is
 * no DT_RUNPATH), LD_LIBRARY_PATH, DT_RUNPATH ($ORIGIN is the object's
 * directory) and the system's library directories.  malloc'd; NULL when
 * none is found (the loader's cache may still know it: such libraries
 * are system ones). */
char *ks_elfdeps_resolve(const char *path, const struct ks_elfdeps *d, const char *name);

#endif
