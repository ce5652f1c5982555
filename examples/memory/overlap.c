/*
 * Defect example for `kscope memcheck`: copies between overlapping ranges
 * of one buffer.  strcpy onto its own tail is reported (overlap, at the
 * marked line; the first frame, strcpy itself, is Valgrind's
 * replacement).  The memcpy below overlaps too, but Valgrind 3.19 on
 * Debian 12 replaces glibc's memcpy (an IFUNC that resolves to a memmove
 * implementation) without the overlap check, so Memcheck, and kscope
 * with it, says nothing there.  The sizes come through volatile variables
 * so the compiler keeps the calls.
 */
#include <stdio.h>
#include <string.h>

int main(void)
{
	char buf[64] = "abcdefghijklmnopqrstuvwxyz0123456789";
	volatile size_t from = 2, len = 20;

	strcpy(buf, buf + from); /* DEFECT: overlap */
	memcpy(buf, buf + from, len); /* not seen by Memcheck 3.19 here */
	printf("%.20s\n", buf);
	return 0;
}
