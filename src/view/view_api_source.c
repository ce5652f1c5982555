/*
 * view_api_source.c: (being written)
 */
#include "view.h"

const struct kv_command kv_source_commands[] = {
	{ NULL, NULL, NULL },
};
