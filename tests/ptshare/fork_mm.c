// SPDX-License-Identifier: GPL-2.0
/*
 * Memory management that moves or replaces pages behind a process's back
 * (swap, NUMA migration, KSM, THP collapse) after fork(), checked by content
 * on both sides.
 *
 * As in fork_ops: each case maps a 2 MiB-aligned private anonymous region of
 * 4 KiB pages, fills generation 0 and forks; the "actor" (the parent in
 * "CASE/in-parent", the child in "CASE/in-child") has the pages moved and
 * writes some; the "observer" then checks it still sees generation 0, writes
 * its own generation everywhere, and the actor checks again.
 *
 * Pages still shared with the other process are left alone by MADV_PAGEOUT
 * and need MPOL_MF_MOVE_ALL to migrate, and MADV_COLLAPSE wants a writable
 * PTE per table, so the actor writes some pages first (which makes them its
 * own) and leaves the rest shared. These hold on any kernel; a case skips
 * when the kernel or the machine lacks the feature (no swap, one NUMA node,
 * no KSM, no THP).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "pts_duo.h"

/* Every case runs with PTE table sharing forced, on kernels that have it. */
static void __attribute__((constructor)) force_sharing(void)
{
	pts_force_sharing();
}

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#define MPOL_MF_MOVE		(1 << 1)
#define MPOL_MF_MOVE_ALL	(1 << 2)

#define PAGE		4096UL
#define PMD		(2UL << 20)
#define SIZE		(8UL << 20)		/* 4 PTE tables */
#define NPAGES		(SIZE / PAGE)
#define PM_SWAPPED	(1ULL << 62)
#define KSM		"/sys/kernel/mm/ksm/"

enum { G0, G_ACTOR, G_OBSERVER, G_ACTOR2 };

struct ctx {
	char *base;		/* the region, at the same address in both */
	struct duo d;		/* the other process */
};

struct op {
	const char *name;
	/* In the parent before fork; -1 to skip the case. */
	int (*prepare)(struct ctx *c);
	/* In both processes right after fork. */
	void (*after_fork)(struct ctx *c, int child);
	/* In the observer, before the actor starts; problems, or -1 to skip. */
	int (*remote)(struct ctx *c);
	/* In the actor: move the pages, write some; problems, or -1 to skip. */
	int (*apply)(struct ctx *c);
	/* Generation the actor must see in page i afterwards. */
	int (*want)(unsigned long i);
	/* In the parent when the case is over. */
	void (*cleanup)(void);
	/* Generation 0 is the same in every page (for KSM to merge). */
	int same_g0;
};

/* What children tell the parent; MAP_SHARED, so fork does not copy it. */
static struct shared {
	char why[256];
	int ksm_never_merged;
} *sh;
static uint64_t pm[NPAGES];

static int skip(const char *why)
{
	snprintf(sh->why, sizeof(sh->why), "%s", why);
	return -1;
}

static int must(int ret, const char *what)
{
	if (ret == 0)
		return 0;
	tap_diag("%s: %s: %s", pts_me, what, strerror(errno));
	return 1;
}

static int want_even(unsigned long i)
{
	return i % 2 ? G0 : G_ACTOR;
}

/* Even pages written before the pages were moved, i % 4 == 1 after. */
static int want_before_after(unsigned long i)
{
	return i % 2 == 0 || i % 4 == 1 ? G_ACTOR : G0;
}

static void write_after(struct ctx *c)
{
	for (unsigned long i = 1; i < NPAGES; i += 4)
		pts_put(c->base + i * PAGE, i, G_ACTOR);
}

/* Pages of the region whose pagemap entry has bit `bit`, -1 on error. */
static long pagemap_count(char *p, uint64_t bit)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	ssize_t n = -1;
	long count = 0;

	if (fd >= 0) {
		n = pread(fd, pm, sizeof(pm), (off_t)((uintptr_t)p / PAGE * 8));
		close(fd);
	}
	if (n != (ssize_t)sizeof(pm))
		return -1;
	for (unsigned long i = 0; i < NPAGES; i++)
		count += !!(pm[i] & bit);
	return count;
}

/* Is there an active swap device? */
static int have_swap(void)
{
	char line[256];
	int lines = 0;
	FILE *f = fopen("/proc/swaps", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		lines++;
	fclose(f);
	return lines > 1;	/* a header, then one line per device */
}

static int need_swap(struct ctx *c)
{
	(void)c;
	return have_swap() ? 0 : skip("no swap");
}

/* Swap out the region, whose pages are this process's own; -1 to skip. */
static int page_out(struct ctx *c)
{
	long n;

	if (madvise(c->base, SIZE, MADV_PAGEOUT))
		return skip(errno == EINVAL ? "MADV_PAGEOUT not supported" :
			    strerror(errno));
	n = pagemap_count(c->base, PM_SWAPPED);
	if (n <= 0)
		return skip("no page was swapped out");
	tap_diag("%s: %ld of %lu pages swapped out", pts_me, n, NPAGES);
	return 0;
}

/*
 * MADV_PAGEOUT in the actor after fork: first of the untouched region (pages
 * shared with the observer must stay), then with the even pages written (so
 * they are the actor's own and get swapped); then read everything back and
 * write every fourth page, swapped ones, to swap them in by a write fault.
 */
static int pageout_after_fork(struct ctx *c)
{
	int bad, r;

	if (madvise(c->base, SIZE, MADV_PAGEOUT))
		return skip(errno == EINVAL ? "MADV_PAGEOUT not supported" :
			    strerror(errno));
	bad = pts_check(c->base, 0, NPAGES, G0,
			"after MADV_PAGEOUT of shared pages");
	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	r = page_out(c);
	if (r < 0)
		return bad ? bad : r;
	for (unsigned long i = 0; i < NPAGES; i++)
		bad += pts_bad_page(c->base + i * PAGE, i, want_even(i),
				    bad < 3 ? "swapped in" : NULL);
	pts_fill(c->base, 0, NPAGES, G_ACTOR2, 4);
	return bad;
}

static int want_pageout(unsigned long i)
{
	if (i % 4 == 0)
		return G_ACTOR2;
	return want_even(i);
}

/* Swapped out before fork: both inherit swap entries, the actor reads first. */
static int prepare_swapped(struct ctx *c)
{
	if (!have_swap())
		return skip("no swap");
	return page_out(c);
}

static int read_swapped(struct ctx *c)
{
	int bad = pts_check(c->base, 0, NPAGES, G0, "swapped in");

	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	return bad;
}

static void *pages[NPAGES];
static int nodes[NPAGES], status[NPAGES];

/* move_pages(2) of the whole region to node (or a query if node < 0). */
static long move_to(struct ctx *c, int node, int flags)
{
	for (unsigned long i = 0; i < NPAGES; i++) {
		pages[i] = c->base + i * PAGE;
		nodes[i] = node;
	}
	return syscall(SYS_move_pages, 0, NPAGES, pages,
		       node < 0 ? NULL : nodes, status, flags);
}

/* Two NUMA nodes, and the region (still the parent's own) on node 0. */
static int prepare_numa(struct ctx *c)
{
	if (access("/sys/devices/system/node/node1", F_OK))
		return skip("fewer than 2 NUMA nodes");
	if (move_to(c, 0, MPOL_MF_MOVE) < 0)
		return skip(errno == ENOSYS ? "move_pages not supported" :
			    strerror(errno));
	return 0;
}

/*
 * move_pages() to node 1 in the actor: the even pages are its own, the odd
 * ones still shared, which MPOL_MF_MOVE_ALL (root only) migrates too.
 */
static int move_pages_node1(struct ctx *c)
{
	int flags = geteuid() ? MPOL_MF_MOVE : MPOL_MF_MOVE_ALL;
	unsigned long on1 = 0;
	int bad = 0;

	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	if (move_to(c, 1, flags) < 0)
		return skip(strerror(errno));
	if (move_to(c, -1, 0) < 0)
		return must(-1, "move_pages query");
	for (unsigned long i = 0; i < NPAGES; i++)
		on1 += status[i] == 1;
	tap_diag("%s: %lu of %lu pages on node 1", pts_me, on1, NPAGES);
	for (unsigned long i = 0; i < NPAGES; i++)
		bad += pts_bad_page(c->base + i * PAGE, i, want_even(i),
				    bad < 3 ? "migrated" : NULL);
	if (!on1 && !bad)
		return skip("no page moved to node 1");
	write_after(c);
	return bad;
}

/* KSM's settings, saved to be put back. */
static const char *const ksm_knobs[] = { "run", "pages_to_scan", "sleep_millisecs" };
static long ksm_saved[3] = { -1, -1, -1 }, ksm_base;

static long ksm_read(const char *knob)
{
	char path[128];

	snprintf(path, sizeof(path), KSM "%s", knob);
	return pts_read_long(path);
}

static int ksm_write(const char *knob, long v)
{
	char path[128];
	int ok;
	FILE *f;

	snprintf(path, sizeof(path), KSM "%s", knob);
	f = fopen(path, "w");
	if (!f)
		return -1;
	ok = fprintf(f, "%ld", v) > 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

static void ksm_restore(void)
{
	for (int k = 2; k >= 0; k--)
		if (ksm_saved[k] >= 0)
			ksm_write(ksm_knobs[k], ksm_saved[k]);
}

/*
 * KSM scanning fast, and the region (every page alike) mergeable. It may
 * start merging before the fork: that is fine, only contents are checked.
 */
static int prepare_ksm(struct ctx *c)
{
	static const long want[3] = { 1, 10000, 10 };

	if (access(KSM "run", F_OK))
		return skip("KSM not built");
	if (sh->ksm_never_merged)
		return skip("KSM did not merge in the previous case");
	for (int k = 0; k < 3; k++)
		ksm_saved[k] = ksm_read(ksm_knobs[k]);
	for (int k = 0; k < 3; k++)
		if (ksm_write(ksm_knobs[k], want[k]))
			return skip("cannot configure KSM (not root?)");
	ksm_base = ksm_read("pages_sharing");
	if (madvise(c->base, SIZE, MADV_MERGEABLE))
		return skip(strerror(errno));
	return 0;
}

/*
 * The child rewrites the first half with the same contents: these become
 * pages of its own that KSM can merge however the kernel shares at fork.
 */
static void ksm_child_copies(struct ctx *c, int child)
{
	if (child)
		pts_fill(c->base, 0, NPAGES / 2, G0, 1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Pages of process pid that KSM merged, -1 if the kernel does not say. */
static long ksm_merged(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ksm_merging_pages", (int)pid);
	return pts_read_long(path);
}

/*
 * Merged pages of both processes; without /proc/PID/ksm_merging_pages, the
 * rise of pages_sharing (which lags: KSM drops the pages of earlier cases
 * only as it rescans).
 */
static long ksm_progress(struct ctx *c)
{
	long self = ksm_merged(getpid()), peer = ksm_merged(c->d.peer);

	if (self >= 0 && peer >= 0)
		return self + peer;
	return ksm_read("pages_sharing") - ksm_base;
}

/* The observer waits (up to 20 s) for KSM to merge the pages. */
static int ksm_wait(struct ctx *c)
{
	double end = now() + 20;
	long merged = 0;

	while (now() < end) {
		merged = ksm_progress(c);
		if (merged >= (long)NPAGES / 2)
			break;
		usleep(100 * 1000);
	}
	tap_diag("%s: %ld pages merged", pts_me, merged);
	if (merged <= 0) {
		sh->ksm_never_merged = 1;
		return skip("KSM merged nothing in 20 s");
	}
	return 0;
}

/* The actor writes the even pages: each write breaks a KSM page's COW. */
static int ksm_write_even(struct ctx *c)
{
	int bad = pts_check(c->base, 0, NPAGES, G0, "merged");

	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	return bad;
}

/* AnonHugePages (kB) of the mappings in [p, p + SIZE), from smaps. */
static long anon_huge_kb(char *p)
{
	unsigned long start, end;
	char line[256];
	long kb, sum = 0;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2)
			in = start < (uintptr_t)p + SIZE && end > (uintptr_t)p;
		else if (in && sscanf(line, "AnonHugePages: %ld", &kb) == 1)
			sum += kb;
	}
	fclose(f);
	return sum;
}

/*
 * MADV_HUGEPAGE and MADV_COLLAPSE in the actor, after writing one page per
 * table (a table of read-only PTEs is not collapsed). The observer keeps
 * its 4 KiB pages.
 */
static int collapse(struct ctx *c)
{
	long kb;
	int bad;

	if (madvise(c->base, SIZE, MADV_HUGEPAGE))
		return skip("THP not supported");
	for (unsigned long i = 3; i < NPAGES; i += PMD / PAGE)
		pts_put(c->base + i * PAGE, i, G_ACTOR);
	if (madvise(c->base, SIZE, MADV_COLLAPSE))
		return skip(errno == EINVAL ? "MADV_COLLAPSE not supported or refused" :
			    strerror(errno));
	/* It says it collapsed every table: smaps must show THPs. */
	kb = anon_huge_kb(c->base);
	tap_diag("%s: %ld kB of THP after MADV_COLLAPSE", pts_me, kb);
	bad = kb <= 0;
	write_after(c);
	return bad;
}

static int want_collapse(unsigned long i)
{
	return i % (PMD / PAGE) == 3 || i % 4 == 1 ? G_ACTOR : G0;
}

static const struct op ops[] = {
	{ .name = "pageout-after-fork", .prepare = need_swap,
	  .apply = pageout_after_fork, .want = want_pageout },
	{ .name = "pageout-before-fork", .prepare = prepare_swapped,
	  .apply = read_swapped, .want = want_even },
	{ .name = "move-pages", .prepare = prepare_numa,
	  .apply = move_pages_node1, .want = want_before_after },
	{ .name = "ksm", .prepare = prepare_ksm, .after_fork = ksm_child_copies,
	  .remote = ksm_wait, .apply = ksm_write_even, .want = want_even,
	  .cleanup = ksm_restore, .same_g0 = 1 },
	{ .name = "collapse", .apply = collapse, .want = want_collapse },
};

static unsigned long expect(const struct op *op, struct ctx *c)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		bad += pts_bad_page(c->base + i * PAGE, i, op->want(i),
				    bad < 3 ? op->name : NULL);
	return bad;
}

static int actor(const struct op *op, struct ctx *c)
{
	unsigned long bad = 0;
	int r = -1;

	duo_wait(&c->d);		/* the observer is ready */
	if (!sh->why[0]) {
		r = op->apply(c);
		if (r >= 0)
			bad = r + expect(op, c);
	}
	duo_signal(&c->d);
	duo_wait(&c->d);		/* the observer has written its copy */
	if (r < 0)
		return RES_SKIP;
	bad += expect(op, c);
	return bad ? RES_FAIL : RES_OK;
}

static int observer(const struct op *op, struct ctx *c)
{
	unsigned long bad = 0;
	int r = 0;

	if (op->remote)
		r = op->remote(c);
	duo_signal(&c->d);
	duo_wait(&c->d);		/* the actor is done */
	bad += pts_check(c->base, 0, NPAGES, G0, "observer before writing");
	pts_fill(c->base, 0, NPAGES, G_OBSERVER, 1);
	bad += pts_check(c->base, 0, NPAGES, G_OBSERVER,
			 "observer's own writes");
	duo_signal(&c->d);
	return bad ? RES_FAIL : (r < 0 ? RES_SKIP : RES_OK);
}

static void run(const struct op *op, int in_parent)
{
	struct ctx c = { 0 };
	char name[64];
	int r = RES_SKIP;

	snprintf(name, sizeof(name), "%s/%s", op->name,
		 in_parent ? "in-parent" : "in-child");
	c.base = pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	if (!c.base) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	pts_same_g0 = op->same_g0;
	sh->why[0] = 0;
	pts_fill(c.base, 0, NPAGES, G0, 1);
	if (op->prepare && op->prepare(&c) < 0)
		goto out;
	if (duo_fork(&c.d) < 0) {
		r = RES_FAIL;
		tap_diag("fork: %s", strerror(errno));
		goto out;
	}
	if (op->after_fork)
		op->after_fork(&c, c.d.child);
	r = c.d.child == in_parent ? observer(op, &c) : actor(op, &c);
	r = duo_end(&c.d, r);
out:
	duo_report(r, sh->why[0] ? sh->why : "unsupported", name);
	munmap(c.base, SIZE);
	if (op->cleanup)
		op->cleanup();
}

int main(void)
{
	sh = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (unsigned long k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		run(&ops[k], 1);
		run(&ops[k], 0);
	}
	return tap_finish();
}
