/*
 * view_timeline.c: (being written)
 */
#include "view.h"
