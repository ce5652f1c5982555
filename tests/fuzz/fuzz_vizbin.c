/*
 * libFuzzer target for the visualize_data.bin reader.
 *
 * Any input must be read without a crash, leak or out-of-bounds access
 * (the build has AddressSanitizer and UndefinedBehaviorSanitizer), every
 * block handed out must lie inside the input, and an input accepted in
 * full must re-serialize through the writer to exactly the same bytes:
 * the format has one encoding per content, so reader and writer must
 * agree on every byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <kscope/vizbin.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Re-serializes r into a memory file and compares with the input. */
static void check_round_trip(const struct ks_vb_reader *r, const uint8_t *data,
			     size_t size)
{
	static int fd = -1;
	struct ks_vb_writer *w;
	struct ks_vb_error e;
	unsigned char *back;

	if (fd < 0)
		fd = memfd_create("fuzz-vizbin", 0);
	if (fd < 0 || ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0)
		abort();
	if (ks_vb_writer_open(fd, &w, &e) != 0)
		abort();
	for (uint32_t i = 0; i < ks_vb_count(r); i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);

		if (ks_vb_write(w, b->type, b->version, b->path, b->payload,
				b->payload_size, &e) != 0) {
			fprintf(stderr, "rewrite of block %u failed: %s\n", i, e.msg);
			abort();
		}
	}
	ks_vb_writer_free(w);
	back = malloc(size ? size : 1);
	if (!back || pread(fd, back, size, 0) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_END) != (off_t)size || memcmp(back, data, size) != 0) {
		fprintf(stderr, "round trip changed the bytes\n");
		abort();
	}
	free(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ks_vb_reader *r = NULL;
	struct ks_vb_error e;
	char summary[256];
	unsigned sum = 0; /* reading every byte lets ASan see over-reads */
	int rc, all_ok;

	rc = ks_vb_open_mem(data, size, KS_VB_KEEP_PARTIAL, &r, &e);
	if (!r)
		return 0;
	all_ok = rc == 0;
	for (uint32_t i = 0; i < ks_vb_count(r); i++) {
		const struct ks_vb_block *b = ks_vb_block_at(r, i);

		if (b->payload < data || b->payload + b->payload_size > data + size)
			abort();
		for (uint64_t k = 0; k < b->payload_size; k++)
			sum += b->payload[k];
		if (b->path)
			sum += (unsigned)strlen(b->path);
		if (ks_vb_check_payload(b, summary, sizeof(summary), &e) != 0)
			all_ok = 0;
		else
			sum += (unsigned)strlen(summary);
	}
	if (all_ok)
		check_round_trip(r, data, size);
	if (sum == 0xdeadbeefu && size == 0)
		abort(); /* impossible: keeps the reads from being optimized away */
	ks_vb_close(r);
	return 0;
}
