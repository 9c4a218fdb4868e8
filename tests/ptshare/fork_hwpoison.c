// SPDX-License-Identifier: GPL-2.0
/*
 * fork_hwpoison: a memory failure in a shared PTE table leaves every
 * sharer's RSS counters balanced.
 *
 * A process P with one PTE table of written memory forks C with sharing
 * forced (vm.pt_share=2), and poisons the first page (MADV_HWPOISON).
 * The poisoning takes a reference to the page, so P unshares first: P,
 * which accounted the table, gets a copy, and leaves the table, now
 * accounted by nobody, to C.  Memory-failure then puts a hwpoison entry
 * into both tables.  When C exits, it takes the table over and adds its
 * entries to its RSS, and its zap takes them off again: both must skip
 * the hwpoison entry, as fork, zap and memory-failure do.  A wrong count
 * shows as "BUG: Bad rss-counter state" in the kernel log when C's mm
 * goes away, which this test reads from /dev/kmsg.
 * The other 511 pages must keep their contents in both processes.
 *
 * Needs CONFIG_MEMORY_FAILURE and CAP_SYS_ADMIN; skipped without them,
 * and on a kernel without ptshare.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "tap.h"
#include "pts.h"

#define NPAGES		(PTS_PMD / PTS_PAGE)

static volatile sig_atomic_t got_sigbus;

static void on_sigbus(int sig)
{
	(void)sig;
	got_sigbus = 1;
}

static uint64_t tag(unsigned long i)
{
	return 0x5eed000000000000ULL | i;
}

/* Pages of @mem, the first one excepted, that lost their tag. */
static unsigned long bad_pages(const char *mem)
{
	unsigned long i, bad = 0;

	for (i = 1; i < NPAGES; i++)
		bad += *(const uint64_t *)(mem + i * PTS_PAGE) != tag(i);
	return bad;
}

struct report {
	char what;	/* K: poisoned, S: no MADV_HWPOISON, E: error, B: bad */
	int err;	/* errno of MADV_HWPOISON */
	pid_t pid;	/* of C */
};

/* C: outlive P, then check its pages. Exit status 0 if they are intact. */
static int child(char *mem, int parent_gone_r)
{
	char c;

	/* EOF once P has exited. */
	while (read(parent_gone_r, &c, 1) > 0)
		;
	return bad_pages(mem) ? 2 : 0;
}

/*
 * P: map and fill one table, fork C, poison the first page, report, and
 * exit when the test says so (EOF on @go_r).  Exit status 0 if its pages
 * kept their contents.
 */
static int parent(int report_w, int go_r)
{
	struct sigaction sa = { .sa_handler = on_sigbus };
	struct report r = { 0 };
	unsigned long i;
	int gone[2];
	char *mem;
	char c;

	mem = pts_map_tables(PTS_PMD);
	for (i = 0; i < NPAGES; i++)
		*(uint64_t *)(mem + i * PTS_PAGE) = tag(i);
	if (pipe(gone))
		return 10;
	r.pid = fork();
	if (r.pid < 0)
		return 11;
	if (r.pid == 0) {
		close(gone[1]);
		close(go_r);
		close(report_w);
		_exit(child(mem, gone[0]));
	}
	close(gone[0]);

	/* The poisoning process gets an action-required SIGBUS: survive it. */
	sigaction(SIGBUS, &sa, NULL);
	if (madvise(mem, PTS_PAGE, MADV_HWPOISON)) {
		r.err = errno;
		r.what = errno == EINVAL || errno == EPERM ? 'S' : 'E';
	} else {
		r.what = bad_pages(mem) ? 'B' : 'K';
	}
	if (write(report_w, &r, sizeof(r)) != sizeof(r))
		return 12;
	close(report_w);
	while (read(go_r, &c, 1) > 0)
		;
	return bad_pages(mem) ? 13 : 0;
}

/*
 * An mm that exited is checked (check_mm()) when its last reference goes,
 * which a CPU that still uses it lazily may hold: run a short process on
 * every CPU, so that each switches to another mm.
 */
static void switch_every_cpu(void)
{
	long cpu, ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;
	pid_t pid;

	for (cpu = 0; cpu < ncpu; cpu++) {
		pid = fork();
		if (pid == 0) {
			CPU_ZERO(&set);
			CPU_SET(cpu, &set);
			sched_setaffinity(0, sizeof(set), &set);
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	usleep(200000);
}

/* The new records of /dev/kmsg that contain @needle. */
static int kmsg_count(int fd, const char *needle)
{
	char rec[8192];
	ssize_t n;
	int hits = 0;

	for (;;) {
		n = read(fd, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)	/* overwritten records */
			continue;
		if (n <= 0)
			return hits;
		rec[n] = 0;
		if (strstr(rec, needle)) {
			printf("# kernel: %s", rec);
			hits++;
		}
	}
}

int main(void)
{
	int report[2], go[2], st, kmsg, bad_rss;
	long shared0, shared;
	struct report r;
	pid_t p, w;

	if (!pts_force_sharing()) {
		tap_skip("no vm.pt_share: kernel without ptshare",
			 "hwpoison in a shared table");
		return tap_finish();
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg < 0 || lseek(kmsg, 0, SEEK_END) < 0) {
		perror("/dev/kmsg");
		return 1;
	}
	shared0 = pts_vmstat("ptshare_fork_shared");
	if (pipe(report) || pipe(go)) {
		perror("pipe");
		return 1;
	}

	p = fork();
	if (p < 0) {
		perror("fork");
		return 1;
	}
	if (p == 0) {
		close(report[0]);
		close(go[1]);
		_exit(parent(report[1], go[0]));
	}
	close(report[1]);
	close(go[0]);

	if (read(report[0], &r, sizeof(r)) != sizeof(r)) {
		tap_result(0, "the parent reports after MADV_HWPOISON");
		return tap_finish();
	}
	if (r.what == 'S') {
		close(go[1]);
		while (wait(NULL) > 0)
			;
		tap_skip(strerror(r.err), "MADV_HWPOISON (needs CONFIG_MEMORY_FAILURE)");
		return tap_finish();
	}
	shared = pts_vmstat("ptshare_fork_shared") - shared0;
	tap_result(shared >= 1, "the table was shared at fork (%ld shared)",
		   shared);
	tap_result(r.what == 'K',
		   "MADV_HWPOISON in the parent: %c, %s; 511 pages intact",
		   r.what, r.err ? strerror(r.err) : "no error");

	close(go[1]);
	w = waitpid(p, &st, 0);
	tap_result(w == p && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "the parent's pages are intact when it exits (status %#x)",
		   st);
	/* C takes the table over as it exits. */
	w = waitpid(r.pid, &st, 0);
	tap_result(w == r.pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		   "the child's pages are intact after the parent left (status %#x)",
		   st);

	switch_every_cpu();
	bad_rss = kmsg_count(kmsg, "Bad rss-counter");
	tap_result(bad_rss == 0, "no Bad rss-counter state in the kernel log (%d)",
		   bad_rss);
	return tap_finish();
}
