/*
 * The C++ side of rt_sync.c for the compiled front end's test
 * (test_rt.py): std::thread, std::atomic of every integer width with
 * every memory order, std::mutex, std::condition_variable, a
 * thread_local, a class with virtual functions made and destroyed in
 * every thread (vtable pointer updates), and an exception thrown through
 * instrumented frames.  Built instrumented and not, it must print the
 * same lines and exit 0; a wrong result prints "BAD ..." and exits 1.
 */
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 4;
long rounds = 20000;

struct alignas(64) Shared {
	std::atomic<std::uint8_t> a8{0};
	std::atomic<std::uint16_t> a16{0};
	std::atomic<std::uint32_t> a32{0};
	std::atomic<std::uint64_t> a64{0};
	std::atomic<std::uint64_t> cas{0};
};
Shared sh;

std::mutex mu;
std::condition_variable cv;
long guarded = 0;
int turn = 0;                  // whose turn in the ping-pong
thread_local long mine = 0;

struct Shape {
	virtual ~Shape() = default;
	virtual long area() const = 0;
};
struct Square : Shape {
	explicit Square(long s) : side(s) {}
	long area() const override { return side * side; }
	long side;
};

const std::memory_order kOrders[] = { std::memory_order_relaxed, std::memory_order_consume,
				      std::memory_order_acquire, std::memory_order_release,
				      std::memory_order_acq_rel, std::memory_order_seq_cst };

long thrower(long i)
{
	if (i % 1000 == 7)
		throw std::runtime_error("seven");
	return i;
}

void work(int id)
{
	long caught = 0, areas = 0;

	for (long i = 0; i < rounds; i++) {
		std::memory_order mo = kOrders[i % 6];

		sh.a8.fetch_add(1, mo);
		sh.a16.fetch_add(2, mo);
		sh.a32.fetch_add(3, mo);
		sh.a64.fetch_add(4, mo);
		std::uint64_t seen = sh.cas.load(std::memory_order_relaxed);
		while (!sh.cas.compare_exchange_weak(seen, seen + 1, std::memory_order_acq_rel,
						     std::memory_order_relaxed))
			;
		std::unique_ptr<Shape> s(new Square(id + 1));
		areas += s->area();
		try {
			mine += thrower(i);
		} catch (const std::runtime_error &) {
			caught++;
		}
		{
			std::lock_guard<std::mutex> g(mu);
			guarded += 1;
		}
	}
	if (areas != rounds * (id + 1) * (id + 1) || caught != rounds / 1000 + (rounds % 1000 > 7))
		std::printf("BAD thread %d: areas %ld caught %ld\n", id, areas, caught), std::exit(1);
	// Ping-pong through the condition variable: each thread takes its
	// turn 100 times.
	for (int k = 0; k < 100; k++) {
		std::unique_lock<std::mutex> l(mu);
		cv.wait(l, [id] { return turn % kThreads == id; });
		turn++;
		cv.notify_all();
	}
}

} // namespace

int main(int argc, char **argv)
{
	if (argc > 1)
		rounds = std::atol(argv[1]);
	if (rounds < 1)
		return 2;
	std::vector<std::thread> ts;
	for (int i = 0; i < kThreads; i++)
		ts.emplace_back(work, i);
	for (auto &t : ts)
		t.join();
	const long n = kThreads * rounds;
	if (sh.a8 != static_cast<std::uint8_t>(n) || sh.a16 != static_cast<std::uint16_t>(2 * n) ||
	    sh.a32 != static_cast<std::uint32_t>(3 * n) || sh.a64 != static_cast<std::uint64_t>(4 * n) ||
	    sh.cas != static_cast<std::uint64_t>(n) || guarded != n || turn != 100 * kThreads) {
		std::printf("BAD totals\n");
		return 1;
	}
	std::printf("cxx a8 %u a16 %u a32 %u a64 %llu cas %llu guarded %ld turns %d\n",
		    unsigned(sh.a8), unsigned(sh.a16), unsigned(sh.a32),
		    static_cast<unsigned long long>(sh.a64.load()),
		    static_cast<unsigned long long>(sh.cas.load()), guarded, turn);
	return 0;
}
