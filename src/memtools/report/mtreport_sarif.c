/*
 * findings.sarif: the memory tools' findings in SARIF 2.1.0, the format
 * code-scanning services and editors read.  One run, tool.driver "kscope"
 * with one rule per kind of finding (ruleIndex points into them), and:
 *
 *  - memcheck: one result per reported error context and per leak,
 *    level "error" ("note" for leaks not counted as errors),
 *    occurrenceCount the merged count; the location is the frame of the
 *    error's stack (a leak's: the allocation stack) in the user's code
 *    (ks_mtr_stack_user_frame: not Valgrind's malloc or memcpy, not the
 *    C library); every stack (where, free, allocation, Memcheck's
 *    auxiliary ones) is a SARIF stack with all its frames.
 *  - falseshare: one result per falsely shared object (variable), level
 *    "warning", located at the first source line of its access contexts,
 *    the other source lines as relatedLocations and each context as a
 *    stack.  True sharing gives no result: it is not a defect.
 *  - contention: one result per site (memory-access instruction with
 *    misses or invalidations), level "note", located at the site.  Sites
 *    rather than objects because a site has a source line to point at;
 *    the objects are in report.json.
 *
 * A result without any frame that has a file and a line has no
 * `locations` (SARIF allows that) rather than an invented one; its stack
 * frames still carry the code addresses.  Paths become URIs: dir/file
 * when the debug information gives a directory, percent-encoded,
 * "file://" before an absolute path.  Each result is written on one line
 * (compact), the rest indented: a large log stays a fraction of the size
 * and still diffs result by result.
 */
#include "mtreport_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ks_version.h"

struct rule {
	const char *id, *name, *text;
};

static const struct rule memcheck_rules[MTR_E_COUNT] = {
	{ "invalid-read", "InvalidRead", "Read of memory outside any live heap block" },
	{ "invalid-write", "InvalidWrite", "Write to memory outside any live heap block" },
	{ "use-after-free", "UseAfterFree", "Access to a heap block after it was freed" },
	{ "uninit-cond", "UninitCondition",
	  "Conditional jump or move depends on uninitialised heap data" },
	{ "uninit-addr", "UninitValue", "Uninitialised heap data used as a memory address" },
	{ "uninit-syscall", "SyscallParam",
	  "System call argument or buffer holds uninitialised bytes" },
	{ "double-free", "DoubleFree", "Heap block freed twice" },
	{ "invalid-free", "InvalidFree",
	  "Free of a pointer that is not the start of a heap block" },
	{ "leak-definite", "Leak_DefinitelyLost",
	  "Heap memory definitely lost: no pointer to the block remains" },
	{ "leak-possible", "Leak_PossiblyLost",
	  "Heap memory possibly lost: only pointers into the block's interior remain" },
	{ "leak-indirect", "Leak_IndirectlyLost",
	  "Heap memory indirectly lost: the only pointers to it are in lost blocks" },
	{ "leak-reachable", "Leak_StillReachable",
	  "Heap memory still reachable at exit: never freed, a pointer to it remains" },
	{ "mismatched-free", "MismatchedFree",
	  "Block released by a function that does not match its allocation "
	  "(new[] and delete, malloc and delete...)" },
	{ "uninit-value", "UninitValue",
	  "Uninitialised value used (as a memory address, or where it matters)" },
	{ "invalid-syscall", "SyscallParamAddressable",
	  "System call given a buffer with unaddressable bytes" },
	{ "overlap", "Overlap", "Source and destination overlap (memcpy, strcpy...)" },
	{ "fishy-value", "FishyValue",
	  "Implausible argument to an allocation function (a negative size...)" },
	{ "client-check", "ClientCheck",
	  "A client request's check of memory (VALGRIND_CHECK_MEM_IS_DEFINED...) failed" },
	{ "invalid-jump", "InvalidJump", "Jump to an address that holds no code" },
	{ "invalid-mempool", "InvalidMemPool", "Memory pool client request on no known pool" },
	{ "other", "Other", "Another error Memcheck reported" },
};

static const struct rule falseshare_rule = {
	"false-sharing", "FalseSharing",
	"Threads write different words of the same cache line (false sharing)"
};
static const struct rule contention_rule = {
	"contention-site", "ContentionSite",
	"Memory access that misses in the cache or invalidates other threads' copies"
};

/* ------------------------------------------------------------------ */
/* Pieces                                                              */
/* ------------------------------------------------------------------ */

static void set(json_t *o, const char *key, json_t *v)
{
	if (o && v)
		json_object_set_new(o, key, v);
	else
		json_decref(v);
}

static json_t *text_json(const char *text)
{
	json_t *o = json_object();

	set(o, "text", json_string(text));
	return o;
}

/* A path as a URI: RFC 3986 unreserved characters and '/' as they are,
 * everything else (':' too, which could pass for a scheme) percent-
 * encoded; "file://" before an absolute path, a relative one stays a
 * relative reference (to wherever the build ran).  out holds at least
 * 3 * strlen(path) + 8 bytes. */
static void uri_encode(const char *path, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	char *p = out;

	if (path[0] == '/') {
		memcpy(p, "file://", 7);
		p += 7;
	}
	for (const unsigned char *s = (const unsigned char *)path; *s; s++) {
		if ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= '0' && *s <= '9') || strchr("-._~/", *s)) {
			*p++ = (char)*s;
		} else {
			*p++ = '%';
			*p++ = hex[*s >> 4];
			*p++ = hex[*s & 15];
		}
	}
	*p = '\0';
}

static void jw_text(struct ks_mtr_jw *w, const char *key, const char *text)
{
	ks_mtr_jw_object(w, key);
	ks_mtr_jw_str(w, "text", text);
	ks_mtr_jw_end(w);
}

/* A location (result, related or stack frame): the file and line when
 * known, else the code address (physicalLocation needs one or the
 * other), and the function as a logical location. */
static void jw_location(struct ks_mtr_jw *w, const char *key, const struct ks_mtr_frame *f,
			long long id, const char *message)
{
	char path[4096], uri[3 * sizeof(path) + 8];

	ks_mtr_jw_object(w, key);
	if (id >= 0)
		ks_mtr_jw_int(w, "id", id);
	if (ks_mtr_frame_path(f, path, sizeof(path))) {
		ks_mtr_jw_object(w, "physicalLocation");
		uri_encode(path, uri);
		ks_mtr_jw_object(w, "artifactLocation");
		ks_mtr_jw_str(w, "uri", uri);
		ks_mtr_jw_end(w);
		if (f->line) {
			ks_mtr_jw_object(w, "region");
			ks_mtr_jw_uint(w, "startLine", f->line);
			ks_mtr_jw_end(w);
		}
		ks_mtr_jw_end(w);
	} else if (f->ip <= (uint64_t)INT64_MAX) {
		ks_mtr_jw_object(w, "physicalLocation");
		ks_mtr_jw_object(w, "address");
		ks_mtr_jw_uint(w, "absoluteAddress", f->ip);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	if (f->fn) {
		ks_mtr_jw_array(w, "logicalLocations");
		ks_mtr_jw_object(w, NULL);
		ks_mtr_jw_str(w, "fullyQualifiedName", f->fn);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	if (message)
		jw_text(w, "message", message);
	ks_mtr_jw_end(w);
}

/* A result's locations: the given frame (one with a line) or none. */
static void jw_locations(struct ks_mtr_jw *w, const struct ks_mtr_frame *f)
{
	if (!f)
		return;
	ks_mtr_jw_array(w, "locations");
	jw_location(w, NULL, f, -1, NULL);
	ks_mtr_jw_end(w);
}

static void jw_stack(struct ks_mtr_jw *w, const struct ks_mtr_run *r, uint32_t idx,
		     const char *message)
{
	const struct ks_mtr_stack *s = &r->stacks[idx];

	ks_mtr_jw_object(w, NULL);
	jw_text(w, "message", message);
	ks_mtr_jw_array(w, "frames");
	for (uint32_t i = 0; i < s->nframes; i++) {
		ks_mtr_jw_object(w, NULL);
		jw_location(w, "location", &s->frames[i], -1, NULL);
		if (s->frames[i].obj)
			ks_mtr_jw_str(w, "module", s->frames[i].obj);
		ks_mtr_jw_end(w);
	}
	ks_mtr_jw_end(w);
	ks_mtr_jw_end(w);
}

static json_t *rules_json(const struct rule *rules, size_t n, const char *level)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++) {
		json_t *r = json_object(), *cfg = json_object();

		set(r, "id", json_string(rules[i].id));
		set(r, "name", json_string(rules[i].name));
		set(r, "shortDescription", text_json(rules[i].text));
		set(cfg, "level", json_string(level));
		set(r, "defaultConfiguration", cfg);
		json_array_append_new(a, r);
	}
	return a;
}

/* Opens a result (one line of the log) with its rule, level and message;
 * the caller adds locations and stacks and closes it. */
static void jw_result(struct ks_mtr_jw *w, const char *rule, int index, const char *level,
		      const char *message)
{
	ks_mtr_jw_object_flat(w, NULL);
	ks_mtr_jw_str(w, "ruleId", rule);
	ks_mtr_jw_int(w, "ruleIndex", index);
	ks_mtr_jw_str(w, "level", level);
	jw_text(w, "message", message);
}

/* ------------------------------------------------------------------ */
/* Results                                                             */
/* ------------------------------------------------------------------ */

static void put_memcheck(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	char what[1024], msg[2560], where[1024];

	for (size_t i = 0; i < r->nerrors; i++) {
		const struct ks_mtr_error *e = &r->errors[i];
		size_t n;

		if (e->filtered)
			continue;
		ks_mtr_error_what(e, what, sizeof(what));
		n = (size_t)snprintf(msg, sizeof(msg), "%s", what);
		ks_mtr_error_where(e, where, sizeof(where));
		if (where[0] && n < sizeof(msg))
			n += (size_t)snprintf(msg + n, sizeof(msg) - n, ". %s", where);
		if (e->has_block) {
			uint32_t fi = e->block.free_stack;
			const struct ks_mtr_frame *f =
				fi != MTR_NONE ? ks_mtr_stack_line_frame(&r->stacks[fi]) : NULL;

			if (f && n < sizeof(msg)) {
				ks_mtr_frame_where(f, where, sizeof(where));
				n += (size_t)snprintf(msg + n, sizeof(msg) - n, " at %s", where);
			}
			f = ks_mtr_stack_line_frame(&r->stacks[e->block.alloc_stack]);
			if (f && n < sizeof(msg)) {
				ks_mtr_frame_where(f, where, sizeof(where));
				n += (size_t)snprintf(msg + n, sizeof(msg) - n, "%s %s",
						      e->block.freed ? "; block was alloc'd at" : " at",
						      where);
			}
		}
		/* kscope memcheck --heap-map's nearest blocks, or the hint. */
		for (int k = 0; n < sizeof(msg) && ks_mtr_heap_map_line(e, k, where, sizeof(where));
		     k++)
			n += (size_t)snprintf(msg + n, sizeof(msg) - n, ". %s", where);
		jw_result(w, ks_mtr_ekind_names[e->kind], (int)e->kind, "error", msg);
		jw_locations(w, ks_mtr_stack_user_frame(&r->stacks[e->stack]));
		ks_mtr_jw_array(w, "stacks");
		jw_stack(w, r, e->stack, what);
		if (e->naux) {
			/* Memcheck's stacks, each with the description before it. */
			for (uint32_t k = 0; k < e->naux; k++)
				if (e->aux[k].stack != MTR_NONE)
					jw_stack(w, r, e->aux[k].stack,
						 e->aux[k].what ? e->aux[k].what : what);
		} else {
			if (e->has_block && e->block.free_stack != MTR_NONE)
				jw_stack(w, r, e->block.free_stack, "Block was free'd at");
			if (e->has_block)
				jw_stack(w, r, e->block.alloc_stack, "Block was alloc'd at");
		}
		ks_mtr_jw_end(w);
		ks_mtr_jw_uint(w, "occurrenceCount", e->count);
		ks_mtr_jw_object(w, "properties");
		ks_mtr_jw_int(w, "pid", ks_mtr_pid(r, e->proc));
		if (e->tid > 0)
			ks_mtr_jw_int(w, "tid", e->tid);
		else /* not known */
			ks_mtr_jw_put(w, "tid", json_null());
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
	for (size_t i = 0; i < r->nleaks_shown; i++) {
		const struct ks_mtr_leak *l = &r->leaks[r->leak_order[i]];

		ks_mtr_leak_what(l, what, sizeof(what));
		/* Leaks Memcheck lists without counting them as errors
		 * (still reachable, by default) are notes. */
		jw_result(w, ks_mtr_ekind_names[l->kind], (int)l->kind,
			  l->not_error ? "note" : "error", what);
		jw_locations(w, ks_mtr_stack_user_frame(&r->stacks[l->stack]));
		ks_mtr_jw_array(w, "stacks");
		jw_stack(w, r, l->stack, "Allocated at");
		ks_mtr_jw_end(w);
		ks_mtr_jw_object(w, "properties");
		ks_mtr_jw_uint(w, "bytes", l->bytes);
		ks_mtr_jw_uint(w, "blocks", l->blocks);
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
}

static void put_falseshare(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	char name[1024], msg[2048], tids[256];

	for (size_t i = 0; i < r->nfobjs; i++) {
		const struct ks_mtr_fobj *f = &r->fobjs[i];
		size_t tl = 0, ntids = 0;
		long long seen[8];

		/* The first few threads that touched its lines, for the message. */
		tids[0] = '\0';
		for (size_t j = 0; j < f->nlines; j++) {
			const struct ks_mtr_line *l = &r->lines[f->lines[j]];

			for (uint32_t t = 0; t < l->nthreads && ntids < 8; t++) {
				bool dup = false;

				for (size_t k = 0; k < ntids; k++)
					dup |= seen[k] == l->threads[t].tid;
				if (dup)
					continue;
				seen[ntids++] = l->threads[t].tid;
			}
		}
		/* In thread order. */
		for (size_t a = 1; a < ntids; a++)
			for (size_t b = a; b > 0 && seen[b - 1] > seen[b]; b--) {
				long long t = seen[b];

				seen[b] = seen[b - 1];
				seen[b - 1] = t;
			}
		for (size_t k = 0; k < ntids; k++)
			tl += (size_t)snprintf(tids + tl, sizeof(tids) - tl, "%s%lld",
					       k ? ", " : "", seen[k]);
		ks_mtr_fobj_name(r, f, name, sizeof(name));
		snprintf(msg, sizeof(msg), "False sharing on %s: threads %s%s use %s words of %zu "
			 "shared cache %s (verdict %s); %" PRIu64 " potential invalidations, %"
			 PRIu64 " misses, %" PRIu64 " invalidations",
			 name, tids, ntids == 8 ? ", ..." : "",
			 f->verdict == MTR_MIXED ? "partly different" : "different", f->nlines,
			 f->nlines == 1 ? "line" : "lines", ks_mtr_verdict_names[f->verdict],
			 f->potential, f->misses, f->invalidations);
		jw_result(w, falseshare_rule.id, 0, "warning", msg);
		jw_locations(w, f->nsrclines ? f->srclines[0] : NULL);
		if (f->nsrclines > 1) {
			ks_mtr_jw_array(w, "relatedLocations");
			for (size_t j = 1; j < f->nsrclines; j++)
				jw_location(w, NULL, f->srclines[j], (long long)j,
					    "another access to the object");
			ks_mtr_jw_end(w);
		}
		ks_mtr_jw_array(w, "stacks");
		for (size_t j = 0; j < f->ncontexts; j++) {
			char m[96];

			snprintf(m, sizeof(m), "context of %" PRIu64 " accesses",
				 f->contexts[j].count);
			jw_stack(w, r, f->contexts[j].stack, m);
		}
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
}

static void put_contention(struct ks_mtr_jw *w, const struct ks_mtr_run *r)
{
	char msg[512];

	for (size_t i = 0; i < r->nsites; i++) {
		const struct ks_mtr_site *s = &r->sites[r->site_order[i]];

		snprintf(msg, sizeof(msg), "%" PRIu64 " misses and %" PRIu64 " invalidations "
			 "in %" PRIu64 " accesses (%" PRIu64 " reads, %" PRIu64 " writes)",
			 s->c.misses, s->c.invalidations, s->c.accesses, s->c.reads,
			 s->c.writes);
		jw_result(w, contention_rule.id, 0, "note", msg);
		jw_locations(w, ks_mtr_stack_line_frame(&r->stacks[s->stack]));
		ks_mtr_jw_array(w, "stacks");
		jw_stack(w, r, s->stack, "access site");
		ks_mtr_jw_end(w);
		ks_mtr_jw_end(w);
	}
}

/* ------------------------------------------------------------------ */
/* The log                                                             */
/* ------------------------------------------------------------------ */

int ks_mtr_write_sarif(const struct ks_mtr_run *r, const struct ks_mtr_opts *o,
		       struct ks_rundir *rd, struct ks_err *err)
{
	struct ks_mtr_out *out = calloc(1, sizeof(*out));
	struct ks_outfile of;
	struct ks_mtr_jw w;
	json_t *driver;
	int rc;

	if (!out)
		return ks_err_set(err, -ENOMEM, "out of memory");
	rc = ks_mtr_out_open(out, &of, NULL, rd, "findings.sarif", err);
	if (rc)
		goto out;
	ks_mtr_jw_init(&w, out);
	w.tight = true;
	ks_mtr_jw_str(&w, "$schema", "https://json.schemastore.org/sarif-2.1.0.json");
	ks_mtr_jw_str(&w, "version", "2.1.0");
	ks_mtr_jw_array(&w, "runs");
	ks_mtr_jw_object(&w, NULL);

	ks_mtr_jw_object(&w, "tool");
	driver = json_object();
	set(driver, "name", json_string("kscope"));
	set(driver, "version", json_string(KS_VERSION));
	switch (r->start.analysis) {
	case MTR_MEMCHECK:
		set(driver, "rules", rules_json(memcheck_rules, MTR_E_COUNT, "error"));
		break;
	case MTR_CONTENTION:
		set(driver, "rules", rules_json(&contention_rule, 1, "note"));
		break;
	case MTR_FALSESHARE:
		set(driver, "rules", rules_json(&falseshare_rule, 1, "warning"));
		break;
	}
	ks_mtr_jw_put(&w, "driver", driver);
	ks_mtr_jw_end(&w);

	ks_mtr_jw_array(&w, "invocations");
	ks_mtr_jw_object(&w, NULL);
	/* The analysis ran to its end unless the record stream was cut. */
	ks_mtr_jw_bool(&w, "executionSuccessful", !r->truncated && !r->incomplete);
	if (o->command)
		ks_mtr_jw_str(&w, "commandLine", o->command);
	if (r->incomplete) {
		ks_mtr_jw_array(&w, "toolExecutionNotifications");
		ks_mtr_jw_object(&w, NULL);
		ks_mtr_jw_str(&w, "level", "error");
		ks_mtr_jw_object(&w, "message");
		ks_mtr_jw_str(&w, "text", r->incomplete);
		ks_mtr_jw_end(&w);
		ks_mtr_jw_end(&w);
		ks_mtr_jw_end(&w);
	}
	ks_mtr_jw_object(&w, "properties");
	ks_mtr_jw_str(&w, "analysis", ks_mtr_analysis_names[r->start.analysis]);
	ks_mtr_jw_str(&w, "program", r->start.exe);
	ks_mtr_jw_int(&w, "pid", r->start.pid);
	if (r->end.present)
		ks_mtr_jw_int(&w, r->end.signaled ? "programSignal" : "programExitCode",
			      r->end.code);
	ks_mtr_jw_bool(&w, "truncated", r->truncated);
	if (r->incomplete)
		ks_mtr_jw_str(&w, "incomplete", r->incomplete);
	ks_mtr_jw_end(&w);
	ks_mtr_jw_end(&w);
	ks_mtr_jw_end(&w);

	ks_mtr_jw_array(&w, "results");
	switch (r->start.analysis) {
	case MTR_MEMCHECK:
		put_memcheck(&w, r);
		break;
	case MTR_CONTENTION:
		put_contention(&w, r);
		break;
	case MTR_FALSESHARE:
		put_falseshare(&w, r);
		break;
	}
	ks_mtr_jw_end(&w);
	ks_mtr_jw_finish(&w);
	rc = ks_mtr_out_commit(out, err);
out:
	free(out);
	return rc;
}
