/*
 * kscope instrument's analysis (library ks_instr): which functions of an
 * x86-64 ELF program can have their entry patched with a 5-byte
 * `jmp rel32` to a trampoline, and the relocation of the instructions
 * that jmp overwrites.  The same objects are compiled into kscope (for
 * --list and the run's verdict list) and into libkscope-instr.so (which
 * analyses the program it is loaded in, before main, and patches it), so
 * both always agree.  docs/instrument.md states the safety rules.
 *
 * Symbols are read from the file by hand (instr_elf.c), as rt_sym.c does
 * in the compiled front end's runtime: this code runs inside the program
 * under test, which must not get libelf and its symbols.  Instructions are
 * decoded with capstone, opened with dlopen() while the analysis runs.
 */
#ifndef KS_INSTR_H
#define KS_INSTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* The patch is a 5-byte jmp rel32; the instructions it covers are at
 * most 5 (each at least one byte) and at most 4 + 15 bytes long. */
#define KS_INSTR_PATCH_LEN 5
#define KS_INSTR_MAX_MOVED 5
#define KS_INSTR_MAX_MOVED_BYTES 20
/* Bound on what one moved area becomes in a trampoline: a rel8 branch
 * grows to 6 bytes, a call to 32 (ks_instr_relocate), plus the jmp back. */
#define KS_INSTR_MAX_RELOC_BYTES 64

enum ks_instr_kind {
	KS_INSTR_PLAIN,   /* position-independent: copied as it is */
	KS_INSTR_RIPREL,  /* a RIP-relative memory operand: disp32 re-encoded */
	KS_INSTR_JMP,     /* jmp rel8/rel32: becomes jmp rel32 */
	KS_INSTR_JCC,     /* jcc rel8/rel32: becomes jcc rel32 (cc kept) */
	KS_INSTR_CALL,    /* call rel32: becomes push of the original return
			   * address + jmp rel32 */
};

struct ks_instr_moved {
	uint8_t off;      /* from the function's start */
	uint8_t len;
	uint8_t kind;     /* enum ks_instr_kind */
	uint8_t disp_off; /* KS_INSTR_RIPREL: the disp32's offset in the instruction */
	uint8_t cc;       /* KS_INSTR_JCC: the condition (low nibble of 0x7x) */
	uint64_t target;  /* file address the operand or branch refers to */
};

struct ks_instr_func {
	char *name;              /* the symbol's name; malloc'd */
	uint64_t addr;           /* file (link-time) address */
	uint64_t size;
	uint32_t ninsns;         /* instructions decoded in [addr, addr+size) */
	bool patch;              /* instrumented; else reason says why not */
	char reason[112];
	uint8_t nmoved;          /* instructions the jmp covers */
	uint8_t moved_len;       /* their bytes (>= KS_INSTR_PATCH_LEN) */
	struct ks_instr_moved moved[KS_INSTR_MAX_MOVED];
	uint8_t bytes[KS_INSTR_MAX_MOVED_BYTES]; /* the moved bytes, from the file */
};

struct ks_instr_image {
	char *path;                 /* malloc'd */
	bool pie;                   /* ET_DYN: loaded at a bias */
	const char *symtab;         /* ".symtab" or ".dynsym" (static text) */
	struct ks_instr_func *funcs; /* by address; malloc'd */
	size_t nfuncs;
	size_t npatch;              /* how many have patch set */
};

/* kscope instrument --pid: what kscope calls, by name, in the runtime it
 * loaded into the process (src/instrument/rt/irt_main.c has them). */
#define KS_INSTR_FN_SETUP "kscope_instr_attach_setup"
#define KS_INSTR_FN_PATCH "kscope_instr_attach_patch"
#define KS_INSTR_FN_UNPATCH "kscope_instr_detach_unpatch"
#define KS_INSTR_FN_WRITE "kscope_instr_detach_write"

/* Selection (kscope instrument --min-instructions, --include, --exclude). */
struct ks_instr_sel {
	int64_t min_insns;          /* 0: any */
	const char *include;        /* POSIX extended regex or NULL */
	const char *exclude;
};

/* Checks that re compiles as a POSIX extended regular expression; the
 * message names opt ("--include") and regcomp's reason. */
int ks_instr_check_regex(const char *re, const char *opt, struct ks_err *err);

/* Why the library at path cannot have its functions patched
 * (--modules), or NULL: kscope's runtime itself runs on the C library,
 * the loader and the unwinder, and its analysis on capstone. */
const char *ks_instr_module_refused(const char *path);

/* Analyses the ELF file at path: every function symbol (of .symtab, else
 * .dynsym) with a size, with its verdict.  -ENOEXEC with err set when the
 * file is not a 64-bit x86-64 ELF executable; other negative errnos with
 * err set.  Free with ks_instr_image_free (also after an error). */
int ks_instr_analyze(const char *path, const struct ks_instr_sel *sel,
		     struct ks_instr_image *img, struct ks_err *err);
void ks_instr_image_free(struct ks_instr_image *img);

/* A trampoline (written at run time by the runtime, or into a rewritten
 * program by kscope): [id, 4 bytes][call *[rip+d] to the entry thunk's
 * address, 6 bytes][f's moved instructions][jmp back]; KS_INSTR_STUB_SIZE
 * bytes apart, after a KS_INSTR_TRAMP_HEAD-byte head whose first 8 bytes
 * hold the entry thunk's address.  The patched function jumps to the
 * call (+4); the entry thunk finds the id KS_INSTR_STUB_ID_BACK bytes
 * before the address the call pushed. */
#define KS_INSTR_STUB_SIZE 96
#define KS_INSTR_STUB_ID_BACK 10
#define KS_INSTR_TRAMP_HEAD 16

/* Writes f's trampoline (function id) at stub, which is at stub_addr;
 * slot_addr: where the entry thunk's address is.  0, or -ERANGE (err
 * set) when a moved instruction cannot reach its target from there. */
int ks_instr_stub_write(const struct ks_instr_func *f, uint32_t id, uint64_t bias, uint8_t *stub,
			uint64_t stub_addr, uint64_t slot_addr, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* A rewritten program (kscope instrument --rewrite; instr_rw.c)       */
/* ------------------------------------------------------------------ */

/* kscope instrument --rewrite adds one loadable segment to a copy of the
 * program (docs/instrument.md, "Rewriting"): this head, then the tables
 * it points to (offsets from the segment's start), then the trampolines.
 * The functions' entries already jump to them; the runtime, first among
 * the program's libraries (DT_NEEDED), fills in the entry thunk's address
 * and records with these functions instead of analysing the program. */
#define KS_INSTR_RW_MAGIC "kscope-rewrite-1" /* 16 bytes, no NUL */

struct ks_instr_rw_head {
	char magic[16];
	uint32_t nfuncs;
	uint32_t dynsym;           /* 1: the symbols came from .dynsym */
	uint64_t funcs;            /* struct ks_instr_rw_func[nfuncs] */
	uint64_t names;            /* NUL-ended names, names_len bytes */
	uint64_t names_len;
	uint64_t argv;             /* kscope's command line to run the program
				    * under: strings, an empty one last */
	uint64_t argv_len;
	uint64_t tramp;            /* KS_INSTR_TRAMP_HEAD + nfuncs stubs */
	uint64_t size;             /* of the segment */
	uint64_t runtime;          /* the runtime's path (its DT_NEEDED), in names */
};

struct ks_instr_rw_func {
	uint64_t addr, size;       /* link-time */
	uint32_t ninsns;
	uint32_t name;             /* offset into names */
	uint8_t moved_len;
	uint8_t pad[3];
	uint8_t bytes[KS_INSTR_MAX_MOVED_BYTES]; /* the original first bytes */
};

/* A parsed segment: pointers into it. */
struct ks_instr_rw {
	const struct ks_instr_rw_head *head;
	const struct ks_instr_rw_func *funcs;
	const char *names;
	const char *argv;
	size_t argv_len;
	const uint8_t *tramp;
	const char *runtime;
};

/* Checks len bytes at seg as a rewritten program's segment (the magic,
 * every offset and name within it).  -ENOENT: not one; -EINVAL (err set):
 * damaged. */
int ks_instr_rw_parse(const uint8_t *seg, size_t len, struct ks_instr_rw *rw,
		      struct ks_err *err);
/* The image of the functions rw lists, every one patched. */
int ks_instr_rw_image(const struct ks_instr_rw *rw, const char *path, bool pie,
		      struct ks_instr_image *img, struct ks_err *err);

/* kscope's side (instr_rewrite.c).  Writes out (which must not exist):
 * a copy of the program at path with the functions img (its analysis)
 * patches already patched, their trampolines in a new loadable segment
 * (the program header of a PT_NOTE reused), and runtime first among its
 * DT_NEEDED (a spare slot of its dynamic section; its string table
 * moved into the segment).  kargv: the kscope command line the program
 * runs itself under, NULL-ended.  *npatched: the functions patched. */
int ks_instr_rewrite(const char *path, const struct ks_instr_image *img, const char *out,
		     const char *runtime, char *const *kargv, size_t *npatched,
		     struct ks_err *err);
/* The segment of a rewritten program, read from its file: 0 with *rw
 * pointing into *buf, the file mapped (*buflen bytes; munmap it);
 * -ENOENT when path is not one. */
int ks_instr_rw_read(const char *path, uint8_t **buf, size_t *buflen, struct ks_instr_rw *rw,
		     bool *pie, struct ks_err *err);

/* Writes the moved instructions of f, as they must be at out_addr, to out
 * (cap bytes), followed by a jmp rel32 back to the instruction after
 * them.  bias: load address less file address.  Returns the number of
 * bytes written, or -ERANGE (err set) when a branch or operand cannot
 * reach its target from out_addr. */
int ks_instr_relocate(const struct ks_instr_func *f, uint64_t bias, uint8_t *out,
		      uint64_t out_addr, size_t cap, struct ks_err *err);

/* ------------------------------------------------------------------ */
/* The ELF reader the analysis uses (instr_elf.c)                      */
/* ------------------------------------------------------------------ */

struct ks_instr_elf;

struct ks_instr_sym {
	const char *name;     /* in the file's mapping */
	uint64_t addr, size;
	bool ifunc;           /* STT_GNU_IFUNC */
	bool global;
	const char *section;  /* its section's name, in the mapping */
	bool exec;            /* its section is SHF_EXECINSTR */
	const uint8_t *bytes; /* its bytes in the mapping, or NULL (NOBITS, out of range) */
};

/* Maps path and finds its symbol table.  -ENOEXEC (err set) for what is
 * not a 64-bit little-endian x86-64 ET_EXEC or ET_DYN file. */
int ks_instr_elf_open(const char *path, struct ks_instr_elf **out, struct ks_err *err);
void ks_instr_elf_close(struct ks_instr_elf *e);
bool ks_instr_elf_pie(const struct ks_instr_elf *e);
uint64_t ks_instr_elf_entry(const struct ks_instr_elf *e);
/* ".symtab", ".dynsym", or NULL when the file has neither. */
const char *ks_instr_elf_symtab(const struct ks_instr_elf *e);
/* The function symbols (STT_FUNC, STT_GNU_IFUNC) that are defined and
 * have a size; *syms is malloc'd, the names point into the mapping. */
int ks_instr_elf_funcs(const struct ks_instr_elf *e, struct ks_instr_sym **syms, size_t *n,
		       struct ks_err *err);

#endif
