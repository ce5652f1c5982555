/*
 * Defect example for `kscope memcheck` in C++: an array allocated with
 * new[] and released with delete (delete[] is what it needs).  The
 * expected report is one mismatched-free at the marked line.
 */
#include <cstdio>

int main()
{
	int *v = new int[8];

	for (int i = 0; i < 8; i++)
		v[i] = i;
	std::printf("%d\n", v[7]);
	delete v; /* DEFECT: mismatched-free */
	return 0;
}
