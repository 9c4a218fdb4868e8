// SPDX-License-Identifier: GPL-2.0
/*
 * Groups of unrelated processes that share a file: the fuzzer's
 * operation "unrelated" (op_unrelated()) and the programs it starts
 * (fuzz -W, unrelated_worker()).
 *
 * The process that draws the operation, the coordinator, creates an object
 * of 2-10 MiB: a memfd, a regular file (on the guest's ext4 scratch disk
 * if there is one, else on tmpfs) or a SysV shm segment. It maps the
 * object MAP_SHARED at a PTE table boundary and writes every page (but a
 * few holes, sometimes), so that its tables are full and, with
 * vm.pt_share_shared=2, a read fault of another process may attach them.
 * Then it forks and execs 2-4 workers: new programs, related to it and to
 * each other by nothing but the object, which they map themselves (the
 * memfd through an inherited descriptor or /proc/PID/fd/N, the file by
 * its path, the segment by its id). Each worker runs 10-39 operations
 * drawn from the seed, racing the others and the coordinator's reads:
 * reads of any page, writes of the pages it owns (page % workers),
 * hole punches (fallocate(PUNCH_HOLE|KEEP_SIZE) or MADV_REMOVE),
 * truncations (shrink, a few accesses, grow back), and on its own mapping
 * mprotect, munmap, mmap again, mremap to another address (at the same
 * offset within 2 MiB, or another), MADV_DONTNEED, MADV_POPULATE_READ
 * and _WRITE, msync and fsync.
 *
 * Which of two racing accesses comes first is not deterministic, so the
 * model is a set of invariants that hold under any interleaving. A clock
 * in shared memory orders the events: each write of a page, each zap
 * (punch or truncation) and each access takes a tick before and one after.
 * Word w of page p written at tick t holds uval(p, t, w); the owner of a
 * page is its only writer and logs its last writes [ts, te], every zap is
 * logged with its range and ticks. An access of page p between ticks t0
 * and t1 must see, in each word:
 *   - zero, or a value written to p (no other page's, no other object's)
 *     by a write that had begun by t1;
 *   - nothing older than the last write of p that ended before t0;
 *   - no value whose write ended before a zap of p that ended before t0
 *     (stale data after a punch or truncation);
 *   - zero only if a zap of p began before t1 and did not end before the
 *     last write that ended before t0 began (or p was never written).
 * It may raise SIGBUS only if a truncation below p overlapped [t0, t1],
 * and must if p was beyond EOF from before t0 to after t1. Every system
 * call must succeed, as on vanilla: the operations are all valid (with
 * fault injection on, ENOMEM is retried). After the operations (a
 * barrier) every process reads every page it maps, where the rules are
 * exact; what they read must hash the same in all of them, and then, with
 * all quiet, each one's RSS counters must agree with its page tables
 * (pts_rss_consistent()).
 *
 * The operations of each worker follow from the seed and its own state;
 * only their outcome (what a read sees, which access meets SIGBUS) depends
 * on the interleaving.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../ptshare/pts.h"
#include "fuzz.h"

#define U_MAXPAGES	(5 * PMD_PAGES)	/* biggest object: 10 MiB */
#define U_MAXW		4		/* workers per group */
#define U_RING		4		/* last writes remembered per page */
#define U_ZAPS		1024		/* zaps logged per group */
#define U_CTLFD		200		/* descriptors a worker inherits */
#define U_OBJFD		201
#define U_TMASK		((1ULL << 40) - 1)
#define EXT4_MAGIC	0xEF53
#define FAIL_KNOB	"/sys/kernel/debug/fail_ptshare/probability"
#define SEQ		__ATOMIC_SEQ_CST
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif

enum { K_MEMFD, K_FILE, K_SYSV, K_NR };
static const char *const kname[] = { "memfd", "file", "sysv" };
enum { W_NONE, W_HOME, W_AWAY };	/* where a process maps an object page */
enum { B_MAPPED, B_OPS, B_READ, B_RSS, B_NR };	/* the group's barriers */

/* A zap: a hole punched, or a truncation to a pages and back. */
struct uzap {
	uint32_t a, b, trunc;
	uint64_t ts, te;	/* ticks before and after the punch (shrink) */
	uint64_t rs, re;	/* truncation: before and after the regrow */
};

struct uworker {
	uint64_t rng;
	unsigned long nops;
	unsigned long delta;	/* the away area's page offset within 2 MiB */
	int by_proc;		/* memfd: opened as /proc/PID/fd/N */
};

/* The group's shared state, in a memfd that every member maps. */
struct uctl {
	/* set up by the coordinator */
	int kind, nw, selftest, inject, verbose, depth, only;
	unsigned long np, root_ops;
	uint64_t seed, key;
	char path[64];		/* the coordinator's place in the fork tree */
	char obj[256];		/* file path, /proc/PID/fd/N or SysV id */
	struct uworker w[U_MAXW];
	/* changed while the group runs */
	uint64_t clock;
	int abort, trunc_lock;
	int arrived[B_NR];
	struct stats stats;	/* the workers' ops, violations, zaps */
	long enomem;
	unsigned long nzap;
	struct uzap zap[U_ZAPS];
	unsigned long nwr[U_MAXPAGES];		/* writes of each page so far */
	uint64_t ring[U_MAXPAGES][U_RING];	/* ts << 32 | te << 1 | SIGBUS */
	uint64_t hash[U_MAXW + 1][U_MAXPAGES];	/* final reads; 0: not read */
};

/* This member of a group: a worker, or the coordinator (id nw). */
static struct {
	struct uctl *c;
	int id, fd, shmid;
	char *home, *away;
	uint8_t where[U_MAXPAGES], prot[U_MAXPAGES];
	/*
	 * SysV: a VMA boundary may be before page p. A segment's VMAs have
	 * a close op, so its pieces never merge again, and mremap cannot
	 * take a range across two of them (EFAULT, on vanilla too).
	 */
	uint8_t cut[U_MAXPAGES + 1];
	sigjmp_buf bus;
	volatile int armed;
	int lastbus;		/* the last read met SIGBUS */
} U;

static char udir_file[128];
static int full_idx[WORDS];

/*
 * The directory of the groups' regular file: file_dir, else the guest's
 * ext4 scratch disk (page-cache pages, block allocation at write faults,
 * writeback), else shm_dir (tmpfs).
 */
void unrelated_setup(const char *shm_dir, const char *file_dir)
{
	struct statfs sf;
	int i;

	if (!file_dir && !statfs("/scratch", &sf) && sf.f_type == EXT4_MAGIC)
		file_dir = "/scratch";
	snprintf(udir_file, sizeof(udir_file), "%s", file_dir ? file_dir : shm_dir);
	for (i = 0; i < WORDS; i++)
		full_idx[i] = i;
}

static uint64_t tick(void)
{
	return __atomic_add_fetch(&U.c->clock, 1, SEQ);
}

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, SEQ);
}

/* Word w of object page p after the write that began at tick t. */
static uint64_t uval(unsigned long p, uint64_t t, unsigned int w)
{
	return ((uint64_t)(p + 1) << 40 | t) ^ U.c->key ^ (w + 1) * GOLDEN;
}

static char *uaddr(unsigned long p)
{
	return (U.where[p] == W_AWAY ? U.away : U.home) + p * PAGE;
}

static int aborted(void)
{
	return __atomic_load_n(&U.c->abort, SEQ);
}

static void set_abort(void)
{
	__atomic_store_n(&U.c->abort, 1, SEQ);
}

static void count(long *what)
{
	__atomic_fetch_add(what, 1, SEQ);
}

/*
 * SIGBUS, with SA_NODEFER: inside an access it ends the access (its ticks
 * decide whether that was right), anywhere else it is a violation.
 */
static void on_bus(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (U.armed) {
		U.armed = 0;
		siglongjmp(U.bus, 1);
	}
	violation("SIGBUS at %p outside an access of the shared object", si->si_addr);
	set_abort();
	_exit(1);
}

/* A worker's SIGSEGV: its model of its own mapping was wrong. */
static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	violation("unexpected signal %d (%s) at %p", sig, strsignal(sig), si->si_addr);
	set_abort();
	_exit(1);
}

static void catch_bus(struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_bus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGBUS, &sa, old);
}

/*
 * A system call's result; ENOMEM, which only an injected failure of the
 * unshare path gives here, is retried while fault injection is on.
 */
#define RETRY(call) ({							\
	long _r;							\
	int _n = 0;							\
	while ((_r = (long)(call)) == -1 && errno == ENOMEM &&		\
	       U.c->inject && _n++ < 1000)				\
		count(&U.c->enomem);					\
	_r;								\
})

/* A system call failed where vanilla does not fail it: a violation. */
static int sysfail(long rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sysfail(long rc, const char *fmt, ...)
{
	char what[160];
	va_list ap;

	if (rc != -1)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	violation("%s failed: %s", what, strerror(errno));
	return 1;
}

/* ---- the log of writes and zaps ---- */

/*
 * The tick at which the last write of p that ended (without SIGBUS)
 * before t0 began, or 0 if the ring does not know it. *never: p had no
 * write at all.
 */
static uint64_t last_write(unsigned long p, uint64_t t0, int *never)
{
	uint64_t best = 0, e, ts, te;
	int i;

	*never = __atomic_load_n(&U.c->nwr[p], SEQ) == 0;
	for (i = 0; i < U_RING; i++) {
		e = ld(&U.c->ring[p][i]);
		ts = e >> 32;
		te = (e >> 1) & 0x7fffffff;
		if (ts && te && te < t0 && !(e & 1) && ts > best)
			best = ts;
	}
	return best;
}

/*
 * The write of p that began at tick t: 1 with its end in *te (0 while it
 * runs), 0 if the ring does not have it, -1 if p had no such write.
 */
static int find_write(unsigned long p, uint64_t t, uint64_t *te)
{
	int i;

	for (i = 0; i < U_RING; i++) {
		uint64_t e = ld(&U.c->ring[p][i]);

		if (e >> 32 == t) {
			*te = (e >> 1) & 0x7fffffff;
			return 1;
		}
	}
	return __atomic_load_n(&U.c->nwr[p], SEQ) <= U_RING ? -1 : 0;
}

/* Zap z, if it has begun and covers p (for its contents: a..b). */
static int zap_covers(struct uzap *z, unsigned long p)
{
	return ld(&z->ts) && p >= z->a && p < z->b;
}

/* Whether a zap of p began before t1 and did not end before tick since. */
static int zapped_since(unsigned long p, uint64_t since, uint64_t t1)
{
	unsigned long i, n = __atomic_load_n(&U.c->nzap, SEQ);

	for (i = 0; i < n && i < U_ZAPS; i++) {
		struct uzap *z = &U.c->zap[i];
		uint64_t te;

		if (!zap_covers(z, p) || ld(&z->ts) >= t1)
			continue;
		te = ld(&z->te);
		if (!te || te > since)
			return 1;
	}
	return 0;
}

/* A zap of p that began after tick after and ended before t0, or NULL. */
static struct uzap *zapped_between(unsigned long p, uint64_t after, uint64_t t0)
{
	unsigned long i, n = __atomic_load_n(&U.c->nzap, SEQ);

	for (i = 0; i < n && i < U_ZAPS; i++) {
		struct uzap *z = &U.c->zap[i];
		uint64_t te;

		if (!zap_covers(z, p) || ld(&z->ts) <= after)
			continue;
		te = ld(&z->te);
		if (te && te < t0)
			return z;
	}
	return NULL;
}

/* A new entry of the zap log with its range, not begun yet; NULL if full. */
static struct uzap *new_zap(unsigned long a, unsigned long b, int trunc)
{
	unsigned long i = __atomic_fetch_add(&U.c->nzap, 1, SEQ);
	struct uzap *z;

	if (i >= U_ZAPS)
		return NULL;
	z = &U.c->zap[i];
	z->a = a;
	z->b = b;
	z->trunc = trunc;
	return z;
}

static void zap_mark(uint64_t *when)
{
	__atomic_store_n(when, tick(), SEQ);
}

/* ---- checks ---- */

/*
 * An access of page p between ticks t0 and t1 raised SIGBUS (bus) or did
 * not: SIGBUS is right only if a truncation below p overlapped it, and
 * must come if p was beyond EOF all along.
 */
static void ubus_check(unsigned long p, uint64_t t0, uint64_t t1, int bus, const char *what)
{
	unsigned long i, n = __atomic_load_n(&U.c->nzap, SEQ);
	struct uzap *must = NULL;
	int may = 0;

	for (i = 0; i < n && i < U_ZAPS; i++) {
		struct uzap *z = &U.c->zap[i];
		uint64_t ts = ld(&z->ts), te, rs, re;

		if (!ts || !z->trunc || p < z->a)
			continue;
		te = ld(&z->te);
		rs = ld(&z->rs);
		re = ld(&z->re);
		if (ts < t1 && (!re || re > t0))
			may = 1;
		if (te && te < t0 && (!rs || rs > t1))
			must = z;
	}
	if (bus && !may)
		violation("%s of page %lu between ticks %llu and %llu: SIGBUS, but no truncation below it then",
			  what, p, (unsigned long long)t0, (unsigned long long)t1);
	else if (!bus && must)
		violation("%s of page %lu between ticks %llu and %llu: no SIGBUS, but the object had %u pages from tick %llu to %llu",
			  what, p, (unsigned long long)t0, (unsigned long long)t1, must->a,
			  (unsigned long long)ld(&must->te), (unsigned long long)ld(&must->rs));
	if (bus)
		count(&st->sigbus);
}

/*
 * The n words got[k] = word idx[k] of page p, read between ticks t0 and
 * t1, against the rules of the header. Returns nonzero on a violation.
 */
static int ucheck(unsigned long p, const uint64_t *got, const int *idx, int n,
		  uint64_t t0, uint64_t t1, const char *what)
{
	uint64_t last, x, prev = 0, t, te;
	int never, k, w, zero_ok = -1;
	struct uzap *z;

	last = last_write(p, t0, &never);
	for (k = 0; k < n; k++) {
		w = idx[k];
		if (!got[k]) {
			if (zero_ok < 0)
				zero_ok = never || !last || zapped_since(p, last, t1);
			if (zero_ok)
				continue;
			violation("%s of page %lu (worker %lu's) word %d between ticks %llu and %llu: zero, but the write of tick %llu ended before and no punch or truncation since",
				  what, p, p % U.c->nw, w, (unsigned long long)t0,
				  (unsigned long long)t1, (unsigned long long)last);
			return 1;
		}
		x = got[k] ^ U.c->key ^ (w + 1) * GOLDEN;
		if (x == prev)
			continue;	/* checked with the word before */
		t = x & U_TMASK;
		if (x >> 40 != p + 1 || !t || t > t1) {
			violation("%s of page %lu word %d between ticks %llu and %llu: %#llx is no value written to this page (page %lld, tick %llu)",
				  what, p, w, (unsigned long long)t0, (unsigned long long)t1,
				  (unsigned long long)got[k], (long long)(x >> 40) - 1,
				  (unsigned long long)t);
			return 1;
		}
		if (t < last) {
			violation("%s of page %lu (worker %lu's) word %d between ticks %llu and %llu: the value of the write of tick %llu, older than the write of tick %llu that ended before",
				  what, p, p % U.c->nw, w, (unsigned long long)t0,
				  (unsigned long long)t1, (unsigned long long)t, (unsigned long long)last);
			return 1;
		}
		switch (find_write(p, t, &te)) {
		case -1:
			violation("%s of page %lu word %d: the value of tick %llu, which no write of the page began at",
				  what, p, w, (unsigned long long)t);
			return 1;
		case 1:
			z = te ? zapped_between(p, te, t0) : NULL;
			if (z) {
				violation("%s of page %lu (worker %lu's) word %d between ticks %llu and %llu: stale value of the write of ticks %llu-%llu, after the %s [%u,%u) of ticks %llu-%llu",
					  what, p, p % U.c->nw, w, (unsigned long long)t0,
					  (unsigned long long)t1,
					  (unsigned long long)t, (unsigned long long)te,
					  z->trunc ? "truncation beyond" : "punch", z->a, z->b,
					  (unsigned long long)ld(&z->ts), (unsigned long long)ld(&z->te));
				return 1;
			}
			break;
		}
		prev = x;
	}
	return 0;
}

/* ---- accesses ---- */

/*
 * Load words idx[0..cnt) of w into got; returns how many it loaded
 * before a SIGBUS ended it. Apart, so that nothing of the caller lives
 * across the siglongjmp().
 */
static int __attribute__((noinline)) uload(volatile uint64_t *w, const int *idx, int cnt,
					   uint64_t *got)
{
	volatile int k = 0;

	U.armed = 1;
	if (sigsetjmp(U.bus, 0))
		return k;
	for (k = 0; k < cnt; k++)
		got[k] = w[idx[k]];
	U.armed = 0;
	return cnt;
}

/* Store the write of tick ts into every word of page p; 1 if SIGBUS. */
static int __attribute__((noinline)) ustore(volatile uint64_t *w, unsigned long p, uint64_t ts)
{
	int k;

	U.armed = 1;
	if (sigsetjmp(U.bus, 0))
		return 1;
	for (k = 0; k < WORDS; k++)
		w[k] = uval(p, ts, k);
	U.armed = 0;
	return 0;
}

/*
 * Read page p (every word, or five) and check what it holds; returns a
 * hash of it (never 0), or 0 after SIGBUS.
 */
static uint64_t uread_page(unsigned long p, int full, const char *what)
{
	volatile uint64_t *w = (volatile uint64_t *)uaddr(p);
	int samp[5] = { 0, HALFW - 1, HALFW, WORDS - 1, (int)((p * 37 + P.opi) % WORDS) };
	const int *idx = full ? full_idx : samp;
	int cnt = full ? WORDS : 5, n, k;
	uint64_t got[WORDS], t0, t1, h = 0xcbf29ce484222325ULL;

	t0 = tick();
	n = uload(w, idx, cnt, got);
	t1 = tick();
	U.lastbus = n < cnt;
	ubus_check(p, t0, t1, n < cnt, what);
	if (P.bad || ucheck(p, got, idx, n, t0, t1, what) || n < cnt)
		return 0;
	for (k = 0; k < cnt; k++)
		h = (h ^ got[k]) * 0x100000001b3ULL;
	return h | 1;
}

/* Write page p, which this process owns, with the tick of the write. */
static void uwrite_page(unsigned long p)
{
	volatile uint64_t *w = (volatile uint64_t *)uaddr(p);
	unsigned long n = U.c->nwr[p];
	uint64_t *slot = &U.c->ring[p][n % U_RING], ts, te;
	int bus;

	ts = tick();
	__atomic_store_n(slot, ts << 32, SEQ);
	__atomic_store_n(&U.c->nwr[p], n + 1, SEQ);
	bus = ustore(w, p, ts);
	te = tick();
	__atomic_store_n(slot, ts << 32 | te << 1 | bus, SEQ);
	ubus_check(p, ts, te, bus, "write");
}

static int readable(unsigned long p)
{
	return U.where[p] != W_NONE && U.prot[p] & PROT_READ;
}

static int writable_page(unsigned long p)
{
	return U.where[p] != W_NONE && U.prot[p] == (PROT_READ | PROT_WRITE);
}

/* Read [a, b); beyond EOF (SIGBUS), only one page in 16. */
static void uread_range(unsigned long a, unsigned long b, int full, const char *what)
{
	unsigned long p;

	for (p = a; p < b && !P.bad; p++) {
		if (!readable(p))
			continue;
		uread_page(p, full, what);
		if (U.lastbus)
			p += 15;
	}
}

/* ---- a member's own mapping ---- */

/* PROT_NONE placeholder where no object page is, so nothing lands there. */
static void ureserve(char *at, unsigned long npages)
{
	if (mmap(at, npages * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED |
		 MAP_NORESERVE, -1, 0) == MAP_FAILED)
		die("reserve");
}

/*
 * The end of the run of pages from a (before b) that this process maps
 * at consecutive addresses with one protection: one VMA after an
 * mprotect of the run merged it. a itself if a is not mapped.
 */
static unsigned long urun(unsigned long a, unsigned long b)
{
	unsigned long e = a;

	if (U.where[a] == W_NONE)
		return a;
	while (e < b && U.where[e] == U.where[a] && U.prot[e] == U.prot[a])
		e++;
	return e;
}

/* Range [a, b) of the mapping was cut off from its neighbours. */
static void ucut(unsigned long a, unsigned long b)
{
	U.cut[a] = U.cut[b] = 1;
}

/* The end of the run from a (see urun()) within one VMA, as far as known. */
static unsigned long urun_vma(unsigned long a, unsigned long b)
{
	unsigned long e = urun(a, b), p;

	if (U.c->kind == K_SYSV)
		for (p = a + 1; p < e; p++)
			if (U.cut[p])
				return p;
	return e;
}

/* Map object pages [a, b) at home, read-write. */
static int umap_home(unsigned long a, unsigned long b)
{
	unsigned long p;
	long r;

	if (U.c->kind == K_SYSV) {
		/* A segment maps whole: again over everything, nothing away. */
		if (U.away)
			ureserve(U.away, U.c->np);
		r = RETRY(shmat(U.shmid, U.home, SHM_REMAP));
		if (sysfail(r, "shmat(SHM_REMAP) of the segment"))
			return -1;
		a = 0;
		b = U.c->np;
		memset(U.cut, 0, sizeof(U.cut));
	} else {
		r = RETRY(mmap(U.home + a * PAGE, (b - a) * PAGE, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_FIXED, U.fd, a * PAGE));
		if (sysfail(r, "mmap of pages [%lu,%lu)", a, b))
			return -1;
	}
	for (p = a; p < b; p++) {
		U.where[p] = W_HOME;
		U.prot[p] = PROT_READ | PROT_WRITE;
	}
	return 0;
}

/* A random range of object pages: all, a few, a table, or any. */
static void urange(unsigned long *a, unsigned long *b)
{
	unsigned long n = U.c->np, x = rnd(100);

	if (x < 15) {
		*a = 0;
		*b = n;
	} else if (x < 45) {
		*a = rnd(n);
		*b = *a + 1 + rnd(8);
	} else if (x < 75) {
		*a = rnd((n + PMD_PAGES - 1) / PMD_PAGES) * PMD_PAGES;
		*b = *a + PMD_PAGES;
	} else {
		*a = rnd(n);
		*b = *a + 1 + rnd(n - *a);
	}
	if (*b > n)
		*b = n;
}

/* ---- a worker's operations ---- */

static void uop_read(void)
{
	unsigned long a, b;

	urange(&a, &b);
	oplog("read [%lu,%lu)", a, b);
	uread_range(a, b, b - a <= 64, "read");
}

/* Write the pages of [a, b) this worker owns (at most 256 of them). */
static void uop_write(void)
{
	unsigned long a, b, p, step = U.c->nw;

	urange(&a, &b);
	if ((b - a) / step > 256)
		step *= (b - a) / step / 256 + 1;
	oplog("write [%lu,%lu) step %lu", a, b, step);
	a += (U.id + U.c->nw - a % U.c->nw) % U.c->nw;
	for (p = a; p < b && !P.bad; p += step)
		if (writable_page(p))
			uwrite_page(p);
}

/* Punch a hole: fallocate, or MADV_REMOVE on a read-write run. */
static void uop_punch(void)
{
	unsigned long a, b;
	int by_fd = U.fd >= 0 && rnd(2);
	struct uzap *z;
	long r;

	urange(&a, &b);
	if (!by_fd) {
		b = urun(a, b);
		if (b == a || U.prot[a] != (PROT_READ | PROT_WRITE)) {
			oplog("punch [%lu,..): not mapped read-write here", a);
			return;
		}
	}
	z = new_zap(a, b, 0);
	if (!z)
		return;
	zap_mark(&z->ts);
	if (by_fd)
		r = RETRY(fallocate(U.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				    a * PAGE, (b - a) * PAGE));
	else
		r = RETRY(madvise(uaddr(a), (b - a) * PAGE, MADV_REMOVE));
	zap_mark(&z->te);
	oplog("punch [%lu,%lu) by %s -> %ld", a, b, by_fd ? "fallocate" : "MADV_REMOVE", r);
	count(&st->punches);
	if (sysfail(r, "%s of [%lu,%lu)", by_fd ? "fallocate(PUNCH_HOLE)" : "madvise(MADV_REMOVE)",
		    a, b))
		return;
	uread_range(a, b, 0, "read after punch");
}

/*
 * Truncate to s pages, access around s (SIGBUS beyond), and grow back.
 * One truncation at a time, so that the object's size is known.
 */
static void uop_trunc(void)
{
	unsigned long np = U.c->np, s, a, b, p;
	int hold = rnd(3);
	struct uzap *z;
	long r;

	s = rnd(2) ? rnd(np / PMD_PAGES + 1) * PMD_PAGES : rnd(np);
	if (s >= np)
		s = np - 1;
	while (__atomic_exchange_n(&U.c->trunc_lock, 1, SEQ))
		if (aborted())
			return;
		else
			usleep(100);
	z = new_zap(s, np, 1);
	if (!z)
		goto out;
	zap_mark(&z->ts);
	r = RETRY(ftruncate(U.fd, s * PAGE));
	zap_mark(&z->te);
	oplog("truncate to %lu of %lu pages -> %ld, hold %d", s, np, r, hold);
	count(&st->truncs);
	if (sysfail(r, "ftruncate to %lu pages", s))
		goto out;
	a = s > 4 ? s - 4 : 0;
	b = s + 4 < np ? s + 4 : np;
	if (hold == 1) {
		uread_range(a, b, 0, "read while truncated");
	} else if (hold == 2) {
		for (p = a; p < b && !P.bad; p++)
			if (p % U.c->nw == (unsigned long)U.id && writable_page(p))
				uwrite_page(p);
	}
	usleep(rnd(2) ? 0 : 1000);	/* a window for the others */
	zap_mark(&z->rs);
	r = RETRY(ftruncate(U.fd, np * PAGE));
	zap_mark(&z->re);
	sysfail(r, "ftruncate back to %lu pages", np);
out:
	__atomic_store_n(&U.c->trunc_lock, 0, SEQ);
}

static void uop_mprotect(void)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE,
				     PROT_READ | PROT_WRITE, PROT_NONE };
	int prot = prots[rnd(4)];
	unsigned long a, b, e, p;
	long r;

	urange(&a, &b);
	oplog("mprotect [%lu,%lu) %d", a, b, prot);
	for (p = a; p < b && !P.bad; p = e > p ? e : p + 1) {
		e = urun(p, b);
		if (e == p)
			continue;
		r = RETRY(mprotect(uaddr(p), (e - p) * PAGE, prot));
		if (sysfail(r, "mprotect of [%lu,%lu) to %d", p, e, prot))
			return;
		memset(U.prot + p, prot, e - p);
		ucut(p, e);
	}
	uread_range(a, b, 0, "read after mprotect");
}

static void uop_munmap(void)
{
	unsigned long a, b, e, p;
	long r;

	urange(&a, &b);
	oplog("munmap [%lu,%lu)", a, b);
	for (p = a; p < b && !P.bad; p = e > p ? e : p + 1) {
		e = urun(p, b);
		if (e == p)
			continue;
		r = RETRY(munmap(uaddr(p), (e - p) * PAGE));
		if (sysfail(r, "munmap of [%lu,%lu)", p, e))
			return;
		ureserve(uaddr(p), e - p);
		memset(U.where + p, W_NONE, e - p);
		ucut(p, e);
	}
}

/* Map again, at home, the pages of [a, b) that are not mapped. */
static void uop_remap(void)
{
	unsigned long a, b, e, p;

	urange(&a, &b);
	oplog("mmap again what is not mapped of [%lu,%lu)", a, b);
	for (p = a; p < b && !P.bad; p = e) {
		for (e = p; e < b && U.where[e] == W_NONE; e++)
			;
		if (e == p) {
			e++;
			continue;
		}
		if (umap_home(p, e))
			return;
		if (U.c->kind == K_SYSV)
			break;
	}
	uread_range(a, b, 0, "read after mmap");
}

/*
 * Move a run of pages home <-> away with mremap. The away area is at
 * another offset within 2 MiB for some workers: their tables can then
 * never be attached, and mremap cannot move whole tables.
 */
static void uop_mremap(void)
{
	unsigned long a, b, e;
	char *from, *to;
	int dst;
	long r;

	urange(&a, &b);
	e = urun_vma(a, b);
	if (e == a) {
		oplog("mremap [%lu,..): not mapped", a);
		return;
	}
	/* One VMA: one protection merges the pieces (not a segment's: cut). */
	r = RETRY(mprotect(uaddr(a), (e - a) * PAGE, PROT_READ | PROT_WRITE));
	if (sysfail(r, "mprotect before mremap of [%lu,%lu)", a, e))
		return;
	memset(U.prot + a, PROT_READ | PROT_WRITE, e - a);
	dst = U.where[a] == W_HOME ? W_AWAY : W_HOME;
	from = uaddr(a);
	to = (dst == W_AWAY ? U.away : U.home) + a * PAGE;
	r = (long)mremap(from, (e - a) * PAGE, (e - a) * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	while (r == -1 && errno == ENOMEM && U.c->inject && U.c->enomem < 100000) {
		count(&U.c->enomem);
		r = (long)mremap(from, (e - a) * PAGE, (e - a) * PAGE,
				 MREMAP_MAYMOVE | MREMAP_FIXED, to);
	}
	oplog("mremap [%lu,%lu) %s -> %s", a, e, dst == W_AWAY ? "home to away" : "away to home",
	      r == -1 ? strerror(errno) : "ok");
	if (sysfail(r, "mremap of [%lu,%lu)", a, e))
		return;
	ureserve(from, e - a);
	memset(U.where + a, dst, e - a);
	ucut(a, e);
	uread_range(a, e, 0, "read after mremap");
}

/* What else a process does to its mapping: drop, populate, write back. */
static void uop_madvise(void)
{
	static const char *const names[] = { "DONTNEED", "POPULATE_READ", "POPULATE_WRITE",
					     "msync", "fsync" };
	unsigned long a, b, e;
	int how = rnd(5);
	uint64_t t0, t1;
	long r;

	urange(&a, &b);
	e = urun(a, b);
	if (how == 4 && U.fd < 0)
		how = 3;
	if (how != 4 && (e == a || (how == 1 && !readable(a)) ||
			 (how == 2 && !writable_page(a)))) {
		oplog("%s [%lu,..): not mapped so", names[how], a);
		return;
	}
	t0 = tick();
	switch (how) {
	case 0: r = RETRY(madvise(uaddr(a), (e - a) * PAGE, MADV_DONTNEED)); break;
	case 1: r = RETRY(madvise(uaddr(a), (e - a) * PAGE, MADV_POPULATE_READ)); break;
	case 2: r = RETRY(madvise(uaddr(a), (e - a) * PAGE, MADV_POPULATE_WRITE)); break;
	case 3: r = RETRY(msync(uaddr(a), (e - a) * PAGE, MS_SYNC)); break;
	default: r = RETRY(fsync(U.fd)); break;
	}
	t1 = tick();
	oplog("%s [%lu,%lu) -> %ld", names[how], a, e, r == -1 ? -errno : r);
	/* Populating beyond EOF fails with EFAULT, where an access would SIGBUS. */
	if (r == -1 && errno == EFAULT && (how == 1 || how == 2)) {
		unsigned long p;
		int may = 0;

		for (p = a; p < e && !may; p++) {
			unsigned long i, n = __atomic_load_n(&U.c->nzap, SEQ);

			for (i = 0; i < n && i < U_ZAPS; i++) {
				struct uzap *z = &U.c->zap[i];
				uint64_t ts = ld(&z->ts), re = ld(&z->re);

				if (ts && z->trunc && p >= z->a && ts < t1 && (!re || re > t0))
					may = 1;
			}
		}
		if (may)
			return;
	}
	if (sysfail(r, "%s of [%lu,%lu)", names[how], a, e))
		return;
	if (how != 4)
		uread_range(a, e, 0, "read after madvise");
}

/* ---- barriers ---- */

static pid_t upids[U_MAXW];
static int ustatus[U_MAXW], ureaped[U_MAXW];

/* Reap the workers that have exited; one that failed stops the group. */
static void upoll(int block)
{
	int i;

	for (i = 0; i < U.c->nw; i++) {
		pid_t r;

		if (ureaped[i])
			continue;
		r = waitpid(upids[i], &ustatus[i], block ? 0 : WNOHANG);
		if (r == upids[i]) {
			ureaped[i] = 1;
			if (!WIFEXITED(ustatus[i]) || WEXITSTATUS(ustatus[i]))
				set_abort();
		} else if (r < 0 && errno != EINTR) {
			die("waitpid of a worker");
		}
	}
}

/*
 * Wait until every member (the workers and the coordinator) has come to
 * barrier b. Returns 0 if the group was stopped instead.
 */
static int ubarrier(int b)
{
	int n = U.c->nw + 1;

	__atomic_fetch_add(&U.c->arrived[b], 1, SEQ);
	while (__atomic_load_n(&U.c->arrived[b], SEQ) < n) {
		if (aborted())
			return 0;
		if (U.id == U.c->nw)
			upoll(0);
		usleep(200);
	}
	return !aborted();
}

/*
 * After the operations: read every page mapped here, exactly, and leave
 * its hash for the coordinator to compare.
 */
static void final_read(void)
{
	unsigned long p;

	for (p = 0; p < U.c->np && !P.bad; p++)
		U.c->hash[U.id][p] = readable(p) ? uread_page(p, 1, "final read") : 0;
}

/* With everyone quiet: this process's RSS counters agree with its tables. */
static void rss_check(void)
{
	if (!pts_rss_consistent())
		violation("RSS counters disagree with the page tables (VmRSS against smaps_rollup, above)");
}

/* ---- a worker: a program of its own ---- */

/* Map the object as this worker's kind says, at home. */
static void uattach(void)
{
	unsigned long np = U.c->np;
	struct uworker *w = &U.c->w[U.id];

	U.fd = -1;
	switch (U.c->kind) {
	case K_MEMFD:
		U.fd = w->by_proc ? open(U.c->obj, O_RDWR) : U_OBJFD;
		break;
	case K_FILE:
		U.fd = open(U.c->obj, O_RDWR);
		break;
	case K_SYSV:
		U.shmid = atoi(U.c->obj);
		break;
	}
	if (U.c->kind != K_SYSV && U.fd < 0)
		die(U.c->obj);
	U.home = pts_map_at_table(np * PAGE, PROT_NONE);
	U.away = pts_map_at_table((np + w->delta) * PAGE, PROT_NONE);
	if (!U.home || !U.away)
		die("reserve the areas");
	U.away += w->delta * PAGE;
	if (umap_home(0, np))
		die("map the object");
}

static void worker_ops(void)
{
	unsigned long i;

	for (i = 0; i < U.c->w[U.id].nops && !P.bad && !aborted(); i++) {
		unsigned long x = rnd(100);

		P.opi++;
		count(&st->ops);
		if (x < 28)
			uop_read();
		else if (x < 48)
			uop_write();
		else if (x < 56 || (x < 63 && U.c->kind == K_SYSV))
			uop_punch();
		else if (x < 63)
			uop_trunc();
		else if (x < 71)
			uop_mprotect();
		else if (x < 77)
			uop_munmap();
		else if (x < 84)
			uop_remap();
		else if (x < 91)
			uop_mremap();
		else
			uop_madvise();
	}
}

/*
 * Self-test (fuzz -Y): before its operations, worker 0 stores into its
 * first page (still mapped read-write) a value of the page after it, and
 * reads it back: the check must report it.
 */
static void selftest_corrupt(void)
{
	oplog("SELF-TEST: store a value of page 1 into page 0 and read it");
	*(volatile uint64_t *)uaddr(0) = uval(1, 1, 0);
	uread_page(0, 1, "self-test read");
	if (!P.bad)
		violation("self-test: the corrupted page was not reported");
}

/* fuzz -W ID: a worker of the group whose state is in descriptor U_CTLFD. */
int unrelated_worker(int argc, char **argv)
{
	struct sigaction sa;
	struct stat sb;
	int i;

	if (argc != 3)
		return 3;
	U.id = atoi(argv[2]);
	if (fstat(U_CTLFD, &sb))
		die("fstat of the group's state");
	U.c = mmap(NULL, sb.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, U_CTLFD, 0);
	if (U.c == MAP_FAILED)
		die("mmap of the group's state");
	close(U_CTLFD);
	for (i = 0; i < WORDS; i++)
		full_idx[i] = i;
	st = &U.c->stats;
	verbose = U.c->verbose;
	unrelated_only = U.c->only;
	root_ops = U.c->root_ops;
	P.seed = U.c->seed;
	P.rng = U.c->w[U.id].rng;
	P.depth = U.c->depth + 1;
	snprintf(P.path, sizeof(P.path), "%.48s.u%d", U.c->path, U.id);

	catch_bus(NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);

	uattach();
	oplog("worker of the %s, %lu pages, %lu ops, away at +%lu pages%s", kname[U.c->kind],
	      U.c->np, U.c->w[U.id].nops, U.c->w[U.id].delta,
	      U.c->w[U.id].by_proc ? ", memfd through /proc" : "");
	if (ubarrier(B_MAPPED)) {
		/* The first read: with vm.pt_share_shared=2, it attaches. */
		uread_range(0, U.c->np, 0, "first read");
		if (U.c->selftest && U.id == 0 && !P.bad)
			selftest_corrupt();
		worker_ops();
	}
	if (P.bad)
		set_abort();
	if (ubarrier(B_OPS))
		final_read();
	if (P.bad)
		set_abort();
	if (ubarrier(B_READ))
		rss_check();
	if (P.bad)
		set_abort();
	ubarrier(B_RSS);
	return P.bad ? 1 : aborted() ? 4 : 0;
}

/* ---- the coordinator ---- */

/* Create the object; its name for the workers goes to U.c->obj. */
static int create_object(int kind, unsigned long np)
{
	char path[200];

	U.fd = -1;
	U.shmid = -1;
	switch (kind) {
	case K_MEMFD:
		U.fd = memfd_create("fuzz-unrelated", MFD_CLOEXEC);
		if (U.fd < 0 || ftruncate(U.fd, np * PAGE))
			return -1;
		snprintf(U.c->obj, sizeof(U.c->obj), "/proc/%d/fd/%d", getpid(), U.fd);
		return 0;
	case K_FILE:
		snprintf(path, sizeof(path), "%s/fuzz-u-%d", udir_file, getpid());
		U.fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (U.fd < 0 || ftruncate(U.fd, np * PAGE))
			return -1;
		snprintf(U.c->obj, sizeof(U.c->obj), "%s", path);
		return 0;
	default:
		U.shmid = shmget(IPC_PRIVATE, np * PAGE, IPC_CREAT | 0600);
		if (U.shmid < 0)
			return -1;
		snprintf(U.c->obj, sizeof(U.c->obj), "%d", U.shmid);
		return 0;
	}
}

static void destroy_object(void)
{
	if (U.c->kind == K_SYSV)
		shmctl(U.shmid, IPC_RMID, NULL);
	if (U.c->kind == K_FILE)
		unlink(U.c->obj);
	if (U.fd >= 0)
		close(U.fd);
}

/* Draw the group from the seed. */
static void draw_group(int selftest)
{
	struct uctl *c = U.c;
	int i;

	c->kind = rnd(K_NR);
	c->nw = 2 + rnd(U_MAXW - 1);
	c->np = PMD_PAGES * (1 + rnd(4)) + (rnd(3) ? 0 : rnd(PMD_PAGES));
	c->key = rnd64();
	c->selftest = selftest;
	c->inject = pts_read_long(FAIL_KNOB) > 0;
	c->verbose = verbose;
	c->only = unrelated_only;
	c->depth = P.depth;
	c->root_ops = root_ops;
	c->seed = P.seed;
	c->clock = 1;
	snprintf(c->path, sizeof(c->path), "%s", P.path);
	for (i = 0; i < c->nw; i++) {
		c->w[i].rng = rnd64();
		c->w[i].nops = 10 + rnd(30);
		c->w[i].delta = rnd(2) ? 0 : 1 + rnd(PMD_PAGES - 1);
		c->w[i].by_proc = rnd(2);
	}
}

/*
 * Write every page once, but (sometimes) one in 16: the coordinator's
 * tables are full, and can be attached; holes are filled by the workers'
 * faults.
 */
static void initial_fill(int holes)
{
	unsigned long p;

	for (p = 0; p < U.c->np; p++)
		if (!holes || (p * 2654435761UL >> 7) % 16)
			uwrite_page(p);
}

static pid_t spawn_worker(int i, int ctlfd)
{
	char id[16];
	pid_t pid = fork();

	if (pid)
		return pid;
	/* dup2() leaves the copies open across exec, the originals not. */
	if (dup2(ctlfd, U_CTLFD) < 0 ||
	    (U.c->kind == K_MEMFD && !U.c->w[i].by_proc && dup2(U.fd, U_OBJFD) < 0))
		_exit(3);
	snprintf(id, sizeof(id), "%d", i);
	execl("/proc/self/exe", "fuzz", "-W", id, (char *)NULL);
	_exit(3);
}

/* While the workers run: read random ranges, as one more mapper. */
static void coordinate(uint64_t rng)
{
	uint64_t saved = P.rng;
	unsigned long a, b;

	P.rng = rng;
	while (__atomic_load_n(&U.c->arrived[B_OPS], SEQ) < U.c->nw && !aborted() && !P.bad) {
		urange(&a, &b);
		uread_range(a, b, 0, "coordinator's read");
		upoll(0);
		usleep(500);
	}
	P.rng = saved;
}

/* Every process that read page p after the operations read the same. */
static void compare_hashes(void)
{
	unsigned long p;
	int i, ref;

	for (p = 0; p < U.c->np && !P.bad; p++) {
		ref = -1;
		for (i = 0; i <= U.c->nw; i++) {
			if (!U.c->hash[i][p])
				continue;
			if (ref < 0)
				ref = i;
			else if (U.c->hash[i][p] != U.c->hash[ref][p])
				violation("after the operations, page %lu reads differently in members %d and %d (the coordinator is %d)",
					  p, ref, i, U.c->nw);
		}
	}
}

/* How the workers ended: those that failed without a report are one. */
static void judge_workers(void)
{
	int i, s;

	for (i = 0; i < U.c->nw; i++) {
		s = ustatus[i];
		if (WIFSIGNALED(s))
			violation("worker %s.u%d (%d) killed by signal %d", P.path, i, upids[i],
				  WTERMSIG(s));
		else if (WEXITSTATUS(s) == 3)
			violation("worker %s.u%d (%d) could not set up (above)", P.path, i, upids[i]);
		else if (WEXITSTATUS(s) == 1)
			P.bad = 1;	/* reported and counted by the worker */
	}
}

static void *ctl_map(int *fd)
{
	void *c;

	*fd = memfd_create("fuzz-unrelated-state", MFD_CLOEXEC);
	if (*fd < 0 || ftruncate(*fd, sizeof(struct uctl)))
		die("memfd of the group's state");
	c = mmap(NULL, sizeof(struct uctl), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (c == MAP_FAILED)
		die("mmap of the group's state");
	return c;
}

/*
 * The operation: a group of unrelated processes races on one object (see
 * the header). The coordinator takes part as a mapper that only reads.
 */
void op_unrelated(int selftest)
{
	long attach0 = pts_vmstat("ptshare_attach"), fill0 = pts_vmstat("ptshare_fill");
	struct sigaction oldbus;
	int ctlfd, i, holes;
	uint64_t crng;

	U.c = ctl_map(&ctlfd);
	draw_group(selftest);
	holes = !rnd(4);
	crng = rnd64();
	U.id = U.c->nw;
	oplog("unrelated: %s of %lu pages%s, %d workers (ops %lu %lu %lu %lu)%s",
	      kname[U.c->kind], U.c->np, holes ? " with holes" : "", U.c->nw,
	      U.c->w[0].nops, U.c->w[1].nops, U.c->nw > 2 ? U.c->w[2].nops : 0,
	      U.c->nw > 3 ? U.c->w[3].nops : 0, selftest ? ", self-test" : "");
	if (create_object(U.c->kind, U.c->np))
		die("create the shared object");
	U.home = pts_map_at_table(U.c->np * PAGE, PROT_NONE);
	U.away = NULL;	/* the coordinator keeps its mapping as it is */
	if (!U.home)
		die("reserve the coordinator's area");
	catch_bus(&oldbus);
	if (umap_home(0, U.c->np))
		die("map the object");
	initial_fill(holes);

	for (i = 0; i < U.c->nw; i++) {
		ureaped[i] = 0;
		upids[i] = spawn_worker(i, ctlfd);
		if (upids[i] < 0) {
			/* Let the workers already started go before leaving. */
			set_abort();
			U.c->nw = i;
			upoll(1);
			die("fork a worker");
		}
	}
	close(ctlfd);
	if (ubarrier(B_MAPPED))
		coordinate(crng);
	if (P.bad)
		set_abort();
	if (ubarrier(B_OPS)) {
		final_read();
		if (P.bad)
			set_abort();
	}
	if (ubarrier(B_READ)) {
		compare_hashes();
		/* Concurrent children may fill tables shared with this process. */
		if (!frozen())
			rss_check();
	}
	if (P.bad)
		set_abort();
	ubarrier(B_RSS);
	upoll(1);
	judge_workers();

	sigaction(SIGBUS, &oldbus, NULL);
	munmap(U.home, U.c->np * PAGE);
	destroy_object();
	oplog("unrelated: %ld ops, %ld SIGBUS, %ld punches, %ld truncations, %ld ENOMEM retried, %ld tables attached, %ld filled, %s",
	      U.c->stats.ops, U.c->stats.sigbus, U.c->stats.punches, U.c->stats.truncs,
	      U.c->enomem, attach0 < 0 ? 0 : pts_vmstat("ptshare_attach") - attach0,
	      fill0 < 0 ? 0 : pts_vmstat("ptshare_fill") - fill0,
	      U.c->stats.viol ? "violations" : aborted() ? "stopped" : "ok");
	__atomic_fetch_add(&st->ops, U.c->stats.ops, SEQ);
	__atomic_fetch_add(&st->procs, U.c->nw, SEQ);
	__atomic_fetch_add(&st->viol, U.c->stats.viol, SEQ);
	__atomic_fetch_add(&st->sigbus, U.c->stats.sigbus, SEQ);
	__atomic_fetch_add(&st->punches, U.c->stats.punches, SEQ);
	__atomic_fetch_add(&st->truncs, U.c->stats.truncs, SEQ);
	count(&st->groups);
	if (U.c->stats.viol)
		P.bad = 1;
	munmap(U.c, sizeof(struct uctl));
	U.c = NULL;
}
