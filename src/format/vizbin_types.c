/*
 * The block types of visualize_data.bin: short names for the command
 * line, titles for listings.
 */
#include <kscope/vizbin.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format_int.h"

static const struct {
	const char *name;
	const char *title;
} types[KS_VB_TYPE_MAX + 1] = {
	[KS_VB_SOURCE]         = { "source", "source code" },
	[KS_VB_TRACE]          = { "trace", "pipeline trace" },
	[KS_VB_API_FILES]      = { "api-files", "hot-spot map: files" },
	[KS_VB_API_INSTR]      = { "api-instructions", "hot-spot map: instructions" },
	[KS_VB_BASE_INFO]      = { "base-info", "basic info" },
	[KS_VB_COMPUTE_GRAPH]  = { "compute-graph", "compute workload graph" },
	[KS_VB_COMPUTE_TABLE]  = { "compute-table", "compute workload table" },
	[KS_VB_MEMORY_GRAPH]   = { "memory-graph", "memory heat map" },
	[KS_VB_MEMORY_TABLE]   = { "memory-table", "memory table" },
	[KS_VB_MEMORY_TIMING]  = { "memory-timing", "memory timing records" },
	[KS_VB_CACHE_RECORDS]  = { "cache-records", "cache records" },
	[KS_VB_CORE_LOAD]      = { "core-load", "inter-core load" },
	[KS_VB_ROOFLINE]       = { "roofline", "roofline" },
	[KS_VB_CACHELINE_HEAT] = { "cacheline-heat", "cache-line heat map" },
	[KS_VB_STALL_REASONS]  = { "stall-reasons", "top stall reasons" },
};

const char *ks_vb_type_name(unsigned type)
{
	return type >= 1 && type <= KS_VB_TYPE_MAX ? types[type].name : NULL;
}

const char *ks_vb_type_title(unsigned type)
{
	return type >= 1 && type <= KS_VB_TYPE_MAX ? types[type].title : NULL;
}

int ks_vb_type_parse(const char *s)
{
	char *end;
	long v;

	for (unsigned t = 1; t <= KS_VB_TYPE_MAX; t++)
		if (strcmp(s, types[t].name) == 0)
			return (int)t;
	if (!*s || !(s[0] >= '0' && s[0] <= '9'))
		return -1;
	errno = 0;
	/* Decimal, or hexadecimal with 0x: "010" is ten, not eight. */
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		v = strtol(s + 2, &end, 16);
	else
		v = strtol(s, &end, 10);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
	    (s[2] == '\0' || s[2] == '-' || s[2] == '+' || s[2] == ' '))
		return -1;
	if (errno || *end || v < 1 || v > KS_VB_TYPE_MAX)
		return -1;
	return (int)v;
}

int ks_vb_fail(struct ks_vb_error *err, int code, uint32_t block,
	       uint64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->block = block;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}
