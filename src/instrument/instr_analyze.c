/*
 * kscope instrument's analysis (instr.h): for each function symbol of a
 * program, its instruction count and whether its entry can be patched,
 * with the reason when it cannot; and the relocation of the instructions
 * the patch covers into a trampoline.
 *
 * The rules (docs/instrument.md): the function has at least 5 bytes; the
 * whole instructions covering its first 5 bytes lie in it and can be
 * moved (position-independent ones as they are, RIP-relative operands and
 * jmp/jcc/call rel with a new displacement; anything else relative, such
 * as loop, jrcxz or xbegin, refuses); no direct branch in the function
 * targets the bytes 1..4 of the patched area (decoded linearly over the
 * whole function, which must decode); never the entry point, signal
 * trampolines, PLT stubs, .init/.fini, the C start-up helpers or ifunc
 * resolvers (they run inside the loader).  Then the selection.
 *
 * capstone is opened with dlopen() for the analysis and closed after it,
 * as src/op/sim/simdisasm.c does (its tables would cost every start of
 * kscope, and the program under test gets it only while the runtime
 * analyses, before main).
 */
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "instr.h"

#define KS_STR_(x) #x
#define KS_STR(x) KS_STR_(x)
#define CAPSTONE_SONAME "libcapstone.so." KS_STR(CS_API_MAJOR)

/* The capstone functions the analysis calls. */
struct capstone {
	void *lib;
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*close)(csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	cs_insn *(*malloc)(csh);
	void (*free)(cs_insn *, size_t);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
};

static int capstone_open(struct capstone *cs, struct ks_err *err)
{
	const char *why;

	memset(cs, 0, sizeof(*cs));
	cs->lib = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (!cs->lib) {
		why = dlerror();
		return ks_err_set(err, -ENOENT,
				  "cannot load capstone (%s), which kscope instrument decodes "
				  "with: %s; install it (scripts/install-deps.sh)",
				  CAPSTONE_SONAME, why ? why : "not found");
	}
	*(void **)&cs->open = dlsym(cs->lib, "cs_open");
	*(void **)&cs->close = dlsym(cs->lib, "cs_close");
	*(void **)&cs->option = dlsym(cs->lib, "cs_option");
	*(void **)&cs->malloc = dlsym(cs->lib, "cs_malloc");
	*(void **)&cs->free = dlsym(cs->lib, "cs_free");
	*(void **)&cs->disasm_iter = dlsym(cs->lib, "cs_disasm_iter");
	if (!cs->open || !cs->close || !cs->option || !cs->malloc || !cs->free ||
	    !cs->disasm_iter) {
		dlclose(cs->lib);
		cs->lib = NULL;
		return ks_err_set(err, -ENOENT, "%s lacks a function kscope needs", CAPSTONE_SONAME);
	}
	return 0;
}

int ks_instr_check_regex(const char *re, const char *opt, struct ks_err *err)
{
	regex_t r;
	char why[256];
	int rc = regcomp(&r, re, REG_EXTENDED | REG_NOSUB);

	if (rc) {
		regerror(rc, &r, why, sizeof(why));
		return ks_err_set(err, -EINVAL,
				  "%s '%s' is not a valid POSIX extended regular expression: %s",
				  opt, re, why);
	}
	regfree(&r);
	return 0;
}

/* ------------------------------------------------------------------ */
/* One instruction                                                     */
/* ------------------------------------------------------------------ */

static bool is_relative_branch(const cs_insn *in)
{
	const cs_detail *d = in->detail;

	for (uint8_t g = 0; g < d->groups_count; g++)
		if (d->groups[g] == CS_GRP_BRANCH_RELATIVE)
			return true;
	return false;
}

/* The target of a direct relative branch (its immediate operand). */
static bool branch_target(const cs_insn *in, uint64_t *target)
{
	const cs_x86 *x = &in->detail->x86;

	if (!is_relative_branch(in))
		return false;
	for (uint8_t i = 0; i < x->op_count; i++)
		if (x->operands[i].type == X86_OP_IMM) {
			*target = (uint64_t)x->operands[i].imm;
			return true;
		}
	return false;
}

/* Classifies an instruction of the patched area; 0, or -1 with why set. */
static int classify(const cs_insn *in, struct ks_instr_moved *m, char *why, size_t nwhy)
{
	const cs_x86 *x = &in->detail->x86;
	unsigned off;
	uint64_t t;

	m->kind = KS_INSTR_PLAIN;
	if (is_relative_branch(in)) {
		const uint8_t *b = in->bytes;
		size_t p = 0;

		if (!branch_target(in, &t)) {
			snprintf(why, nwhy, "relative '%s' without a target", in->mnemonic);
			return -1;
		}
		m->target = t;
		/* Prefixes (bnd, notrack, segment hints) are dropped when the
		 * branch is written again: they change nothing it does. */
		while (p < in->size && (b[p] == 0xf2 || b[p] == 0x3e || b[p] == 0x2e))
			p++;
		if (p < in->size && b[p] == 0xeb) {
			m->kind = KS_INSTR_JMP;
		} else if (p < in->size && b[p] == 0xe9) {
			m->kind = KS_INSTR_JMP;
		} else if (p < in->size && b[p] == 0xe8) {
			m->kind = KS_INSTR_CALL;
		} else if (p < in->size && (b[p] & 0xf0) == 0x70) {
			m->kind = KS_INSTR_JCC;
			m->cc = b[p] & 0x0f;
		} else if (p + 1 < in->size && b[p] == 0x0f && (b[p + 1] & 0xf0) == 0x80) {
			m->kind = KS_INSTR_JCC;
			m->cc = b[p + 1] & 0x0f;
		} else {
			snprintf(why, nwhy, "'%s' is relative and cannot be moved", in->mnemonic);
			return -1;
		}
		return 0;
	}
	for (uint8_t i = 0; i < x->op_count; i++) {
		const cs_x86_op *op = &x->operands[i];

		if (op->type != X86_OP_MEM || op->mem.base != X86_REG_RIP)
			continue;
		/* capstone 4 leaves disp_offset unset for some SSE forms; a
		 * RIP-relative operand has no SIB byte, so its disp32 follows
		 * the ModRM byte.  Either way the four bytes must hold the
		 * displacement capstone decoded. */
		off = x->encoding.disp_size == 4 && x->encoding.disp_offset
			      ? x->encoding.disp_offset
			      : (x->encoding.modrm_offset ? x->encoding.modrm_offset + 1 : 0);
		if (off) {
			int32_t v;

			if (off + 4u <= in->size) {
				memcpy(&v, in->bytes + off, 4);
				if (v != (int32_t)op->mem.disp)
					off = 0;
			} else {
				off = 0;
			}
		}
		if (!off) {
			snprintf(why, nwhy, "'%.16s' has a RIP-relative operand kscope cannot "
				 "re-encode", in->mnemonic);
			return -1;
		}
		m->kind = KS_INSTR_RIPREL;
		m->disp_off = (uint8_t)off;
		m->target = in->address + in->size + (uint64_t)(int64_t)op->mem.disp;
		return 0;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* One function                                                        */
/* ------------------------------------------------------------------ */

/* Names the analysis never patches, and why. */
static const char *never_reason(const struct ks_instr_sym *s, uint64_t entry)
{
	static const char *const crt[] = {
		"deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
		"frame_dummy", "__libc_csu_init", "__libc_csu_fini", NULL,
	};

	if (s->addr == entry || !strcmp(s->name, "_start"))
		return "the program's entry point (_start)";
	if (!strcmp(s->name, "__restore_rt") || !strcmp(s->name, "__restore"))
		return "a signal trampoline";
	if (s->ifunc)
		return "an ifunc resolver (runs inside the dynamic loader)";
	if (!s->exec)
		return "not in an executable section";
	if (!strncmp(s->section, ".plt", 4))
		return "a PLT stub";
	if (!strcmp(s->section, ".init") || !strcmp(s->section, ".fini"))
		return "in .init or .fini";
	if (!strcmp(s->name, "_init") || !strcmp(s->name, "_fini"))
		return "in .init or .fini";
	if (strstr(s->name, ".cold"))
		return "a cold part split from a function (entered by a jump, not a call)";
	if (!strncmp(s->name, "_dl_", 4))
		return "part of the dynamic loader";
	if (!strncmp(s->name, "ks_instr_", 9) || !strncmp(s->name, "irt_", 4))
		return "kscope's own runtime";
	for (size_t i = 0; crt[i]; i++)
		if (!strcmp(s->name, crt[i]))
			return "C start-up code (crt)";
	return NULL;
}

struct actx {
	struct capstone *cs;
	csh h;
	cs_insn *insn;
	const struct ks_instr_sel *sel;
	regex_t inc, exc;
	bool have_inc, have_exc;
	uint64_t entry;
};

static void func_refuse(struct ks_instr_func *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void func_refuse(struct ks_instr_func *f, const char *fmt, ...)
{
	va_list ap;

	f->patch = false;
	va_start(ap, fmt);
	vsnprintf(f->reason, sizeof(f->reason), fmt, ap);
	va_end(ap);
}

static void analyze_func(struct actx *a, const struct ks_instr_sym *s, struct ks_instr_func *f)
{
	const uint8_t *code = s->bytes;
	size_t left = (size_t)s->size;
	uint64_t addr = s->addr;
	const char *never = never_reason(s, a->entry);
	char why[96];
	bool decoded_all = true;
	uint64_t bad_target = 0, bad_from = 0;

	f->patch = true;
	/* Decode the whole function: its instruction count, the instructions
	 * the patch covers and the branches into them. */
	if (code) {
		while (left) {
			uint64_t here = addr, t;

			if (!a->cs->disasm_iter(a->h, &code, &left, &addr, a->insn)) {
				decoded_all = false;
				bad_from = here;
				break;
			}
			f->ninsns++;
			if (here - s->addr < KS_INSTR_PATCH_LEN && f->nmoved < KS_INSTR_MAX_MOVED) {
				struct ks_instr_moved *m = &f->moved[f->nmoved++];

				m->off = (uint8_t)(here - s->addr);
				m->len = (uint8_t)a->insn->size;
				f->moved_len = (uint8_t)(m->off + m->len);
				if (classify(a->insn, m, why, sizeof(why)) && f->patch && !never)
					func_refuse(f, "cannot move the instruction at +%u: %s",
						    (unsigned)m->off, why);
				if (!strncmp(a->insn->mnemonic, "loop", 4) ||
				    strstr(a->insn->mnemonic, "jrcxz") || strstr(a->insn->mnemonic, "jecxz"))
					if (f->patch && !never)
						func_refuse(f, "cannot move '%s' at +%u", a->insn->mnemonic,
							    (unsigned)m->off);
			}
			if (branch_target(a->insn, &t) && t > s->addr &&
			    t < s->addr + KS_INSTR_PATCH_LEN && !bad_target) {
				bad_target = t;
				bad_from = here;
			}
		}
	}
	if (never) {
		func_refuse(f, "%s", never);
		return;
	}
	if (a->have_inc && regexec(&a->inc, s->name, 0, NULL, 0) != 0) {
		func_refuse(f, "not selected by --include");
		return;
	}
	if (a->have_exc && regexec(&a->exc, s->name, 0, NULL, 0) == 0) {
		func_refuse(f, "excluded by --exclude");
		return;
	}
	if (!code) {
		func_refuse(f, "its bytes are not in the file");
		return;
	}
	if (s->size < KS_INSTR_PATCH_LEN) {
		func_refuse(f, "too short (%llu bytes, the patch needs 5)",
			    (unsigned long long)s->size);
		return;
	}
	if (a->sel && a->sel->min_insns > 0 && (int64_t)f->ninsns < a->sel->min_insns) {
		func_refuse(f, "fewer instructions than --min-instructions (%u)", f->ninsns);
		return;
	}
	if (!decoded_all && bad_from - s->addr < KS_INSTR_PATCH_LEN) {
		func_refuse(f, "capstone cannot decode the instruction at +%llu",
			    (unsigned long long)(bad_from - s->addr));
		return;
	}
	if (!decoded_all) {
		func_refuse(f, "capstone cannot decode the instruction at +%llu, so branches "
			    "into the patched bytes cannot be ruled out",
			    (unsigned long long)(bad_from - s->addr));
		return;
	}
	if (f->moved_len < KS_INSTR_PATCH_LEN || f->moved_len > s->size) {
		func_refuse(f, "too short: the instructions covering its first 5 bytes run "
			    "past its end");
		return;
	}
	if (f->patch && bad_target) {
		func_refuse(f, "a branch at +%llu targets +%llu, inside the patched bytes",
			    (unsigned long long)(bad_from - s->addr),
			    (unsigned long long)(bad_target - s->addr));
		return;
	}
	if (f->patch)
		memcpy(f->bytes, s->bytes, f->moved_len);
}

static int cmp_sym(const void *pa, const void *pb)
{
	const struct ks_instr_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->global != b->global)
		return a->global ? -1 : 1;
	return strcmp(a->name, b->name);
}

int ks_instr_analyze(const char *path, const struct ks_instr_sel *sel,
		     struct ks_instr_image *img, struct ks_err *err)
{
	struct ks_instr_elf *e = NULL;
	struct ks_instr_sym *syms = NULL;
	struct capstone cs = { 0 };
	struct actx a = { 0 };
	size_t n = 0;
	bool have_h = false;
	int rc;

	memset(img, 0, sizeof(*img));
	rc = ks_instr_elf_open(path, &e, err);
	if (rc)
		goto out;
	img->path = strdup(path);
	img->pie = ks_instr_elf_pie(e);
	img->symtab = ks_instr_elf_symtab(e);
	if (!img->path) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	rc = ks_instr_elf_funcs(e, &syms, &n, err);
	if (rc)
		goto out;
	if (n)  /* qsort wants a pointer even for nothing */
		qsort(syms, n, sizeof(*syms), cmp_sym);
	img->funcs = calloc(n ? n : 1, sizeof(*img->funcs));
	if (!img->funcs) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (!n)
		goto out;
	rc = capstone_open(&cs, err);
	if (rc)
		goto out;
	if (cs.open(CS_ARCH_X86, CS_MODE_64, &a.h) != CS_ERR_OK) {
		rc = ks_err_set(err, -EINVAL, "capstone cannot decode x86-64");
		goto out;
	}
	have_h = true;
	cs.option(a.h, CS_OPT_DETAIL, CS_OPT_ON);
	a.cs = &cs;
	a.insn = cs.malloc(a.h);
	a.sel = sel;
	a.entry = ks_instr_elf_entry(e);
	if (!a.insn) {
		rc = ks_err_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	if (sel && sel->include) {
		if (regcomp(&a.inc, sel->include, REG_EXTENDED | REG_NOSUB)) {
			rc = ks_instr_check_regex(sel->include, "--include", err);
			goto out;
		}
		a.have_inc = true;
	}
	if (sel && sel->exclude) {
		if (regcomp(&a.exc, sel->exclude, REG_EXTENDED | REG_NOSUB)) {
			rc = ks_instr_check_regex(sel->exclude, "--exclude", err);
			goto out;
		}
		a.have_exc = true;
	}
	for (size_t i = 0; i < n; i++) {
		struct ks_instr_func *f = &img->funcs[img->nfuncs];

		f->name = strdup(syms[i].name);
		if (!f->name) {
			rc = ks_err_set(err, -ENOMEM, "out of memory");
			goto out;
		}
		f->addr = syms[i].addr;
		f->size = syms[i].size;
		img->nfuncs++;
		if (i > 0 && syms[i - 1].addr == syms[i].addr) {
			func_refuse(f, "an alias of %s", syms[i - 1].name);
			f->ninsns = img->funcs[img->nfuncs - 2].ninsns;
			continue;
		}
		analyze_func(&a, &syms[i], f);
		if (f->patch)
			img->npatch++;
	}
out:
	if (a.have_inc)
		regfree(&a.inc);
	if (a.have_exc)
		regfree(&a.exc);
	if (a.insn)
		cs.free(a.insn, 1);
	if (have_h)
		cs.close(&a.h);
	if (cs.lib)
		dlclose(cs.lib);
	free(syms);
	ks_instr_elf_close(e);
	return rc;
}

void ks_instr_image_free(struct ks_instr_image *img)
{
	if (!img)
		return;
	for (size_t i = 0; i < img->nfuncs; i++)
		free(img->funcs[i].name);
	free(img->funcs);
	free(img->path);
	memset(img, 0, sizeof(*img));
}

/* ------------------------------------------------------------------ */
/* Relocation                                                          */
/* ------------------------------------------------------------------ */

static bool fits32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

static void put32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
}

/* A jmp rel32 at out + o (whose address is out_addr + o) to target;
 * false when target is out of its reach. */
static bool emit_jmp32(uint8_t *out, size_t o, uint64_t out_addr, uint64_t target)
{
	int64_t d = (int64_t)(target - (out_addr + o + 5));

	if (!fits32(d))
		return false;
	out[o] = 0xe9;
	put32(out + o + 1, (int32_t)d);
	return true;
}

int ks_instr_relocate(const struct ks_instr_func *f, uint64_t bias, uint8_t *out,
		      uint64_t out_addr, size_t cap, struct ks_err *err)
{
	size_t o = 0;
	int64_t d;

	for (uint8_t i = 0; i < f->nmoved; i++) {
		const struct ks_instr_moved *m = &f->moved[i];
		const uint8_t *src = f->bytes + m->off;
		uint64_t target = m->target + bias;
		uint64_t here = out_addr + o;

		if (o + 16 > cap)
			return ks_err_set(err, -ENOSPC, "%s: trampoline too small", f->name);
		assert(m->kind != KS_INSTR_CALL || i + 1 == f->nmoved);
		switch (m->kind) {
		case KS_INSTR_PLAIN:
			memcpy(out + o, src, m->len);
			o += m->len;
			break;
		case KS_INSTR_RIPREL:
			memcpy(out + o, src, m->len);
			d = (int64_t)(target - (here + m->len));
			if (!fits32(d))
				goto far;
			put32(out + o + m->disp_off, (int32_t)d);
			o += m->len;
			break;
		case KS_INSTR_JMP:
			if (!emit_jmp32(out, o, out_addr, target))
				goto far;
			o += 5;
			break;
		case KS_INSTR_CALL: {
			/* Not a call from the trampoline, whose address would then
			 * be the callee's return address (no unwind information
			 * there): the original return address is pushed, with rax
			 * kept, and the callee is jumped to.  A call reaches to or
			 * past byte 5, so it is always the last moved instruction. */
			static const uint8_t pre[] = {
				0x48, 0x8d, 0x64, 0x24, 0xf8, /* lea -8(%rsp), %rsp */
				0x50,                         /* push %rax */
				0x48, 0xb8,                   /* movabs $ret, %rax */
			};
			static const uint8_t post[] = {
				0x48, 0x89, 0x44, 0x24, 0x08, /* mov %rax, 8(%rsp) */
				0x58,                         /* pop %rax */
			};
			uint64_t ret = f->addr + bias + m->off + m->len;

			if (o + sizeof(pre) + 8 + sizeof(post) + 5 > cap)
				return ks_err_set(err, -ENOSPC, "%s: trampoline too small", f->name);
			memcpy(out + o, pre, sizeof(pre));
			o += sizeof(pre);
			memcpy(out + o, &ret, 8);
			o += 8;
			memcpy(out + o, post, sizeof(post));
			o += sizeof(post);
			if (!emit_jmp32(out, o, out_addr, target))
				goto far;
			o += 5;
			break;
		}
		case KS_INSTR_JCC:
			out[o] = 0x0f;
			out[o + 1] = (uint8_t)(0x80 | m->cc);
			d = (int64_t)(target - (here + 6));
			if (!fits32(d))
				goto far;
			put32(out + o + 2, (int32_t)d);
			o += 6;
			break;
		default:
			return ks_err_set(err, -EINVAL, "%s: unknown instruction kind", f->name);
		}
	}
	if (o + 5 > cap)
		return ks_err_set(err, -ENOSPC, "%s: trampoline too small", f->name);
	if (!emit_jmp32(out, o, out_addr, f->addr + bias + f->moved_len))
		goto far;
	return (int)(o + 5);
far:
	return ks_err_set(err, -ERANGE, "%s: a moved instruction cannot reach its target from "
			  "the trampoline", f->name);
}

const char *ks_instr_module_refused(const char *path)
{
	static const char *const no[][2] = {
		{ "ld-linux", "the dynamic loader" },
		{ "libc.so", "the C library, which kscope's runtime runs on" },
		{ "libpthread.so", "part of the C library" },
		{ "libdl.so", "part of the C library" },
		{ "librt.so", "part of the C library" },
		{ "libgcc_s.so", "the unwinder, which kscope's runtime wraps" },
		{ "libcapstone.so", "the disassembler kscope's runtime uses" },
		{ "libkscope-", "part of kscope" },
		{ "linux-vdso.so", "the kernel's vDSO, which has no file" },
	};
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (!strncmp(base, no[i][0], strlen(no[i][0])))
			return no[i][1];
	return NULL;
}

int ks_instr_stub_write(const struct ks_instr_func *f, uint32_t id, uint64_t bias, uint8_t *stub,
			uint64_t stub_addr, uint64_t slot_addr, struct ks_err *err)
{
	int64_t d = (int64_t)(slot_addr - (stub_addr + 10));
	int32_t d32 = (int32_t)d;
	int n;

	if (d != d32)
		return ks_err_set(err, -ERANGE, "%s: its trampoline is out of reach of the entry "
				  "thunk's address", f->name);
	memcpy(stub, &id, 4);
	stub[4] = 0xff;
	stub[5] = 0x15;
	memcpy(stub + 6, &d32, 4);
	n = ks_instr_relocate(f, bias, stub + 10, stub_addr + 10, KS_INSTR_STUB_SIZE - 10, err);
	return n < 0 ? n : 0;
}
