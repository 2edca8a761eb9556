/*
 * spin: how fast each core of the box runs, now.  Times the same fixed
 * loop pinned to each core this process may use, in turn.  On a virtual
 * machine one core can run at half the speed of the other for minutes
 * at a time; every figure bench/run takes then depends on where the
 * scheduler put what, and a baseline moves by a factor of two.
 *
 * Each core gets a first run that is not counted (the core may still be
 * waking), then the best of three: a core that another process took
 * for a moment is not read as slow.
 *
 * Output (stdout): "cpu<N> <ms>" for each core, one line.
 *
 * usage: spin
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <time.h>

static double
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One run: about 40 ms on a core of this box. */
#define LOOPS 100000000UL
#define RUNS 3

/* The time of one run of the loop, in ms. */
static double
run_ms(void)
{
	volatile unsigned long x = 0;
	unsigned long i;
	double t0 = now_ms();

	for (i = 0; i < LOOPS; i++)
		x += i * i;
	return now_ms() - t0;
}

int
main(void)
{
	cpu_set_t all, one;
	double best, t;
	int cpu, first = 1, r;

	if (sched_getaffinity(0, sizeof(all), &all) != 0) {
		perror("sched_getaffinity");
		return 1;
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0) {
			perror("sched_setaffinity");
			return 1;
		}
		run_ms();
		best = run_ms();
		for (r = 1; r < RUNS; r++)
			if ((t = run_ms()) < best)
				best = t;
		printf("%scpu%d %.0f", first ? "" : " ", cpu, best);
		first = 0;
	}
	printf("\n");
	return 0;
}
