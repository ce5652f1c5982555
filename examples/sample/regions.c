/*
 * Uses the kscope user API (include/kscope/user.h): nested regions, a
 * mark, a range that ends on another thread, a pause, and a region name
 * longer than kscope keeps.  Linked against libkscope-user.so, so it runs
 * without kscope too; its output is the same either way.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kscope/user.h"

static volatile double sink;

static void work(int n)
{
	for (int i = 0; i < n; i++)
		sink = sink * 1.0000001 + 1e-9;
}

static void *ender(void *arg)
{
	kscope_region_push("ender");
	kscope_range_end(*(uint64_t *)arg);
	kscope_region_pop();
	return NULL;
}

int main(void)
{
	char longname[400];
	uint64_t io, cross;
	pthread_t th;

	kscope_region_push("outer");
	work(1000000);
	kscope_region_push("inner");
	work(1000000);
	kscope_mark("checkpoint");
	kscope_region_pop();
	io = kscope_range_start("io");
	work(100000);
	kscope_range_end(io);
	kscope_region_pop();

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	kscope_region_push(longname);
	kscope_region_pop();

	kscope_pause();
	work(100000);
	kscope_resume();

	cross = kscope_range_start("cross-thread");
	if (pthread_create(&th, NULL, ender, &cross) != 0)
		return 1;
	pthread_join(th, NULL);
	printf("regions: done\n");
	return 0;
}
