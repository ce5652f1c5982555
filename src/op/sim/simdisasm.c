/*
 * The disassembly of the simulated instructions: the "Source" column of
 * instr_exe.csv and of the 0x04 block, the names and details of the
 * pipeline chart's slices.
 *
 * capstone decodes the bytes the raw file carries for each instruction
 * (x86-64, Intel syntax: the syntax of the Intel and AMD manuals that
 * the pipe classes and latencies come from).  Each instruction becomes
 * "mnemonic operands" in one text arena; bytes capstone cannot decode
 * become "(bad)".  Details are on for one use: the general-purpose
 * registers each instruction reads or writes, implicit ones included
 * (cs_regs_access: rsp for push and call, rdx:rax for div), as a mask of
 * the 16 architectural registers, sub-registers counted as theirs
 * (eax, ax, al and ah are rax) -- the "GPR Count" columns.  Decoding
 * runs once per distinct instruction, not per execution.
 *
 * capstone is opened with dlopen() here, when a simulation is written,
 * rather than linked into kscope: its decoder tables carry some 80,000
 * pointers that the dynamic loader would relocate at every start of
 * every kscope command, about 2 ms, which is most of what `kscope op`
 * adds to a short program's run.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include "simpost_int.h"

/* Appends a (na bytes), then a space and b when nb is not 0, then a NUL
 * to the arena; the offset of the text in *off. */
static int text_add(struct sim *s, const char *a, size_t na, const char *b, size_t nb,
		    uint32_t *off)
{
	size_t need = s->ntext + na + (nb ? 1 + nb : 0) + 1;

	if (need > UINT32_MAX)
		return -ENOMEM;
	if (need > s->cap_text) {
		size_t cap = s->cap_text ? s->cap_text : 1 << 16;
		char *t;

		while (cap < need)
			cap *= 2;
		t = realloc(s->text, cap);
		if (!t)
			return -ENOMEM;
		s->text = t;
		s->cap_text = cap;
	}
	*off = (uint32_t)s->ntext;
	memcpy(s->text + s->ntext, a, na);
	s->ntext += na;
	if (nb) {
		s->text[s->ntext++] = ' ';
		memcpy(s->text + s->ntext, b, nb);
		s->ntext += nb;
	}
	s->text[s->ntext++] = '\0';
	return 0;
}

#define KS_STR_(x) #x
#define KS_STR(x) KS_STR_(x)
/* The name of the capstone the headers describe (its soname carries the
 * API's major version). */
#define CAPSTONE_SONAME "libcapstone.so." KS_STR(CS_API_MAJOR)

/* The capstone functions kscope calls. */
struct capstone {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*close)(csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	const char *(*strerror)(cs_err);
	cs_insn *(*malloc)(csh);
	void (*free)(cs_insn *, size_t);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	cs_err (*regs_access)(csh, const cs_insn *, cs_regs, uint8_t *, cs_regs, uint8_t *);
	const char *(*reg_name)(csh, unsigned int);
};

/* Loads capstone the first time (it stays loaded; the deliverables are
 * written by one thread) and points *out at its functions.  0, or -ENOENT
 * with err set when it cannot. */
static int capstone_load(const struct capstone **out, struct ks_err *err)
{
	static struct capstone loaded;
	static void *lib;
	const char *why;

	if (!lib) {
		lib = dlopen(CAPSTONE_SONAME, RTLD_NOW | RTLD_LOCAL);
		if (!lib) {
			why = dlerror();
			return ks_err_set(err, -ENOENT,
					  "cannot load capstone (%s), which kscope disassembles "
					  "with: %s; install it (scripts/install-deps.sh)",
					  CAPSTONE_SONAME, why ? why : "not found");
		}
		/* The casts go through void * as POSIX's dlsym() wants. */
		*(void **)&loaded.open = dlsym(lib, "cs_open");
		*(void **)&loaded.close = dlsym(lib, "cs_close");
		*(void **)&loaded.option = dlsym(lib, "cs_option");
		*(void **)&loaded.strerror = dlsym(lib, "cs_strerror");
		*(void **)&loaded.malloc = dlsym(lib, "cs_malloc");
		*(void **)&loaded.free = dlsym(lib, "cs_free");
		*(void **)&loaded.disasm_iter = dlsym(lib, "cs_disasm_iter");
		*(void **)&loaded.regs_access = dlsym(lib, "cs_regs_access");
		*(void **)&loaded.reg_name = dlsym(lib, "cs_reg_name");
		if (!loaded.open || !loaded.close || !loaded.option || !loaded.strerror ||
		    !loaded.malloc || !loaded.free || !loaded.disasm_iter ||
		    !loaded.regs_access || !loaded.reg_name) {
			dlclose(lib);
			lib = NULL;
			return ks_err_set(err, -ENOENT,
					  "%s lacks a function kscope needs (cs_open, cs_close, "
					  "cs_option, cs_strerror, cs_malloc, cs_free, "
					  "cs_disasm_iter, cs_regs_access, cs_reg_name)",
					  CAPSTONE_SONAME);
		}
	}
	*out = &loaded;
	return 0;
}

/* The architectural general-purpose register a register name is part
 * of, 0 (rax) to 15 (r15), or -1 for any other register. */
static int gpr_of(const char *name)
{
	static const char *const legacy[8][5] = {
		{ "rax", "eax", "ax", "al", "ah" }, { "rcx", "ecx", "cx", "cl", "ch" },
		{ "rdx", "edx", "dx", "dl", "dh" }, { "rbx", "ebx", "bx", "bl", "bh" },
		{ "rsp", "esp", "sp", "spl", NULL }, { "rbp", "ebp", "bp", "bpl", NULL },
		{ "rsi", "esi", "si", "sil", NULL }, { "rdi", "edi", "di", "dil", NULL },
	};
	char *end;
	long n;

	if (!name)
		return -1;
	for (int r = 0; r < 8; r++)
		for (int k = 0; k < 5 && legacy[r][k]; k++)
			if (strcmp(name, legacy[r][k]) == 0)
				return r;
	if (name[0] != 'r' || name[1] < '0' || name[1] > '9')
		return -1;
	n = strtol(name + 1, &end, 10);
	if (n < 8 || n > 15 || (*end && strcmp(end, "d") && strcmp(end, "w") && strcmp(end, "b")))
		return -1;
	return (int)n;
}

/* The mask of the general-purpose registers insn reads or writes. */
static uint16_t gpr_mask(const struct capstone *cs, csh h, const cs_insn *insn)
{
	cs_regs rd, wr;
	uint8_t nr = 0, nw = 0;
	uint16_t m = 0;

	if (cs->regs_access(h, insn, rd, &nr, wr, &nw) != CS_ERR_OK)
		return 0;
	for (uint8_t i = 0; i < nr; i++) {
		int g = gpr_of(cs->reg_name(h, rd[i]));

		if (g >= 0)
			m |= (uint16_t)(1u << g);
	}
	for (uint8_t i = 0; i < nw; i++) {
		int g = gpr_of(cs->reg_name(h, wr[i]));

		if (g >= 0)
			m |= (uint16_t)(1u << g);
	}
	return m;
}

int sim_disasm(struct sim *s, struct ks_err *err)
{
	const struct capstone *cs = NULL;
	csh h;
	cs_insn *insn;
	cs_err ce;
	int rc = capstone_load(&cs, err);

	if (rc)
		return rc;
	ce = cs->open(CS_ARCH_X86, CS_MODE_64, &h);
	if (ce != CS_ERR_OK)
		return ks_err_set(err, -EINVAL, "capstone cannot disassemble x86-64: %s",
				  cs->strerror(ce));
	cs->option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_INTEL);
	cs->option(h, CS_OPT_DETAIL, CS_OPT_ON);
	insn = cs->malloc(h);
	if (!insn) {
		cs->close(&h);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nins && !rc; i++) {
		struct sim_ins *in = &s->ins[i];
		const uint8_t *code = in->bytes;
		size_t size = in->len < sizeof(in->bytes) ? in->len : sizeof(in->bytes);
		uint64_t addr = in->addr;

		if (cs->disasm_iter(h, &code, &size, &addr, insn)) {
			size_t nm = strlen(insn->mnemonic);

			rc = text_add(s, insn->mnemonic, nm, insn->op_str, strlen(insn->op_str),
				      &in->dis);
			in->mnem_len = (uint16_t)nm;
			in->gprs = gpr_mask(cs, h, insn);
		} else {
			rc = text_add(s, "(bad)", 5, NULL, 0, &in->dis);
			in->mnem_len = 5;
		}
	}
	cs->free(insn, 1);
	cs->close(&h);
	if (rc)
		return ks_err_set(err, rc, "out of memory");
	return 0;
}
