/*
 * Source-level names of machine addresses with elfutils' libdw: the
 * function, file and line of an address in a loaded ELF module, inlined
 * calls expanded, C++ names demangled.  kscope sample symbolizes its
 * samples with it (src/sample/post.c), kscope memcheck the stacks of
 * AddressSanitizer's reports (src/memtools/asan).
 *
 * A module is reported to a Dwfl by its user (dwfl_report_elf); this
 * file adds what libdw lacks: a lookup of compilation units by their own
 * address ranges for code without .debug_aranges (clang writes none), and
 * the walk through DW_TAG_inlined_subroutine scopes.
 */
#ifndef KS_DWSYM_H
#define KS_DWSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <elfutils/libdwfl.h>

#define KS_DWSYM_MAX_INLINE 16 /* inlined frames given per address */

/* One module: its Dwfl_Module and the unit index built on first need. */
struct ks_dwsym_mod {
	Dwfl_Module *dwfl;            /* NULL: nothing is known of it */
	struct ks_dwsym_cu *cus;
	size_t ncus, capcus;
	bool cus_indexed;
};

/* One frame at an address, innermost first.  The strings belong to libdw
 * (valid while the Dwfl lives): function is the raw symbol or DIE name
 * (clean it with ks_dwsym_name), NULL when unknown; file NULL and line 0
 * when the address has no line information. */
struct ks_dwsym_frame {
	const char *function;
	const char *file;
	int line;
	bool inlined;
};

/* The callbacks kscope's Dwfl sessions use (offline, ELF files by path,
 * separate debug info where the system keeps it). */
extern const Dwfl_Callbacks ks_dwsym_callbacks;

/* Calls fn for each frame at address look (module-relative to the Dwfl's
 * addresses, as dwfl_module_getsrc takes it): the inlined calls from the
 * innermost out, then the function.  Stops at fn's first non-zero return
 * and returns it; 0 otherwise. */
int ks_dwsym_frames(struct ks_dwsym_mod *m, Dwarf_Addr look,
		    int (*fn)(void *ctx, const struct ks_dwsym_frame *f), void *ctx);

/* A symbol as people read it, malloc'd: "memcpy@@GLIBC_2.14" without its
 * version, GCC's clone suffixes cut ("f.constprop.0" is f), C++ names
 * demangled.  NULL when memory runs out. */
char *ks_dwsym_name(const char *raw);

void ks_dwsym_mod_free(struct ks_dwsym_mod *m);

/* ELF files named by path, each in a Dwfl session of its own at address
 * 0 (so that a module-relative offset is its address): for readers of
 * "module+offset" frames.  Zero-initialize; free with ks_dwsym_files_free. */
struct ks_dwsym_var;
struct ks_dwsym_dsym;

struct ks_dwsym_file {
	char *path;
	Dwfl *dwfl;                   /* NULL: not an absolute path, or unreadable */
	struct ks_dwsym_mod mod;
	struct ks_dwsym_var *vars;    /* its static variables by address (dwvar.c) */
	size_t nvars, capvars;
	bool vars_indexed;
	struct ks_dwsym_dsym *dsyms;  /* its data symbols by name (dwvar.c) */
	size_t ndsyms, capdsyms;
	bool dsyms_read;
};

struct ks_dwsym_files {
	struct ks_dwsym_file *v;
	size_t n, cap;
};

/* The file at path, opened on first need; NULL when memory runs out. */
struct ks_dwsym_file *ks_dwsym_file_get(struct ks_dwsym_files *s, const char *path);
void ks_dwsym_files_free(struct ks_dwsym_files *s);

/* The source-level name of byte off of the global or static variable
 * whose ELF symbol in file f is sym (raw, or demangled for C++) of size
 * size (0: any size), from the file's DWARF: the variable's name and the
 * path down its type to the member or element holding the byte,
 * "counters[2].v", "st.b" (a struct's padding, a scalar: the path so
 * far).  Written to buf (n bytes).  0, or -ENOENT when the file has no
 * such symbol or no debug information of the variable, -ENAMETOOLONG
 * when the name does not fit. */
int ks_dwsym_data_name(struct ks_dwsym_file *f, const char *sym, uint64_t size,
		       uint64_t off, char *buf, size_t n);
/* The alignment the variable of ELF symbol sym (as above) is sure to
 * have, from its DWARF: its own or its type's DW_AT_alignment (_Alignas,
 * alignas, __attribute__((aligned))), else its type's natural one (the
 * largest of its scalars, at most 16), into *align.  0, or -ENOENT. */
int ks_dwsym_data_align(struct ks_dwsym_file *f, const char *sym, uint64_t size,
			uint64_t *align);
void ks_dwsym_file_vars_free(struct ks_dwsym_file *f);

#endif
