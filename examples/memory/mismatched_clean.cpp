/*
 * Clean counterpart of mismatched.cpp: new[] released with delete[].
 */
#include <cstdio>

int main()
{
	int *v = new int[8];

	for (int i = 0; i < 8; i++)
		v[i] = i;
	std::printf("%d\n", v[7]);
	delete[] v;
	return 0;
}
