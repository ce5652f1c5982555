/*
 * view_api_timeline.c: (being written)
 */
#include "view.h"

const struct kv_command kv_timeline_commands[] = {
	{ NULL, NULL, NULL },
};
