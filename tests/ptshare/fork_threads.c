// SPDX-License-Identifier: GPL-2.0
/*
 * fork() while other threads keep writing, checked by content.
 *
 * Writer threads each own a slice of one private anonymous region (slices
 * straddle 2 MiB PTE-table boundaries) and sweep it over and over, storing
 * (thread << 48 | generation) in every word. Before a sweep a thread
 * publishes the generation it starts, after it the one it finished. The main
 * thread forks repeatedly; each child must see, in every word of every slice,
 * its owner's tag and a generation between the one finished before fork()
 * and the one started by the time fork() returned in the parent (sent down a
 * pipe). A generation above that means parent writes reached the child after
 * fork returned; a foreign tag or zero means torn or lost memory.
 *
 * The child then scribbles over its copy; every writer checks each word
 * before overwriting it, so a child's write reaching the parent shows too,
 * as does the parent's final check of every slice.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "pts.h"

/* Every case runs with PTE table sharing forced, on kernels that have it. */
static void __attribute__((constructor)) force_sharing(void)
{
	pts_force_sharing();
}

#define PAGE		4096UL
#define NTHREADS	4
#define SLICE		(5UL << 19)		/* 2.5 MiB: slices share tables */
#define SIZE		(NTHREADS * SLICE)	/* 10 MiB, 5 tables */
#define SLICE_WORDS	(SLICE / 8)
#define NFORKS		50

static uint64_t *mem;
static uint64_t started[NTHREADS], finished[NTHREADS];
static unsigned long foreign[NTHREADS];	/* words a writer found wrong */
static unsigned long progress[NTHREADS];	/* pages written, ever */
static int stop;

static uint64_t word(int t, uint64_t gen)
{
	return (uint64_t)(t + 1) << 48 | gen;
}

/*
 * Writers run SCHED_IDLE: on whatever CPU the forking thread and the child
 * leave idle (fork itself included), but never slowing those two down, which
 * under emulation would make the test take minutes.
 */
static void *writer(void *arg)
{
	int t = (int)(intptr_t)arg;
	volatile uint64_t *w = mem + t * SLICE_WORDS;
	struct sched_param sp = { 0 };

	sched_setscheduler(0, SCHED_IDLE, &sp);

	for (uint64_t gen = 1; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); gen++) {
		uint64_t old = word(t, gen - 1), new = word(t, gen);

		/* seq_cst: published before any word of the sweep is */
		__atomic_store_n(&started[t], gen, __ATOMIC_SEQ_CST);
		for (unsigned long k = 0; k < SLICE_WORDS; k++) {
			if (w[k] != old)
				foreign[t]++;
			w[k] = new;
			if (k % (PAGE / 8) == PAGE / 8 - 1)
				__atomic_add_fetch(&progress[t], 1, __ATOMIC_RELAXED);
		}
		__atomic_store_n(&finished[t], gen, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* In the child: every word tagged by its slice's owner, generation in range. */
static unsigned long child_check(const uint64_t *lo, const uint64_t *hi)
{
	unsigned long bad = 0;

	for (int t = 0; t < NTHREADS; t++) {
		const uint64_t *w = mem + t * SLICE_WORDS;

		for (unsigned long k = 0; k < SLICE_WORDS; k++) {
			uint64_t gen = w[k] & ((1ULL << 48) - 1);

			if (w[k] >> 48 == (uint64_t)t + 1 && gen >= lo[t] &&
			    gen <= hi[t])
				continue;
			if (bad++ < 3)
				tap_diag("child: thread %d word %lu is %#llx, want gen %llu..%llu",
					 t, k, (unsigned long long)w[k],
					 (unsigned long long)lo[t],
					 (unsigned long long)hi[t]);
		}
	}
	return bad;
}

/* Scribble one word in every fourth page of the child's copy. */
static void child_scribble(void)
{
	for (unsigned long k = 0; k < SIZE / 8; k += 4 * PAGE / 8)
		mem[k] = 0xdeadULL << 48;
}

/*
 * Wait (up to 1 s) until every writer has written a page since the last
 * fork, so that each fork finds them all busy.
 */
static void wait_writers(unsigned long *seen)
{
	for (int n = 0; n < 1000; n++) {
		int t;

		for (t = 0; t < NTHREADS; t++)
			if (__atomic_load_n(&progress[t], __ATOMIC_RELAXED) == seen[t])
				break;
		if (t == NTHREADS)
			break;
		usleep(1000);
	}
	for (int t = 0; t < NTHREADS; t++)
		seen[t] = __atomic_load_n(&progress[t], __ATOMIC_RELAXED);
}

/*
 * One fork: returns 0 if the child saw a consistent snapshot. The child
 * inherits only this thread; it reads the upper bounds from the pipe.
 */
static int fork_once(void)
{
	uint64_t lo[NTHREADS], hi[NTHREADS];
	int p[2], status;
	pid_t pid;

	if (pipe(p))
		return -1;
	for (int t = 0; t < NTHREADS; t++)
		lo[t] = __atomic_load_n(&finished[t], __ATOMIC_ACQUIRE);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		unsigned long bad;

		close(p[1]);
		if (read(p[0], hi, sizeof(hi)) != sizeof(hi))
			_exit(2);
		bad = child_check(lo, hi);
		child_scribble();
		fflush(stdout);
		_exit(bad ? 1 : 0);
	}
	for (int t = 0; t < NTHREADS; t++)
		hi[t] = __atomic_load_n(&started[t], __ATOMIC_ACQUIRE);
	close(p[0]);
	write(p[1], hi, sizeof(hi));
	close(p[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* After the writers stopped: each slice holds its last finished sweep. */
static unsigned long parent_check(void)
{
	unsigned long bad = 0;

	for (int t = 0; t < NTHREADS; t++) {
		const uint64_t *w = mem + t * SLICE_WORDS;
		uint64_t want = word(t, finished[t]);

		for (unsigned long k = 0; k < SLICE_WORDS; k++) {
			if (w[k] == want)
				continue;
			if (bad++ < 3)
				tap_diag("parent: thread %d word %lu is %#llx, want %#llx",
					 t, k, (unsigned long long)w[k],
					 (unsigned long long)want);
		}
	}
	return bad;
}

int main(void)
{
	pthread_t th[NTHREADS];
	unsigned long bad_children = 0, errors = 0, lost = 0;
	unsigned long seen[NTHREADS] = { 0 };
	uint64_t sweeps = 0;

	mem = (uint64_t *)pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	if (!mem) {
		perror("mmap");
		return 1;
	}
	for (int t = 0; t < NTHREADS; t++)
		for (unsigned long k = 0; k < SLICE_WORDS; k++)
			mem[t * SLICE_WORDS + k] = word(t, 0);
	for (int t = 0; t < NTHREADS; t++)
		if (pthread_create(&th[t], NULL, writer, (void *)(intptr_t)t)) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < NFORKS; i++) {
		int r;

		wait_writers(seen);
		r = fork_once();

		if (r < 0)
			errors++;
		else if (r)
			bad_children++;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int t = 0; t < NTHREADS; t++) {
		pthread_join(th[t], NULL);
		lost += foreign[t];
		sweeps += finished[t];
	}
	tap_diag("%d forks, %llu sweeps by %d writers", NFORKS,
		 (unsigned long long)sweeps, NTHREADS);
	if (errors)
		tap_diag("%lu forks failed or children died", errors);
	tap_result(!bad_children && !errors,
		   "threads-fork/children-see-consistent-snapshots");
	if (lost)
		tap_diag("writers found %lu words they had not written", lost);
	tap_result(!lost && !parent_check(), "threads-fork/parent-data-intact");
	return tap_finish();
}
