/*
 * kscope memcheck: runs the program under Valgrind's Memcheck and writes
 * kscope's reports from Memcheck's XML.
 *
 *     valgrind --tool=memcheck --xml=yes --xml-file=RUN/memcheck.%p.xml
 *              --log-file=RUN/valgrind.%p.log --leak-check=full
 *              --trace-children=yes --child-silent-after-fork=yes
 *              (kscope's options, mapped) PROGRAM ARGS...
 *
 * Every process writes its own XML (%p); the program's is read first,
 * then the children's, and the reports cover them all (src/memtools/mcxml).
 * A forked child is silent until it execs: Valgrind 3.19 keeps writing a
 * forked child's XML to its parent's file (it reopens only the text log),
 * which would interleave two documents.  A process that execs starts a
 * new Valgrind in the same pid, which opens the same file name again and
 * truncates it; libkscope-mcexec.so, preloaded into the program, renames
 * the image's files to memcheck.<pid>.<k>.xml and valgrind.<pid>.<k>.log
 * just before each exec (src/memtools/mcexec), and they are read here as
 * the process's earlier images.
 *
 * The environment is kscope's without VALGRIND_OPTS (options kscope did
 * not choose would change what is reported) and without VALGRIND_LIB
 * (Memcheck is the system's).  Valgrind's text log of the program
 * becomes valgrind.log; with --xml the program's XML, when it is well
 * formed, becomes memcheck.xml and the children's stay memcheck.<pid>.xml;
 * without --xml they are removed once read.
 *
 * --heap-map preloads libkscope-mcheap.so as well (KSCOPE_MC_HEAPMAP=1),
 * which logs each image's heap to heapmap.<pid>.log and marks Memcheck's
 * XML (src/memtools/mcexec/mcheap.h); each image's log is read with its
 * XML, and the reports name the block nearest to an access Memcheck
 * relates to no block (src/memtools/mcxml/mcx_heapmap.c).  Memcheck then
 * records one frame more per stack, the wrapper's, which the reports
 * drop.  The logs are kept with --xml, else removed.
 */
#include "memcheck_mc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "log.h"
#include "asan.h"
#include "mcheap.h"
#include "mcxml.h"
#include "outdir.h"
#include "readfile.h"
#include "runprog.h"
#include "vgrun.h"

/* Where the system's Valgrind keeps its tools (set by the build from
 * pkg-config; these defaults are Debian's amd64 ones, for targets that
 * compile this file without the build's definitions). */
#ifndef KS_VG_LIBEXEC
#define KS_VG_LIBEXEC "/usr/libexec/valgrind"
#endif
#ifndef KS_VG_PLATFORM
#define KS_VG_PLATFORM "amd64-linux"
#endif

const char *const ks_mc_leak_check_choices[] = { "full", "summary", "no", NULL };
const char *const ks_mc_engine_choices[] = { "auto", "memcheck", "asan", NULL };

static const char *const leak_kind_names[] = {
	[MCX_LEAK_DEFINITE] = "definite",
	[MCX_LEAK_INDIRECT] = "indirect",
	[MCX_LEAK_POSSIBLE] = "possible",
	[MCX_LEAK_REACHABLE] = "reachable",
};

/* "definite,possible", "all", "none" -> bits 1 << MCX_LEAK_*; -EINVAL with
 * a message naming the option otherwise. */
static int parse_leak_kinds(const char *opt, const char *text, unsigned *bits)
{
	const char *p = text;

	*bits = 0;
	if (!strcmp(text, "all")) {
		*bits = 15;
		return 0;
	}
	if (!strcmp(text, "none"))
		return 0;
	while (*p) {
		size_t n = strcspn(p, ",");
		size_t k;

		for (k = 0; k < 4; k++)
			if (strlen(leak_kind_names[k]) == n && !strncmp(p, leak_kind_names[k], n))
				break;
		if (k == 4 || !n) {
			ks_error("option --%s: '%s' is not a set of leak kinds; accepted: a "
				 "comma-separated list of definite, indirect, possible, reachable, "
				 "or all, or none", opt, text);
			return -EINVAL;
		}
		*bits |= 1u << k;
		p += n;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* "definite,possible" for Memcheck's option, from bits. */
static void leak_kinds_text(unsigned bits, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (!bits) {
		snprintf(buf, size, "none");
		return;
	}
	for (size_t k = 0; k < 4; k++)
		if (bits & (1u << k))
			n += (size_t)snprintf(buf + n, size - n, "%s%s", n ? "," : "",
					      leak_kind_names[k]);
}

static int build_argv(const struct ks_mc_opts *o, const char *valgrind, const char *rundir,
		      unsigned show, unsigned errs, char **program, struct ks_argv *a)
{
	char *esc = ks_vg_escape_percent(rundir);
	char kinds[64];
	int rc = 0;

	if (!esc)
		return -ENOMEM;
	rc |= ks_argv_add(a, "%s", valgrind);
	rc |= ks_argv_add(a, "--tool=memcheck");
	rc |= ks_argv_add(a, "--xml=yes");
	rc |= ks_argv_add(a, "--xml-file=%s/memcheck.%%p.xml", esc);
	rc |= ks_argv_add(a, "--log-file=%s/valgrind.%%p.log", esc);
	rc |= ks_argv_add(a, "--trace-children=yes");
	/* yes: Valgrind 3.19 does not reopen the XML file in a forked child
	 * (only the text log): the child's output would go into its
	 * parent's file, interleaved with it, and spoil it.  A child that
	 * execs gets its own file; one that only forks is not checked. */
	rc |= ks_argv_add(a, "--child-silent-after-fork=yes");
	rc |= ks_argv_add(a, "--leak-check=%s", ks_mc_leak_check_choices[o->leak_check]);
	leak_kinds_text(show, kinds, sizeof(kinds));
	rc |= ks_argv_add(a, "--show-leak-kinds=%s", kinds);
	leak_kinds_text(errs, kinds, sizeof(kinds));
	rc |= ks_argv_add(a, "--errors-for-leak-kinds=%s", kinds);
	rc |= ks_argv_add(a, "--track-origins=%s", o->track_origins ? "yes" : "no");
	rc |= ks_argv_add(a, "--redzone-size=%" PRId64, o->redzone);
	rc |= ks_argv_add(a, "--freelist-vol=%" PRId64, o->freelist_vol);
	/* --heap-map: one frame more, which the allocation wrapper takes in
	 * the allocation stacks; the reports drop it and cut the stacks back
	 * to --num-callers (mcx_report.c). */
	rc |= ks_argv_add(a, "--num-callers=%" PRId64, o->num_callers + (o->heap_map ? 1 : 0));
	rc |= ks_argv_add(a, "--max-threads=%" PRId64, o->max_threads + 1);
	rc |= ks_argv_add(a, "--fair-sched=%s", o->fair_sched ? "yes" : "no");
	for (size_t i = 0; o->suppressions && i < o->suppressions->n; i++)
		rc |= ks_argv_add(a, "--suppressions=%s", o->suppressions->v[i]);
	if (o->gen_suppressions)
		rc |= ks_argv_add(a, "--gen-suppressions=all");
	for (char **p = program; *p; p++)
		rc |= ks_argv_add(a, "%s", *p);
	free(esc);
	return rc ? -ENOMEM : 0;
}

/* ------------------------------------------------------------------ */
/* Memcheck's files                                                    */
/* ------------------------------------------------------------------ */

/* One XML file of the run: memcheck.<pid>.xml (seq -1: the process's last
 * image) or memcheck.<pid>.<seq>.xml (an image that exec'd, set aside). */
struct xml_file {
	long pid;
	long seq;
	bool main;         /* the program's own process */
};

static int cmp_xml(const void *a, const void *b)
{
	const struct xml_file *x = a, *y = b;

	if (x->main != y->main)
		return x->main ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* the images in their order, the last (seq -1) at the end */
	if (x->seq != y->seq)
		return x->seq == -1 ? 1 : y->seq == -1 ? -1 : x->seq < y->seq ? -1 : 1;
	return 0;
}

static void xml_name(const struct xml_file *f, char *buf, size_t size)
{
	if (f->seq < 0)
		snprintf(buf, size, "memcheck.%ld.xml", f->pid);
	else
		snprintf(buf, size, "memcheck.%ld.%ld.xml", f->pid, f->seq);
}

/* The heap map log of the same image (--heap-map): heapmap.<pid>.log, or
 * heapmap.<pid>.<seq>.log set aside with the XML before an exec. */
static void heapmap_name(const struct xml_file *f, char *buf, size_t size)
{
	if (f->seq < 0)
		snprintf(buf, size, "heapmap.%ld.log", f->pid);
	else
		snprintf(buf, size, "heapmap.%ld.%ld.log", f->pid, f->seq);
}

/* The memcheck.<pid>[.<seq>].xml files in the run directory: the
 * program's first, each process's images in order; *n of them. */
static int find_xml(struct ks_rundir *rd, pid_t main_pid, struct xml_file **out, size_t *n)
{
	int fd = dup(rd->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t cap = 0;
	struct xml_file *v = NULL;

	*n = 0;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);
	while ((de = readdir(d))) {
		char *end;
		long pid, seq = -1;

		if (strncmp(de->d_name, "memcheck.", 9))
			continue;
		pid = strtol(de->d_name + 9, &end, 10);
		if (end == de->d_name + 9 || pid <= 0)
			continue;
		if (*end == '.' && end[1] >= '0' && end[1] <= '9') {
			seq = strtol(end + 1, &end, 10);
			if (seq < 0)
				continue;
		}
		if (strcmp(end, ".xml"))
			continue;
		if (*n == cap) {
			struct xml_file *w = realloc(v, (cap = cap ? 2 * cap : 8) * sizeof(*v));

			if (!w) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = w;
		}
		v[*n].pid = pid;
		v[*n].seq = seq;
		v[*n].main = pid == (long)main_pid;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_xml);
	*out = v;
	return 0;
}

/* Valgrind's log of the program's last image becomes valgrind.log; an
 * empty log of another process or image is removed, a non-empty one kept
 * as valgrind.<pid>[.<seq>].log. */
static void adopt_logs(struct ks_rundir *rd, pid_t main_pid, const struct xml_file *files,
		       size_t n)
{
	char name[64];
	struct stat st;

	snprintf(name, sizeof(name), "valgrind.%d.log", (int)main_pid);
	if (!renameat(rd->dirfd, name, rd->dirfd, "valgrind.log"))
		fchmodat(rd->dirfd, "valgrind.log", KS_DELIVERABLE_MODE, 0);
	for (size_t i = 0; i < n; i++) {
		if (files[i].main && files[i].seq < 0)
			continue;
		if (files[i].seq < 0)
			snprintf(name, sizeof(name), "valgrind.%ld.log", files[i].pid);
		else
			snprintf(name, sizeof(name), "valgrind.%ld.%ld.log", files[i].pid,
				 files[i].seq);
		if (fstatat(rd->dirfd, name, &st, 0))
			continue;
		if (!st.st_size)
			unlinkat(rd->dirfd, name, 0);
		else
			fchmodat(rd->dirfd, name, KS_DELIVERABLE_MODE, 0);
	}
}

/* Whether valgrind.log (the program's) says Valgrind stopped the program
 * for having more threads than --max-threads allows. */
static bool log_too_many_threads(struct ks_rundir *rd)
{
	char *data = NULL;
	size_t size = 0;
	struct ks_err e;
	bool yes;

	if (ks_read_file_at(rd->dirfd, "valgrind.log", O_NOFOLLOW, (size_t)1 << 30, &data,
			    &size, &e) != 0)
		return false;
	yes = ks_vg_log_too_many_threads(data);
	free(data);
	return yes;
}

/* Whether valgrind.log (the program's) says Valgrind itself died: a
 * failed assertion ("valgrind: m_mallocfree.c:303 (get_bszB_as_is):
 * Assertion '...' failed.") or a panic ("valgrind: the 'impossible'
 * happened:" and the reason on the next line).  Its words go into what
 * (at most size bytes, one line), and *heap says whether it was in
 * Valgrind's allocator (m_mallocfree.c), which a heap overflow past the
 * redzone reaches. */
static bool log_engine_died(struct ks_rundir *rd, char *what, size_t size, bool *heap)
{
	char *data = NULL;
	size_t len = 0;
	struct ks_err e;
	const char *line, *end;
	bool yes = false;

	*heap = false;
	if (ks_read_file_at(rd->dirfd, "valgrind.log", O_NOFOLLOW, (size_t)1 << 30, &data, &len,
			    &e) != 0)
		return false;
	for (line = data; line && *line; line = end ? end + 1 : NULL) {
		size_t n;
		char *l;

		end = strchr(line, '\n');
		n = end ? (size_t)(end - line) : strlen(line);
		if (strncmp(line, "valgrind: ", 10) || !(l = strndup(line, n)))
			continue;
		if (strstr(l, "the 'impossible' happened")) {
			/* The reason, on the next line, indented. */
			const char *next = end ? end + 1 : "";

			next += strspn(next, " \t");
			snprintf(what, size, "the 'impossible' happened: %.*s",
				 (int)strcspn(next, "\n"), next);
			yes = true;
		} else if (strstr(l, ": Assertion '")) {
			snprintf(what, size, "%s", l + 10);
			yes = true;
		}
		free(l);
		if (yes)
			break;
	}
	if (yes) {
		*heap = strstr(data, "m_mallocfree.c") != NULL;
		/* One line, printable. */
		for (char *c = what; *c; c++)
			if ((unsigned char)*c < ' ')
				*c = ' ';
	}
	free(data);
	return yes;
}

/* With --xml: the XML of the program's last image, when it is well
 * formed, becomes memcheck.xml, the rest keep their names; without, all
 * are removed.  The heap map logs (--heap-map) go with them: kept with
 * --xml (the XML's markers refer to them), else removed. */
static void adopt_xml(struct ks_rundir *rd, const struct ks_mc_opts *o,
		      const struct ks_mcx_doc *docs, const struct xml_file *files, size_t n)
{
	char name[64];

	for (size_t i = 0; i < n; i++) {
		heapmap_name(&files[i], name, sizeof(name));
		if (!o->xml)
			unlinkat(rd->dirfd, name, 0);
		else
			fchmodat(rd->dirfd, name, KS_DELIVERABLE_MODE, 0);
		xml_name(&files[i], name, sizeof(name));
		if (!o->xml) {
			unlinkat(rd->dirfd, name, 0);
			continue;
		}
		if (files[i].main && files[i].seq < 0 && docs[i].complete && !docs[i].damaged &&
		    !docs[i].trailing && !renameat(rd->dirfd, name, rd->dirfd, "memcheck.xml"))
			snprintf(name, sizeof(name), "memcheck.xml");
		fchmodat(rd->dirfd, name, KS_DELIVERABLE_MODE, 0);
	}
}

/* The processes that forked without exec'ing, from the marks
 * libkscope-mcexec.so left (forked.<pid>.<ppid>), which are removed: the
 * pids of those with no XML of their own (they never exec'd, so Memcheck
 * did not check them) go into buf as "123, 456", and their count is
 * returned. */
static size_t unchecked_forks(struct ks_rundir *rd, const struct xml_file *files, size_t n,
			      char *buf, size_t size)
{
	int fd = dup(rd->dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t count = 0, len = 0;

	buf[0] = '\0';
	if (!d) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	rewinddir(d); /* the descriptor's offset is shared with rd's */
	while ((de = readdir(d))) {
		char *end;
		long pid;
		bool seen = false;

		if (strncmp(de->d_name, "forked.", 7))
			continue;
		pid = strtol(de->d_name + 7, &end, 10);
		if (end == de->d_name + 7 || *end != '.')
			continue;
		unlinkat(rd->dirfd, de->d_name, 0);
		for (size_t i = 0; i < n && !seen; i++)
			seen = files[i].pid == pid;
		if (seen)
			continue;
		count++;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%ld", len ? ", " : "",
						pid);
	}
	closedir(d);
	return count;
}

/* --gen-suppressions: every distinct suppression Memcheck wrote, in
 * suppressions.supp, ready for --suppressions. */
static int write_suppressions(struct ks_rundir *rd, const struct ks_mcx_doc *docs,
			      size_t ndocs, struct ks_err *err)
{
	struct ks_outfile of;
	int rc = ks_outfile_open(rd, "suppressions.supp", &of, err);

	if (rc)
		return rc;
	for (size_t d = 0; d < ndocs; d++)
		for (size_t i = 0; i < docs[d].nerrors; i++) {
			const char *s = docs[d].errors[i].suppression;
			bool seen = false;

			if (!s)
				continue;
			for (size_t e = 0; e <= d && !seen; e++)
				for (size_t j = 0; j < (e == d ? i : docs[e].nerrors) && !seen; j++)
					seen = docs[e].errors[j].suppression &&
					       !strcmp(docs[e].errors[j].suppression, s);
			if (!seen)
				ks_outfile_printf(&of, "%s\n", s);
		}
	return ks_outfile_commit(&of, KS_DELIVERABLE_MODE, err);
}

/* --heap-map: the log of the image whose XML d is, if it wrote one (a
 * process whose environment lost kscope's variables did not); a log that
 * cannot be read is said and left out, and the image's far accesses then
 * say that the heap map is not known. */
static void attach_heapmap(struct ks_rundir *rd, struct ks_mcx_doc *d,
			   const struct xml_file *f)
{
	char name[64], path[PATH_MAX + 64];
	struct ks_err err;

	heapmap_name(f, name, sizeof(name));
	if (faccessat(rd->dirfd, name, F_OK, 0))
		return;
	snprintf(path, sizeof(path), "%s/%s", rd->path, name);
	if (ks_mcx_heapmap_open(&d->heapmap, path, &err)) {
		ks_warn("%s; the heap map of that process image is not used", err.msg);
		return;
	}
	if (ks_mcx_heapmap_pid(d->heapmap) != d->pid) {
		ks_warn("%s is the heap map of process %lld, not of %lld; it is not used", name,
			ks_mcx_heapmap_pid(d->heapmap), d->pid);
		ks_mcx_heapmap_free(d->heapmap);
		d->heapmap = NULL;
	}
}

/* ------------------------------------------------------------------ */
/* The run                                                             */
/* ------------------------------------------------------------------ */

void ks_mc_report_opts(struct ks_mcx_report_opts *ro, const struct ks_mc_opts *o,
		       unsigned errs, bool memcheck)
{
	memset(ro, 0, sizeof(*ro));
	ro->mtr.filter = !o->no_filter;
	ro->mtr.max_stack = (unsigned)o->num_callers;
	ro->mtr.command = o->command;
	ro->leak_error_kinds = errs;
	/* Memcheck always runs with kscope's redzone and freed-block volume;
	 * ASan with its own unless they were given. */
	ro->has_redzone = memcheck || o->redzone_given;
	ro->has_freelist = memcheck || o->freelist_given;
	ro->redzone = (uint64_t)o->redzone;
	ro->freelist_vol = (uint64_t)o->freelist_vol;
}

/* The program's environment under Memcheck: kscope's without
 * VALGRIND_OPTS and VALGRIND_LIB (ks_vg_env), with libkscope-mcexec.so
 * first in LD_PRELOAD and KSCOPE_MC_RUNDIR naming the run directory
 * (src/memtools/mcexec).  With --heap-map (mcheap not NULL),
 * libkscope-mcheap.so follows it in LD_PRELOAD, and KSCOPE_MC_HEAPMAP=1
 * turns it on; without, a KSCOPE_MC_HEAPMAP of kscope's environment is
 * not passed on.  owned[0..2] are the strings to free. */
static char **mc_env(const char *mcexec, const char *mcheap, const char *rundir,
		     char *owned[3])
{
	static char heapmap_on[] = KS_MCHEAP_ENV "=1";
	char **base = ks_vg_env(NULL, &owned[0]), **envp;
	const char *pre = NULL;
	char real[PATH_MAX];
	size_t n = 0, k = 0;

	if (!base)
		return NULL;
	while (base[n])
		n++;
	envp = calloc(n + 4, sizeof(*envp));
	if (!envp) {
		free(base);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(base[i], "LD_PRELOAD=", 11))
			pre = base[i] + 11;
		else if (strncmp(base[i], "KSCOPE_MC_RUNDIR=", 17) &&
			 strncmp(base[i], KS_MCHEAP_ENV "=", sizeof(KS_MCHEAP_ENV)))
			envp[k++] = base[i];
	}
	free(base);
	if (asprintf(&owned[1], "LD_PRELOAD=%s%s%s%s%s", mcexec, mcheap ? ":" : "",
		     mcheap ? mcheap : "", pre && *pre ? ":" : "", pre ? pre : "") < 0) {
		owned[1] = NULL;
		free(envp);
		return NULL;
	}
	if (asprintf(&owned[2], "KSCOPE_MC_RUNDIR=%s",
		     realpath(rundir, real) ? real : rundir) < 0) {
		owned[2] = NULL;
		free(envp);
		return NULL;
	}
	envp[k++] = owned[1];
	envp[k++] = owned[2];
	if (mcheap)
		envp[k++] = heapmap_on;
	envp[k] = NULL;
	return envp;
}

/* KS_MC_MEMCHECK or KS_MC_ASAN for prog under o->engine, or -1 after
 * saying why neither can run it. */
static int choose_engine(const struct ks_mc_opts *o, const char *prog)
{
	struct ks_err err;
	int asan = ks_asan_built_with(prog, &err); /* < 0: not ELF (a script) */

	if (o->engine == KS_MC_MEMCHECK && asan == 1) {
		ks_error("%s was built with AddressSanitizer, which Valgrind cannot run; "
			 "leave out --engine memcheck (auto runs it with ASan), or rebuild it "
			 "without -fsanitize=address", prog);
		return -1;
	}
	if (o->engine == KS_MC_MEMCHECK || (o->engine == KS_MC_AUTO && asan != 1))
		return KS_MC_MEMCHECK;
	if (o->heap_map) {
		ks_error("option --heap-map is for Valgrind's Memcheck, and %s runs with "
			 "AddressSanitizer (%s), whose reports name the block nearest to every "
			 "invalid access already; leave the option out", prog,
			 asan == 1 ? "it was built with it" : "--engine asan");
		return -1;
	}
	if (o->not_for_asan) {
		ks_error("option --%s is Valgrind Memcheck's, and %s runs with AddressSanitizer "
			 "(%s); leave the option out, or run a build without "
			 "-fsanitize=address", o->not_for_asan, prog,
			 asan == 1 ? "it was built with it" : "--engine asan");
		return -1;
	}
	if (o->leak_check == 1) {
		ks_error("option --leak-check: 'summary' is not available with AddressSanitizer, "
			 "whose LeakSanitizer lists every leak; accepted with ASan: full or no");
		return -1;
	}
	if (o->redzone_given && (o->redzone < 16 || o->redzone > 2048 ||
				 (o->redzone & (o->redzone - 1)))) {
		ks_error("option --redzone: '%" PRId64 "' is not a redzone AddressSanitizer "
			 "takes; accepted with ASan: a power of two from 16 to 2048", o->redzone);
		return -1;
	}
	if (asan != 1)
		ks_warn("%s was not built with AddressSanitizer: only the programs built with "
			"it that it starts are checked (--engine asan)", prog);
	return KS_MC_ASAN;
}

int ks_memcheck_run(const struct ks_mc_opts *o, char **program)
{
	char tool[PATH_MAX], mcexec[PATH_MAX], mcheap[PATH_MAX];
	char *prog = NULL, *valgrind = NULL;
	char **envp = NULL, *owned[3] = { NULL, NULL, NULL };
	struct ks_argv av = { 0 };
	struct ks_rundir rd = { 0 };
	struct ks_mcx_doc *docs = NULL;
	struct ks_mcx_report_opts ro;
	struct ks_mtr_exit ex;
	struct ks_mtr_summary sum;
	struct ks_err err;
	struct xml_file *files = NULL;
	size_t nfiles = 0, ndocs = 0, last = SIZE_MAX, nforks = 0;
	unsigned show, errs;
	pid_t pid = 0;
	int status, code = KS_EXIT_FAIL, exit_code;
	bool have_rd = false, died = false, heap = false;
	char death[256], incomplete[768], forks[256];

	ks_err_clear(&err);
	if (parse_leak_kinds("show-leak-kinds", o->show_leak_kinds, &show) ||
	    parse_leak_kinds("errors-for-leak-kinds", o->errors_for_leak_kinds, &errs))
		return KS_EXIT_USAGE;
	if (ks_find_program(program[0], &prog, &err)) {
		ks_error("%s", err.msg);
		return KS_EXIT_USAGE;
	}
	switch (choose_engine(o, prog)) {
	case KS_MC_MEMCHECK:
		break;
	case KS_MC_ASAN:
		code = ks_memcheck_asan_run(o, prog, program, show, errs);
		free(prog);
		return code;
	default:
		free(prog);
		return KS_EXIT_USAGE;
	}
	if (ks_vg_check_program(prog, "memcheck")) {
		free(prog);
		return KS_EXIT_USAGE;
	}
	if (ks_find_program("valgrind", &valgrind, &err)) {
		ks_error("valgrind is not installed (it is in scripts/install-deps.sh): %s",
			 err.msg);
		goto out;
	}
	snprintf(tool, sizeof(tool), "%s/memcheck-%s", KS_VG_LIBEXEC, KS_VG_PLATFORM);
	if (access(tool, X_OK)) {
		ks_error("Valgrind's Memcheck is missing: %s: %s (install valgrind: "
			 "scripts/install-deps.sh)", tool, strerror(errno));
		goto out;
	}
	if (ks_find_own_file("libkscope-mcexec.so", R_OK, "kscope memcheck's exec helper "
			     "libkscope-mcexec.so", mcexec, sizeof(mcexec), &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (o->heap_map &&
	    ks_find_own_file("libkscope-mcheap.so", R_OK, "kscope memcheck's heap map "
			     "library libkscope-mcheap.so", mcheap, sizeof(mcheap), &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (ks_rundir_create(o->output, "memcheck", 0, &rd, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	have_rd = true;
	if (!(envp = mc_env(mcexec, o->heap_map ? mcheap : NULL, rd.path, owned))) {
		ks_error("out of memory");
		goto out;
	}
	if (build_argv(o, valgrind, rd.path, show, errs, program, &av)) {
		ks_error("out of memory");
		goto out;
	}
	ks_info("memcheck: running %s under Valgrind's Memcheck%s (expect it to run 10 to "
		"50 times slower); results in %s", prog,
		o->heap_map ? ", with the heap map" : "", rd.path);
	status = ks_run_program(av.v, envp, &pid, &err);
	if (status < 0) {
		ks_error("%s", err.msg);
		goto out;
	}
	exit_code = ks_exit_status(status);
	if (WIFSIGNALED(status))
		ks_info("the program was ended by signal %d (%s); reporting what was "
			"found", WTERMSIG(status), strsignal(WTERMSIG(status)));

	if (find_xml(&rd, pid, &files, &nfiles) < 0 || !nfiles || !files[0].main) {
		adopt_logs(&rd, pid, files, nfiles);
		if (log_too_many_threads(&rd)) {
			ks_vg_error_too_many_threads((long long)o->max_threads, rd.path);
			code = KS_EXIT_USAGE;
		} else {
			ks_error("Memcheck wrote no XML output for the program (see "
				 "%s/valgrind.log)", rd.path);
		}
		goto out;
	}
	adopt_logs(&rd, pid, files, nfiles);
	if (log_too_many_threads(&rd)) {
		ks_vg_error_too_many_threads((long long)o->max_threads, rd.path);
		code = KS_EXIT_USAGE;
		goto out;
	}
	died = log_engine_died(&rd, death, sizeof(death), &heap);
	if (!(docs = calloc(nfiles, sizeof(*docs)))) {
		ks_error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < nfiles; i++) {
		char path[PATH_MAX + 64], name[64];
		struct ks_mcx_doc *d = &docs[ndocs];

		xml_name(&files[i], name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", rd.path, name);
		if (ks_mcx_read_file(d, path, &err)) {
			if (files[i].main && files[i].seq < 0) {
				ks_error("%s", err.msg);
				if (died)
					ks_error("Memcheck aborted (valgrind.log: %s)", death);
				goto out;
			}
			ks_warn("%s; that process image is left out of the reports", err.msg);
			memmove(files + i, files + i + 1, (nfiles - i - 1) * sizeof(*files));
			nfiles--;
			i--;
			continue;
		}
		/* Set aside before an exec: the image ended by exec'ing. */
		d->execed = files[i].seq >= 0;
		ndocs++;
		if (o->heap_map)
			attach_heapmap(&rd, d, &files[i]);
		if (d->damaged)
			ks_warn("%s is damaged (%s); the %zu errors before that are reported", name,
				d->damage, d->nerrors);
		else if (!d->complete && !d->execed)
			ks_warn("%s ends early (Memcheck did not finish it); the %zu complete "
				"errors in it are reported", name, d->nerrors);
		if (d->trailing)
			ks_warn("%s has more after its end (Memcheck aborted late); what could be "
				"read there is reported", name);
		if (files[i].main && files[i].seq < 0)
			last = i;
	}
	if (last == SIZE_MAX) {
		ks_error("Memcheck wrote no XML output for the program's last image (see "
			 "%s/valgrind.log)", rd.path);
		goto out;
	}

	ks_mc_report_opts(&ro, o, errs, true);
	ro.heap_map = o->heap_map;
	ro.heap_map_hint = !o->heap_map;
	ro.max_frames = o->heap_map ? (unsigned)o->num_callers : 0;
	ex.pid = pid;
	ex.signaled = WIFSIGNALED(status);
	ex.code = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	ro.mtr.exits = &ex;
	/* Valgrind exits 1 when it dies: the program's status is unknown. */
	ro.mtr.nexits = died ? 0 : 1;
	nforks = unchecked_forks(&rd, files, nfiles, forks, sizeof(forks));
	if (nforks)
		ks_warn("%zu process%s forked without exec were not checked (%s): Valgrind "
			"3.19 cannot keep a forked process's findings apart from its parent's; "
			"a build with -fsanitize=address checks them (kscope memcheck runs it "
			"with AddressSanitizer)", nforks, nforks == 1 ? "" : "es", forks);
	if (died) {
		char hint[256] = "";

		if (heap)
			snprintf(hint, sizeof(hint), ". A heap overflow past a block's redzone "
				 "probably overwrote Memcheck's allocator data: fix the invalid "
				 "writes reported, or run again with a larger --redzone (this run: "
				 "%" PRId64 " bytes)", o->redzone);
		snprintf(incomplete, sizeof(incomplete),
			 "Memcheck aborted before the program ended (valgrind.log: %s); the %zu "
			 "errors it had written before are reported, the rest of the run was not "
			 "checked%s", death, docs[last].nerrors, hint);
		ro.incomplete = incomplete;
	} else if (docs[last].damaged || !docs[last].complete) {
		snprintf(incomplete, sizeof(incomplete),
			 "Memcheck's XML of the program %s; the %zu errors before that are "
			 "reported", docs[last].damaged ? "is damaged" : "ends early",
			 docs[last].nerrors);
		ro.incomplete = incomplete;
	} else if (nforks) {
		snprintf(incomplete, sizeof(incomplete),
			 "%zu process%s forked without exec were not checked (%s): Valgrind 3.19 "
			 "cannot keep a forked process's findings apart from its parent's; a "
			 "build with -fsanitize=address checks them", nforks,
			 nforks == 1 ? "" : "es", forks);
		ro.incomplete = incomplete;
	}
	if (ks_mcx_report(docs, ndocs, &ro, &rd, stderr, &sum, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	if (o->gen_suppressions && write_suppressions(&rd, docs, ndocs, &err)) {
		ks_error("%s", err.msg);
		goto out;
	}
	adopt_xml(&rd, o, docs, files, nfiles);
	/* On stderr: the program's standard output stays its own. */
	fprintf(stderr, "results: %s\n", rd.path);
	if (died) {
		ks_error("Memcheck aborted (valgrind.log: %s): the results are incomplete%s",
			 death, heap ? "; a heap overflow past the redzone probably overwrote its "
				       "allocator's data: fix the invalid writes reported, or run "
				       "again with a larger --redzone" : "");
		ks_info("the program's exit status is unknown; kscope exits with %d",
			KS_EXIT_FAIL);
		code = KS_EXIT_FAIL;
		goto out;
	}
	code = exit_code;
	/* Findings win over the program's status, which is then said here. */
	if (o->error_exitcode && sum.errors > 0) {
		code = (int)o->error_exitcode;
		if (WIFEXITED(status) && exit_code != 0)
			ks_info("the program exited with status %d; kscope exits with %d "
				"(--error-exitcode): memcheck found errors", exit_code, code);
	}
out:
	for (size_t i = 0; i < ndocs; i++)
		ks_mcx_free(&docs[i]);
	free(docs);
	free(files);
	if (have_rd)
		ks_rundir_close(&rd);
	ks_argv_free(&av);
	free(envp);
	for (size_t i = 0; i < 3; i++)
		free(owned[i]);
	free(valgrind);
	free(prog);
	return code;
}
