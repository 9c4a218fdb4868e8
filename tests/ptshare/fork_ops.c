// SPDX-License-Identifier: GPL-2.0
/*
 * Memory operations applied on one side of a fork(), checked by content on
 * both sides.
 *
 * Each case maps a 2 MiB-aligned private anonymous region of 4 KiB pages,
 * fills it with generation 0 and forks. One process, the "actor" (the parent
 * in "OP/in-parent", the child in "OP/in-child"), applies the operation, checks
 * its effect and its own view of every page. The other process, the
 * "observer", then checks that it still sees generation 0 everywhere, writes
 * its own generation to every page, and the actor checks its view again. A
 * write or an operation leaking through to the other process, in either
 * direction, shows up as a wrong page. For process-vm-writev and ptrace-poke
 * the observer is the one that writes, into the actor's memory.
 *
 * The actor leaves some pages unwritten, so that on a kernel sharing page
 * tables after fork they stay shared while the observer writes its copies.
 * The sub-ranges operated on cover one whole PTE table and parts of two
 * others. These hold on any kernel.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pts_duo.h"

/* Every case runs with PTE table sharing forced, on kernels that have it. */
static void __attribute__((constructor)) force_sharing(void)
{
	pts_force_sharing();
}

#define PAGE		4096UL
#define PMD		(2UL << 20)
#define SIZE		(8UL << 20)		/* 4 PTE tables */
#define NPAGES		(SIZE / PAGE)

/* Page indices of the sub-range: [1 MiB, 5 MiB), with a middle at 3 MiB. */
#define SUB_LO		256UL
#define SUB_MID		768UL
#define SUB_HI		1280UL
#define SUB_LEN		((SUB_HI - SUB_LO) * PAGE)
#define GROW		768UL			/* pages added by mremap-grow */

/* Generations of page contents; ZERO and HOLE are expectations only. */
enum { G0, G_ACTOR, G_OBSERVER, G_GRANDCHILD };
#define ZERO		PTS_ZERO
#define HOLE		PTS_HOLE

struct ctx {
	char *base;		/* the region, at the same address in both */
	char *moved;		/* where mremap put the actor's pages */
	char *extra;		/* a reservation to unmap when the case ends */
	size_t extra_len;
	struct duo d;		/* the other process */
};

struct op {
	const char *name;
	/* In the actor: apply the operation; problems found, or -1 to skip. */
	int (*apply)(struct ctx *c);
	/* In the observer, before apply: write into the actor; as apply. */
	int (*remote)(struct ctx *c);
	/* Generation the actor must see in page i afterwards (default G0). */
	int (*want)(unsigned long i);
	/* Where page i is in the actor (default: where it was). */
	char *(*addr)(struct ctx *c, unsigned long i);
	/* Pages to check in the actor (default NPAGES). */
	unsigned long npages;
	/* Bytes to leave unmapped right after the region, for it to grow. */
	size_t room;
	/* Further checks, in the actor (actor = 1) or the observer (0). */
	unsigned long (*extra)(struct ctx *c, int actor);
};

/* Where children write why they skip; MAP_SHARED, so fork does not copy it. */
static char *skip_why;
static uint64_t pm[NPAGES];

static int skip(const char *why)
{
	snprintf(skip_why, PAGE, "%s", why);
	return -1;
}

static int in_sub(unsigned long i)
{
	return i >= SUB_LO && i < SUB_HI;
}

/* Problem count of a system call that must succeed. */
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

/* Probe: may p be written? Rewrites the value it holds, so that is harmless. */
static sigjmp_buf probe_env;

static void probe_segv(int sig)
{
	(void)sig;
	siglongjmp(probe_env, 1);
}

static int writable(char *p)
{
	struct sigaction sa = { .sa_handler = probe_segv }, old;
	volatile uint64_t *w = (volatile uint64_t *)p;
	volatile int ok = 0;

	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(probe_env, 1)) {
		*w = *w;
		ok = 1;
	}
	sigaction(SIGSEGV, &old, NULL);
	return ok;
}

static int expect_writable(char *p, int want, const char *what)
{
	if (writable(p) == want)
		return 0;
	tap_diag("%s: %s: page is %swritable", pts_me, what,
		 want ? "not " : "");
	return 1;
}

/* mprotect: read-only, then back to read-write, and write. */
static int mprotect_ro_rw(struct ctx *c)
{
	int bad = must(mprotect(c->base, SIZE, PROT_READ), "mprotect RO");

	bad += pts_check(c->base, 0, NPAGES, G0, "read-only");
	for (unsigned long k = 0; k < SIZE / PMD; k++)
		bad += expect_writable(c->base + k * PMD + 5 * PAGE, 0,
				       "after mprotect RO");
	bad += must(mprotect(c->base, SIZE, PROT_READ | PROT_WRITE), "mprotect RW");
	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	return bad;
}

/* mprotect of a sub-range: splits the VMA in the middle of two tables. */
static int mprotect_part(struct ctx *c)
{
	char *sub = c->base + SUB_LO * PAGE;
	int bad = must(mprotect(sub, SUB_LEN, PROT_READ), "mprotect RO");

	bad += expect_writable(sub, 0, "first read-only page");
	bad += expect_writable(sub + SUB_LEN - PAGE, 0, "last read-only page");
	bad += expect_writable(sub - PAGE, 1, "page before the range");
	bad += expect_writable(sub + SUB_LEN, 1, "page after the range");
	pts_fill(c->base, 0, SUB_LO, G_ACTOR, 2);
	pts_fill(sub + SUB_LEN, SUB_HI, NPAGES - SUB_HI, G_ACTOR, 2);
	bad += pts_check(sub, SUB_LO, SUB_HI - SUB_LO, G0, "read-only range");
	bad += must(mprotect(sub, SUB_LEN, PROT_READ | PROT_WRITE), "mprotect RW");
	pts_fill(sub, SUB_LO, SUB_HI - SUB_LO, G_ACTOR, 2);
	return bad;
}

/* MADV_DONTNEED on part: zeros there in the actor only. */
static int dontneed_part(struct ctx *c)
{
	char *sub = c->base + SUB_LO * PAGE;
	int bad = must(madvise(sub, SUB_LEN, MADV_DONTNEED), "MADV_DONTNEED");

	bad += pts_check(sub, SUB_LO, SUB_HI - SUB_LO, ZERO,
			 "after MADV_DONTNEED");
	bad += pts_check(c->base, 0, SUB_LO, G0, "below the range");
	bad += pts_check(sub + SUB_LEN, SUB_HI, NPAGES - SUB_HI, G0,
			 "above the range");
	pts_fill(sub, SUB_LO, SUB_HI - SUB_LO, G_ACTOR, 2);
	return bad;
}

static int want_dontneed(unsigned long i)
{
	if (!in_sub(i))
		return G0;
	return i % 2 ? ZERO : G_ACTOR;
}

/* munmap of part: a hole in the actor only. */
static int munmap_part(struct ctx *c)
{
	char *sub = c->base + SUB_LO * PAGE;
	int bad = must(munmap(sub, SUB_LEN), "munmap");

	pts_fill(c->base, 0, SUB_LO, G_ACTOR, 2);
	pts_fill(sub + SUB_LEN, SUB_HI, NPAGES - SUB_HI, G_ACTOR, 2);
	return bad;
}

static int want_munmap(unsigned long i)
{
	return in_sub(i) ? HOLE : want_even(i);
}

/* Pages whose old address must be unmapped after the actor's mremap. */
static unsigned long old_unmapped(struct ctx *c, unsigned long first,
				  unsigned long n)
{
	return pts_check(c->base + first * PAGE, first, n, HOLE, "old address");
}

/* mremap of the whole region to a new 2 MiB-aligned address: moves tables. */
static int mremap_move(struct ctx *c)
{
	char *dst = pts_map_aligned(SIZE, PROT_NONE);
	char *p;

	if (!dst)
		return must(-1, "mmap destination");
	c->extra = dst;
	c->extra_len = SIZE;
	p = mremap(c->base, SIZE, SIZE, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	if (p != dst)
		return must(-1, "mremap");
	c->moved = p;
	pts_fill(p, 0, NPAGES, G_ACTOR, 2);
	return 0;
}

static char *addr_moved(struct ctx *c, unsigned long i)
{
	return c->moved + i * PAGE;
}

static unsigned long extra_moved(struct ctx *c, int actor)
{
	return actor ? old_unmapped(c, 0, NPAGES) : 0;
}

/* mremap of the sub-range, keeping its offset in a 2 MiB table. */
static int mremap_move_part(struct ctx *c)
{
	char *dst = pts_map_aligned(SUB_LEN + PMD, PROT_NONE);
	char *to, *p;

	if (!dst)
		return must(-1, "mmap destination");
	c->extra = dst;
	c->extra_len = SUB_LEN + PMD;
	to = dst + SUB_LO * PAGE % PMD;
	p = mremap(c->base + SUB_LO * PAGE, SUB_LEN, SUB_LEN,
		   MREMAP_MAYMOVE | MREMAP_FIXED, to);
	if (p != to)
		return must(-1, "mremap");
	c->moved = p;
	pts_fill(c->base, 0, SUB_LO, G_ACTOR, 2);
	pts_fill(p, SUB_LO, SUB_HI - SUB_LO, G_ACTOR, 2);
	pts_fill(c->base + SUB_HI * PAGE, SUB_HI, NPAGES - SUB_HI, G_ACTOR, 2);
	return 0;
}

static char *addr_moved_part(struct ctx *c, unsigned long i)
{
	if (in_sub(i))
		return c->moved + (i - SUB_LO) * PAGE;
	return c->base + i * PAGE;
}

static unsigned long extra_moved_part(struct ctx *c, int actor)
{
	return actor ? old_unmapped(c, SUB_LO, SUB_HI - SUB_LO) : 0;
}

/*
 * mremap growing the region by 3 MiB: in place (the runner left room after
 * it), or moved to a new 2 MiB-aligned address while growing.
 */
static int grow(struct ctx *c, int move)
{
	char *dst = NULL, *p;

	if (move) {
		dst = pts_map_aligned(SIZE + GROW * PAGE, PROT_NONE);
		if (!dst)
			return must(-1, "mmap destination");
		c->extra = dst;
		c->extra_len = SIZE + GROW * PAGE;
		p = mremap(c->base, SIZE, SIZE + GROW * PAGE,
			   MREMAP_MAYMOVE | MREMAP_FIXED, dst);
	} else {
		p = mremap(c->base, SIZE, SIZE + GROW * PAGE, 0);
	}
	if (p == MAP_FAILED || (move && p != dst))
		return must(-1, "mremap");
	c->moved = p;
	pts_fill(p, 0, NPAGES + GROW, G_ACTOR, 2);
	return 0;
}

static int mremap_grow(struct ctx *c)
{
	return grow(c, 0);
}

static int mremap_grow_move(struct ctx *c)
{
	return grow(c, 1);
}

static int want_grow(unsigned long i)
{
	if (i < NPAGES)
		return want_even(i);
	return i % 2 ? ZERO : G_ACTOR;
}

static unsigned long extra_grow_move(struct ctx *c, int actor)
{
	return actor ? old_unmapped(c, 0, NPAGES) : 0;
}

/* Count pages of [first, first + n) that are neither generation g nor zero. */
static unsigned long check_or_zero(char *p, unsigned long first,
				   unsigned long n, int g, unsigned long *zeros)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++) {
		char *q = p + i * PAGE;

		if (!memcmp(q, pts_zero_page, PAGE))
			(*zeros)++;
		else if (pts_bad_page(q, first + i, g,
				      bad < 3 ? "MADV_FREE" : NULL))
			bad++;
	}
	return bad;
}

/*
 * MADV_FREE on the sub-range, half of it written by the actor first (so
 * private to it), then MADV_PAGEOUT to have the free pages discarded. The
 * actor may read zeros there, never anything else; the observer keeps all.
 */
static int madv_free(struct ctx *c)
{
	char *sub = c->base + SUB_LO * PAGE;
	unsigned long zeros = 0;
	int bad;

	pts_fill(sub, SUB_LO, SUB_MID - SUB_LO, G_ACTOR, 1);
	if (madvise(sub, SUB_LEN, MADV_FREE))
		return skip(errno == EINVAL ? "MADV_FREE not supported" :
			    strerror(errno));
	madvise(sub, SUB_LEN, MADV_PAGEOUT);
	bad = check_or_zero(sub, SUB_LO, SUB_MID - SUB_LO, G_ACTOR, &zeros);
	bad += check_or_zero(sub + (SUB_MID - SUB_LO) * PAGE, SUB_MID,
			     SUB_HI - SUB_MID, G0, &zeros);
	bad += pts_check(c->base, 0, SUB_LO, G0, "below the range");
	bad += pts_check(sub + SUB_LEN, SUB_HI, NPAGES - SUB_HI, G0,
			 "above the range");
	tap_diag("%s: %lu of %lu freed pages were discarded", pts_me, zeros,
		 SUB_HI - SUB_LO);
	pts_fill(sub, SUB_LO, SUB_HI - SUB_LO, G_ACTOR, 1);
	return bad;
}

static int want_free(unsigned long i)
{
	return in_sub(i) ? G_ACTOR : G0;
}

/* Locked memory of this process in kB, from /proc/self/status. */
static long vm_locked_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmLck: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* mlock (which breaks COW for writable private memory), write, munlock. */
static int mlock_munlock(struct ctx *c)
{
	long kb;
	int bad;

	if (mlock(c->base, SIZE))
		return skip(strerror(errno));
	kb = vm_locked_kb();
	bad = kb < (long)(SIZE >> 10);
	if (bad)
		tap_diag("%s: VmLck is %ld kB after mlock", pts_me, kb);
	bad += pts_check(c->base, 0, NPAGES, G0, "locked");
	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	bad += must(munlock(c->base, SIZE), "munlock");
	for (unsigned long i = 1; i < NPAGES; i += 4)
		pts_put(c->base + i * PAGE, i, G_ACTOR);
	return bad;
}

static int want_mlock(unsigned long i)
{
	return i % 2 == 0 || i % 4 == 1 ? G_ACTOR : G0;
}

/*
 * Fork a grandchild from the actor after marking the sub-range: it must see
 * `sub` (ZERO for MADV_WIPEONFORK, HOLE for MADV_DONTFORK) there and G0
 * elsewhere, and its own writes must stay its own.
 */
static int grandchild(struct ctx *c, int sub)
{
	int status, bad;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return must(-1, "fork");
	if (!pid) {
		pts_me = "grandchild";
		bad = pts_check(c->base, 0, SUB_LO, G0, "below the range");
		bad += pts_check(c->base + SUB_LO * PAGE, SUB_LO,
				 SUB_HI - SUB_LO, sub, "marked range");
		bad += pts_check(c->base + SUB_HI * PAGE, SUB_HI,
				 NPAGES - SUB_HI, G0, "above the range");
		pts_fill(c->base, 0, SUB_LO, G_GRANDCHILD, 1);
		pts_fill(c->base + SUB_HI * PAGE, SUB_HI, NPAGES - SUB_HI,
			 G_GRANDCHILD, 1);
		bad += pts_check(c->base, 0, SUB_LO, G_GRANDCHILD,
				 "own writes");
		fflush(stdout);
		_exit(bad ? 1 : 0);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return must(-1, "grandchild check");
	return 0;
}

static int wipe_or_dont_fork(struct ctx *c, int advice, int sub)
{
	int bad;

	if (madvise(c->base + SUB_LO * PAGE, SUB_LEN, advice))
		return skip(errno == EINVAL ? "madvise advice not supported" :
			    strerror(errno));
	bad = grandchild(c, sub);
	bad += pts_check(c->base, 0, NPAGES, G0, "after the grandchild");
	pts_fill(c->base, 0, NPAGES, G_ACTOR, 2);
	return bad;
}

static int wipeonfork(struct ctx *c)
{
	return wipe_or_dont_fork(c, MADV_WIPEONFORK, ZERO);
}

static int dontfork(struct ctx *c)
{
	return wipe_or_dont_fork(c, MADV_DONTFORK, HOLE);
}

static int want_fifth(unsigned long i)
{
	return i % 5 ? G0 : G_ACTOR;
}

/* Writes through /proc/self/mem: GUP with FOLL_FORCE, no user fault first. */
static int procmem_write(struct ctx *c)
{
	int fd = open("/proc/self/mem", O_RDWR);
	int bad = 0;

	if (fd < 0)
		return skip("cannot open /proc/self/mem");
	for (unsigned long i = 0; i < NPAGES; i += 5) {
		uint64_t v[2] = { pts_val(i, G_ACTOR), ~pts_val(i, G_ACTOR) };
		off_t off = (off_t)(uintptr_t)(c->base + i * PAGE);

		if (pwrite(fd, &v[0], 8, off) != 8 ||
		    pwrite(fd, &v[1], 8, off + PAGE - 8) != 8)
			bad++;
	}
	close(fd);
	if (bad)
		tap_diag("%s: %d pwrites to /proc/self/mem failed", pts_me,
			 bad);
	return bad;
}

/* The same into read-only memory: FOLL_FORCE must COW, not make it writable. */
static int procmem_write_ro(struct ctx *c)
{
	int bad = must(mprotect(c->base, SIZE, PROT_READ), "mprotect RO");

	bad += procmem_write(c);
	bad += expect_writable(c->base + 5 * PAGE, 0, "after /proc/self/mem write");
	return bad;
}

static int nothing(struct ctx *c)
{
	(void)c;
	return 0;
}

/* The observer writes into the actor with process_vm_writev(). */
static int vm_writev(struct ctx *c)
{
	int bad = 0;

	for (unsigned long i = 0; i < NPAGES; i += 5) {
		uint64_t v[2] = { pts_val(i, G_ACTOR), ~pts_val(i, G_ACTOR) };
		struct iovec l[2] = { { &v[0], 8 }, { &v[1], 8 } };
		struct iovec r[2] = { { c->base + i * PAGE, 8 },
				      { c->base + i * PAGE + PAGE - 8, 8 } };

		if (process_vm_writev(c->d.peer, l, 2, r, 2, 0) == 16)
			continue;
		if (errno == ENOSYS || errno == EPERM)
			return skip(strerror(errno));
		bad++;
	}
	if (bad)
		tap_diag("%s: %d process_vm_writev calls failed", pts_me, bad);
	return bad;
}

static int want_seventh(unsigned long i)
{
	return i % 7 ? G0 : G_ACTOR;
}

/* The observer attaches to the actor and writes with PTRACE_POKEDATA. */
static int ptrace_poke(struct ctx *c)
{
	int status, bad = 0;

	if (ptrace(PTRACE_ATTACH, c->d.peer, 0, 0))
		return skip(strerror(errno));
	if (waitpid(c->d.peer, &status, __WALL) != c->d.peer ||
	    !WIFSTOPPED(status)) {
		ptrace(PTRACE_DETACH, c->d.peer, 0, 0);
		return must(-1, "waiting for the tracee to stop");
	}
	for (unsigned long i = 0; i < NPAGES; i += 7) {
		char *p = c->base + i * PAGE;

		bad += ptrace(PTRACE_POKEDATA, c->d.peer, p,
			      (void *)pts_val(i, G_ACTOR)) != 0;
		bad += ptrace(PTRACE_POKEDATA, c->d.peer, p + PAGE - 8,
			      (void *)~pts_val(i, G_ACTOR)) != 0;
	}
	errno = 0;
	if ((uint64_t)ptrace(PTRACE_PEEKDATA, c->d.peer, c->base + 7 * PAGE,
			     0) !=
	    pts_val(7, G_ACTOR))
		bad++;
	if (bad)
		tap_diag("%s: %d POKEDATA/PEEKDATA failed or mismatched",
			 pts_me, bad);
	bad += must(ptrace(PTRACE_DETACH, c->d.peer, 0, 0), "PTRACE_DETACH");
	return bad;
}

/* Reads the pagemap entries of the region's pages into pm[]. */
static int read_pagemap(char *p)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	ssize_t n = -1;

	if (fd >= 0) {
		n = pread(fd, pm, sizeof(pm), (off_t)((uintptr_t)p / PAGE * 8));
		close(fd);
	}
	return n == (ssize_t)sizeof(pm) ? 0 : -1;
}

#define PM_SOFT_DIRTY	(1ULL << 55)

/* Clear soft-dirty ("4" to clear_refs), then write every third page. */
static int soft_dirty(struct ctx *c)
{
	unsigned long dirty = 0;
	int fd;

	if (read_pagemap(c->base))
		return skip("cannot read /proc/self/pagemap");
	for (unsigned long i = 0; i < NPAGES; i++)
		dirty += !!(pm[i] & PM_SOFT_DIRTY);
	if (!dirty)
		return skip("no soft-dirty bits in pagemap");
	fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0 || write(fd, "4", 1) != 1) {
		if (fd >= 0)
			close(fd);
		return skip("cannot clear soft-dirty bits");
	}
	close(fd);
	pts_fill(c->base, 0, NPAGES, G_ACTOR, 3);
	return 0;
}

static int want_third(unsigned long i)
{
	return i % 3 ? G0 : G_ACTOR;
}

/*
 * The actor: soft-dirty exactly on the pages it wrote since clearing. The
 * observer (before writing): its bits are untouched by the actor's clearing.
 */
static unsigned long extra_soft_dirty(struct ctx *c, int actor)
{
	unsigned long bad = 0;

	if (read_pagemap(c->base))
		return must(-1, "reading pagemap");
	for (unsigned long i = 0; i < NPAGES; i++) {
		int want = actor ? i % 3 == 0 : 1;

		if (!!(pm[i] & PM_SOFT_DIRTY) == want)
			continue;
		if (bad++ < 3)
			tap_diag("%s: page %lu is %ssoft-dirty", pts_me, i,
				 want ? "not " : "");
	}
	return bad;
}

static const struct op ops[] = {
	{ .name = "mprotect-ro-rw", .apply = mprotect_ro_rw, .want = want_even },
	{ .name = "mprotect-part", .apply = mprotect_part, .want = want_even },
	{ .name = "dontneed-part", .apply = dontneed_part, .want = want_dontneed },
	{ .name = "munmap-part", .apply = munmap_part, .want = want_munmap },
	{ .name = "mremap-move", .apply = mremap_move, .want = want_even,
	  .addr = addr_moved, .extra = extra_moved },
	{ .name = "mremap-move-part", .apply = mremap_move_part,
	  .want = want_even, .addr = addr_moved_part, .extra = extra_moved_part },
	{ .name = "mremap-grow", .apply = mremap_grow, .want = want_grow,
	  .addr = addr_moved, .npages = NPAGES + GROW, .room = GROW * PAGE },
	{ .name = "mremap-grow-move", .apply = mremap_grow_move,
	  .want = want_grow, .addr = addr_moved, .npages = NPAGES + GROW,
	  .extra = extra_grow_move },
	{ .name = "madv-free", .apply = madv_free, .want = want_free },
	{ .name = "mlock-munlock", .apply = mlock_munlock, .want = want_mlock },
	{ .name = "wipeonfork", .apply = wipeonfork, .want = want_even },
	{ .name = "dontfork", .apply = dontfork, .want = want_even },
	{ .name = "procmem-write", .apply = procmem_write, .want = want_fifth },
	{ .name = "procmem-write-ro", .apply = procmem_write_ro,
	  .want = want_fifth },
	{ .name = "process-vm-writev", .apply = nothing, .remote = vm_writev,
	  .want = want_fifth },
	{ .name = "ptrace-poke", .apply = nothing, .remote = ptrace_poke,
	  .want = want_seventh },
	{ .name = "soft-dirty", .apply = soft_dirty, .want = want_third,
	  .extra = extra_soft_dirty },
};

/* The actor's view of every page, after the operation. */
static unsigned long expect(const struct op *op, struct ctx *c)
{
	unsigned long n = op->npages ? op->npages : NPAGES, bad = 0;

	for (unsigned long i = 0; i < n; i++) {
		int g = op->want ? op->want(i) : G0;
		char *p = op->addr && g != HOLE ? op->addr(c, i) :
			  c->base + i * PAGE;

		if (pts_bad_page(p, i, g, bad < 3 ? op->name : NULL))
			bad++;
	}
	if (op->extra)
		bad += op->extra(c, 1);
	return bad;
}

static int actor(const struct op *op, struct ctx *c)
{
	unsigned long bad = 0;
	int r = -1;

	duo_wait(&c->d);		/* the observer's remote writes are done */
	if (!skip_why[0]) {
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
	if (r > 0)
		bad += r;
	duo_signal(&c->d);
	duo_wait(&c->d);		/* the actor is done */
	bad += pts_check(c->base, 0, NPAGES, G0, "observer before writing");
	if (op->extra && !skip_why[0])
		bad += op->extra(c, 0);
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
	int r;

	snprintf(name, sizeof(name), "%s/%s", op->name,
		 in_parent ? "in-parent" : "in-child");
	c.base = pts_map_aligned(SIZE + op->room, PROT_READ | PROT_WRITE);
	if (!c.base) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	if (op->room)
		munmap(c.base + SIZE, op->room);
	pts_fill(c.base, 0, NPAGES, G0, 1);
	skip_why[0] = 0;
	if (duo_fork(&c.d) < 0) {
		tap_result(0, "%s (fork: %s)", name, strerror(errno));
		return;
	}
	r = c.d.child == in_parent ? observer(op, &c) : actor(op, &c);
	r = duo_end(&c.d, r);
	duo_report(r, skip_why[0] ? skip_why : "unsupported", name);
	munmap(c.base, SIZE + op->room);	/* with what grew into the room */
	if (c.extra)
		munmap(c.extra, c.extra_len);
}

int main(void)
{
	skip_why = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (skip_why == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (unsigned long k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		run(&ops[k], 1);
		run(&ops[k], 0);
	}
	return tap_finish();
}
