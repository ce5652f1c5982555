/* Whether a program was built with AddressSanitizer (asan.h), from what
 * its ELF file says (src/memtools/elfdeps). */
#include "asan.h"

#include <errno.h>

#include "elfdeps.h"

int ks_asan_built_with(const char *path, struct ks_err *err)
{
	static const char *const syms[] = { "__asan_init", NULL };
	struct ks_elfdeps d;
	int rc = ks_elfdeps_read(path, syms, &d, err);

	if (rc == 0)
		rc = ks_elfdeps_needs(&d, "libasan.so") || (d.defines | d.refers) != 0;
	ks_elfdeps_free(&d);
	return rc;
}
