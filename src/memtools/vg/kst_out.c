/*
 * The findings writer of kscope's Valgrind tool: findings.jsonl, one JSON
 * record per line (docs/formats.md), which the kscope process turns into
 * reports after the program ends.  Stacks are written once, as `stack`
 * records with an id, and referenced by id; each frame is resolved here
 * with Valgrind's debug information (function, file, directory, line,
 * object), since only the tool can see the program's mappings.
 *
 * Each process writes its own file (--out with %p, its pid), opened
 * again in a forked child; an image a process exec'd appends its segment
 * to the same file.
 */
#include "pub_tool_basics.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_hashtable.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_mallocfree.h"
#include "pub_tool_options.h"
#include "pub_tool_stacktrace.h"
#include "pub_tool_threadstate.h"

#include "kst_int.h"

/* The findings file: a descriptor in Valgrind's reserved range (above
 * the program's descriptor limit, close-on-exec), which the program can
 * neither see nor close nor dup2 over, and a buffer of whole writes. */
static Int out_fd = -1;
static HChar out_buf[65536];
static UInt out_len;
static VgHashTable *stacks; /* ExeContext unique number -> id */
static UInt next_stack_id = 1;
/* The image wrote its end record before an execve; if that failed, the
 * next record begins a new segment (kst_out_printf). */
static Bool exec_pending;

/* Moves a descriptor into Valgrind's reserved range and makes it
 * close-on-exec, as Valgrind does for its own log (pub_core_libcfile.h;
 * the tool interface does not offer it).  Returns the new descriptor,
 * or -1 (the old one is closed either way). */
extern Int VG_(safe_fd)(Int oldfd);

struct stack_node {
	struct stack_node *next;
	UWord key; /* ECU */
	UInt id;
};

static void out_write_all(const HChar *p, UInt n)
{
	while (n > 0 && out_fd >= 0) {
		Int w = VG_(write)(out_fd, p, (Int)n);
		if (w <= 0)
			return; /* a full disk: nothing better to do */
		p += w;
		n -= (UInt)w;
	}
}

void kst_out_flush(void)
{
	if (out_len)
		out_write_all(out_buf, out_len);
	out_len = 0;
}

static void out_put(HChar c, void *opaque)
{
	if (out_len == sizeof(out_buf))
		kst_out_flush();
	out_buf[out_len++] = c;
}

/* Opens the file --out names for this process (%p: its pid) for
 * appending: an image that a process exec'd continues its file. */
static Bool out_open_file(void)
{
	HChar *path = VG_(expand_file_name)("--out", kst_clo.out);
	Int fd = VG_(fd_open)(path, VKI_O_CREAT | VKI_O_WRONLY | VKI_O_APPEND,
			      VKI_S_IRUSR | VKI_S_IWUSR);

	if (fd >= 0)
		fd = VG_(safe_fd)(fd);
	if (fd < 0) {
		VG_(umsg)("kscope: cannot create the findings file %s\n", path);
		VG_(free)(path);
		return False;
	}
	VG_(free)(path);
	out_fd = fd;
	out_len = 0;
	return True;
}

/* Stack ids are those of one segment: a new one writes its stacks again. */
static void stacks_reset(void)
{
	if (stacks)
		VG_(HT_destruct)(stacks, VG_(free));
	stacks = VG_(HT_construct)("kst.stacks");
	next_stack_id = 1;
}

Bool kst_out_open(void)
{
	stacks_reset();
	return out_open_file();
}

void kst_out_close(void)
{
	kst_out_flush();
	if (out_fd >= 0)
		VG_(close)(out_fd);
	out_fd = -1;
}

void kst_out_printf(const HChar *fmt, ...)
{
	va_list ap;
	if (out_fd < 0)
		return;
	if (exec_pending) {
		/* The execve failed: this image goes on, in a new segment. */
		exec_pending = False;
		stacks_reset();
		kst_write_start();
	}
	va_start(ap, fmt);
	VG_(vcbprintf)(out_put, NULL, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* fork and exec                                                       */
/* ------------------------------------------------------------------ */

/* Before fork: nothing buffered, or parent and child would both write it. */
static void out_pre_fork(ThreadId tid)
{
	kst_out_flush();
}

/* In the child: its own file (findings.<pid>.jsonl) with its own start
 * record, which names the parent; what the parent found before the fork
 * is the parent's to report. */
static void out_child_after_fork(ThreadId tid)
{
	if (out_fd >= 0)
		VG_(close)(out_fd);
	out_fd = -1;
	out_len = 0;
	exec_pending = False;
	stacks_reset();
	if (out_open_file())
		kst_write_start();
}

void kst_out_init_fork(void)
{
	VG_(atfork)(out_pre_fork, NULL, out_child_after_fork);
}

void kst_out_exec(const HChar *how_json)
{
	if (out_fd < 0)
		return;
	kst_out_printf("%s", how_json);
	kst_out_flush();
	exec_pending = True;
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
