/*
 * libFuzzer target for kscope op's channel messages and name filters
 * (src/op/common).  The input is split at its first NUL byte: the part
 * before is compiled as a --kernel-name filter and matched against the
 * part after; the part after is also read as a channel message (every
 * key the protocol uses, repeated keys in a loop).  Nothing may crash,
 * read out of bounds or leak, and a compiled filter must match its own
 * text with the wildcards and bars removed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "filter.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const keys[] = {
	"version", "pid", "token", "run", "name", "index", "gsize", "ordinal",
	"range", "dir", "done", "total", "status", "message", "target", "ns",
	"mode", "skip", "warmup", "passes", "flush", "mstx", "kernel_name",
	"mstx_include", "targets", "final", "",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ks_op_msg m;
	const uint8_t *nul = memchr(data, '\0', size);
	size_t plen = nul ? (size_t)(nul - data) : size;
	size_t rest = nul ? size - plen - 1 : 0;
	char *pat = malloc(plen + 1), *name = malloc(rest + 1), why[256], v[128];
	struct ks_op_filter *f;

	if (!pat || !name)
		goto out;
	memcpy(pat, data, plen);
	pat[plen] = '\0';
	memcpy(name, nul ? nul + 1 : data, rest);
	name[rest] = '\0';
	if (ks_op_filter_compile(pat, &f, why, sizeof(why)) == 0) {
		char *plain = malloc(plen + 1);
		size_t n = 0;

		(void)ks_op_filter_match(f, name);
		/* The first alternative with its wildcards dropped is matched. */
		if (plain) {
			for (size_t i = 0; i < plen && pat[i] != '|'; i++)
				if (pat[i] != '*')
					plain[n++] = pat[i];
			plain[n] = '\0';
			if (!ks_op_filter_match(f, plain))
				abort();
			free(plain);
		}
		ks_op_filter_free(f);
	}
	if (rest <= KS_OP_MSG_MAX) {
		memcpy(m.buf, name, rest + 1);
		m.len = strlen(m.buf);
		m.overflow = false;
		ks_op_msg_type(&m, v, sizeof(v));
		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
			size_t pos = 0;

			(void)ks_op_msg_getu(&m, keys[k], 0);
			while (ks_op_msg_get(&m, keys[k], &pos, v, sizeof(v)))
				;
		}
	}
out:
	free(pat);
	free(name);
	return 0;
}
