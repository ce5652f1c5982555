/*
 * view_trace.c: (being written)
 */
#include "view.h"
