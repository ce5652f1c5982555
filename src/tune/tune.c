/* ks_tune (being written). */
#include <stdio.h>
