/*
 * Ways out of instrumented functions other than a return, for kscope
 * instrument's tests: a thread calls deep() 51 levels down and the
 * deepest calls pthread_exit (a forced unwind through 51 instrumented
 * frames); main raises SIGALRM 20 times, whose handler() is itself
 * instrumented, calling spin() after each; then bye() recurses 11 levels
 * and the deepest calls exit(0).  Calls: deep 51, th 1, handler 20,
 * spin 20, bye 11, main 1.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile long sink;

__attribute__((noinline)) void deep(int n)
{
	sink += n;
	if (n == 0)
		pthread_exit(NULL);
	deep(n - 1);
	sink--;
}

__attribute__((noinline)) void *th(void *a)
{
	(void)a;
	deep(50);
	return NULL;
}

__attribute__((noinline)) void handler(int s)
{
	sink += s;
}

__attribute__((noinline)) long spin(long k)
{
	long s = 0;

	for (long i = 0; i < k; i++)
		s += i ^ sink;
	return s;
}

__attribute__((noinline)) void bye(int n)
{
	if (n == 0) {
		printf("bye\n");
		exit(0);
	}
	bye(n - 1);
	sink++;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, th, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	signal(SIGALRM, handler);
	for (int i = 0; i < 20; i++) {
		raise(SIGALRM);
		spin(1000);
	}
	printf("sink %d\n", sink > 0);
	bye(10);
	return 1;
}
