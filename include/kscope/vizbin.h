/*
 * kscope/vizbin.h: writing and reading visualize_data.bin containers.
 *
 * A container is a sequence of blocks with no file magic.  Each block is a
 * 12-byte little-endian header
 *
 *     u64 contentSize   payload bytes + padding bytes
 *     u8  type          KS_VB_* below
 *     u8  padding       0..3 zero bytes after the payload
 *     u8  version       0x5a (kscope before 2026-11 wrote 0 on a 0x04
 *                       block whose instructions map to source by location;
 *                       such blocks now carry a "Source Location" column)
 *     u8  reserve       0x5a
 *
 * followed, for 0x01 source-code blocks only, by the source file's path
 * NUL-padded to 4096 bytes, then the payload, then the padding, so that
 * contentSize is a multiple of 4.  docs/formats.md describes each type.
 *
 * The writer appends blocks to a file descriptor; a block can be streamed
 * in pieces of unknown total size.  If a write fails, the file is cut back
 * to the end of the last complete block, so a reader never sees half a
 * block.  The reader checks every header, size and padding byte and, when
 * asked, every payload's JSON and top-level schema; a damaged file is
 * reported with the block index and file offset, never read past its end.
 *
 * All functions return 0 or a negative errno-style code.
 */
#ifndef KSCOPE_VIZBIN_H
#define KSCOPE_VIZBIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS_VB_HEADER_SIZE 12
#define KS_VB_PATH_SIZE   4096
#define KS_VB_RESERVE     0x5a
#define KS_VB_VERSION     0x5a
/* Version older kscope wrote on a 0x04 block whose instructions map to
 * source by location; still read, no longer written. */
#define KS_VB_VERSION_BY_LOCATION 0x00

enum ks_vb_type {
	KS_VB_INVALID        = 0x00,
	KS_VB_SOURCE         = 0x01, /* a source file: its text */
	KS_VB_TRACE          = 0x02, /* pipeline chart: Trace Event JSON */
	KS_VB_API_FILES      = 0x03, /* hot-spot map, api.json "Files" part */
	KS_VB_API_INSTR      = 0x04, /* hot-spot map, api.json "Instructions" part */
	KS_VB_BASE_INFO      = 0x05, /* kernel basic information */
	KS_VB_COMPUTE_GRAPH  = 0x06, /* compute workload graph */
	KS_VB_COMPUTE_TABLE  = 0x07, /* compute workload table */
	KS_VB_MEMORY_GRAPH   = 0x08, /* memory heat map */
	KS_VB_MEMORY_TABLE   = 0x09, /* memory table */
	KS_VB_MEMORY_TIMING  = 0x0A, /* memory timing records (binary) */
	KS_VB_CACHE_RECORDS  = 0x0B, /* cache records (binary) */
	KS_VB_CORE_LOAD      = 0x0C, /* inter-core load */
	KS_VB_ROOFLINE       = 0x0D, /* roofline */
	KS_VB_CACHELINE_HEAT = 0x0E, /* cache-line heat map */
	KS_VB_STALL_REASONS  = 0x0F, /* top stall reasons */
	KS_VB_TYPE_MAX       = 0x0F,
};

/* Sizes of the binary records of 0x0A and 0x0B blocks. */
#define KS_VB_TRACE_RECORD_SIZE 32
#define KS_VB_CACHE_RECORD_SIZE 32

/* Where and why reading or writing failed. */
struct ks_vb_error {
	int code;          /* negative errno-style */
	uint32_t block;    /* index of the block concerned */
	uint64_t offset;   /* file offset of the problem */
	char msg[512];     /* one line, naming block and offset */
};

/* Short name ("roofline") and description ("roofline model") of a type;
 * NULL for unknown types. */
const char *ks_vb_type_name(unsigned type);
const char *ks_vb_type_title(unsigned type);
/* The type whose short name or number ("roofline", "0x0d", "13") is s;
 * -1 if none. */
int ks_vb_type_parse(const char *s);

/* ------------------------------------------------------------------ */
/* Writer                                                              */
/* ------------------------------------------------------------------ */

struct ks_vb_writer;

/* Starts appending to fd at its current end.  fd stays owned by the
 * caller and must be open for writing on a regular file. */
int ks_vb_writer_open(int fd, struct ks_vb_writer **out, struct ks_vb_error *err);
/* Begins a block; source_path is required for KS_VB_SOURCE, else NULL.
 * version: KS_VB_VERSION unless the format says otherwise. */
int ks_vb_begin(struct ks_vb_writer *w, unsigned type, unsigned version,
		const char *source_path, struct ks_vb_error *err);
int ks_vb_append(struct ks_vb_writer *w, const void *data, size_t len,
		 struct ks_vb_error *err);
/* Finishes the block: padding, then the real contentSize in its header. */
int ks_vb_end(struct ks_vb_writer *w, struct ks_vb_error *err);
/* One whole block. */
int ks_vb_write(struct ks_vb_writer *w, unsigned type, unsigned version,
		const char *source_path, const void *data, size_t len,
		struct ks_vb_error *err);
/* Complete blocks written so far. */
uint32_t ks_vb_writer_blocks(const struct ks_vb_writer *w);
/* Frees the writer; a block still open is cut off the file. */
void ks_vb_writer_free(struct ks_vb_writer *w);

/* ------------------------------------------------------------------ */
/* Reader                                                              */
/* ------------------------------------------------------------------ */

struct ks_vb_block {
	uint32_t index;
	uint64_t offset;        /* of the block's header in the file */
	uint8_t type, padding, version, reserve;
	uint64_t content_size;  /* as in the header */
	const char *path;       /* 0x01 blocks: the source path, else NULL */
	const unsigned char *payload; /* inside the reader's mapping */
	uint64_t payload_size;  /* content_size - padding */
	uint64_t payload_offset;
};

/* ks_vb_open flags */
enum {
	KS_VB_CHECK_PAYLOADS = 1u << 0, /* also check every payload's JSON/records */
	KS_VB_KEEP_PARTIAL   = 1u << 1, /* on damage, still return the reader
					 * with the blocks before it */
};

struct ks_vb_reader;

int ks_vb_open(const char *path, unsigned flags, struct ks_vb_reader **out,
	       struct ks_vb_error *err);
/* Reads from memory the caller keeps alive until ks_vb_close. */
int ks_vb_open_mem(const void *data, size_t size, unsigned flags,
		   struct ks_vb_reader **out, struct ks_vb_error *err);
uint32_t ks_vb_count(const struct ks_vb_reader *r);
const struct ks_vb_block *ks_vb_block_at(const struct ks_vb_reader *r, uint32_t i);
uint64_t ks_vb_file_size(const struct ks_vb_reader *r);
void ks_vb_close(struct ks_vb_reader *r);

/* Checks one block's payload (JSON syntax and the top-level fields its
 * type requires, or the binary record layout) and writes a one-line
 * summary ("3 files, 2 cores, 120 lines") into summary. */
int ks_vb_check_payload(const struct ks_vb_block *b, char *summary,
			size_t summary_size, struct ks_vb_error *err);
/* Stricter: the block's JSON carries every field the MindStudio Insight
 * design lists for its type, with the design's JSON types (docs/formats.md,
 * "Strict check").  0 if so, or for a type the design gives no field list;
 * else -EINVAL with err naming the field.  Call after ks_vb_check_payload
 * passed. */
int ks_vb_check_seed(const struct ks_vb_block *b, struct ks_vb_error *err);

#ifdef __cplusplus
}
#endif

#endif
