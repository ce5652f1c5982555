/*
 * view_api_more.c: (being written)
 */
#include "view.h"

const struct kv_command kv_more_commands[] = {
	{ NULL, NULL, NULL },
};
