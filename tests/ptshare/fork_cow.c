// SPDX-License-Identifier: GPL-2.0
/*
 * Copy-on-write semantics of fork() for private anonymous memory, checked by
 * content: after fork, a write by one side must never be seen by the other,
 * whichever side writes first, however deep the process tree.
 *
 * These hold on any kernel; on ptshare they exercise sharing of PTE tables
 * (run with vm.pt_share=2 to force it).
 */
#define _GNU_SOURCE
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

#define SIZE	(64UL << 20)	/* 32 PTE tables */
#define PAGE	4096UL

static char *mem;

/* Value of word 0 of page i in generation g. */
static uint64_t val(unsigned long i, unsigned int g)
{
	return (i * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)g << 56);
}

static void fill(unsigned int g, unsigned long step)
{
	for (unsigned long i = 0; i < SIZE / PAGE; i += step)
		*(uint64_t *)(mem + i * PAGE) = val(i, g);
}

/* Returns the number of pages in [0, SIZE) that do not hold generation g. */
static unsigned long check(unsigned int g)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < SIZE / PAGE; i++)
		if (*(uint64_t *)(mem + i * PAGE) != val(i, g))
			bad++;
	return bad;
}

/* Run fn in a child; its exit status is the number of bad pages (capped). */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (!pid)
		_exit(fn());
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

static int child_sees_gen0(void)		{ return check(0) ? 1 : 0; }
static int child_writes_gen1(void)	{ fill(1, 1); return check(1) ? 1 : 0; }
static int child_writes_some(void)	{ fill(2, 7); return 0; }

static int grandchild_chain(void)
{
	/* child writes gen 3, forks a grandchild that writes gen 4 */
	fill(3, 1);
	if (in_child(child_writes_gen1) != 0)
		return 1;
	return check(3) ? 1 : 0;
}

static void reset(void)
{
	fill(0, 1);
}

int main(void)
{
	int r;

	mem = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	madvise(mem, SIZE, MADV_NOHUGEPAGE);
	reset();

	r = in_child(child_sees_gen0);
	tap_result(r == 0, "child reads parent's memory after fork");

	r = in_child(child_writes_gen1);
	tap_result(r == 0 && check(0) == 0,
		   "child writes after fork, parent unchanged (%lu bad pages)", check(0));

	/* Parent writes while a child is alive and then checks the old data. */
	{
		int p[2], status;
		char c;
		pid_t pid;

		if (pipe(p))
			return 1;
		pid = fork();
		if (!pid) {
			read(p[0], &c, 1);
			_exit(check(0) ? 1 : 0);
		}
		fill(5, 1);
		write(p[1], "x", 1);
		waitpid(pid, &status, 0);
		tap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			   "parent writes after fork, child unchanged");
		tap_result(check(5) == 0, "parent sees its own writes");
		reset();
	}

	/* Both write, interleaved page by page via sparse strides. */
	{
		int status;
		pid_t pid = fork();

		if (!pid) {
			fill(7, 1);
			_exit(check(7) ? 1 : 0);
		}
		fill(6, 1);
		waitpid(pid, &status, 0);
		tap_result(WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
			   check(6) == 0, "parent and child both write");
		reset();
	}

	r = in_child(child_writes_some);
	tap_result(r == 0 && check(0) == 0, "child writes every 7th page, parent unchanged");

	r = in_child(grandchild_chain);
	tap_result(r == 0 && check(0) == 0, "grandchild chain keeps each generation");

	/* Siblings: each writes its own generation, parent keeps gen 0. */
	{
		pid_t a, b;
		int sa, sb;

		a = fork();
		if (!a) {
			fill(8, 1);
			_exit(check(8) ? 1 : 0);
		}
		b = fork();
		if (!b) {
			_exit(check(0) ? 1 : 0);
		}
		waitpid(a, &sa, 0);
		waitpid(b, &sb, 0);
		tap_result(WIFEXITED(sa) && !WEXITSTATUS(sa) && WIFEXITED(sb) &&
			   !WEXITSTATUS(sb) && check(0) == 0, "siblings are isolated");
	}

	/* After the child exits, the parent can write everything again. */
	r = in_child(child_sees_gen0);
	fill(9, 1);
	tap_result(r == 0 && check(9) == 0, "parent rewrites all after child exit");

	return tap_finish();
}
