/*
 * view_import.c: (being written)
 */
#include <errno.h>

#include "view.h"

int ks_view_import(const char *path, struct ks_view **out,
		   void (*progress)(const char *line), struct ks_err *err)
{
	(void)path; (void)progress;
	*out = NULL;
	return ks_err_set(err, -ENOSYS, "kscope view cannot import yet");
}

void ks_view_free(struct ks_view *v)
{
	(void)v;
}
