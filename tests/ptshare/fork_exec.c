// SPDX-License-Identifier: GPL-2.0
/*
 * A process sharing memory with others after fork() going away, by exec or
 * by exit, while the others keep using the memory, checked by content:
 *
 *  - a child execs (this program again, as a helper) while sharing; the
 *    parent then writes all its memory (after the exec, or racing with it);
 *  - a child exits at once; the parent writes all its memory (after the
 *    exit, or racing with it);
 *  - parent -> child -> grandchild, the middle one exits while the
 *    grandchild keeps reading what it inherited; then each writes its own.
 *
 * On a kernel sharing page tables at fork, the one going away drops its
 * share while the others still use (or are about to take over) the tables.
 * These hold on any kernel.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "tap.h"
#include "pts.h"

/* Every case runs with PTE table sharing forced, on kernels that have it. */
static void __attribute__((constructor)) force_sharing(void)
{
	pts_force_sharing();
}

#define PAGE		4096UL
#define PMD		(2UL << 20)
#define SIZE		(16UL << 20)		/* 8 PTE tables */
#define NPAGES		(SIZE / PAGE)
#define WORDS		(PAGE / 8)
#define HELPER		"--exec-helper"

enum { G0, G_PARENT, G_MIDDLE, G_GRANDCHILD, G_CHILD };

static char *mem;
static const char *me = "parent";

static uint64_t val(unsigned long i, int g)
{
	return ((uint64_t)(g + 1) << 48) | i;
}

/* Generation of page i as the middle process of the chain left it. */
static int middle_gen(unsigned long i)
{
	return i % 4 ? G0 : G_MIDDLE;
}

/* Write generation g to every step-th page. */
static void fill_step(int g, unsigned long step)
{
	for (unsigned long i = 0; i < NPAGES; i += step) {
		uint64_t *w = (uint64_t *)(mem + i * PAGE);

		w[0] = val(i, g);
		w[WORDS - 1] = ~val(i, g);
	}
}

static void fill(int g)
{
	fill_step(g, 1);
}

/* Pages not holding gen(i) (or g, if gen is NULL); the first few reported. */
static unsigned long check(int g, int (*gen)(unsigned long), const char *what)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < NPAGES; i++) {
		const uint64_t *w = (const uint64_t *)(mem + i * PAGE);
		int want = gen ? gen(i) : g;

		if (w[0] == val(i, want) && w[WORDS - 1] == ~val(i, want))
			continue;
		if (bad++ < 3)
			tap_diag("%s: %s: page %lu has %#llx, want gen %d", me,
				 what, i, (unsigned long long)w[0], want);
	}
	return bad;
}

/* Maps a fresh 2 MiB-aligned region of 4 KiB pages and fills generation 0. */
static int map_region(void)
{
	char *p = mmap(NULL, SIZE + PMD, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	mem = (char *)(((uintptr_t)p + PMD - 1) & ~(PMD - 1));
	if (mem > p)
		munmap(p, mem - p);
	munmap(mem + SIZE, p + PMD - mem);
	madvise(mem, SIZE, MADV_NOHUGEPAGE);
	fill(G0);
	return 0;
}

/* The parent's part: still generation 0, then all of it rewritten. */
static unsigned long parent_rewrites(void)
{
	unsigned long bad = check(G0, NULL, "before writing");

	fill(G_PARENT);
	return bad + check(G_PARENT, NULL, "own writes");
}

static int reap(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/* The exec'd helper: say it runs, then wait for the parent to be done. */
static int exec_helper(char **argv)
{
	int ready = atoi(argv[2]), go = atoi(argv[3]);
	char x;

	write(ready, "r", 1);
	read(go, &x, 1);
	return 0;
}

/*
 * The child checks what it inherited, then execs; the parent rewrites its
 * memory once the helper runs (after), or straight away (during: then the
 * child also writes some pages before exec, so it leaves a mix of tables).
 */
static void exec_case(int after)
{
	const char *name = after ? "exec-child/parent-writes-after-exec" :
				   "exec-child/parent-writes-during-exec";
	int ready[2], go[2], rc;
	unsigned long bad = 0;
	ssize_t n = 0;
	char x;
	pid_t pid;

	if (map_region() || pipe(ready) || pipe(go)) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		char a[16], b[16];

		me = "child";
		close(ready[0]);
		close(go[1]);
		if (check(G0, NULL, "before exec")) {
			fflush(stdout);
			_exit(1);
		}
		if (!after)
			fill_step(G_CHILD, 64);
		snprintf(a, sizeof(a), "%d", ready[1]);
		snprintf(b, sizeof(b), "%d", go[0]);
		execl("/proc/self/exe", "fork_exec", HELPER, a, b, (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	close(go[0]);
	if (after)
		n = read(ready[0], &x, 1);
	bad = pid < 0 ? 1 : parent_rewrites();
	if (!after)
		n = read(ready[0], &x, 1);
	close(go[1]);			/* lets the helper exit */
	close(ready[0]);
	rc = reap(pid);
	if (rc == 127 && !bad)
		tap_skip("cannot exec /proc/self/exe", "%s", name);
	else
		tap_result(!bad && rc == 0 && n == 1, "%s", name);
	munmap(mem, SIZE);
}

/*
 * The child exits at once; the parent rewrites after reaping it, or during.
 * Or the child writes every eighth page first, and the parent reaps it,
 * then rewrites.
 */
static void exit_case(int after, int child_writes)
{
	const char *name = child_writes ? "exit-child/child-wrote-then-exited" :
			   after ? "exit-child/parent-writes-after-exit" :
				   "exit-child/parent-writes-during-exit";
	unsigned long bad;
	int rc = 0;
	pid_t pid;

	if (map_region()) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		if (child_writes)
			fill_step(G_CHILD, 8);
		_exit(0);
	}
	if (after)
		rc = reap(pid);
	bad = pid < 0 ? 1 : parent_rewrites();
	if (!after)
		rc = reap(pid);
	tap_result(!bad && rc == 0, "%s", name);
	munmap(mem, SIZE);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * The grandchild: keep reading what the middle process left until the
 * middle one has exited (we are reparented), once more after that, then
 * write our own generation. The result goes up the pipe.
 */
static void grandchild(pid_t middle, int started, int result)
{
	double end = now() + 10;
	unsigned long bad = 0, rounds = 0;
	int gone = 0;

	me = "grandchild";
	write(started, "s", 1);
	while (!gone && now() < end) {
		gone = getppid() != middle;
		bad += check(0, middle_gen, "while the middle one exits");
		rounds++;
	}
	if (!gone) {
		tap_diag("grandchild: the middle process did not exit");
		bad++;
	}
	fill(G_GRANDCHILD);
	bad += check(G_GRANDCHILD, NULL, "own writes");
	tap_diag("grandchild: %lu reads while the middle one exited", rounds);
	fflush(stdout);
	write(result, bad ? "f" : "k", 1);
	_exit(0);
}

/* The middle process: writes every fourth page, forks, exits. */
static void middle(int result)
{
	int started[2];
	pid_t pid;
	char x;

	me = "middle";
	for (unsigned long i = 0; i < NPAGES; i += 4) {
		uint64_t *w = (uint64_t *)(mem + i * PAGE);

		w[0] = val(i, G_MIDDLE);
		w[WORDS - 1] = ~val(i, G_MIDDLE);
	}
	if (pipe(started))
		_exit(1);
	fflush(stdout);
	pid = fork();
	if (!pid)
		grandchild(getppid(), started[1], result);
	if (pid < 0 || read(started[0], &x, 1) != 1)
		_exit(1);
	_exit(0);
}

static void chain_case(void)
{
	const char *name = "chain/middle-exits";
	unsigned long bad;
	int result[2], rc;
	char r = 0;
	pid_t pid;

	if (map_region() || pipe(result)) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	/* Reap the grandchild ourselves when the middle one is gone. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	fflush(stdout);
	pid = fork();
	if (!pid) {
		close(result[0]);
		middle(result[1]);
	}
	close(result[1]);
	rc = reap(pid);
	/* Races with the grandchild still reading. */
	bad = parent_rewrites();
	if (read(result[0], &r, 1) != 1 || r != 'k') {
		tap_diag("grandchild failed or died");
		bad++;
	}
	close(result[0]);
	while (wait(NULL) > 0)
		;
	tap_result(!bad && rc == 0, "%s", name);
	munmap(mem, SIZE);
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], HELPER))
		return exec_helper(argv);
	exec_case(1);
	exec_case(0);
	exit_case(1, 0);
	exit_case(0, 0);
	exit_case(1, 1);
	chain_case();
	return tap_finish();
}
