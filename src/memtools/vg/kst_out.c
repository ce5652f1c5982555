/*
 * The findings writer of kscope's Valgrind tool: findings.jsonl, one JSON
 * record per line (docs/formats.md), which the kscope process turns into
 * reports after the program ends.  Stacks are written once, as `stack`
 * records with an id, and referenced by id; each frame is resolved here
 * with Valgrind's debug information (function, file, directory, line,
 * object), since only the tool can see the program's mappings.
 */
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"

#include "kst_int.h"

static VgFile *out;
static VgHashTable *stacks; /* ExeContext unique number -> id */
static UInt next_stack_id = 1;

struct stack_node {
	struct stack_node *next;
	UWord key; /* ECU */
	UInt id;
};

Bool kst_out_open(void)
{
	HChar *path = VG_(expand_file_name)("--out", kst_clo.out);
	out = VG_(fopen)(path, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_TRUNC,
			 VKI_S_IRUSR | VKI_S_IWUSR);
	if (!out) {
		VG_(umsg)("kscope: cannot create the findings file %s\n", path);
		VG_(free)(path);
		return False;
	}
	VG_(free)(path);
	stacks = VG_(HT_construct)("kst.stacks");
	return True;
}

void kst_out_close(void)
{
	if (out)
		VG_(fclose)(out);
	out = NULL;
}

void kst_out_printf(const HChar *fmt, ...)
{
	va_list ap;
	if (!out)
		return;
	va_start(ap, fmt);
	VG_(vfprintf)(out, fmt, ap);
	va_end(ap);
}

void kst_out_str(const HChar *s)
{
	static const HChar hex[] = "0123456789abcdef";
	HChar buf[256];
	UInt n = 0;
	if (!s)
		s = "";
	buf[n++] = '"';
	for (; *s; s++) {
		UChar c = (UChar)*s;
		if (n > sizeof(buf) - 8) {
			buf[n] = 0;
			kst_out_printf("%s", buf);
			n = 0;
		}
		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (HChar)c;
		} else if (c < 0x20 || c == 0x7f) {
			buf[n++] = '\\';
			buf[n++] = 'u';
			buf[n++] = '0';
			buf[n++] = '0';
			buf[n++] = hex[c >> 4];
			buf[n++] = hex[c & 15];
		} else {
			/* Bytes >= 0x80 pass through: names from debug
			 * information are UTF-8; invalid sequences are
			 * replaced by the reader. */
			buf[n++] = (HChar)c;
		}
	}
	buf[n++] = '"';
	buf[n] = 0;
	kst_out_printf("%s", buf);
}

static void frame_out(UInt n, DiEpoch ep, Addr ip, void *opaque)
{
	const HChar *fn = NULL, *file = NULL, *dir = NULL, *obj = NULL;
	UInt line = 0;
	Bool have_fn = VG_(get_fnname)(ep, ip, &fn);
	Bool have_obj = VG_(get_objname)(ep, ip, &obj);
	Bool have_line = VG_(get_filename_linenum)(ep, ip, &file, &dir, &line);

	kst_out_printf("%s{\"ip\":\"%#lx\"", n ? "," : "", ip);
	if (have_fn) {
		kst_out_printf(",\"fn\":");
		kst_out_str(fn);
	}
	if (have_obj) {
		kst_out_printf(",\"obj\":");
		kst_out_str(obj);
	}
	if (have_line) {
		kst_out_printf(",\"file\":");
		kst_out_str(file);
		if (dir && dir[0]) {
			kst_out_printf(",\"dir\":");
			kst_out_str(dir);
		}
		kst_out_printf(",\"line\":%u", line);
	}
	kst_out_printf("}");
}

UInt kst_out_stack(ExeContext *ec)
{
	UWord key;
	struct stack_node *sn;

	if (!ec)
		return 0;
	key = VG_(get_ECU_from_ExeContext)(ec);
	sn = VG_(HT_lookup)(stacks, key);
	if (sn)
		return sn->id;
	sn = VG_(malloc)("kst.stacknode", sizeof(*sn));
	sn->key = key;
	sn->id = next_stack_id++;
	VG_(HT_add_node)(stacks, sn);
	kst_out_printf("{\"rec\":\"stack\",\"id\":%u,\"frames\":[", sn->id);
	VG_(apply_ExeContext)(frame_out, NULL, ec);
	kst_out_printf("]}\n");
	return sn->id;
}

UInt kst_out_stack_ip(Addr ip)
{
	return kst_out_stack(VG_(make_depth_1_ExeContext_from_Addr)(ip));
}

ExeContext *kst_stack_here(ThreadId tid, Addr ip)
{
	Addr ips[64];
	UInt max = VG_(clo_backtrace_size) < 64 ? VG_(clo_backtrace_size) : 64;
	UInt n = VG_(get_StackTrace)(tid, ips, max, NULL, NULL, 0);
	if (n == 0)
		return VG_(make_depth_1_ExeContext_from_Addr)(ip);
	if (ip)
		ips[0] = ip;
	return VG_(make_ExeContext_from_StackTrace)(ips, n);
}
