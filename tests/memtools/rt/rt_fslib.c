/*
 * A program where only a shared library is built for the compiled front
 * end, for test_rt.py's "fslib" scenario.  Built twice from this file:
 * without KS_FSLIB_MAIN, the library libksfslib.so (-fsanitize=thread,
 * linked with libkscope-mt.so), whose two threads' worker writes the two
 * fields of `fs_pair`; with it, the program (not instrumented), which
 * runs those workers and does false sharing of its own on `main_pair`,
 * which kscope cannot see.  Prints "fslib N N N N".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef KS_FSLIB_MAIN

struct pair {
	long a;
	long b;
};

struct pair fs_pair;

long fslib_work(int which, long n)
{
	volatile long *p = which ? &fs_pair.b : &fs_pair.a;

	for (long i = 0; i < n; i++)
		(*p)++; /* FSLIB STORE */
	return *p;
}

#else

long fslib_work(int which, long n);

static volatile long main_pair[2];
static long iterations = 200000;

static void *worker(void *arg)
{
	long which = (long)arg;

	for (long i = 0; i < iterations; i++)
		main_pair[which]++;
	return (void *)fslib_work((int)which, iterations);
}

int main(int argc, char **argv)
{
	pthread_t t[2];
	void *r[2];

	if (argc > 1)
		iterations = atol(argv[1]);
	for (long i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], &r[i]);
	printf("fslib %ld %ld %ld %ld\n", (long)r[0], (long)r[1], main_pair[0], main_pair[1]);
	return 0;
}

#endif
