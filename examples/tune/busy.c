/*
 * A kernel whose wall time depends on its tunable, for kscope tune's
 * tests: a busy loop of WORK * 10 million iterations, so WORK 1 takes a
 * quarter of the time of WORK 4 or less.  It prints no KSCOPE_TIME_NS:
 * kscope tune measures its wall time.
 */
static const unsigned long WORK = 4; // tunable

int main(void)
{
	volatile unsigned long sink = 0;

	for (unsigned long i = 0; i < WORK * 10000000UL; i++)
		sink += i;
	/* sink is read, so the loop stays; the sum is never 1 */
	return sink == 1;
}
