/*
 * The C++ allocation operators under kscope memcheck --heap-map
 * (tests/memtools/memcheck_heapmap.py, scenario cxx; built by the test
 * with g++ -std=c++17): every operator new and delete libstdc++ exports
 * and Memcheck replaces -- plain, nothrow, sized, aligned, and the array
 * forms -- each matched with its own delete (so Memcheck must report no
 * mismatched free: the wrappers forward each to its own), a few blocks
 * left live at exit, and one write 3000 bytes past a new char[50], the
 * last block allocated, which the heap map must name as allocated by
 * operator new[].  Writes "write ADDR below BLOCK 50" to TRUTH.
 */
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <new>

struct alignas(64) Wide {
	char bytes[64];
};

static Wide *keep_wide;
static int *keep_int;

int main(int argc, char **argv)
{
	if (argc != 2) {
		std::fprintf(stderr, "usage: mt_heapmap_ops TRUTH\n");
		return 2;
	}
	FILE *truth = std::fopen(argv[1], "w");
	if (!truth)
		return 1;
	std::setvbuf(truth, nullptr, _IONBF, 0);

	int *one = new int(7);                              // operator new(size_t)
	int *arr = new int[10]();                           // operator new[](size_t)
	int *nt = new (std::nothrow) int(3);                // nothrow
	int *nta = new (std::nothrow) int[4]();             // nothrow []
	Wide *w = new Wide();                               // aligned
	Wide *wa = new Wide[3]();                           // aligned []
	Wide *wnt = new (std::nothrow) Wide();              // aligned nothrow
	Wide *wnta = new (std::nothrow) Wide[2]();          // aligned nothrow []
	long sum = *one + arr[3] + *nt + nta[1] + w->bytes[0] + wa[1].bytes[2] + wnt->bytes[0] +
		   wnta[1].bytes[0];

	delete one;                                         // sized delete
	delete[] arr;
	::operator delete(nt, std::nothrow);                // nothrow delete
	::operator delete[](nta, std::nothrow);
	delete w;                                           // sized aligned delete
	delete[] wa;
	::operator delete(wnt, std::align_val_t(alignof(Wide)), std::nothrow);
	::operator delete[](wnta, std::align_val_t(alignof(Wide)), std::nothrow);
	::operator delete(::operator new(24), std::align_val_t(8));
	::operator delete(::operator new(24, std::align_val_t(32)), 24,
			  std::align_val_t(32));
	::operator delete[](::operator new[](24, std::align_val_t(32)), 24,
			    std::align_val_t(32));
	::operator delete[](::operator new[](40), 40);
	keep_wide = new Wide[2]();                          // still live at exit
	keep_int = new int(5);

	char *p = new char[50];
	volatile char *far = p + 50 + 3000;
	uintptr_t at = (uintptr_t)far;
	*far = 1; /* DEFECT: invalid-write */
	std::fprintf(truth, "write 0x%" PRIxPTR " below 0x%" PRIxPTR " 50\n", at, (uintptr_t)p);
	delete[] p;
	for (int i = 0; i < 16; i++)
		delete[] new char[300];
	std::fclose(truth);
	std::printf("mt_heapmap_ops: %ld\n", sum);
	return 0;
}
