/* Prints kscope's replay kernels (src/op/cuda/cuda_ptx.h) for ptxas. */
#include <stdio.h>

#include "cuda_ptx.h"

int main(void)
{
	return fputs(ks_cu_ptx, stdout) == EOF;
}
