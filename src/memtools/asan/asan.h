/*
 * kscope memcheck's second engine: AddressSanitizer.  A program built with
 * -fsanitize=address runs natively (Valgrind cannot run it); ASan and its
 * LeakSanitizer write their reports to log files (ASAN_OPTIONS log_path),
 * one per process, and this library reads them into the document model
 * of Memcheck's XML (mcxml.h), so that the same writers make the same
 * report.txt, report.json and findings.sarif.
 *
 * ASan runs with symbolize=0: its frames are "(module+0xoffset)", which
 * kscope names with libdw (src/common/dwsym), the same for gcc's and
 * clang's runtimes, with or without llvm-symbolizer installed.
 *
 * ASan's bug types map to Memcheck's kinds where they mean the same
 * (heap-buffer-overflow on a write is an InvalidWrite, its block sentence
 * Memcheck's "Address ... is 4 bytes after a block of size 16 alloc'd");
 * the others keep ASan's name.  docs/memtools.md has the table.
 */
#ifndef KS_ASAN_H
#define KS_ASAN_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "mcxml.h"

/* Whether the ELF file at path was built with AddressSanitizer: it needs
 * libasan (gcc) or refers to __asan_init (clang links its runtime into
 * the program).  0 no, 1 yes, a negative errno with err set when the file
 * cannot be read as ELF. */
int ks_asan_built_with(const char *path, struct ks_err *err);

/* Names of the addresses of ASan's "(module+0xoffset)" frames. */
struct ks_asan_sym;
struct ks_asan_sym *ks_asan_sym_new(void);
void ks_asan_sym_free(struct ks_asan_sym *s);

struct ks_asan_read_opts {
	unsigned show_leaks;          /* bits 1 << MCX_LEAK_*: leaks kept */
	struct ks_asan_sym *sym;      /* NULL: frames keep module and address only */
};

/* What a log says beyond its errors. */
struct ks_asan_info {
	bool halted;                  /* "ABORTING": ASan stopped the process */
	int signo;                    /* a deadly signal ASan reported (SEGV...), or 0 */
	char first_bug[64];           /* the bug type that stopped it, when halted */
};

/* Reads ASan's log (one process) into d (zeroed first): pid, errors and
 * leaks in the log's order.  A log cut short keeps every error whose
 * stack was read.  0, or a negative errno with err set (the file cannot
 * be read, memory runs out).  Free d with ks_mcx_free. */
int ks_asan_read_file(struct ks_mcx_doc *d, struct ks_asan_info *info, const char *path,
		      const struct ks_asan_read_opts *o, struct ks_err *err);
int ks_asan_read_mem(struct ks_mcx_doc *d, struct ks_asan_info *info, const char *data,
		     size_t size, const struct ks_asan_read_opts *o, struct ks_err *err);

#endif
