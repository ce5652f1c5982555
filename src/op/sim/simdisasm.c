/*
 * The disassembly of the simulated instructions: the "Source" column of
 * instr_exe.csv and of the 0x04 block, the names and details of the
 * pipeline chart's slices.
 *
 * capstone decodes the bytes the raw file carries for each instruction
 * (x86-64, Intel syntax: the syntax of the Intel and AMD manuals that
 * the pipe classes and latencies come from).  Each instruction becomes
 * "mnemonic operands" in one text arena; bytes capstone cannot decode
 * become "(bad)".  Details (operands, groups) are off: only the text is
 * needed, and decoding without them is several times faster.
 */
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

int sim_disasm(struct sim *s, struct ks_err *err)
{
	csh h;
	cs_insn *insn;
	cs_err ce = cs_open(CS_ARCH_X86, CS_MODE_64, &h);
	int rc = 0;

	if (ce != CS_ERR_OK)
		return ks_err_set(err, -EINVAL, "capstone cannot disassemble x86-64: %s",
				  cs_strerror(ce));
	cs_option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_INTEL);
	cs_option(h, CS_OPT_DETAIL, CS_OPT_OFF);
	insn = cs_malloc(h);
	if (!insn) {
		cs_close(&h);
		return ks_err_set(err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < s->nins && !rc; i++) {
		struct sim_ins *in = &s->ins[i];
		const uint8_t *code = in->bytes;
		size_t size = in->len < sizeof(in->bytes) ? in->len : sizeof(in->bytes);
		uint64_t addr = in->addr;

		if (cs_disasm_iter(h, &code, &size, &addr, insn)) {
			size_t nm = strlen(insn->mnemonic);

			rc = text_add(s, insn->mnemonic, nm, insn->op_str, strlen(insn->op_str),
				      &in->dis);
			in->mnem_len = (uint16_t)nm;
		} else {
			rc = text_add(s, "(bad)", 5, NULL, 0, &in->dis);
			in->mnem_len = 5;
		}
	}
	cs_free(insn, 1);
	cs_close(&h);
	if (rc)
		return ks_err_set(err, rc, "out of memory");
	return 0;
}
