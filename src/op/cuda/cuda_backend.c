/*
 * kscope op's CUDA backend as the runtime-neutral part sees it: its
 * table of operations (struct ks_oprt_backend, oprt.h), and what it says
 * at exit when the program is a CUDA program that CUDA never reached
 * (no driver on this machine, no device), so that kscope can name the
 * cause in one line.  The operations are in cuda_replay.c.
 */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_int.h"

/* Nothing to start: the driver is loaded on first need, never before
 * (a program that does not use CUDA must not load it because of kscope). */
static int cu_init(struct ks_err *err)
{
	(void)err;
	return 0;
}

/* At exit: the records' memory.  The driver is not called (it may
 * already have been torn down by its own destructors). */
static void cu_fini(void)
{
	ks_cu_replay_fini();
	ks_cu_records_clear();
}

static const char *cu_status_name(int status)
{
	return ks_cu_status_name((CUresult)status);
}

static int find_cudart(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *slash = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	const char *base = slash ? slash + 1 : info->dlpi_name;

	(void)size;
	if (base && strncmp(base, "libcudart.so", 12) == 0) {
		*(bool *)data = true;
		return 1;
	}
	return 0;
}

/* Whether this process is a CUDA program: its executable carries device
 * code (nvcc's .nv_fatbin: static cudart) or it loaded libcudart. */
static bool is_cuda_program(void)
{
	bool cudart = false;

	if (ks_cu_elf_has_section("/proc/self/exe", ".nv_fatbin") == 1)
		return true;
	dl_iterate_phdr(find_cudart, &cudart);
	return cudart;
}

static bool cu_why_unusable(char *buf, size_t size)
{
	bool seen = __atomic_load_n(&ks_cu_init_seen, __ATOMIC_ACQUIRE);

	if (seen && ks_cu_init_status != CUDA_SUCCESS) {
		snprintf(buf, size, "cuInit returned %s (%s)",
			 ks_cu_status_name((CUresult)ks_cu_init_status),
			 ks_cu_init_status == CUDA_ERROR_NO_DEVICE ? "no CUDA device"
								   : "the driver cannot be used");
		return true;
	}
	if (seen || !is_cuda_program())
		return false;
	/* A CUDA program whose driver calls never reached kscope: the
	 * driver could not be loaded, or it never called CUDA at all. */
	if (ks_cu_driver_why()) {
		snprintf(buf, size, "%s", ks_cu_driver_why());
		return true;
	}
	/* The driver loads: the toolkit's stub (which every call fails), or
	 * calls kscope does not intercept.  The driver is not called here:
	 * its own destructors may have run. */
	{
		struct link_map *lm = NULL;
		char real[PATH_MAX];

		/* The stub is found through a link (LD_LIBRARY_PATH, a
		 * libcuda.so.1 next to it): its real path says. */
		if (dlinfo(ks_cu_driver_handle(), RTLD_DI_LINKMAP, &lm) == 0 && lm &&
		    lm->l_name && realpath(lm->l_name, real) && strstr(real, "/stubs/")) {
			snprintf(buf, size, "libcuda.so.1 is the CUDA toolkit's stub (%s), not an "
				 "NVIDIA driver", real);
			return true;
		}
	}
	snprintf(buf, size, "no CUDA call reached kscope's runtime (libcuda.so.1 loads; "
		 "the program may not have called CUDA, or called it in a way kscope does "
		 "not intercept: docs/op.md, CUDA)");
	return true;
}

static bool cu_exit_note(char *buf, size_t size)
{
	unsigned long unseen = atomic_load(&ks_cu_graph_unseen);
	unsigned long graphs = atomic_load(&ks_cu_graph_launches);

	if (!unseen)
		return false;
	snprintf(buf, size, "%lu of %lu CUDA graph launch%s ran as a whole, so kscope saw "
		 "none of the kernels in %s: %s (docs/op.md, CUDA graphs)", unseen, graphs,
		 graphs == 1 ? "" : "es", unseen == 1 ? "it" : "them", ks_cu_graph_unseen_why());
	return true;
}

const struct ks_oprt_backend ks_oprt_cuda_backend = {
	.name = "cuda",
	.init = cu_init,
	.fini = cu_fini,
	.quiesce = ks_cu_quiesce,
	.flush = ks_cu_flush,
	.launch_original = ks_cu_launch_original,
	.status_name = cu_status_name,
	.rep_new = ks_cu_rep_new,
	.rep_add = ks_cu_rep_add,
	.rep_backup = ks_cu_rep_backup,
	.rep_restore = ks_cu_rep_restore,
	.rep_flush = ks_cu_rep_flush,
	.rep_run = ks_cu_rep_run,
	.rep_diff = ks_cu_rep_diff,
	.rep_bufs = ks_cu_rep_bufs,
	.rep_describe = ks_cu_rep_describe,
	.rep_program = ks_cu_rep_program,
	.rep_free = ks_cu_rep_free,
	.rep_hw = ks_cu_rep_hw,
	.why_unusable = cu_why_unusable,
	.exit_note = cu_exit_note,
};
