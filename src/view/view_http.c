/*
 * view_http.c: (being written)
 */
#include "view.h"
