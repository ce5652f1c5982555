/*
 * saxpy: y = a*x + y over n floats, the example kernel of kscope's demo.
 * The JSON files beside it are hand-written example blocks in the
 * visualize_data.bin formats (docs/formats.md), not measurements: they
 * show what the container holds until kscope's collectors write real ones.
 */
#include <stddef.h>

void saxpy(size_t n, float a, const float *x, float *y)
{
	for (size_t i = 0; i < n; i++)
		y[i] = a * x[i] + y[i];
}
