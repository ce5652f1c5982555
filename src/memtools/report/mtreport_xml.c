/*
 * memcheck.xml: kscope memcheck's findings in Valgrind's XML output
 * protocol 4 (docs/internals/xml-output-protocol4.txt in Valgrind's
 * sources), so that the tools that read Memcheck's --xml=yes output (IDE
 * plugins, CI converters) read kscope's.  The layout follows what
 * Valgrind 3.x writes: preamble, pid/ppid, tool, args, a RUNNING status,
 * the errors, a FINISHED status, the leaks, errorcounts and suppcounts.
 *
 * Mapping: use-after-free becomes InvalidRead or InvalidWrite after its
 * access field (as Memcheck reports it, with the block "free'd"),
 * double-free and invalid-free InvalidFree, uninit-cond UninitCondition,
 * uninit-addr UninitValue, uninit-syscall SyscallParam, and the leaks
 * Leak_DefinitelyLost and Leak_PossiblyLost with <xwhat>.  kscope knows
 * neither the parent's pid (0) nor times (no <time> in <status>).
 *
 * Written by hand rather than with an XML library: the protocol is a
 * fixed, flat layout and the only subtle part is escaping, done here.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ks_version.h"

/* Writes s as XML character data: the five markup characters as
 * entities, tab, newline and carriage return as character references,
 * and the other control characters, which XML 1.0 forbids even as
 * references, as the visible text \xNN.  A byte that starts no valid
 * UTF-8 sequence (the kscope command line may hold one), and U+FFFE and
 * U+FFFF, which XML also forbids, become U+FFFD. */
static void xml_text(struct ks_mtr_out *o, const char *s)
{
	const char *run = s;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *rep = NULL;
		char num[8];

		if (c >= 0x20 && c < 0x7f && c != '&' && c != '<' && c != '>' && c != '"' &&
		    c != '\'')
			continue; /* the common case */
		if (c >= 0x80) {
			size_t n = ks_utf8_len((const unsigned char *)s, SIZE_MAX);

			if (n && !(n == 3 && c == 0xef && (unsigned char)s[1] == 0xbf &&
				   (unsigned char)s[2] >= 0xbe)) {
				s += n - 1;
				continue;
			}
			ks_mtr_put(o, run, (size_t)(s - run));
			ks_mtr_puts(o, "\xef\xbf\xbd");
			s += n ? n - 1 : 0;
			run = s + 1;
			continue;
		}
		switch (c) {
		case '&': rep = "&amp;"; break;
		case '<': rep = "&lt;"; break;
		case '>': rep = "&gt;"; break;
		case '"': rep = "&quot;"; break;
		case '\'': rep = "&apos;"; break;
		case '\t': rep = "&#9;"; break;
		case '\n': rep = "&#10;"; break;
		case '\r': rep = "&#13;"; break;
		default:
			snprintf(num, sizeof(num), "\\x%02x", c);
			rep = num;
			break;
		}
		ks_mtr_put(o, run, (size_t)(s - run));
		ks_mtr_puts(o, rep);
		run = s + 1;
	}
	ks_mtr_put(o, run, (size_t)(s - run));
}

/* <tag>text</tag> on its own line.  (Plain puts, not printf: a large
 * report has millions of these.) */
static void xml_elem(struct ks_mtr_out *o, const char *indent, const char *tag,
		     const char *text)
{
	ks_mtr_puts(o, indent);
	ks_mtr_put(o, "<", 1);
	ks_mtr_puts(o, tag);
	ks_mtr_put(o, ">", 1);
	xml_text(o, text);
	ks_mtr_put(o, "</", 2);
	ks_mtr_puts(o, tag);
	ks_mtr_put(o, ">\n", 2);
}

static void xml_stack(struct ks_mtr_out *o, const struct ks_mtr_stack *s)
{
	static const char hex[] = "0123456789ABCDEF";

	ks_mtr_puts(o, "  <stack>\n");
	for (uint32_t i = 0; i < s->nframes; i++) {
		const struct ks_mtr_frame *f = &s->frames[i];
		/* The frame's opening, "0x", 16 digits at most and "</ip>\n". */
		char ip[sizeof("    <frame>\n      <ip>0x") - 1 + 16 + sizeof("</ip>\n") - 1];
		char *p = ip + sizeof(ip);
		uint64_t v = f->ip;

		/* Memcheck's HEX64: "0x" and upper-case digits. */
		p -= sizeof("</ip>\n") - 1;
		memcpy(p, "</ip>\n", sizeof("</ip>\n") - 1);
		do {
			*--p = hex[v & 15];
			v >>= 4;
		} while (v);
		p -= sizeof("    <frame>\n      <ip>0x") - 1;
		memcpy(p, "    <frame>\n      <ip>0x", sizeof("    <frame>\n      <ip>0x") - 1);
		ks_mtr_put(o, p, (size_t)(ip + sizeof(ip) - p));
		if (f->obj)
			xml_elem(o, "      ", "obj", f->obj);
		if (f->fn)
			xml_elem(o, "      ", "fn", f->fn);
		if (f->dir)
			xml_elem(o, "      ", "dir", f->dir);
		if (f->file)
			xml_elem(o, "      ", "file", f->file);
		if (f->line)
			ks_mtr_printf(o, "      <line>%lu</line>\n", f->line);
		ks_mtr_puts(o, "    </frame>\n");
	}
	ks_mtr_puts(o, "  </stack>\n");
}

static void xml_error(struct ks_mtr_out *o, const struct ks_mtr_run *r,
		      const struct ks_mtr_error *e, unsigned long unique)
{
	char buf[1024];

	ks_mtr_printf(o, "<error>\n  <unique>0x%lx</unique>\n  <tid>%lld</tid>\n"
		      "  <kind>%s</kind>\n", unique, e->tid, ks_mtr_xml_kind(e->kind, e->write));
	ks_mtr_error_what(e, buf, sizeof(buf));
	xml_elem(o, "  ", "what", buf);
	xml_stack(o, &r->stacks[e->stack]);
	ks_mtr_error_where(e, buf, sizeof(buf));
	if (buf[0])
		xml_elem(o, "  ", "auxwhat", buf);
	if (e->has_block) {
		/* Memcheck's order: the free stack right after the address
		 * sentence, then "Block was alloc'd at" and its stack. */
		if (e->block.freed) {
			if (e->block.free_stack != MTR_NONE)
				xml_stack(o, &r->stacks[e->block.free_stack]);
			xml_elem(o, "  ", "auxwhat", "Block was alloc'd at");
		}
		xml_stack(o, &r->stacks[e->block.alloc_stack]);
	}
	ks_mtr_puts(o, "</error>\n\n");
}

static void xml_leak(struct ks_mtr_out *o, const struct ks_mtr_run *r, const struct ks_mtr_leak *l,
		     unsigned long unique, size_t nth)
{
	char buf[256];

	ks_mtr_leak_what(l, buf, sizeof(buf));
	ks_mtr_printf(o, "<error>\n  <unique>0x%lx</unique>\n  <tid>1</tid>\n  <kind>%s</kind>\n"
		      "  <xwhat>\n    <text>%s in loss record %zu of %zu</text>\n"
		      "    <leakedbytes>%" PRIu64 "</leakedbytes>\n"
		      "    <leakedblocks>%" PRIu64 "</leakedblocks>\n  </xwhat>\n",
		      unique, ks_mtr_xml_kind(l->kind, false), buf, nth + 1, r->nleaks_shown, l->bytes,
		      l->blocks);
	xml_stack(o, &r->stacks[l->stack]);
	ks_mtr_puts(o, "</error>\n\n");
}

/* The kscope command line's words after the first (kscope itself). */
static void xml_vargs(struct ks_mtr_out *o, const char *command)
{
	const char *p = command;
	char *word;
	size_t n;

	if (!p)
		return;
	p += strcspn(p, " \t");
	for (;;) {
		p += strspn(p, " \t");
		if (!*p)
			break;
		n = strcspn(p, " \t");
		word = strndup(p, n);
		if (word) {
			xml_elem(o, "    ", "arg", word);
			free(word);
		}
		p += n;
	}
}

static void write_xml(struct ks_mtr_out *o, const struct ks_mtr_run *r,
		      const struct ks_mtr_opts *opts)
{
	const struct ks_mtr_start *s = &r->start;
	unsigned long unique = 0;

	ks_mtr_puts(o, "<?xml version=\"1.0\"?>\n\n<valgrindoutput>\n\n"
		    "<protocolversion>4</protocolversion>\n"
		    "<protocoltool>memcheck</protocoltool>\n\n<preamble>\n");
	ks_mtr_puts(o, "  <line>kscope memcheck, a heap memory error detector</line>\n");
	ks_mtr_puts(o, "  <line>Using kscope " KS_VERSION "</line>\n");
	ks_mtr_puts(o, "  <line>Command:");
	for (size_t i = 0; i < s->argc; i++) {
		ks_mtr_puts(o, " ");
		xml_text(o, s->argv[i]);
	}
	ks_mtr_puts(o, "</line>\n");
	if (r->truncated)
		ks_mtr_puts(o, "  <line>The run ended early: findings.jsonl has no end record, "
			    "so these results are incomplete</line>\n");
	ks_mtr_printf(o, "</preamble>\n\n<pid>%lld</pid>\n<ppid>0</ppid>\n"
		      "<tool>memcheck</tool>\n\n", s->pid);
	ks_mtr_puts(o, "<args>\n  <vargv>\n    <exe>kscope</exe>\n");
	xml_vargs(o, opts->command);
	ks_mtr_puts(o, "  </vargv>\n  <argv>\n");
	xml_elem(o, "    ", "exe", s->argc ? s->argv[0] : s->exe);
	for (size_t i = 1; i < s->argc; i++)
		xml_elem(o, "    ", "arg", s->argv[i]);
	ks_mtr_puts(o, "  </argv>\n</args>\n\n<status>\n  <state>RUNNING</state>\n</status>\n\n");

	for (size_t i = 0; i < r->nerrors; i++)
		if (!r->errors[i].filtered)
			xml_error(o, r, &r->errors[i], unique++);
	ks_mtr_puts(o, "\n<status>\n  <state>FINISHED</state>\n</status>\n\n");
	for (size_t i = 0; i < r->nleaks_shown; i++)
		xml_leak(o, r, &r->leaks[r->leak_order[i]], unique++, i);

	/* Counts of the errors proper (Memcheck gives none for leaks). */
	ks_mtr_puts(o, "<errorcounts>\n");
	unique = 0;
	for (size_t i = 0; i < r->nerrors; i++) {
		if (r->errors[i].filtered)
			continue;
		ks_mtr_printf(o, "  <pair>\n    <count>%" PRIu64 "</count>\n"
			      "    <unique>0x%lx</unique>\n  </pair>\n", r->errors[i].count,
			      unique++);
	}
	/* The tool's own suppression, counted like one of Valgrind's. */
	ks_mtr_puts(o, "</errorcounts>\n\n<suppcounts>\n");
	if (r->suppressed.count) {
		ks_mtr_printf(o, "  <pair>\n    <count>%" PRIu64 "</count>\n", r->suppressed.count);
		xml_elem(o, "    ", "name", r->suppressed.reason ? r->suppressed.reason
							     : "kscope");
		ks_mtr_puts(o, "  </pair>\n");
	}
	ks_mtr_puts(o, "</suppcounts>\n\n</valgrindoutput>\n\n");
}

int ks_mtr_write_xml(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		     struct ks_rundir *rd, struct ks_err *err)
{
	struct ks_mtr_out *out = calloc(1, sizeof(*out));
	struct ks_outfile of;
	int rc;

	if (!out)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = ks_mtr_out_open(out, &of, NULL, rd, "memcheck.xml", err);
	if (!rc) {
		write_xml(out, r, o);
		rc = ks_mtr_out_commit(out, err);
	}
	free(out);
	return rc;
}
