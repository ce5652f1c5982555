/*
 * Unit tests for the visualize_data.bin container (src/format): exact
 * header bytes, round trips of every block type and padding, streaming,
 * truncation at every length, corruption at every byte offset, payload
 * schema checks, and a write that fails half-way.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <kscope/vizbin.h>

#include "test_util.h"

/* One block of the sample container. */
struct sample {
	unsigned type;
	const char *path;
	const char *payload;
};

static const struct sample samples[] = {
	{ KS_VB_SOURCE, "/src/kernel.c", "int main(void)\n{\n\treturn 0;\n}\n" },
	{ KS_VB_TRACE, NULL, "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":2}]}" },
	{ KS_VB_API_FILES, NULL, "{\"Cores\":[\"core0\"],\"Files\":[{\"Source\":\"/src/kernel.c\","
				 "\"Lines\":[{\"Line\":3,\"Cycles\":[10]}]}]}" },
	{ KS_VB_API_INSTR, NULL, "{\"Cores\":[\"core0\"],\"Instructions\":[]}" },
	{ KS_VB_BASE_INFO, NULL, "{\"name\":\"add\",\"soc\":\"host\",\"duration\":1.5}" },
	{ KS_VB_COMPUTE_GRAPH, NULL, "{\"subblock_detail\":[]}" },
	{ KS_VB_COMPUTE_TABLE, NULL, "{\"subblock_detail\":[{}]}" },
	{ KS_VB_MEMORY_GRAPH, NULL, "{\"core_memory_map\":[]}" },
	{ KS_VB_MEMORY_TABLE, NULL, "{\"table_per_block\":[]}" },
	{ KS_VB_CORE_LOAD, NULL, "{\"op_detail\":[]}" },
	{ KS_VB_ROOFLINE, NULL, "{\"multiple_rooflines\":[{\"title\":\"t\",\"rooflines\":[{\"bw\":1}]}]}" },
	{ KS_VB_CACHELINE_HEAT, NULL, "{\"cache_lines\":[]}" },
	{ KS_VB_STALL_REASONS, NULL, "{\"stall_reasons\":[1,2]}" },
	{ KS_VB_SOURCE, "/src/b.c", "x" },
	{ KS_VB_TRACE, NULL, "[]" },
};
#define NSAMPLES (sizeof(samples) / sizeof(samples[0]))

/* The binary blocks, built at run time. */
static unsigned char timing[8 + 2 * KS_VB_TRACE_RECORD_SIZE + 2];
static unsigned char cache[3 * KS_VB_CACHE_RECORD_SIZE];

static int memfd(void)
{
	int fd = memfd_create("vizbin-test", 0);

	assert_true(fd >= 0);
	return fd;
}

static unsigned char *fd_contents(int fd, size_t *size)
{
	struct stat st;
	unsigned char *buf;

	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	*size = (size_t)st.st_size;
	return buf;
}

/* Writes the sample container; returns its bytes. */
static unsigned char *make_sample(size_t *size)
{
	struct ks_vb_writer *w;
	struct ks_vb_error e;
	int fd = memfd();
	unsigned char *buf;

	timing[0] = 2; /* two records, then the call-stack map "[]" */
	memcpy(timing + 8 + 2 * KS_VB_TRACE_RECORD_SIZE, "[]", 2);
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	for (size_t i = 0; i < NSAMPLES; i++)
		assert_int_equal(ks_vb_write(w, samples[i].type, KS_VB_VERSION,
					     samples[i].path, samples[i].payload,
					     strlen(samples[i].payload), &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_MEMORY_TIMING, KS_VB_VERSION, NULL,
				     timing, sizeof(timing), &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_CACHE_RECORDS, KS_VB_VERSION, NULL,
				     cache, sizeof(cache), &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_API_INSTR, KS_VB_VERSION_BY_LOCATION,
				     NULL, "{\"Cores\":[],\"Instructions\":[]}", 30, &e), 0);
	assert_int_equal(ks_vb_writer_blocks(w), NSAMPLES + 3);
	ks_vb_writer_free(w);
	buf = fd_contents(fd, size);
	close(fd);
	return buf;
}

static void test_header_bytes(void **state)
{
	static const unsigned char want[] = {
		/* contentSize 8 = 5 payload + 3 padding, type 0x0d, padding 3,
		 * version 0x5a, reserve 0x5a */
		0x08, 0, 0, 0, 0, 0, 0, 0, 0x0d, 0x03, 0x5a, 0x5a,
		'h', 'e', 'l', 'l', 'o', 0, 0, 0,
	};
	struct ks_vb_writer *w;
	struct ks_vb_error e;
	unsigned char *got;
	size_t n;
	int fd = memfd();

	(void)state;
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_ROOFLINE, KS_VB_VERSION, NULL, "hello", 5, &e), 0);
	ks_vb_writer_free(w);
	got = fd_contents(fd, &n);
	assert_int_equal(n, sizeof(want));
	assert_memory_equal(got, want, sizeof(want));
	free(got);

	/* A source block: header, 4096-byte path area, payload. */
	assert_int_equal(ftruncate(fd, 0), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, "/a.c", "abcd", 4, &e), 0);
	ks_vb_writer_free(w);
	got = fd_contents(fd, &n);
	assert_int_equal(n, 12 + 4096 + 4);
	assert_int_equal(got[0], 4);
	assert_int_equal(got[8], 1);
	assert_int_equal(got[9], 0);
	assert_memory_equal(got + 12, "/a.c\0\0", 6);
	assert_memory_equal(got + 12 + 4096, "abcd", 4);
	free(got);
	close(fd);
}

static void test_round_trip(void **state)
{
	struct ks_vb_reader *r;
	struct ks_vb_error e;
	unsigned char *buf;
	size_t size;

	(void)state;
	buf = make_sample(&size);
	assert_int_equal(ks_vb_open_mem(buf, size, KS_VB_CHECK_PAYLOADS, &r, &e), 0);
	assert_int_equal(ks_vb_count(r), NSAMPLES + 3);
	for (uint32_t i = 0; i < NSAMPLES; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);
		size_t len = strlen(samples[i].payload);

		assert_int_equal(b->index, i);
		assert_int_equal(b->type, samples[i].type);
		assert_int_equal(b->version, KS_VB_VERSION);
		assert_int_equal(b->reserve, KS_VB_RESERVE);
		assert_int_equal(b->payload_size, len);
		assert_int_equal(b->padding, (4 - len % 4) % 4);
		assert_int_equal(b->content_size % 4, 0);
		assert_memory_equal(b->payload, samples[i].payload, len);
		if (samples[i].path)
			assert_string_equal(b->path, samples[i].path);
		else
			assert_null(b->path);
	}
	assert_int_equal(ks_vb_block_at(r, NSAMPLES)->payload_size, sizeof(timing));
	assert_int_equal(ks_vb_block_at(r, NSAMPLES + 2)->version, 0);
	assert_null(ks_vb_block_at(r, NSAMPLES + 3));
	ks_vb_close(r);

	/* Through a file, reading back identical bytes on a second write. */
	{
		char *dir = ks_test_tmpdir(), p[PATH_MAX];
		int fd;

		snprintf(p, sizeof(p), "%s/visualize_data.bin", dir);
		fd = open(p, O_WRONLY | O_CREAT, 0600);
		assert_int_equal(write(fd, buf, size), (ssize_t)size);
		close(fd);
		assert_int_equal(ks_vb_open(p, KS_VB_CHECK_PAYLOADS, &r, &e), 0);
		assert_int_equal(ks_vb_file_size(r), size);
		/* Re-writing every block gives the same bytes. */
		fd = memfd();
		{
			struct ks_vb_writer *w;
			unsigned char *again;
			size_t n;

			assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
			for (uint32_t i = 0; i < ks_vb_count(r); i++) {
				const struct ks_vb_block *b = ks_vb_block_at(r, i);

				assert_int_equal(ks_vb_write(w, b->type, b->version, b->path,
							     b->payload, b->payload_size,
							     &e), 0);
			}
			ks_vb_writer_free(w);
			again = fd_contents(fd, &n);
			assert_int_equal(n, size);
			assert_memory_equal(again, buf, size);
			free(again);
		}
		close(fd);
		ks_vb_close(r);
		ks_test_rmtree(dir);
		free(dir);
	}
	free(buf);
}

static void test_streaming_and_append(void **state)
{
	struct ks_vb_writer *w;
	struct ks_vb_reader *r;
	struct ks_vb_error e;
	unsigned char *buf;
	size_t size, total = 0;
	int fd = memfd();

	(void)state;
	/* A trace streamed in 100000 small pieces, crossing buffer sizes. */
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	assert_int_equal(ks_vb_begin(w, KS_VB_TRACE, KS_VB_VERSION, NULL, &e), 0);
	assert_int_equal(ks_vb_append(w, "{\"traceEvents\":[", 16, &e), 0);
	total += 16;
	for (int i = 0; i < 100000; i++) {
		char ev[64];
		int n = snprintf(ev, sizeof(ev), "%s{\"ts\":%d}", i ? "," : "", i);

		assert_int_equal(ks_vb_append(w, ev, (size_t)n, &e), 0);
		total += (size_t)n;
	}
	assert_int_equal(ks_vb_append(w, "]}", 2, &e), 0);
	total += 2;
	/* A second begin while open is refused. */
	assert_int_equal(ks_vb_begin(w, KS_VB_TRACE, KS_VB_VERSION, NULL, &e), -EBUSY);
	assert_int_equal(ks_vb_end(w, &e), 0);
	ks_vb_writer_free(w);
	/* A second writer appends after the first's blocks. */
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	assert_int_equal(ks_vb_write(w, KS_VB_CORE_LOAD, KS_VB_VERSION, NULL,
				     "{\"op_detail\":[]}", 16, &e), 0);
	ks_vb_writer_free(w);
	buf = fd_contents(fd, &size);
	assert_int_equal(ks_vb_open_mem(buf, size, KS_VB_CHECK_PAYLOADS, &r, &e), 0);
	assert_int_equal(ks_vb_count(r), 2);
	assert_int_equal(ks_vb_block_at(r, 0)->payload_size, total);
	{
		char sum[128];

		assert_int_equal(ks_vb_check_payload(ks_vb_block_at(r, 0), sum,
						     sizeof(sum), &e), 0);
		assert_string_equal(sum, "100000 trace events");
	}
	ks_vb_close(r);
	free(buf);
	close(fd);
}

static void test_writer_rejects(void **state)
{
	struct ks_vb_writer *w;
	struct ks_vb_error e;
	char longpath[KS_VB_PATH_SIZE + 1];
	int fd = memfd();

	(void)state;
	assert_int_equal(ks_vb_writer_open(fd, &w, &e), 0);
	assert_int_equal(ks_vb_write(w, 0, KS_VB_VERSION, NULL, "{}", 2, &e), -EINVAL);
	assert_int_equal(ks_vb_write(w, 0x10, KS_VB_VERSION, NULL, "{}", 2, &e), -EINVAL);
	assert_int_equal(ks_vb_write(w, KS_VB_TRACE, 0, NULL, "{}", 2, &e), -EINVAL);
	assert_int_equal(ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, NULL, "x", 1, &e), -EINVAL);
	assert_int_equal(ks_vb_write(w, KS_VB_TRACE, KS_VB_VERSION, "/p", "x", 1, &e), -EINVAL);
	memset(longpath, 'a', KS_VB_PATH_SIZE);
	longpath[KS_VB_PATH_SIZE] = '\0';
	assert_int_equal(ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, longpath, "x", 1, &e),
			 -EINVAL);
	/* What the reader refuses, the writer refuses: DEL in a path. */
	assert_int_equal(ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, "/a\x7f.c", "x", 1, &e),
			 -EINVAL);
	longpath[KS_VB_PATH_SIZE - 1] = '\0'; /* 4095 bytes + NUL fits */
	assert_int_equal(ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, longpath, "x", 1, &e), 0);
	assert_int_equal(ks_vb_append(w, "x", 1, &e), -EINVAL);
	assert_int_equal(ks_vb_end(w, &e), -EINVAL);
	ks_vb_writer_free(w);
	close(fd);
}

/* Every prefix of the sample container either reads as its complete
 * blocks (cut at a block boundary) or is reported at the right block. */
static void test_truncation_everywhere(void **state)
{
	unsigned char *buf;
	size_t size;
	uint64_t *ends;
	uint32_t nblocks;
	struct ks_vb_reader *r;
	struct ks_vb_error e;

	(void)state;
	buf = make_sample(&size);
	assert_int_equal(ks_vb_open_mem(buf, size, 0, &r, &e), 0);
	nblocks = ks_vb_count(r);
	ends = calloc(nblocks, sizeof(*ends));
	for (uint32_t i = 0; i < nblocks; i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);

		ends[i] = b->payload_offset + b->content_size;
	}
	ks_vb_close(r);

	for (size_t cut = 0; cut < size; cut++) {
		/* A copy of exactly cut bytes, so ASan sees any over-read. */
		unsigned char *part = malloc(cut ? cut : 1);
		uint32_t complete = 0;
		int rc;

		memcpy(part, buf, cut);
		while (complete < nblocks && ends[complete] <= cut)
			complete++;
		memset(&e, 0, sizeof(e));
		rc = ks_vb_open_mem(part, cut, KS_VB_CHECK_PAYLOADS | KS_VB_KEEP_PARTIAL,
				    &r, &e);
		assert_non_null(r);
		assert_int_equal(ks_vb_count(r), complete);
		if (cut == 0 || (complete > 0 && ends[complete - 1] == cut)) {
			assert_int_equal(rc, 0);
		} else {
			assert_int_equal(rc, -EINVAL);
			assert_int_equal(e.block, complete);
			assert_true(e.offset <= cut);
			assert_non_null(strstr(e.msg, "truncated"));
		}
		ks_vb_close(r);
		/* Without KEEP_PARTIAL a damaged file gives no reader. */
		if (rc) {
			assert_int_equal(ks_vb_open_mem(part, cut, 0, &r, &e), -EINVAL);
			assert_null(r);
		}
		free(part);
	}
	free(ends);
	free(buf);
}

/* Each byte changed, one at a time, in three ways: the reader never reads
 * out of bounds, and damage to a header's fixed fields is always caught
 * at that block. */
static void test_corruption_everywhere(void **state)
{
	static const unsigned char how[] = { 0xff, 0x00, 0x5b };
	unsigned char *buf;
	size_t size;
	struct ks_vb_reader *r;
	struct ks_vb_error e;
	uint64_t *hdr;
	uint8_t *htype;
	uint32_t nblocks, detected = 0, tries = 0;

	(void)state;
	buf = make_sample(&size);
	assert_int_equal(ks_vb_open_mem(buf, size, 0, &r, &e), 0);
	nblocks = ks_vb_count(r);
	hdr = calloc(nblocks, sizeof(*hdr));
	htype = calloc(nblocks, 1);
	for (uint32_t i = 0; i < nblocks; i++) {
		hdr[i] = ks_vb_block_at(r, i)->offset;
		htype[i] = ks_vb_block_at(r, i)->type;
	}
	ks_vb_close(r);

	for (size_t off = 0; off < size; off++) {
		for (size_t k = 0; k < sizeof(how); k++) {
			unsigned char *copy;
			int rc;

			if (buf[off] == how[k])
				continue;
			copy = malloc(size);
			memcpy(copy, buf, size);
			copy[off] = how[k];
			tries++;
			memset(&e, 0, sizeof(e));
			rc = ks_vb_open_mem(copy, size, KS_VB_CHECK_PAYLOADS |
					    KS_VB_KEEP_PARTIAL, &r, &e);
			assert_non_null(r);
			if (rc) {
				detected++;
				assert_true(e.offset <= size);
				assert_true(e.block < nblocks);
				assert_non_null(strstr(e.msg, "block"));
			}
			/* Every block the reader hands out lies inside the file. */
			for (uint32_t i = 0; i < ks_vb_count(r); i++) {
				const struct ks_vb_block *b = ks_vb_block_at(r, i);

				assert_true(b->payload_offset + b->content_size <= size);
				assert_true(b->payload >= copy &&
					    b->payload + b->payload_size <= copy + size);
			}
			/* The header's fixed fields are always caught at their
			 * block: the high bytes of contentSize (3..7; the sizes
			 * here are small, so any change makes the block overrun
			 * the file), type (8), padding (9), version (10) and
			 * reserve (11).  The one exception is a valid change:
			 * version 0x5a to 0 on a 0x04 block. */
			for (uint32_t i = 0; i < nblocks; i++) {
				size_t rel = off - hdr[i];

				if (off < hdr[i] || rel < 3 || rel >= 12)
					continue;
				if (rel == 10 && how[k] == 0 && htype[i] == KS_VB_API_INSTR)
					continue;
				assert_int_not_equal(rc, 0);
				assert_int_equal(e.block, i);
			}
			ks_vb_close(r);
			free(copy);
		}
	}
	/* Most single-byte changes to this sample are caught (the rest
	 * change source text or JSON string contents). */
	assert_true(detected * 2 > tries);
	free(htype);
	free(hdr);
	free(buf);
}

/* Each payload padding byte and each byte of a source path's NUL padding,
 * made non-zero, is reported at exactly that offset and block. */
static void test_padding_bytes(void **state)
{
	unsigned char *buf;
	size_t size, checked = 0;
	struct ks_vb_reader *r;
	struct ks_vb_error e;

	(void)state;
	buf = make_sample(&size);
	assert_int_equal(ks_vb_open_mem(buf, size, 0, &r, &e), 0);
	for (uint32_t i = 0; i < ks_vb_count(r); i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);
		uint64_t pads[8];
		unsigned npads = 0;

		for (unsigned k = 0; k < b->padding; k++)
			pads[npads++] = b->payload_offset + b->payload_size + k;
		if (b->path) { /* first and last byte after the path's terminator */
			pads[npads++] = b->offset + KS_VB_HEADER_SIZE + strlen(b->path) + 1;
			pads[npads++] = b->offset + KS_VB_HEADER_SIZE + KS_VB_PATH_SIZE - 1;
		}
		for (unsigned k = 0; k < npads; k++) {
			unsigned char *copy = malloc(size);
			struct ks_vb_reader *r2;

			memcpy(copy, buf, size);
			copy[pads[k]] = 'x';
			assert_int_equal(ks_vb_open_mem(copy, size, 0, &r2, &e), -EINVAL);
			assert_int_equal(e.block, i);
			assert_int_equal(e.offset, pads[k]);
			assert_non_null(strstr(e.msg, "not zero"));
			checked++;
			free(copy);
		}
	}
	assert_true(checked >= 10);
	ks_vb_close(r);
	free(buf);
}

static void test_unfinished_block(void **state)
{
	unsigned char buf[12 + 8];
	struct ks_vb_reader *r;
	struct ks_vb_error e;

	(void)state;
	memset(buf, 0xff, 8);
	buf[8] = KS_VB_TRACE;
	buf[9] = 0;
	buf[10] = KS_VB_VERSION;
	buf[11] = KS_VB_RESERVE;
	memcpy(buf + 12, "[{},{}]", 8);
	assert_int_equal(ks_vb_open_mem(buf, sizeof(buf), 0, &r, &e), -EINVAL);
	assert_non_null(strstr(e.msg, "never finished"));
	assert_int_equal(e.block, 0);
	assert_int_equal(e.offset, 0);
}

static int check_json(unsigned type, const char *json, char *sum, size_t n,
		      struct ks_vb_error *e)
{
	struct ks_vb_block b = { 0 };

	b.type = (uint8_t)type;
	b.version = KS_VB_VERSION;
	b.payload = (const unsigned char *)json;
	b.payload_size = strlen(json);
	b.payload_offset = 100;
	return ks_vb_check_payload(&b, sum, n, e);
}

static void test_payload_checks(void **state)
{
	struct ks_vb_error e;
	char sum[256];

	(void)state;
	/* JSON syntax, with the position in the file. */
	assert_int_equal(check_json(KS_VB_ROOFLINE, "{\"multiple_rooflines\": [}", sum,
				    sizeof(sum), &e), -EINVAL);
	assert_non_null(strstr(e.msg, "invalid JSON at line 1"));
	assert_true(e.offset > 100 && e.offset <= 100 + 25);
	assert_int_equal(check_json(KS_VB_ROOFLINE, "", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_ROOFLINE, "{\"a\":1,\"a\":2}", sum, sizeof(sum), &e),
			 -EINVAL); /* duplicate keys */
	/* Required fields of each type. */
	assert_int_equal(check_json(KS_VB_ROOFLINE, "{}", sum, sizeof(sum), &e), -EINVAL);
	assert_non_null(strstr(e.msg, "\"multiple_rooflines\" array is missing"));
	assert_int_equal(check_json(KS_VB_ROOFLINE, "{\"multiple_rooflines\":[{}]}", sum,
				    sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_TRACE, "{\"traceEvents\":[1]}", sum, sizeof(sum),
				    &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_TRACE, "[{}, {}]", sum, sizeof(sum), &e), 0);
	assert_string_equal(sum, "2 trace events");
	assert_int_equal(check_json(KS_VB_API_FILES, "{\"Files\":[]}", sum, sizeof(sum), &e),
			 -EINVAL);
	assert_int_equal(check_json(KS_VB_API_FILES, "{\"Files\":[{\"Lines\":[]}],\"Cores\":[]}",
				    sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_API_FILES,
				    "{\"Files\":[{\"Source\":\"a\",\"Lines\":[{},{}]}],"
				    "\"Cores\":[\"c0\",\"c1\"]}", sum, sizeof(sum), &e), 0);
	assert_string_equal(sum, "1 file, 2 lines, 2 cores");
	assert_int_equal(check_json(KS_VB_API_INSTR, "{\"Cores\":[]}", sum, sizeof(sum), &e),
			 -EINVAL);
	assert_int_equal(check_json(KS_VB_BASE_INFO, "[]", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_BASE_INFO, "{\"name\":\"k\"}", sum, sizeof(sum), &e), 0);
	assert_string_equal(sum, "name k, soc -, duration -");
	assert_int_equal(check_json(KS_VB_MEMORY_GRAPH, "{\"core_memory_map\":{}}", sum,
				    sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_MEMORY_TABLE, "{}", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_COMPUTE_GRAPH, "{}", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_CORE_LOAD, "{}", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_CACHELINE_HEAT, "{}", sum, sizeof(sum), &e), -EINVAL);
	assert_int_equal(check_json(KS_VB_STALL_REASONS, "{}", sum, sizeof(sum), &e), -EINVAL);
	/* Source text with a NUL byte. */
	{
		struct ks_vb_block b = { 0 };

		b.type = KS_VB_SOURCE;
		b.path = "/x.c";
		b.payload = (const unsigned char *)"ab\0d";
		b.payload_size = 4;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), -EINVAL);
		assert_int_equal(e.offset, 2);
		b.payload_size = 2;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), 0);
		assert_string_equal(sum, "/x.c, 1 line");
	}
	/* Binary records. */
	{
		struct ks_vb_block b = { 0 };
		unsigned char rec[8 + 32] = { 1 };

		b.type = KS_VB_MEMORY_TIMING;
		b.payload = rec;
		b.payload_size = sizeof(rec);
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), 0);
		assert_string_equal(sum, "1 memory record");
		rec[0] = 2;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), -EINVAL);
		b.payload_size = 7;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), -EINVAL);
		b.type = KS_VB_CACHE_RECORDS;
		b.payload_size = 32;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), 0);
		assert_string_equal(sum, "1 cache record");
		b.payload_size = 33;
		assert_int_equal(ks_vb_check_payload(&b, sum, sizeof(sum), &e), -EINVAL);
	}
}

/* 0x0E: every cache line's fields (docs/formats.md), and the optional
 * levels, line_size and other. */
static void test_cacheline_heat_checks(void **state)
{
#define HEAT_TOP "{\"address\":\"0x401000\",\"misses\":5,\"function\":\"f\",\"file\":\"a.c\"," \
		 "\"line\":3,\"source\":\"mov\"}"
#define HEAT_LINE(misses, ld, st, top) "{\"address\":\"0x40\",\"misses\":" misses \
		 ",\"load_misses\":" ld ",\"store_misses\":" st ",\"writebacks\":1," \
		 "\"top_instruction\":" top "}"
	static const char *const good[] = {
		"{\"cache_lines\":[]}",
		"{\"levels\":[\"L1\",\"LL\"],\"line_size\":64,\"cache_lines\":["
		HEAT_LINE("[6,2]", "4", "2", HEAT_TOP) "," HEAT_LINE("[0,0]", "0", "0", "null")
		"],\"other\":{\"lines\":3,\"dropped_pairs\":0,\"misses\":[3,1],"
		"\"load_misses\":3,\"store_misses\":0,\"writebacks\":0}}",
		"{\"cache_lines\":[" HEAT_LINE("[6]", "6", "0", "null") "]}",
	};
	static const struct { const char *json, *msg; } bad[] = {
		{ "{\"cache_lines\":[1]}", "cache line 0: bad or missing" },
		{ "{\"cache_lines\":[" HEAT_LINE("[6,7]", "4", "2", "null") "]}",
		  "cache line 0: bad or missing \"misses\"" },
		{ "{\"cache_lines\":[" HEAT_LINE("[6,2]", "4", "1", "null") "]}",
		  "load_misses + store_misses" },
		{ "{\"cache_lines\":[" HEAT_LINE("[6]", "6", "0", "null") ","
		  HEAT_LINE("[6,2]", "6", "0", "null") "]}", "cache line 1: bad or missing" },
		{ "{\"cache_lines\":[" HEAT_LINE("[4]", "4", "0", HEAT_TOP) "]}",
		  "more misses than its line" },
		{ "{\"cache_lines\":[" HEAT_LINE("[6]", "6", "0", "{}") "]}",
		  "\"top_instruction\"" },
		{ "{\"levels\":[\"L1\"],\"cache_lines\":[" HEAT_LINE("[6,2]", "4", "2", "null")
		  "]}", "cache line 0: bad or missing \"misses\"" },
		{ "{\"levels\":[],\"cache_lines\":[]}", "\"levels\" is not an array" },
		{ "{\"line_size\":0,\"cache_lines\":[]}", "\"line_size\" is not a positive" },
		{ "{\"cache_lines\":[],\"other\":{\"lines\":1}}", "\"other\" is not an object" },
		{ "{\"levels\":[\"L1\"],\"cache_lines\":[],\"other\":{\"lines\":1,"
		  "\"dropped_pairs\":0,\"misses\":[1,1]}}", "\"other\": bad or missing" },
		{ "{\"cache_lines\":[{\"address\":\"40\",\"misses\":[0],\"load_misses\":0,"
		  "\"store_misses\":0,\"writebacks\":0,\"top_instruction\":null}]}",
		  "\"address\"" },
	};
	struct ks_vb_error e;
	char sum[256];

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(check_json(KS_VB_CACHELINE_HEAT, good[i], sum, sizeof(sum), &e),
				 0);
	assert_string_equal(sum, "1 cache line");
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(check_json(KS_VB_CACHELINE_HEAT, bad[i].json, sum, sizeof(sum),
					    &e), -EINVAL);
		if (!strstr(e.msg, bad[i].msg))
			fail_msg("case %zu: %s", i, e.msg);
	}
#undef HEAT_TOP
#undef HEAT_LINE
}

/* ks_vb_check_seed on a JSON payload of type; e->msg on failure. */
static int seed_json(unsigned type, const char *json, struct ks_vb_error *e)
{
	struct ks_vb_block b = { 0 };

	b.type = (uint8_t)type;
	b.version = KS_VB_VERSION;
	b.payload = (const unsigned char *)json;
	b.payload_size = strlen(json);
	return ks_vb_check_seed(&b, e);
}

/* The design's field lists: a complete block passes; each missing or
 * mistyped field is named by its path. */
static void test_seed_checks(void **state)
{
	static const char table_ok[] =
		"{\"table_per_block\":[{\"block_id\":0,\"table_op_type\":\"cpu\","
		"\"table_detail\":[{\"table_name\":\"t\",\"size\":[1,3],"
		"\"header_name\":[\"level\",\"hits\",\"misses\"],"
		"\"row\":[{\"name\":\"L1\",\"value\":[5,1]}]}],\"advice\":[]}],"
		"\"advice\":[]}";
	static const char graph_ok[] =
		"{\"core_memory_map\":[{\"core_no\":0,\"op_type\":\"cpu\",\"soc\":\"s\","
		"\"memory_unit\":[{\"memory_path\":\"L1 -> registers\",\"request\":4,"
		"\"request_per_byte\":64,\"bandwidth\":1.5,\"peak_ratio\":-1,"
		"\"display\":true}],\"L2cache\":{\"hit\":1,\"miss\":1,"
		"\"total_request\":2,\"hit_ratio\":50},\"advice\":[]}]}";
	struct ks_vb_error e;

	(void)state;
	assert_int_equal(seed_json(KS_VB_MEMORY_TABLE, table_ok, &e), 0);
	assert_int_equal(seed_json(KS_VB_MEMORY_GRAPH, graph_ok, &e), 0);
	/* kscope op's 0x09 before this check: no name column in the header. */
	assert_int_equal(seed_json(KS_VB_MEMORY_TABLE,
		"{\"table_per_block\":[{\"block_id\":0,\"table_op_type\":\"opencl\","
		"\"table_detail\":[{\"table_name\":\"t\",\"size\":[1,2],"
		"\"header_name\":[\"hits\",\"misses\"],"
		"\"row\":[{\"name\":\"L1\",\"value\":[5,1]}]}],\"advice\":[]}],"
		"\"advice\":[]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "table_per_block[0].table_detail[0]: row 0 has 2 values"));
	/* No top-level advice. */
	assert_int_equal(seed_json(KS_VB_MEMORY_TABLE, "{\"table_per_block\":[]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "no \"advice\""));
	/* A null peak ratio (the design's "invalid" is -1). */
	assert_int_equal(seed_json(KS_VB_MEMORY_GRAPH,
		"{\"core_memory_map\":[{\"core_no\":0,\"op_type\":\"cpu\",\"soc\":\"s\","
		"\"memory_unit\":[{\"memory_path\":\"p\",\"request\":4,"
		"\"request_per_byte\":1,\"bandwidth\":1,\"peak_ratio\":null,"
		"\"display\":true}],\"advice\":[]}]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "core_memory_map[0].memory_unit[0].peak_ratio: null, "
			       "the design wants a number"));
	/* 0x05 without mix_block_detail. */
	assert_int_equal(seed_json(KS_VB_BASE_INFO,
		"{\"name\":\"k\",\"soc\":\"s\",\"op_type\":\"cpu\",\"block_dim\":1,"
		"\"mix_block_dim\":0,\"duration\":2.5,\"device_id\":0,\"pid\":\"7\","
		"\"block_detail\":[],\"advice\":[]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "no \"mix_block_detail\""));
	/* 0x06: a value as text. */
	assert_int_equal(seed_json(KS_VB_COMPUTE_GRAPH,
		"{\"subblock_detail\":[{\"block_id\":0,\"block_type\":\"cpu\",\"name\":\"n\","
		"\"unit\":\"%\",\"value\":\"3\",\"origin_value\":3}],\"advice\":[]}", &e),
		-EINVAL);
	assert_non_null(strstr(e.msg, "subblock_detail[0].value: a string"));
	/* 0x03: a row without a column its Dtype declares, and a bad kind. */
	assert_int_equal(seed_json(KS_VB_API_FILES,
		"{\"Cores\":[\"c0\"],\"Files Dtype\":{\"Lines\":{\"Line\":1,\"Cycles\":1}},"
		"\"Files\":[{\"Source\":\"a.c\",\"Lines\":[{\"Line\":3,\"Cycles\":[4]},"
		"{\"Line\":4}]}]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "Files[0].Lines[1]: no \"Cycles\""));
	assert_int_equal(seed_json(KS_VB_API_FILES,
		"{\"Cores\":[\"c0\"],\"Files Dtype\":{\"Lines\":{\"Line\":7}},"
		"\"Files\":[]}", &e), -EINVAL);
	assert_int_equal(seed_json(KS_VB_API_INSTR,
		"{\"Cores\":[\"c0\"],\"Instructions Dtype\":{\"Instructions\":{\"Address\":3,"
		"\"Cycles\":1}},\"Instructions\":[{\"Address\":\"0x1\",\"Source\":\"nop\","
		"\"Cycles\":[\"x\"]}]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "Instructions[0].Cycles: element 0 is a string"));
	/* 0x02: the design's header fields, and complete events placed. */
	assert_int_equal(seed_json(KS_VB_TRACE, "{\"traceEvents\":[]}", &e), -EINVAL);
	assert_int_equal(seed_json(KS_VB_TRACE,
		"{\"profilingType\":\"op\",\"schemaVersion\":1,\"traceEvents\":["
		"{\"ph\":\"M\",\"name\":\"process_name\"},{\"ph\":\"X\",\"name\":\"b\","
		"\"ts\":1,\"dur\":2,\"pid\":1,\"tid\":1}]}", &e), 0);
	assert_int_equal(seed_json(KS_VB_TRACE,
		"{\"profilingType\":\"op\",\"schemaVersion\":1,\"traceEvents\":["
		"{\"ph\":\"X\",\"name\":\"b\",\"ts\":1,\"pid\":1,\"tid\":1}]}", &e), -EINVAL);
	assert_non_null(strstr(e.msg, "without \"dur\""));
	/* 0x0D: a point is two numbers. */
	assert_int_equal(seed_json(KS_VB_ROOFLINE,
		"{\"multiple_rooflines\":[{\"title\":\"t\",\"rooflines\":[{\"bw\":1,"
		"\"computility\":2,\"computility_name\":\"fp32\",\"point\":[1]}]}]}", &e),
		-EINVAL);
	/* Types the design gives no list for pass. */
	assert_int_equal(seed_json(KS_VB_STALL_REASONS, "{\"stall_reasons\":[]}", &e), 0);
}

static void test_type_names(void **state)
{
	(void)state;
	for (unsigned t = 1; t <= KS_VB_TYPE_MAX; t++) {
		assert_non_null(ks_vb_type_name(t));
		assert_non_null(ks_vb_type_title(t));
		assert_int_equal(ks_vb_type_parse(ks_vb_type_name(t)), (int)t);
	}
	assert_null(ks_vb_type_name(0));
	assert_null(ks_vb_type_name(16));
	assert_int_equal(ks_vb_type_parse("0x0d"), 13);
	assert_int_equal(ks_vb_type_parse("13"), 13);
	assert_int_equal(ks_vb_type_parse("0"), -1);
	assert_int_equal(ks_vb_type_parse("16"), -1);
	assert_int_equal(ks_vb_type_parse("0x10"), -1);
	assert_int_equal(ks_vb_type_parse("rooflines"), -1);
	assert_int_equal(ks_vb_type_parse(""), -1);
	assert_int_equal(ks_vb_type_parse("-1"), -1);
	assert_int_equal(ks_vb_type_parse("010"), 10); /* decimal, not octal */
	assert_int_equal(ks_vb_type_parse("0x"), -1);
	assert_int_equal(ks_vb_type_parse("0x-1"), -1);
	assert_int_equal(ks_vb_type_parse("0xF"), 15);
}

/* A write that fails half-way (file size limit) cuts the file back to
 * the complete blocks; the reader then sees exactly those. */
static void test_failed_write_cuts_back(void **state)
{
	char *dir = ks_test_tmpdir(), path[PATH_MAX];
	pid_t pid;
	int status;

	(void)state;
	snprintf(path, sizeof(path), "%s/v.bin", dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 200000, 200000 };
		struct ks_vb_writer *w;
		struct ks_vb_error e;
		char *big = malloc(300000);
		int fd = open(path, O_RDWR | O_CREAT, 0600);

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		memset(big, ' ', 300000);
		big[0] = '[';
		big[299999] = ']';
		if (ks_vb_writer_open(fd, &w, &e) ||
		    ks_vb_write(w, KS_VB_TRACE, KS_VB_VERSION, NULL, "[{}]", 4, &e) ||
		    ks_vb_write(w, KS_VB_TRACE, KS_VB_VERSION, NULL, "[]", 2, &e))
			_exit(1);
		if (ks_vb_write(w, KS_VB_TRACE, KS_VB_VERSION, NULL, big, 300000, &e) != -EFBIG)
			_exit(2);
		if (!strstr(e.msg, "cut back") || e.block != 2 || e.offset != 32)
			_exit(3);
		/* The writer is still usable after the failure. */
		if (ks_vb_write(w, KS_VB_CORE_LOAD, KS_VB_VERSION, NULL,
				"{\"op_detail\":[]}", 16, &e))
			_exit(4);
		ks_vb_writer_free(w);
		close(fd);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	{
		struct ks_vb_reader *r;
		struct ks_vb_error e;

		assert_int_equal(ks_vb_open(path, KS_VB_CHECK_PAYLOADS, &r, &e), 0);
		assert_int_equal(ks_vb_count(r), 3);
		assert_int_equal(ks_vb_block_at(r, 2)->type, KS_VB_CORE_LOAD);
		assert_int_equal(ks_vb_file_size(r), 16 + 16 + 28);
		ks_vb_close(r);
	}
	ks_test_rmtree(dir);
	free(dir);
}

static void test_open_errors(void **state)
{
	struct ks_vb_reader *r;
	struct ks_vb_error e;
	char *dir = ks_test_tmpdir(), p[PATH_MAX];

	(void)state;
	snprintf(p, sizeof(p), "%s/none.bin", dir);
	assert_int_equal(ks_vb_open(p, 0, &r, &e), -ENOENT);
	assert_null(r);
	assert_int_equal(ks_vb_open(dir, 0, &r, &e), -EINVAL);
	/* An empty file is a container with no blocks. */
	snprintf(p, sizeof(p), "%s/empty.bin", dir);
	ks_test_write_file(p, "", 0600);
	assert_int_equal(ks_vb_open(p, 0, &r, &e), 0);
	assert_int_equal(ks_vb_count(r), 0);
	ks_vb_close(r);
	/* Text is not a container: reported at block 0. */
	snprintf(p, sizeof(p), "%s/text.bin", dir);
	ks_test_write_file(p, "this is not a container at all\n", 0600);
	assert_int_equal(ks_vb_open(p, 0, &r, &e), -EINVAL);
	assert_int_equal(e.block, 0);
	ks_test_rmtree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header_bytes),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_streaming_and_append),
		cmocka_unit_test(test_writer_rejects),
		cmocka_unit_test(test_truncation_everywhere),
		cmocka_unit_test(test_corruption_everywhere),
		cmocka_unit_test(test_padding_bytes),
		cmocka_unit_test(test_unfinished_block),
		cmocka_unit_test(test_payload_checks),
		cmocka_unit_test(test_cacheline_heat_checks),
		cmocka_unit_test(test_seed_checks),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_failed_write_cuts_back),
		cmocka_unit_test(test_open_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
