/*
 * The OpenCL launch as context.json describes it (opraw.h): platform,
 * device, program, arguments; and the names kscope shows for OpenCL's
 * error codes and memory flags.  Everything here asks the runtime through
 * the real entry points and writes JSON; nothing changes state.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ocl_int.h"

#define R ks_ocl_real

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

const char *ks_ocl_error_name(cl_int e)
{
	static const struct { cl_int code; const char *name; } names[] = {
#define N(x) { x, #x }
		N(CL_SUCCESS), N(CL_DEVICE_NOT_FOUND), N(CL_DEVICE_NOT_AVAILABLE),
		N(CL_COMPILER_NOT_AVAILABLE), N(CL_MEM_OBJECT_ALLOCATION_FAILURE),
		N(CL_OUT_OF_RESOURCES), N(CL_OUT_OF_HOST_MEMORY),
		N(CL_PROFILING_INFO_NOT_AVAILABLE), N(CL_MEM_COPY_OVERLAP),
		N(CL_IMAGE_FORMAT_MISMATCH), N(CL_IMAGE_FORMAT_NOT_SUPPORTED),
		N(CL_BUILD_PROGRAM_FAILURE), N(CL_MAP_FAILURE),
		N(CL_MISALIGNED_SUB_BUFFER_OFFSET),
		N(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST),
		N(CL_COMPILE_PROGRAM_FAILURE), N(CL_LINKER_NOT_AVAILABLE),
		N(CL_LINK_PROGRAM_FAILURE), N(CL_DEVICE_PARTITION_FAILED),
		N(CL_KERNEL_ARG_INFO_NOT_AVAILABLE), N(CL_INVALID_VALUE),
		N(CL_INVALID_DEVICE_TYPE), N(CL_INVALID_PLATFORM), N(CL_INVALID_DEVICE),
		N(CL_INVALID_CONTEXT), N(CL_INVALID_QUEUE_PROPERTIES),
		N(CL_INVALID_COMMAND_QUEUE), N(CL_INVALID_HOST_PTR),
		N(CL_INVALID_MEM_OBJECT), N(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR),
		N(CL_INVALID_IMAGE_SIZE), N(CL_INVALID_SAMPLER), N(CL_INVALID_BINARY),
		N(CL_INVALID_BUILD_OPTIONS), N(CL_INVALID_PROGRAM),
		N(CL_INVALID_PROGRAM_EXECUTABLE), N(CL_INVALID_KERNEL_NAME),
		N(CL_INVALID_KERNEL_DEFINITION), N(CL_INVALID_KERNEL),
		N(CL_INVALID_ARG_INDEX), N(CL_INVALID_ARG_VALUE), N(CL_INVALID_ARG_SIZE),
		N(CL_INVALID_KERNEL_ARGS), N(CL_INVALID_WORK_DIMENSION),
		N(CL_INVALID_WORK_GROUP_SIZE), N(CL_INVALID_WORK_ITEM_SIZE),
		N(CL_INVALID_GLOBAL_OFFSET), N(CL_INVALID_EVENT_WAIT_LIST),
		N(CL_INVALID_EVENT), N(CL_INVALID_OPERATION), N(CL_INVALID_GL_OBJECT),
		N(CL_INVALID_BUFFER_SIZE), N(CL_INVALID_MIP_LEVEL),
		N(CL_INVALID_GLOBAL_WORK_SIZE), N(CL_INVALID_PROPERTY),
		N(CL_INVALID_IMAGE_DESCRIPTOR), N(CL_INVALID_COMPILER_OPTIONS),
		N(CL_INVALID_LINKER_OPTIONS), N(CL_INVALID_DEVICE_PARTITION_COUNT),
		N(CL_INVALID_PIPE_SIZE), N(CL_INVALID_DEVICE_QUEUE),
		N(CL_INVALID_SPEC_ID), N(CL_MAX_SIZE_RESTRICTION_EXCEEDED),
#undef N
	};
	static KS_OPRT_TLS char other[32];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].code == e)
			return names[i].name;
	snprintf(other, sizeof(other), "OpenCL error %d", (int)e);
	return other;
}

int ks_ocl_err(struct ks_err *err, const char *call, cl_int e)
{
	ks_err_set(err, -EIO, "%s returned %s", call, ks_ocl_error_name(e));
	return -EIO;
}

static void flags_json(cl_mem_flags f, struct ks_oprt_json *j)
{
	static const struct { cl_mem_flags bit; const char *name; } names[] = {
#define N(x) { x, #x }
		N(CL_MEM_READ_WRITE), N(CL_MEM_WRITE_ONLY), N(CL_MEM_READ_ONLY),
		N(CL_MEM_USE_HOST_PTR), N(CL_MEM_ALLOC_HOST_PTR), N(CL_MEM_COPY_HOST_PTR),
		N(CL_MEM_HOST_WRITE_ONLY), N(CL_MEM_HOST_READ_ONLY), N(CL_MEM_HOST_NO_ACCESS),
		N(CL_MEM_SVM_FINE_GRAIN_BUFFER), N(CL_MEM_SVM_ATOMICS),
		N(CL_MEM_KERNEL_READ_AND_WRITE),
#undef N
	};
	char other[32];

	ks_oprt_json_arr_open(j, "flags");
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (f & names[i].bit) {
			ks_oprt_json_str(j, NULL, names[i].name);
			f &= ~names[i].bit;
		}
	if (f) {
		snprintf(other, sizeof(other), "0x%" PRIx64, (uint64_t)f);
		ks_oprt_json_str(j, NULL, other);
	}
	ks_oprt_json_arr_close(j);
}

/* ------------------------------------------------------------------ */
/* Platform and device                                                 */
/* ------------------------------------------------------------------ */

static void dev_str(cl_device_id d, cl_device_info what, char *out, size_t size)
{
	out[0] = '\0';
	if (R.clGetDeviceInfo(d, what, size, out, NULL) != CL_SUCCESS)
		out[0] = '\0';
	out[size - 1] = '\0';
}

static void plat_str(cl_platform_id p, cl_platform_info what, char *out, size_t size)
{
	out[0] = '\0';
	if (!p || R.clGetPlatformInfo(p, what, size, out, NULL) != CL_SUCCESS)
		out[0] = '\0';
	out[size - 1] = '\0';
}

/* A string member, null when the runtime gave none. */
static void str_or_null(struct ks_oprt_json *j, const char *key, const char *s)
{
	ks_oprt_json_str(j, key, s[0] ? s : NULL);
}

static void dev_u64(cl_device_id d, cl_device_info what, size_t size, const char *key,
		    struct ks_oprt_json *j)
{
	cl_ulong v = 0;

	/* cl_uint and cl_ulong answers, little or big: read into the right
	 * width. */
	if (size == sizeof(cl_uint)) {
		cl_uint u = 0;

		if (R.clGetDeviceInfo(d, what, sizeof(u), &u, NULL) != CL_SUCCESS) {
			ks_oprt_json_null(j, key);
			return;
		}
		v = u;
	} else if (R.clGetDeviceInfo(d, what, sizeof(v), &v, NULL) != CL_SUCCESS) {
		ks_oprt_json_null(j, key);
		return;
	}
	ks_oprt_json_u64(j, key, v);
}

void ks_ocl_describe_device(cl_device_id dev, struct ks_oprt_json *j)
{
	cl_platform_id plat = NULL;
	cl_device_type type = 0;
	char s[512];

	if (R.clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL) != CL_SUCCESS)
		plat = NULL;
	ks_oprt_json_obj_open(j, "platform");
	plat_str(plat, CL_PLATFORM_NAME, s, sizeof(s));
	str_or_null(j, "name", s);
	plat_str(plat, CL_PLATFORM_VENDOR, s, sizeof(s));
	str_or_null(j, "vendor", s);
	plat_str(plat, CL_PLATFORM_VERSION, s, sizeof(s));
	str_or_null(j, "version", s);
	ks_oprt_json_obj_close(j);

	ks_oprt_json_obj_open(j, "device");
	dev_str(dev, CL_DEVICE_NAME, s, sizeof(s));
	str_or_null(j, "name", s);
	dev_str(dev, CL_DEVICE_VENDOR, s, sizeof(s));
	str_or_null(j, "vendor", s);
	dev_str(dev, CL_DEVICE_VERSION, s, sizeof(s));
	str_or_null(j, "version", s);
	dev_str(dev, CL_DRIVER_VERSION, s, sizeof(s));
	str_or_null(j, "driver_version", s);
	if (R.clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof(type), &type, NULL) != CL_SUCCESS)
		ks_oprt_json_null(j, "type");
	else
		ks_oprt_json_str(j, "type", type & CL_DEVICE_TYPE_GPU ? "GPU" :
					    type & CL_DEVICE_TYPE_CPU ? "CPU" :
					    type & CL_DEVICE_TYPE_ACCELERATOR ? "ACCELERATOR" :
					    "OTHER");
	dev_u64(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cl_uint), "compute_units", j);
	dev_u64(dev, CL_DEVICE_MAX_CLOCK_FREQUENCY, sizeof(cl_uint), "max_clock_mhz", j);
	dev_u64(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(cl_ulong), "global_mem_bytes", j);
	dev_u64(dev, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof(cl_ulong),
		"global_mem_cache_bytes", j);
	dev_u64(dev, CL_DEVICE_LOCAL_MEM_SIZE, sizeof(cl_ulong), "local_mem_bytes", j);
	ks_oprt_json_obj_close(j);
}

void ks_ocl_announce(cl_device_id dev)
{
	cl_platform_id plat = NULL;
	char p[256], d[256], v[256];

	if (R.clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL) != CL_SUCCESS)
		plat = NULL;
	plat_str(plat, CL_PLATFORM_NAME, p, sizeof(p));
	dev_str(dev, CL_DEVICE_NAME, d, sizeof(d));
	dev_str(dev, CL_DRIVER_VERSION, v, sizeof(v));
	ks_oprt_runtime_used(p, d, v);
}

cl_device_id ks_ocl_context_device(cl_context ctx)
{
	cl_device_id *devs, dev = NULL;
	size_t n = 0;

	if (!ctx || R.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &n) != CL_SUCCESS ||
	    n < sizeof(cl_device_id))
		return NULL;
	devs = malloc(n);
	if (devs && R.clGetContextInfo(ctx, CL_CONTEXT_DEVICES, n, devs, NULL) == CL_SUCCESS)
		dev = devs[0];
	free(devs);
	return dev;
}

/* ------------------------------------------------------------------ */
/* Program                                                             */
/* ------------------------------------------------------------------ */

void ks_ocl_program_file(const struct ks_ocl_pinfo *p, cl_device_id dev, const char **file,
			 const void **data, size_t *len)
{
	*file = NULL;
	*data = NULL;
	*len = 0;
	if (!p)
		return;
	switch (p->origin) {
	case KS_OCL_SOURCE:
	case KS_OCL_IL:
		if (!p->data)
			return;
		*file = p->origin == KS_OCL_SOURCE ? "kernel.cl" : "kernel.il";
		*data = p->data;
		*len = p->len;
		return;
	case KS_OCL_BINARY:
		for (cl_uint i = 0; p->bins && i < p->ndev; i++)
			if (p->bins[i] && (p->devs[i] == dev || i + 1 == p->ndev)) {
				*file = "kernel.bin";
				*data = p->bins[i];
				*len = p->bin_len[i];
				return;
			}
		return;
	case KS_OCL_UNKNOWN:
		return;
	}
}

void ks_ocl_describe_program(const struct ks_ocl_pinfo *p, cl_device_id dev,
			     struct ks_oprt_json *j)
{
	static const char *const origins[] = { "unknown", "source", "binary", "il" };
	const char *file;
	const void *data;
	size_t len;

	ks_ocl_program_file(p, dev, &file, &data, &len);
	ks_oprt_json_obj_open(j, "program");
	ks_oprt_json_str(j, "origin", origins[p ? p->origin : KS_OCL_UNKNOWN]);
	ks_oprt_json_str(j, "file", file);
	if (file)
		ks_oprt_json_u64(j, "bytes", len);
	else
		ks_oprt_json_null(j, "bytes");
	ks_oprt_json_str(j, "build_options", p ? p->options : NULL);
	/* Not in opraw.h: the options kscope added to the program's own. */
	if (p && p->arg_info_added)
		ks_oprt_json_str(j, "kscope_build_options", "-cl-kernel-arg-info");
	ks_oprt_json_obj_close(j);
}

/* ------------------------------------------------------------------ */
/* Arguments                                                           */
/* ------------------------------------------------------------------ */

void ks_ocl_arginfo_get(cl_kernel k, cl_uint i, struct ks_ocl_arginfo *ai)
{
	memset(ai, 0, sizeof(*ai));
	if (R.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(ai->address),
				 &ai->address, NULL) != CL_SUCCESS ||
	    R.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ACCESS_QUALIFIER, sizeof(ai->access),
				 &ai->access, NULL) != CL_SUCCESS ||
	    R.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof(ai->type_qual),
				 &ai->type_qual, NULL) != CL_SUCCESS ||
	    R.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, sizeof(ai->type_name),
				 ai->type_name, NULL) != CL_SUCCESS)
		return;
	if (R.clGetKernelArgInfo(k, i, CL_KERNEL_ARG_NAME, sizeof(ai->name), ai->name, NULL) !=
	    CL_SUCCESS)
		ai->name[0] = '\0';
	ai->type_name[sizeof(ai->type_name) - 1] = '\0';
	ai->name[sizeof(ai->name) - 1] = '\0';
	ai->known = true;
}

/* An unsigned integer of size bytes in host byte order (the device's must
 * match it for the runtime to take the value as set). */
static uint64_t uint_load(const unsigned char *v, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1:
		memcpy(&u8, v, 1);
		return u8;
	case 2:
		memcpy(&u16, v, 2);
		return u16;
	case 4:
		memcpy(&u32, v, 4);
		return u32;
	default:
		memcpy(&u64, v, 8);
		return u64;
	}
}

/* The same, signed. */
static int64_t int_load(const unsigned char *v, size_t size)
{
	uint64_t u = uint_load(v, size);

	switch (size) {
	case 1:
		return (int8_t)u;
	case 2:
		return (int16_t)u;
	case 4:
		return (int32_t)u;
	default:
		return (int64_t)u;
	}
}

/* The scalar types kscope decodes, by their OpenCL C names. */
static void value_json(const struct ks_ocl_carg *a, struct ks_oprt_json *j)
{
	static const struct { const char *type; size_t size; char how; } types[] = {
		{ "char", 1, 'i' }, { "uchar", 1, 'u' }, { "unsigned char", 1, 'u' },
		{ "short", 2, 'i' }, { "ushort", 2, 'u' }, { "unsigned short", 2, 'u' },
		{ "int", 4, 'i' }, { "uint", 4, 'u' }, { "unsigned int", 4, 'u' },
		{ "long", 8, 'i' }, { "ulong", 8, 'u' }, { "unsigned long", 8, 'u' },
		{ "size_t", 8, 'u' }, { "size_t", 4, 'u' }, { "ptrdiff_t", 8, 'i' },
		{ "intptr_t", 8, 'i' }, { "uintptr_t", 8, 'u' }, { "bool", 1, 'u' },
		{ "float", 4, 'f' }, { "double", 8, 'f' },
	};
	const unsigned char *v = ks_ocl_arg_value(&a->val);

	for (size_t t = 0; a->info.known && v && t < sizeof(types) / sizeof(types[0]); t++) {
		if (strcmp(a->info.type_name, types[t].type) != 0 || a->val.size != types[t].size)
			continue;
		if (types[t].how == 'f') {
			if (types[t].size == 4) {
				float f;

				memcpy(&f, v, sizeof(f));
				ks_oprt_json_num(j, "value", f);
			} else {
				double d;

				memcpy(&d, v, sizeof(d));
				ks_oprt_json_num(j, "value", d);
			}
			return;
		}
		if (types[t].how == 'i')
			ks_oprt_json_i64(j, "value", int_load(v, types[t].size));
		else
			ks_oprt_json_u64(j, "value", uint_load(v, types[t].size));
		return;
	}
	ks_oprt_json_null(j, "value");
}

static void hex_json(const struct ks_ocl_arg *a, struct ks_oprt_json *j)
{
	const unsigned char *v = ks_ocl_arg_value(a);
	static const char digits[] = "0123456789abcdef";
	char *hex = v ? malloc(2 * a->size + 1) : NULL;

	if (!hex) {
		ks_oprt_json_null(j, "value_hex");
		return;
	}
	for (size_t i = 0; i < a->size; i++) {
		hex[2 * i] = digits[v[i] >> 4];
		hex[2 * i + 1] = digits[v[i] & 15];
	}
	hex[2 * a->size] = '\0';
	ks_oprt_json_str(j, "value_hex", hex);
	free(hex);
}

void ks_ocl_describe_args(const struct ks_ocl_carg *args, cl_uint n, struct ks_oprt_json *j)
{
	static const char *const kinds[] = {
		[KS_OCL_ARG_UNSET] = "unknown", [KS_OCL_ARG_BUFFER] = "buffer",
		[KS_OCL_ARG_LOCAL] = "local", [KS_OCL_ARG_SCALAR] = "scalar",
		[KS_OCL_ARG_NULL] = "null", [KS_OCL_ARG_SAMPLER] = "sampler",
		[KS_OCL_ARG_MEMOBJ] = "unknown",
	};

	ks_oprt_json_arr_open(j, "args");
	for (cl_uint i = 0; i < n; i++) {
		const struct ks_ocl_carg *a = &args[i];
		const struct ks_ocl_arginfo *ai = &a->info;

		ks_oprt_json_obj_open(j, NULL);
		ks_oprt_json_u64(j, "index", i);
		ks_oprt_json_str(j, "name", ai->known && ai->name[0] ? ai->name : NULL);
		ks_oprt_json_str(j, "type_name", ai->known ? ai->type_name : NULL);
		ks_oprt_json_str(j, "address",
				 !ai->known ? NULL :
				 ai->address == CL_KERNEL_ARG_ADDRESS_GLOBAL ? "global" :
				 ai->address == CL_KERNEL_ARG_ADDRESS_CONSTANT ? "constant" :
				 ai->address == CL_KERNEL_ARG_ADDRESS_LOCAL ? "local" : "private");
		ks_oprt_json_str(j, "access",
				 !ai->known ? NULL :
				 ai->access == CL_KERNEL_ARG_ACCESS_READ_ONLY ? "read_only" :
				 ai->access == CL_KERNEL_ARG_ACCESS_WRITE_ONLY ? "write_only" :
				 ai->access == CL_KERNEL_ARG_ACCESS_READ_WRITE ? "read_write" : "none");
		if (ai->known)
			ks_oprt_json_bool(j, "const", ai->type_qual & CL_KERNEL_ARG_TYPE_CONST);
		else
			ks_oprt_json_null(j, "const");
		ks_oprt_json_str(j, "kind", kinds[a->kind]);
		if (a->val.set)
			ks_oprt_json_u64(j, "size", a->val.size);
		else
			ks_oprt_json_null(j, "size");
		if (a->kind == KS_OCL_ARG_SCALAR) {
			hex_json(&a->val, j);
			value_json(a, j);
		}
		if (a->kind == KS_OCL_ARG_BUFFER) {
			ks_oprt_json_obj_open(j, "buffer");
			ks_oprt_json_u64(j, "bytes", a->mem_size);
			flags_json(a->mem_flags, j);
			if (a->parent) {
				ks_oprt_json_obj_open(j, "sub_buffer_of");
				ks_oprt_json_u64(j, "origin", a->origin);
				ks_oprt_json_obj_close(j);
			} else {
				ks_oprt_json_null(j, "sub_buffer_of");
			}
			ks_oprt_json_obj_close(j);
		}
		ks_oprt_json_obj_close(j);
	}
	ks_oprt_json_arr_close(j);
}
