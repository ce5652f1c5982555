/*
 * A C++ exception thrown three instrumented frames below the handler,
 * for kscope instrument's tests: ROUNDS times, level1 -> level2 -> level3
 * throws and main catches; then each level is called once more and
 * returns normally.  Output must be the same with and without kscope:
 * the same handler catches every throw.  Calls: level1..3 ROUNDS+1 each.
 * Usage: throw [ROUNDS]
 */
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) int level3(int x, bool do_throw)
{
	sink = sink + x;
	if (do_throw)
		throw std::runtime_error("level3");
	return x + 3;
}

__attribute__((noinline)) int level2(int x, bool do_throw)
{
	int r = level3(x + 1, do_throw);
	sink = sink + r;
	return r + 2;
}

__attribute__((noinline)) int level1(int x, bool do_throw)
{
	int r = level2(x + 1, do_throw);
	sink = sink + r;
	return r + 1;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5, caught = 0;

	for (int i = 0; i < rounds; i++) {
		try {
			level1(i, true);
		} catch (const std::runtime_error &e) {
			caught++;
		}
	}
	std::printf("caught %d of %d, then %d\n", caught, rounds, level1(1, false));
	return 0;
}
