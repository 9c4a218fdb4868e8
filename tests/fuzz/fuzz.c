// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz: a differential fuzzer of fork() and the mm system calls.
 *
 * From a seed it draws a random sequence of operations on up to NREG_MAX
 * regions: mmap/munmap of private and shared anonymous memory and of
 * private and shared mappings of a tmpfs file, mprotect, mremap (move,
 * grow, shrink, MREMAP_DONTUNMAP), madvise (DONTNEED, FREE, PAGEOUT, COLD,
 * WIPEONFORK, DONTFORK, HUGEPAGE, NOHUGEPAGE, COLLAPSE, POPULATE_READ and
 * _WRITE), mlock/munlock, fork trees several levels deep (children that run
 * concurrently with their parent, or while it waits), exit, exec, and
 * writes and reads from several threads at once. Now and then a group of
 * unrelated processes (exec'd programs, not children) races truncation,
 * hole punching, mprotect, mremap and munmap against reads and writes of
 * one memfd, regular file or SysV segment: unrelated.c.
 *
 * Regions of two more kinds map a second pair of files privately, one on
 * /tmp (tmpfs) and one on /scratch (ext4, when mounted; else /tmp too),
 * as an executable's text (ptext: PROT_READ|PROT_EXEC, written only
 * through /proc/self/mem) and its data (pdata: PROT_READ|PROT_WRITE,
 * copy-on-write), mostly at PTE table boundaries, so that fork shares
 * their tables. Their own operation (op_pfile()) writes pages through
 * /proc/self/mem (FOLL_FORCE, also into read-only ones), and changes the
 * file under the mappings of the whole fork family: pwrite() (by this
 * process or a helper child), fallocate(PUNCH_HOLE) and truncation to a
 * smaller size (accesses beyond the end must raise SIGBUS, in this
 * process and in a child forked meanwhile) and back.
 *
 * Every process keeps a shadow of what each page must contain: a page is
 * two halves of 256 words, and a half written with value v holds
 * pat(v, word) in each word (v = 0: zeros). Private pages are copied at
 * fork, WIPEONFORK regions are zero in the child, DONTFORK regions absent,
 * DONTNEED zeroes private anonymous pages and drops the private copies of
 * file pages, a page after MADV_FREE holds either its data or zeros. Pages
 * of shared mappings and not yet copied pages of private file mappings
 * follow an object shadow that lives in shared memory, like the object.
 * While a process has a child running concurrently (or is such a child)
 * nobody in its family writes shared memory, so what every process sees
 * stays deterministic. The same holds for the pwrite, punch and truncate
 * of ptext and pdata files: while one runs, every other process of the
 * family waits in waitpid(). A hole punch zeroes the pages that follow
 * the file and keeps the private copies; a truncation drops the private
 * copies beyond the new end too (even_cows), in every process that maps
 * them: each truncation is logged in shared memory, and a process that
 * waited applies it to its shadow when it runs again (pf_catch_up()).
 *
 * Each operation is checked on the range it touched, and every SWEEP
 * operations all regions are swept. A difference is a violation: it is
 * printed with the seed, the process (path in the fork tree), the op index
 * and the tail of the operation log, and the exit status is 1. The same
 * seed replays the same sequence of operations.
 *
 * Usage: fuzz -s SEED -n OPS [-d DEPTH] [-v] [-k] [-X OP] [-Z OP] [-D DIR] [-F DIR] [-u] [-Y]
 *   -n  operations of the first process (default 200); children run 5-34
 *   -d  deepest fork level (default 3)
 *   -v  print every operation
 *   -k  keep vm.pt_share and vm.pt_share_shared as they are (default, on
 *       a ptshare kernel: force vm.pt_share=2, and vm.pt_share_shared=2,
 *       so that the tables of the shared mappings are shared at fork and
 *       attached by the processes that map the same file range)
 *   -X  self-test: corrupt one shadow value after op OP of the first process
 *       and expect the check to report it
 *   -Z  the same for a page of a ptext or pdata region (one is mapped
 *       for it if there is none)
 *   -D  tmpfs directory for the shared file (default /dev/shm)
 *   -F  directory of the regular file of the unrelated groups (default
 *       /scratch if it is ext4, else the -D directory)
 *   -u  every operation of the first process is a group of unrelated
 *       processes
 *   -Y  self-test: in the first group, a worker stores a value of another
 *       page into one of its pages, which the group must report
 * Last line: "fuzz: seed=S ops=O procs=P violations=V groups=G sigbus=B
 * punches=H truncs=T pfile=M pokes=K pwrites=W pfpunches=H2 pftruncs=T2
 * pfbus=B2": the ops and processes of the groups count too; B SIGBUS
 * that the groups' accesses met (beyond EOF), H and T their hole punches
 * and truncations; M ptext and pdata regions mapped, K pages written
 * through /proc/self/mem, W pwrite()s, H2 and T2 hole punches and
 * truncations of their files, B2 SIGBUS met beyond their end.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../ptshare/pts.h"
#include "fuzz.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE		25
#endif
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ	22
#define MADV_POPULATE_WRITE	23
#endif
#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP	4
#endif

#define NSLOT		16		/* address slots of the arena */
#define SLOT_PAGES	8192UL		/* 32 MiB per slot */
#define MAXPG		4096UL		/* 16 MiB: biggest region */
#define NREG_MAX	10		/* regions alive at once */
#define FILE_PAGES	8192UL		/* the tmpfs file: 32 MiB */
#define SWEEP		25
#define PF_NF		2		/* ptext/pdata files: /tmp, /scratch */
#define PF_PAGES	4096UL		/* 16 MiB each */
#define PF_TRUNCS	1024		/* truncations logged per seed */
#define PF_EXT4_MAGIC	0xEF53
#define RX		(PROT_READ | PROT_EXEC)
#define RW		(PROT_READ | PROT_WRITE)

enum { R_ANON, R_SHANON, R_FPRIV, R_FSHARED, R_PTEXT, R_PDATA };
static const char *const tname[] = { "anon", "shanon", "fpriv", "fshared", "ptext", "pdata" };
enum { P_VAL, P_OBJ };		/* page state: own value, or follows the object */

struct pg {
	uint64_t lo, hi;	/* values of the two halves (P_VAL) */
	uint8_t st;		/* P_VAL or P_OBJ */
	uint8_t mz;		/* MADV_FREE: may also be all zero */
	uint8_t prot;
};

struct opg {
	uint64_t lo, hi;
};

struct region {
	int used, type, wipe, dontfork, thp;
	int pf, prot0;		/* ptext/pdata: file; protection at mmap */
	unsigned long off, n;	/* first page within the slot, pages */
	struct opg *obj;	/* object shadow (file or shared anon object) */
	unsigned long objoff;	/* first object page of the region */
	struct opg *own;	/* shadow mapping this region owns (shanon) */
	size_t own_len;
	struct pg pg[MAXPG];
};

static struct region reg[NSLOT];	/* reg[s] lives in slot s */
static char *arena;
static int datafd = -1;
static char datapath[128];
static struct opg *fileshadow;
struct stats *st;
int verbose;
unsigned long root_ops;
static int maxdepth = 3;
static long selftest = -1;
static int selftest_late;

struct proc P;
int unrelated_only;
static int unrelated_selftest;

/*
 * The files of the ptext and pdata regions, their shadows and the log of
 * their truncations, in shared memory: each entry drops the private
 * copies beyond size in every process that maps file f.
 */
struct pfshared {
	struct opg sh[PF_NF][PF_PAGES];
	unsigned long ntrunc;
	struct { int f; unsigned long size; } trunc[PF_TRUNCS];
};
static struct pfshared *pfs;
static int pf_fd[PF_NF];
static char pf_path[PF_NF][128];
static unsigned long pf_seen;	/* truncations applied to this shadow */
static int selftest_pf;		/* -Z: corrupt a ptext/pdata page */
static int mmap_force = -1;	/* the type of the next op_mmap(), or -1 */
static sigjmp_buf bus_jmp;	/* a SIGBUS expected by bus_probe() */
static volatile sig_atomic_t bus_armed;

uint64_t rnd64(void)
{
	uint64_t z = (P.rng += GOLDEN);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

unsigned long rnd(unsigned long n)
{
	return n ? rnd64() % n : 0;
}

static inline uint64_t pat(uint64_t v, unsigned int w)
{
	return v ? v ^ ((uint64_t)(w + 1) * GOLDEN) : 0;
}

int frozen(void)
{
	return P.nkids > 0 || P.born_conc;
}

static inline char *addr(struct region *r, unsigned long i)
{
	return arena + (((r - reg) * SLOT_PAGES) + r->off + i) * PAGE;
}

static inline int shared(struct region *r)
{
	return r->type == R_SHANON || r->type == R_FSHARED;
}

/* ptext or pdata: a private mapping of one of the pf files. */
static inline int pfile(struct region *r)
{
	return r->type == R_PTEXT || r->type == R_PDATA;
}

/* A private file mapping: its pages follow the file until written. */
static inline int fpriv(struct region *r)
{
	return r->type == R_FPRIV || pfile(r);
}

/* Pages of the object that r maps (file regions). */
static inline unsigned long obj_pages(struct region *r)
{
	return pfile(r) ? PF_PAGES : FILE_PAGES;
}

void out(const char *buf, size_t n)
{
	while (n) {
		ssize_t w = write(1, buf, n);

		if (w <= 0)
			return;
		buf += w;
		n -= w;
	}
}

void oplog(const char *fmt, ...)
{
	char *e = P.log[P.logn++ % LOGN];
	va_list ap;
	int n;

	n = snprintf(e, LOGW, "%s:%lu ", P.path, P.opi);
	va_start(ap, fmt);
	vsnprintf(e + n, LOGW - n, fmt, ap);
	va_end(ap);
	if (verbose) {
		char line[LOGW + 8];

		n = snprintf(line, sizeof(line), "# op %s\n", e);
		out(line, n);
	}
}

static void fin_line(void)
{
	char buf[256];
	int n;

	n = snprintf(buf, sizeof(buf),
		     "fuzz: seed=%llu ops=%ld procs=%ld violations=%ld groups=%ld sigbus=%ld punches=%ld truncs=%ld pfile=%ld pokes=%ld pwrites=%ld pfpunches=%ld pftruncs=%ld pfbus=%ld\n",
		     (unsigned long long)P.seed, st->ops, st->procs, st->viol, st->groups,
		     st->sigbus, st->punches, st->truncs, st->pfmaps, st->pfpokes,
		     st->pfwrites, st->pfpunches, st->pftruncs, st->pfbus);
	out(buf, n);
}

/* Report a violation with the tail of the log; counts it once. */
void violation(const char *fmt, ...)
{
	static char buf[LOGN * (LOGW + 8) + 1024];
	unsigned long i, from;
	va_list ap;
	int n;

	__atomic_fetch_add(&st->viol, 1, __ATOMIC_SEQ_CST);
	P.bad = 1;
	n = snprintf(buf, sizeof(buf), "# VIOLATION seed=%llu proc=%s op=%lu: ",
		     (unsigned long long)P.seed, P.path, P.opi);
	va_start(ap, fmt);
	n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	va_end(ap);
	n += snprintf(buf + n, sizeof(buf) - n,
		      "\n# op log tail (proc:op, ancestors' ops first); replay: fuzz -s %llu -n %lu%s -v\n",
		      (unsigned long long)P.seed, root_ops, unrelated_only ? " -u" : "");
	from = P.logn > LOGN ? P.logn - LOGN : 0;
	for (i = from; i < P.logn && n < (int)sizeof(buf) - LOGW - 8; i++)
		n += snprintf(buf + n, sizeof(buf) - n, "#   %s\n", P.log[i % LOGN]);
	out(buf, n);
}

void die(const char *what)
{
	char buf[256];
	int n = snprintf(buf, sizeof(buf), "# fuzz: %s: %s (proc %s op %lu)\n",
			 what, strerror(errno), P.path, P.opi);

	out(buf, n);
	_exit(3);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (sig == SIGBUS && bus_armed) {
		bus_armed = 0;
		siglongjmp(bus_jmp, 1);
	}
	violation("unexpected signal %d (%s) at %p", sig, strsignal(sig), si->si_addr);
	if (P.depth == 0)
		fin_line();
	_exit(1);
}

/* PROT_NONE placeholder so nothing else lands in the arena. */
static void reserve(unsigned long first, unsigned long npages)
{
	if (!npages)
		return;
	if (mmap(arena + first * PAGE, npages * PAGE, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) == MAP_FAILED)
		die("reserve");
}

static unsigned long slot_first(struct region *r)
{
	return (r - reg) * SLOT_PAGES + r->off;
}

static void expect(struct region *r, unsigned long i, uint64_t *lo, uint64_t *hi, int *mz)
{
	struct pg *p = &r->pg[i];

	if (p->st == P_OBJ) {
		*lo = r->obj[r->objoff + i].lo;
		*hi = r->obj[r->objoff + i].hi;
		*mz = 0;
	} else {
		*lo = p->lo;
		*hi = p->hi;
		*mz = p->mz;
	}
}

static int page_zero(volatile uint64_t *w)
{
	int k;

	for (k = 0; k < WORDS; k++)
		if (w[k])
			return 0;
	return 1;
}

/* Check page i of r against the shadow: all words, or a sample. */
static int check_page(struct region *r, unsigned long i, int full)
{
	volatile uint64_t *w = (volatile uint64_t *)addr(r, i);
	unsigned int samp[5] = { 0, HALFW - 1, HALFW, WORDS - 1,
				 (unsigned int)((i * 37 + P.opi) % WORDS) };
	uint64_t lo, hi, want, got;
	int k, idx, mz, cnt = full ? WORDS : 5;

	if (!(r->pg[i].prot & PROT_READ))
		return 0;
	expect(r, i, &lo, &hi, &mz);
	for (k = 0; k < cnt; k++) {
		idx = full ? k : (int)samp[k];
		want = pat(idx < HALFW ? lo : hi, idx);
		got = w[idx];
		if (got == want)
			continue;
		if (mz && page_zero(w))
			return 0;
		violation("region %ld (%s, %lu pages at slot page %lu, objoff %lu) page %lu word %d: want %#llx got %#llx (shadow lo=%#llx hi=%#llx %s%s)",
			  (long)(r - reg), tname[r->type], r->n, r->off, r->objoff, i, idx,
			  (unsigned long long)want, (unsigned long long)got,
			  (unsigned long long)lo, (unsigned long long)hi,
			  r->pg[i].st == P_OBJ ? "object" : "own", mz ? ", maybe zero" : "");
		return 1;
	}
	return 0;
}

static int check_range(struct region *r, unsigned long a, unsigned long b, int full)
{
	unsigned long i;

	if (!r->used)
		return 0;
	if (b > r->n)
		b = r->n;
	if (b - a > 64)
		full = 0;
	for (i = a; i < b && !P.bad; i++)
		if (check_page(r, i, full || i % 16 == 0))
			return 1;
	return P.bad;
}

/*
 * All regions: every word of every page if full, else a quarter of the
 * pages (5 words each, every word of one page in 64), rotating.
 */
static void sweep(int full)
{
	unsigned long rot = P.opi % 64;
	int s;

	for (s = 0; s < NSLOT && !P.bad; s++) {
		unsigned long i;

		if (!reg[s].used)
			continue;
		for (i = 0; i < reg[s].n && !P.bad; i++) {
			if (full || i % 64 == rot)
				check_page(&reg[s], i, 1);
			else if ((i + rot) % 4 == 0)
				check_page(&reg[s], i, 0);
		}
	}
}

/*
 * The shadow of a write of v into page i: mode 0 whole page, 1 low half,
 * 2 high half. Returns the mode to write: a whole page where the page's
 * data was not definite.
 */
static int shadow_write(struct region *r, unsigned long i, int mode, uint64_t v)
{
	struct pg *p = &r->pg[i];

	if (shared(r)) {
		struct opg *o = &r->obj[r->objoff + i];

		if (mode != 2)
			o->lo = v;
		if (mode != 1)
			o->hi = v;
	} else {
		if (p->st == P_OBJ) {
			/* Copy on write of a file page: the rest as it is now. */
			p->lo = r->obj[r->objoff + i].lo;
			p->hi = r->obj[r->objoff + i].hi;
			p->st = P_VAL;
		}
		if (p->mz) {
			/* Data or zeros: make it definite. */
			mode = 0;
			p->mz = 0;
		}
		if (mode != 2)
			p->lo = v;
		if (mode != 1)
			p->hi = v;
	}
	return mode;
}

/* Write page i: mode 0 whole page, 1 low half, 2 high half. */
static void write_page(struct region *r, unsigned long i, int mode, uint64_t v)
{
	uint64_t *w = (uint64_t *)addr(r, i);
	int k, from, to;

	mode = shadow_write(r, i, mode, v);
	from = mode == 2 ? HALFW : 0;
	to = mode == 1 ? HALFW : WORDS;
	for (k = from; k < to; k++)
		w[k] = pat(v, k);
}

/* Written by plain stores: not text, and not shared memory while frozen. */
static int writable(struct region *r)
{
	return r->used && r->type != R_PTEXT && !(shared(r) && frozen());
}

/* A random used region (writable ones only if w), or NULL. */
static struct region *pick(int w, int not_type)
{
	int s, cand[NSLOT], nc = 0;

	for (s = 0; s < NSLOT; s++)
		if (reg[s].used && (!w || writable(&reg[s])) && reg[s].type != not_type)
			cand[nc++] = s;
	return nc ? &reg[cand[rnd(nc)]] : NULL;
}

static int nused(void)
{
	int s, n = 0;

	for (s = 0; s < NSLOT; s++)
		n += reg[s].used;
	return n;
}

static int free_slot(void)
{
	int s, cand[NSLOT], nc = 0;

	for (s = 0; s < NSLOT; s++)
		if (!reg[s].used)
			cand[nc++] = s;
	return nc ? cand[rnd(nc)] : -1;
}

/* A random sub-range [*a, *b) of r, often table-aligned, often small. */
static void range(struct region *r, unsigned long *a, unsigned long *b)
{
	unsigned long n = r->n, x = rnd(100);

	if (x < 20) {
		*a = 0;
		*b = n;
	} else if (x < 50) {
		*a = rnd(n);
		*b = *a + 1 + rnd(8);
	} else if (x < 75 && n > PMD_PAGES) {
		*a = rnd(n / PMD_PAGES) * PMD_PAGES;
		*b = *a + PMD_PAGES;
	} else {
		*a = rnd(n);
		*b = *a + 1 + rnd(n - *a);
	}
	if (*b > n)
		*b = n;
}

static void init_pages(struct region *r, unsigned long a, unsigned long b)
{
	unsigned long i;

	for (i = a; i < b; i++) {
		r->pg[i].st = r->type == R_ANON ? P_VAL : P_OBJ;
		r->pg[i].lo = r->pg[i].hi = 0;
		r->pg[i].mz = 0;
		r->pg[i].prot = r->prot0;
	}
}

static void fill(struct region *r, unsigned long a, unsigned long b, unsigned long stride)
{
	unsigned long i;

	for (i = a; i < b; i += stride) {
		int mode = rnd(4);
		uint64_t v = rnd64() | 1;

		if (r->pg[i].prot == (PROT_READ | PROT_WRITE))
			write_page(r, i, mode > 2 ? mode - 1 : 0, v);
	}
}

static void drop_region(struct region *r)
{
	if (r->own)
		munmap(r->own, r->own_len);
	r->own = NULL;
	r->used = 0;
}

/* ---- operations ---- */

static void op_write(void)
{
	struct region *r = pick(1, -1);
	unsigned long a, b, stride = 1;

	if (!r)
		return;
	range(r, &a, &b);
	if (b - a > 1024)
		stride = (b - a) / 512;
	oplog("write r%ld [%lu,%lu) stride %lu", (long)(r - reg), a, b, stride);
	fill(r, a, b, stride);
	check_range(r, a, b, 1);
}

static void op_read(void)
{
	struct region *r = pick(0, -1);
	unsigned long a, b;

	if (!r)
		return;
	range(r, &a, &b);
	oplog("read r%ld [%lu,%lu)", (long)(r - reg), a, b);
	check_range(r, a, b, 1);
}

static void op_mmap(void)
{
	static const int thp_adv[] = { 0, MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_NOHUGEPAGE };
	int s = free_slot(), type, flags, x, pf = 0, fd = datafd;
	unsigned long n, off, objoff = 0, objn = FILE_PAGES;
	struct region *r;
	void *p;

	if (s < 0 || nused() >= NREG_MAX)
		return op_write();
	r = &reg[s];
	x = rnd(100);
	type = x < 42 ? R_ANON : x < 55 ? R_SHANON : x < 69 ? R_FPRIV : x < 82 ? R_FSHARED :
	       x < 91 ? R_PTEXT : R_PDATA;
	if (mmap_force >= 0)
		type = mmap_force;
	x = rnd(100);
	if (x < 15)
		n = 1 + rnd(16);
	else if (x < 75)
		n = PMD_PAGES * (1 + rnd(4));
	else
		n = 1 + rnd(2 * PMD_PAGES);
	off = rnd(100) < 70 ? 0 : rnd(PMD_PAGES);
	if (type == R_PTEXT || type == R_PDATA) {
		/* Mostly whole tables: the ones fork shares. */
		pf = rnd(PF_NF);
		fd = pf_fd[pf];
		objn = PF_PAGES;
		if (rnd(100) < 80)
			off = 0;
	}
	if (type >= R_FPRIV)
		objoff = rnd(100) < 70 ? PMD_PAGES * rnd((objn - n) / PMD_PAGES)
				       : rnd(objn - n);
	flags = MAP_FIXED | (type == R_SHANON || type == R_FSHARED ? MAP_SHARED : MAP_PRIVATE);
	if (type == R_ANON || type == R_SHANON)
		flags |= MAP_ANONYMOUS;
	/* Populating a writable private file mapping copies every page. */
	if (type != R_FPRIV && type != R_PDATA && rnd(5) == 0)
		flags |= MAP_POPULATE;
	r->type = type;
	r->off = off;
	r->n = n;
	r->pf = pf;
	r->prot0 = type == R_PTEXT ? RX : RW;
	p = mmap(addr(r, 0), n * PAGE, r->prot0, flags,
		 flags & MAP_ANONYMOUS ? -1 : fd, objoff * PAGE);
	oplog("mmap r%d %s%s %lu pages at +%lu objoff %lu%s -> %s", s, tname[type],
	      !pfile(r) ? "" : pf ? " (file 1)" : " (file 0)", n, off, objoff,
	      flags & MAP_POPULATE ? " populate" : "", p == MAP_FAILED ? strerror(errno) : "ok");
	if (p == MAP_FAILED) {
		reserve(s * SLOT_PAGES + off, n);
		return;
	}
	r->used = 1;
	r->wipe = r->dontfork = 0;
	r->objoff = objoff;
	r->own = NULL;
	if (type == R_SHANON) {
		r->own_len = n * sizeof(struct opg);
		r->own = mmap(NULL, r->own_len, PROT_READ | PROT_WRITE,
			      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (r->own == MAP_FAILED)
			die("mmap shadow");
		r->obj = r->own;
		r->objoff = 0;
	} else if (pfile(r)) {
		r->obj = pfs->sh[pf];
		__atomic_fetch_add(&st->pfmaps, 1, __ATOMIC_SEQ_CST);
	} else {
		r->obj = fileshadow;
	}
	init_pages(r, 0, n);
	r->thp = type == R_ANON ? (int)rnd(4) : 0;
	if (thp_adv[r->thp])
		madvise(p, n * PAGE, thp_adv[r->thp]);
	if (writable(r) && rnd(3)) {
		unsigned long stride = 1 + rnd(4);

		if (n / stride > 1024)
			stride = n / 1024;
		fill(r, 0, n, stride);
	}
	check_range(r, 0, n, 0);
}

static void op_munmap(void)
{
	struct region *r = pick(0, -1);
	unsigned long k, first;
	int how, rc;

	if (!r)
		return;
	first = slot_first(r);
	how = r->n > 1 ? rnd(3) : 0;
	k = how ? 1 + rnd(r->n - 1) : r->n;
	if (how == 0) {
		rc = munmap(addr(r, 0), r->n * PAGE);
		oplog("munmap r%ld whole (%lu pages) -> %d", (long)(r - reg), r->n, rc);
		reserve(first, r->n);
		drop_region(r);
	} else if (how == 1) {
		rc = munmap(addr(r, 0), k * PAGE);
		oplog("munmap r%ld head %lu of %lu pages -> %d", (long)(r - reg), k, r->n, rc);
		if (rc)
			return;
		reserve(first, k);
		memmove(r->pg, r->pg + k, (r->n - k) * sizeof(struct pg));
		r->off += k;
		r->objoff += k;
		r->n -= k;
		check_range(r, 0, 64, 1);
	} else {
		rc = munmap(addr(r, r->n - k), k * PAGE);
		oplog("munmap r%ld tail %lu of %lu pages -> %d", (long)(r - reg), k, r->n, rc);
		if (rc)
			return;
		reserve(first + r->n - k, k);
		r->n -= k;
		check_range(r, r->n > 64 ? r->n - 64 : 0, r->n, 1);
	}
}

/*
 * Read back the protections the kernel has for r, and return how many
 * pages differed from the model.  mprotect() works VMA by VMA: when it
 * fails, the VMAs before the failing one could keep their new protection.
 * Vanilla fails that way only when a VMA split cannot get memory, which
 * never happens here; ptshare must unshare for every VMA before it
 * changes one.  So a failed mprotect() that changed pages is a violation.
 */
static unsigned long sync_prot(struct region *r)
{
	unsigned long lo = (unsigned long)addr(r, 0), hi = (unsigned long)addr(r, r->n);
	unsigned long s, e, i, n = 0;
	char line[256], perm[5];
	FILE *f = fopen("/proc/self/maps", "r");
	int prot;

	if (!f)
		die("/proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s", &s, &e, perm) != 3 || e <= lo || s >= hi)
			continue;
		prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
		       (perm[2] == 'x' ? PROT_EXEC : 0);
		for (i = (s > lo ? s : lo); i < (e < hi ? e : hi); i += PAGE) {
			struct pg *p = &r->pg[(i - lo) / PAGE];

			n += p->prot != prot;
			p->prot = prot;
		}
	}
	fclose(f);
	return n;
}

static void op_mprotect(void)
{
	static const int prots[] = { PROT_READ, PROT_READ | PROT_WRITE, PROT_READ | PROT_WRITE,
				     PROT_NONE, PROT_READ };
	/* Text is never made writable: only /proc/self/mem writes it. */
	static const int tprots[] = { PROT_READ, RX, RX, PROT_NONE, PROT_READ };
	struct region *r = pick(0, -1);
	unsigned long a, b, i;
	int prot, rc;

	if (!r)
		return;
	range(r, &a, &b);
	prot = r->type == R_PTEXT ? tprots[rnd(5)] : prots[rnd(5)];
	rc = mprotect(addr(r, a), (b - a) * PAGE, prot) ? errno : 0;
	oplog("mprotect r%ld [%lu,%lu) %d -> %d", (long)(r - reg), a, b, prot, -rc);
	if (rc) {
		i = sync_prot(r);
		if (i)
			violation("mprotect r%ld failed (%s) half-way: %lu pages changed",
				  (long)(r - reg), strerror(rc), i);
		return;
	}
	for (i = a; i < b; i++)
		r->pg[i].prot = prot;
	check_range(r, a, b, 0);
}

static void op_madvise(void)
{
	static const struct { int adv, whole; const char *name; } advs[] = {
		{ MADV_DONTNEED, 0, "DONTNEED" }, { MADV_DONTNEED, 0, "DONTNEED" },
		{ MADV_FREE, 0, "FREE" }, { MADV_FREE, 0, "FREE" },
		{ MADV_PAGEOUT, 0, "PAGEOUT" }, { MADV_PAGEOUT, 0, "PAGEOUT" },
		{ MADV_COLD, 0, "COLD" },
		{ MADV_WIPEONFORK, 1, "WIPEONFORK" }, { MADV_KEEPONFORK, 1, "KEEPONFORK" },
		{ MADV_DONTFORK, 1, "DONTFORK" }, { MADV_DOFORK, 1, "DOFORK" },
		{ MADV_HUGEPAGE, 1, "HUGEPAGE" }, { MADV_NOHUGEPAGE, 1, "NOHUGEPAGE" },
		{ MADV_COLLAPSE, 0, "COLLAPSE" },
		{ MADV_POPULATE_READ, 0, "POPULATE_READ" },
		{ MADV_POPULATE_WRITE, 0, "POPULATE_WRITE" },
	};
	struct region *r = pick(0, -1);
	unsigned long a, b, i;
	int k, adv, rc;

	if (!r)
		return;
	k = rnd(sizeof(advs) / sizeof(advs[0]));
	/* FREE and WIPEONFORK take private anonymous memory only. */
	if ((advs[k].adv == MADV_FREE || advs[k].adv == MADV_WIPEONFORK) && r->type != R_ANON)
		k = 4;
	adv = advs[k].adv;
	if (advs[k].whole) {
		a = 0;
		b = r->n;
	} else {
		range(r, &a, &b);
	}
	if (adv == MADV_DONTNEED || adv == MADV_FREE)
		munlock(addr(r, a), (b - a) * PAGE);	/* would fail on VM_LOCKED */
	if (adv == MADV_POPULATE_WRITE && fpriv(r))
		for (i = a; i < b; i++)
			if (r->pg[i].prot != (PROT_READ | PROT_WRITE))
				return;	/* a partial failure would leave COW copies unknown */
	rc = madvise(addr(r, a), (b - a) * PAGE, adv);
	oplog("madvise r%ld %s [%lu,%lu) %s -> %d", (long)(r - reg), tname[r->type], a, b,
	      advs[k].name, rc ? -errno : 0);
	if (rc)
		return;
	switch (adv) {
	case MADV_DONTNEED:
		for (i = a; i < b; i++) {
			if (r->type == R_ANON) {
				r->pg[i].lo = r->pg[i].hi = 0;
				r->pg[i].mz = 0;
			} else if (fpriv(r)) {
				r->pg[i].st = P_OBJ;
				r->pg[i].mz = 0;
			}
		}
		break;
	case MADV_FREE:
		for (i = a; i < b; i++)
			if (r->type == R_ANON)
				r->pg[i].mz = 1;
		break;
	case MADV_POPULATE_WRITE:
		/* Breaks COW: private file pages become private copies. */
		for (i = a; i < b && fpriv(r); i++) {
			if (r->pg[i].st == P_OBJ) {
				r->pg[i].lo = r->obj[r->objoff + i].lo;
				r->pg[i].hi = r->obj[r->objoff + i].hi;
				r->pg[i].st = P_VAL;
			}
		}
		break;
	case MADV_WIPEONFORK: r->wipe = 1; break;
	case MADV_KEEPONFORK: r->wipe = 0; break;
	case MADV_DONTFORK: r->dontfork = 1; break;
	case MADV_DOFORK: r->dontfork = 0; break;
	case MADV_HUGEPAGE: r->thp = 1; break;
	case MADV_NOHUGEPAGE: r->thp = 2; break;
	}
	check_range(r, a, b, 1);
}

static void op_mlock(void)
{
	/* Not on writable private file mappings: mlock breaks their COW. */
	struct region *r = pick(0, R_FPRIV);
	unsigned long a, b;
	int how, rc;

	if (!r || r->type == R_PDATA)
		return;
	range(r, &a, &b);
	how = rnd(3);
	if (how == 0)
		rc = mlock(addr(r, a), (b - a) * PAGE);
	else if (how == 1)
		rc = mlock2(addr(r, a), (b - a) * PAGE, MLOCK_ONFAULT);
	else
		rc = munlock(addr(r, a), (b - a) * PAGE);
	oplog("%s r%ld [%lu,%lu) -> %d", how == 0 ? "mlock" : how == 1 ? "mlock2-onfault" : "munlock",
	      (long)(r - reg), a, b, rc ? -errno : 0);
	check_range(r, a, b, 0);
}

/*
 * One VMA again before mremap: no mlock, one protection.  Both can fail
 * (ENOMEM) when they must split a VMA or unshare a PTE table: then r is
 * left as the kernel has it, and 0 is returned.
 */
static int normalize(struct region *r)
{
	unsigned long i;

	if (munlock(addr(r, 0), r->n * PAGE) ||
	    mprotect(addr(r, 0), r->n * PAGE, r->prot0)) {
		int err = errno;

		oplog("mremap r%ld: normalize failed (%s), no mremap", (long)(r - reg),
		      strerror(err));
		i = sync_prot(r);
		if (i)
			violation("mprotect r%ld failed (%s) half-way: %lu pages changed",
				  (long)(r - reg), strerror(err), i);
		return 0;
	}
	for (i = 0; i < r->n; i++)
		r->pg[i].prot = r->prot0;
	return 1;
}

static void op_mremap(void)
{
	struct region *r = pick(0, -1), *t;
	unsigned long newn, noff, extra, first;
	int how, ns;
	void *p;

	if (!r)
		return;
	how = rnd(5);	/* 0 move, 1 move+resize, 2 grow in place, 3 shrink, 4 dontunmap */
	if (how == 4 && r->type != R_ANON)
		how = 0;
	if ((how == 1 || how == 2) && r->type == R_SHANON)
		how = 3;
	if (how == 3 && r->n < 2)
		how = 0;
	if (!normalize(r))
		return;
	first = slot_first(r);
	if (how == 2) {
		extra = 1 + (rnd(2) ? rnd(2 * PMD_PAGES) : PMD_PAGES);
		if (r->off + r->n + extra > SLOT_PAGES || r->n + extra > MAXPG ||
		    (r->type != R_ANON && r->objoff + r->n + extra > obj_pages(r)))
			return;
		munmap(addr(r, r->n), extra * PAGE);
		p = mremap(addr(r, 0), r->n * PAGE, (r->n + extra) * PAGE, 0);
		oplog("mremap r%ld grow in place %lu -> %lu pages -> %s", (long)(r - reg), r->n,
		      r->n + extra, p == MAP_FAILED ? strerror(errno) : "ok");
		if (p == MAP_FAILED) {
			reserve(first + r->n, extra);
			return;
		}
		init_pages(r, r->n, r->n + extra);
		r->n += extra;
		check_range(r, 0, r->n, 0);
		return;
	}
	if (how == 3) {
		newn = 1 + rnd(r->n - 1);
		p = mremap(addr(r, 0), r->n * PAGE, newn * PAGE, 0);
		oplog("mremap r%ld shrink %lu -> %lu pages -> %s", (long)(r - reg), r->n, newn,
		      p == MAP_FAILED ? strerror(errno) : "ok");
		if (p == MAP_FAILED)
			return;
		reserve(first + newn, r->n - newn);
		r->n = newn;
		check_range(r, 0, r->n, 0);
		return;
	}
	ns = free_slot();
	if (ns < 0)
		return;
	t = &reg[ns];
	newn = r->n;
	if (how == 1) {
		newn = rnd(2) ? 1 + rnd(r->n) : r->n + 1 + rnd(PMD_PAGES);
		if (newn > MAXPG || (r->type != R_ANON && r->objoff + newn > obj_pages(r)))
			newn = r->n;
	}
	noff = rnd(100) < 70 ? 0 : rnd(PMD_PAGES);
	p = mremap(addr(r, 0), r->n * PAGE, newn * PAGE,
		   MREMAP_MAYMOVE | MREMAP_FIXED | (how == 4 ? MREMAP_DONTUNMAP : 0),
		   arena + (ns * SLOT_PAGES + noff) * PAGE);
	oplog("mremap r%ld %s -> r%d at +%lu, %lu -> %lu pages -> %s", (long)(r - reg),
	      how == 4 ? "dontunmap" : "move", ns, noff, r->n, newn,
	      p == MAP_FAILED ? strerror(errno) : "ok");
	if (p == MAP_FAILED) {
		unsigned char vec;

		reserve(ns * SLOT_PAGES + noff, newn);
		/*
		 * A shrinking move unmaps the old tail before it looks at
		 * the VMA (mremap_to()), so a failure can leave it unmapped.
		 */
		if (newn < r->n && mincore(addr(r, newn), PAGE, &vec) && errno == ENOMEM) {
			oplog("mremap r%ld failed after unmapping the tail: %lu pages left",
			      (long)(r - reg), newn);
			reserve(first + newn, r->n - newn);
			r->n = newn;
		}
		return;
	}
	memcpy(t, r, sizeof(*t) - sizeof(t->pg) + r->n * sizeof(struct pg));
	t->off = noff;
	if (newn > r->n)
		init_pages(t, r->n, newn);
	t->n = newn;
	if (how == 4) {
		/* The old range stays mapped, empty: fresh zero pages. */
		r->own = NULL;
		r->wipe = r->dontfork = 0;
		init_pages(r, 0, r->n);
		madvise(addr(r, 0), r->n * PAGE, MADV_KEEPONFORK);
		madvise(addr(r, 0), r->n * PAGE, MADV_DOFORK);
		check_range(r, 0, r->n, 0);
	} else {
		reserve(first, r->n);
		r->used = 0;
		r->own = NULL;
	}
	check_range(t, 0, t->n, 0);
}

static int reap(pid_t pid, const char *what);
static void reap_oldest(void);

/* ---- private mappings of a file: ptext and pdata ---- */

/* Apply the truncations logged since this shadow last looked. */
static void pf_catch_up(void)
{
	unsigned long n = __atomic_load_n(&pfs->ntrunc, __ATOMIC_SEQ_CST);
	unsigned long i;
	int s;

	for (; pf_seen < n; pf_seen++) {
		int f = pfs->trunc[pf_seen].f;
		unsigned long size = pfs->trunc[pf_seen].size;

		for (s = 0; s < NSLOT; s++) {
			struct region *r = &reg[s];

			if (!r->used || !pfile(r) || r->pf != f)
				continue;
			for (i = 0; i < r->n; i++) {
				if (r->objoff + i < size)
					continue;
				r->pg[i].st = P_OBJ;
				r->pg[i].mz = 0;
			}
		}
	}
}

/* A random ptext or pdata region, or NULL. */
static struct region *pick_pf(void)
{
	int s, cand[NSLOT], nc = 0;

	for (s = 0; s < NSLOT; s++)
		if (reg[s].used && pfile(&reg[s]))
			cand[nc++] = s;
	return nc ? &reg[cand[rnd(nc)]] : NULL;
}

/*
 * A range [*a, *b) of file *f, at most max pages: mostly pages that a
 * region maps (r, if there is one), else anywhere.
 */
static void pf_range(struct region *r, int *f, unsigned long *a, unsigned long *b,
		     unsigned long max)
{
	if (r && rnd(100) < 80) {
		range(r, a, b);
		*f = r->pf;
		*a += r->objoff;
		*b += r->objoff;
	} else {
		*f = rnd(PF_NF);
		*a = rnd(PF_PAGES);
		*b = *a + 1 + rnd(PMD_PAGES);
	}
	if (*b - *a > max)
		*b = *a + max;
	if (*b > PF_PAGES)
		*b = PF_PAGES;
}

/* Check what every region maps of pages [a, b) of file f. */
static void pf_check(int f, unsigned long a, unsigned long b)
{
	int s;

	for (s = 0; s < NSLOT && !P.bad; s++) {
		struct region *r = &reg[s];
		unsigned long x, y;

		if (!r->used || !pfile(r) || r->pf != f)
			continue;
		x = a > r->objoff ? a - r->objoff : 0;
		y = b > r->objoff ? b - r->objoff : 0;
		if (y > r->n)
			y = r->n;
		if (x < y)
			check_range(r, x, y, 1);
	}
}

/*
 * Write pages [a, b) of r through /proc/self/mem, as a debugger plants a
 * breakpoint: FOLL_FORCE writes read-only pages too, and copies them on
 * write, so that only this process sees the new data.
 */
static void op_poke(struct region *r)
{
	unsigned long a, b, i;
	uint64_t buf[WORDS];
	int fd, k, mode, from, to;
	ssize_t want, got;
	uint64_t v;
	off_t at;

	range(r, &a, &b);
	if (b - a > 16)
		b = a + 1 + rnd(16);
	fd = open("/proc/self/mem", O_RDWR);
	if (fd < 0)
		die("/proc/self/mem");
	oplog("poke r%ld %s [%lu,%lu) through /proc/self/mem", (long)(r - reg),
	      tname[r->type], a, b);
	for (i = a; i < b && !P.bad; i++) {
		/* Unreadable pages are not checked: leave them alone. */
		if (!(r->pg[i].prot & PROT_READ))
			continue;
		v = rnd64() | 1;
		mode = shadow_write(r, i, rnd(3), v);
		from = mode == 2 ? HALFW : 0;
		to = mode == 1 ? HALFW : WORDS;
		for (k = from; k < to; k++)
			buf[k] = pat(v, k);
		want = (to - from) * sizeof(uint64_t);
		at = (off_t)(unsigned long)addr(r, i) + from * sizeof(uint64_t);
		/*
		 * With fail_ptshare (fuzz-run -F), the unshare that the
		 * write's GUP fault needs may fail: the write then fails
		 * with EIO having written nothing, as on any kernel whose
		 * fault runs out of memory.  Retry, as a debugger would.
		 */
		for (k = 0; k < 40; k++) {
			got = pwrite(fd, buf + from, want, at);
			if (got >= 0 || errno != EIO)
				break;
		}
		if (got != want)
			violation("poke r%ld page %lu: /proc/self/mem write of %zd bytes: %zd (%s)",
				  (long)(r - reg), i, want, got,
				  got < 0 ? strerror(errno) : "short");
		__atomic_fetch_add(&st->pfpokes, 1, __ATOMIC_SEQ_CST);
	}
	close(fd);
	check_range(r, a, b, 1);
}

/* pwrite() page p of file f: value v, mode as write_page(). */
static int pf_pwrite_page(int f, unsigned long p, int mode, uint64_t v)
{
	uint64_t buf[WORDS];
	int k, from = mode == 2 ? HALFW : 0, to = mode == 1 ? HALFW : WORDS;
	ssize_t want = (to - from) * sizeof(uint64_t);

	for (k = from; k < to; k++)
		buf[k] = pat(v, k);
	return pwrite(pf_fd[f], buf + from, want,
		      p * PAGE + from * sizeof(uint64_t)) == want ? 0 : -1;
}

/*
 * pwrite() pages of a file under the private mappings of the family:
 * where a process has not written a page, it sees the new data. By this
 * process, or one in three times by a helper child while it waits.
 */
static void op_pwrite(struct region *r)
{
	unsigned long a, b, p;
	uint64_t v[64];
	uint8_t mode[64];
	int f, helper, status, err = 0;
	pid_t pid = 0;

	pf_range(r, &f, &a, &b, 64);
	helper = !rnd(3);
	for (p = a; p < b; p++) {
		v[p - a] = rnd64() | 1;
		mode[p - a] = rnd(3);
	}
	oplog("pwrite file %d [%lu,%lu)%s", f, a, b, helper ? " by a helper child" : "");
	if (helper) {
		pid = fork();
		if (pid < 0)
			die("fork");
	}
	if (!helper || !pid) {
		for (p = a; p < b && !err; p++)
			err = pf_pwrite_page(f, p, mode[p - a], v[p - a]);
		if (helper)
			_exit(err ? 4 : 0);
	} else {
		while (waitpid(pid, &status, 0) < 0)
			if (errno != EINTR)
				die("waitpid");
		err = !WIFEXITED(status) || WEXITSTATUS(status);
	}
	if (err) {
		violation("pwrite file %d [%lu,%lu) failed", f, a, b);
		return;
	}
	for (p = a; p < b; p++) {
		if (mode[p - a] != 2)
			pfs->sh[f][p].lo = v[p - a];
		if (mode[p - a] != 1)
			pfs->sh[f][p].hi = v[p - a];
	}
	__atomic_fetch_add(&st->pfwrites, 1, __ATOMIC_SEQ_CST);
	pf_check(f, a, b);
}

/* Punch a hole: pages that follow the file read zero, copies stay. */
static void op_punch(struct region *r)
{
	unsigned long a, b, p;
	int f, rc;

	pf_range(r, &f, &a, &b, PF_PAGES);
	rc = fallocate(pf_fd[f], FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		       a * PAGE, (b - a) * PAGE) ? -errno : 0;
	oplog("punch file %d [%lu,%lu) -> %d", f, a, b, rc);
	if (rc) {
		violation("fallocate(PUNCH_HOLE) of file %d [%lu,%lu): %s", f, a, b,
			  strerror(-rc));
		return;
	}
	for (p = a; p < b; p++)
		pfs->sh[f][p].lo = pfs->sh[f][p].hi = 0;
	__atomic_fetch_add(&st->pfpunches, 1, __ATOMIC_SEQ_CST);
	pf_check(f, a, b);
}

/* Read *w: 1 if that raised SIGBUS. */
static int bus_probe(volatile uint64_t *w)
{
	int bus = 0;

	bus_armed = 1;
	if (sigsetjmp(bus_jmp, 1))
		bus = 1;
	else
		(void)*w;
	bus_armed = 0;
	return bus;
}

/*
 * File f ends at page size: every readable page of it beyond that must
 * raise SIGBUS, those before must read as the shadow says. A few pages
 * of each region, at the end and around it.
 */
static void probe_eof(int f, unsigned long size)
{
	int s, k;

	for (s = 0; s < NSLOT && !P.bad; s++) {
		struct region *r = &reg[s];
		unsigned long e, i, probe[4];

		if (!r->used || !pfile(r) || r->pf != f)
			continue;
		e = size > r->objoff ? size - r->objoff : 0;
		if (e > r->n)
			e = r->n;
		if (e)
			check_range(r, e > 4 ? e - 4 : 0, e, 1);
		if (e == r->n)
			continue;
		probe[0] = e;
		probe[1] = r->n - 1;
		probe[2] = e + rnd(r->n - e);
		probe[3] = e + rnd(r->n - e);
		for (k = 0; k < 4 && !P.bad; k++) {
			i = probe[k];
			if (!(r->pg[i].prot & PROT_READ))
				continue;
			if (!bus_probe((volatile uint64_t *)addr(r, i))) {
				violation("r%ld (%s) page %lu (file page %lu) read without SIGBUS; file %d ends at page %lu",
					  (long)(r - reg), tname[r->type], i, r->objoff + i,
					  f, size);
				return;
			}
			__atomic_fetch_add(&st->pfbus, 1, __ATOMIC_SEQ_CST);
		}
	}
}

/* A child forked while the file is short probes it too; 0 if it passed. */
static int probe_eof_child(int f, unsigned long size)
{
	pid_t pid;

	oplog("fork a child to probe the end of file %d", f);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		int s;

		strncat(P.path, "p", sizeof(P.path) - strlen(P.path) - 1);
		/* Fork left DONTFORK regions out. */
		for (s = 0; s < NSLOT; s++)
			if (reg[s].dontfork)
				reg[s].used = 0;
		probe_eof(f, size);
		_exit(P.bad ? 1 : 0);
	}
	return reap(pid, "probe child");
}

/*
 * Truncate a file to a smaller size and back: every process that maps it
 * loses its pages beyond the end, the file's and its private copies
 * (truncation zaps even COW pages), reads SIGBUS there meanwhile, and
 * zeros after the file grows back. Pages before the end keep theirs.
 */
static void op_trunc(struct region *r)
{
	unsigned long a, b, size, p;
	int f, rc;

	if (pfs->ntrunc >= PF_TRUNCS)
		return op_punch(r);
	pf_range(r, &f, &a, &b, PF_PAGES);
	size = rnd(2) ? a : a / PMD_PAGES * PMD_PAGES;
	rc = ftruncate(pf_fd[f], size * PAGE) ? -errno : 0;
	oplog("truncate file %d to %lu pages -> %d", f, size, rc);
	if (rc) {
		violation("ftruncate file %d to %lu pages: %s", f, size, strerror(-rc));
		return;
	}
	for (p = size; p < PF_PAGES; p++)
		pfs->sh[f][p].lo = pfs->sh[f][p].hi = 0;
	pfs->trunc[pfs->ntrunc].f = f;
	pfs->trunc[pfs->ntrunc].size = size;
	__atomic_fetch_add(&pfs->ntrunc, 1, __ATOMIC_SEQ_CST);
	pf_catch_up();
	__atomic_fetch_add(&st->pftruncs, 1, __ATOMIC_SEQ_CST);
	probe_eof(f, size);
	if (!P.bad && rnd(2))
		probe_eof_child(f, size);
	if (P.bad)
		return;
	rc = ftruncate(pf_fd[f], PF_PAGES * PAGE) ? -errno : 0;
	oplog("truncate file %d back to %lu pages -> %d", f, PF_PAGES, rc);
	if (rc) {
		violation("ftruncate file %d back to %lu pages: %s", f, PF_PAGES, strerror(-rc));
		return;
	}
	pf_check(f, size, size + 64);
	pf_check(f, b > 64 ? b - 64 : 0, b);
}

/*
 * Writes through /proc/self/mem; and while nobody else in the family
 * runs, changes to the file under the family's private mappings.
 */
static void op_pfile(void)
{
	struct region *r = pick_pf();
	int x = rnd(100);

	if (!r && rnd(2)) {
		mmap_force = R_PTEXT + rnd(2);
		op_mmap();
		mmap_force = -1;
		return;
	}
	/*
	 * Concurrent children would race the change of the file: wait for
	 * them first, the parent's side of the sequence stays the same.
	 */
	if (x >= 30 && !P.born_conc)
		while (P.nkids)
			reap_oldest();
	if (frozen() || x < 30) {
		if (r)
			op_poke(r);
	} else if (x < 60) {
		op_pwrite(r);
	} else if (x < 80) {
		op_punch(r);
	} else {
		op_trunc(r);
	}
}

/* ---- threads ---- */

struct tjob {
	struct region *r;
	unsigned long a, b;
	int nt, id;
	uint64_t *v;
	uint8_t *mode;
	pthread_barrier_t *bar;
};

static void *thread_fn(void *arg)
{
	struct tjob *j = arg;
	unsigned long i;

	for (i = j->a + j->id; i < j->b; i += j->nt)
		if (j->v[i - j->a])
			write_page(j->r, i, j->mode[i - j->a], j->v[i - j->a]);
	pthread_barrier_wait(j->bar);
	for (i = j->a + (j->id + 1) % j->nt; i < j->b && !P.bad; i += j->nt)
		check_page(j->r, i, 1);
	return NULL;
}

static void op_threads(void)
{
	/*
	 * What the main thread does meanwhile: nothing that splits the VMA
	 * (mlock would), as whether the pieces merge again would then
	 * depend on the timing of the threads' first faults, and so would
	 * later mremap()s and the rest of the sequence.
	 */
	static const char *const sides[] = { "none", "COLD", "PAGEOUT", "POPULATE_READ",
					     "POPULATE_WRITE" };
	struct region *r = pick(1, -1);
	uint64_t v[256];
	uint8_t mode[256];
	struct tjob job[4];
	pthread_t tid[4];
	pthread_barrier_t bar;
	unsigned long a, b, i;
	int nt, t, side;

	if (!r)
		return;
	a = rnd(r->n);
	b = a + 8 + rnd(248);
	if (b > r->n)
		b = r->n;
	nt = 2 + rnd(3);
	side = rnd(5);
	if (side == 4 && fpriv(r))
		side = 0;
	for (i = a; i < b; i++) {
		v[i - a] = r->pg[i].prot == (PROT_READ | PROT_WRITE) ? rnd64() | 1 : 0;
		mode[i - a] = rnd(3);
	}
	oplog("threads x%d r%ld [%lu,%lu) side %s", nt, (long)(r - reg), a, b, sides[side]);
	pthread_barrier_init(&bar, NULL, nt);
	for (t = 0; t < nt; t++) {
		job[t] = (struct tjob){ r, a, b, nt, t, v, mode, &bar };
		if (pthread_create(&tid[t], NULL, thread_fn, &job[t]))
			die("pthread_create");
	}
	switch (side) {
	case 1: madvise(addr(r, a), (b - a) * PAGE, MADV_COLD); break;
	case 2: madvise(addr(r, a), (b - a) * PAGE, MADV_PAGEOUT); break;
	case 3: madvise(addr(r, a), (b - a) * PAGE, MADV_POPULATE_READ); break;
	case 4: madvise(addr(r, a), (b - a) * PAGE, MADV_POPULATE_WRITE); break;
	}
	for (t = 0; t < nt; t++)
		pthread_join(tid[t], NULL);
	pthread_barrier_destroy(&bar);
	check_range(r, a, b, 1);
}

/* ---- processes ---- */

static void run_ops(unsigned long n);

/* Reap a child; returns nonzero if its subtree failed. */
static int reap(pid_t pid, const char *what)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	/* What it truncated took our copies too. */
	pf_catch_up();
	if (WIFSIGNALED(status)) {
		violation("%s %d killed by signal %d", what, pid, WTERMSIG(status));
		return 1;
	}
	switch (WEXITSTATUS(status)) {
	case 0:
		return 0;
	case 1:
		P.bad = 1;	/* counted and reported by the child */
		return 1;
	case 2:
		violation("%s %d: the exec'd checker found a difference (above)", what, pid);
		return 1;
	default:
		violation("%s %d exited with %d", what, pid, WEXITSTATUS(status));
		return 1;
	}
}

static void reap_oldest(void)
{
	pid_t pid;

	if (!P.nkids)
		return;
	pid = P.kids[0];
	memmove(P.kids, P.kids + 1, (P.nkids - 1) * sizeof(pid_t));
	P.nkids--;
	oplog("reap concurrent child %d", pid);
	reap(pid, "concurrent child");
}

/* In a new child: what fork must have done to each region. */
static void child_start(uint64_t rng, int conc, int k)
{
	char path[sizeof(P.path)];
	int s;

	snprintf(path, sizeof(path), "%.48s.%d", P.path, k);
	snprintf(P.path, sizeof(P.path), "%s", path);
	P.born_conc = conc;
	P.rng = rng;
	P.depth++;
	P.nkids = 0;
	P.nforks = 0;
	P.opi = 0;
	__atomic_fetch_add(&st->procs, 1, __ATOMIC_SEQ_CST);
	for (s = 0; s < NSLOT; s++) {
		struct region *r = &reg[s];
		unsigned char vec;

		if (!r->used)
			continue;
		if (r->dontfork) {
			if (mincore(addr(r, 0), PAGE, &vec) == 0 || errno != ENOMEM)
				violation("DONTFORK region r%d is mapped in the child", s);
			reserve(slot_first(r), r->n);
			drop_region(r);
		} else if (r->wipe && r->type == R_ANON) {
			for (unsigned long i = 0; i < r->n; i++) {
				r->pg[i].lo = r->pg[i].hi = 0;
				r->pg[i].mz = 0;
			}
		}
	}
	oplog("child start (%s)", conc ? "concurrent" : "parent waits");
	sweep(0);
}

static void child_finish(void)
{
	while (P.nkids)
		reap_oldest();
	if (!P.bad)
		sweep(0);
	_exit(P.bad ? 1 : 0);
}

static void op_fork(void)
{
	int conc, was_frozen = frozen(), k;
	unsigned long nops;
	uint64_t crng;
	pid_t pid;

	if (P.depth >= maxdepth || P.nkids >= MAXKIDS)
		return op_write();
	conc = rnd(2);
	crng = rnd64();
	nops = 5 + rnd(30);
	k = ++P.nforks;
	oplog("fork child %s.%d (%s, %lu ops)", P.path, k, conc ? "concurrent" : "wait", nops);
	pid = fork();
	if (pid < 0) {
		violation("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		child_start(crng, conc || was_frozen, k);
		run_ops(nops);
		child_finish();
	}
	if (conc)
		P.kids[P.nkids++] = pid;
	else
		reap(pid, "child");
}

/* Fork a child that writes some private memory, then execs a checker. */
static void op_exec(void)
{
	char exp[160], seed[32];
	uint64_t crng = rnd64();
	int k, fd;
	pid_t pid;

	if (P.depth >= maxdepth)
		return op_write();
	k = ++P.nforks;
	oplog("fork child %s.%d, exec checker of the file", P.path, k);
	pid = fork();
	if (pid < 0) {
		violation("fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		struct region *r;

		child_start(crng, 1, k);
		r = pick(1, R_SHANON);
		if (r && r->type != R_FSHARED) {
			oplog("write r%ld before exec", (long)(r - reg));
			fill(r, 0, r->n, 1 + r->n / 64);
		}
		snprintf(exp, sizeof(exp), "%s.%d.exp", datapath, getpid());
		fd = open(exp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || write(fd, fileshadow, FILE_PAGES * sizeof(struct opg)) !=
		    (ssize_t)(FILE_PAGES * sizeof(struct opg)))
			die("write expectation");
		close(fd);
		snprintf(seed, sizeof(seed), "%llu", (unsigned long long)P.seed);
		execl("/proc/self/exe", "fuzz", "-C", exp, datapath, P.path, seed, (char *)NULL);
		die("exec");
	}
	reap(pid, "exec child");
	snprintf(exp, sizeof(exp), "%s.%d.exp", datapath, pid);
	unlink(exp);
}

/* After exec: the file must hold what the shadow says. Exit 0 or 2. */
static int exec_checker(const char *exp, const char *data, const char *path, const char *seed)
{
	struct opg *want = malloc(FILE_PAGES * sizeof(struct opg));
	int fd = open(exp, O_RDONLY), dfd = open(data, O_RDONLY);
	uint64_t *m;
	unsigned long i;
	int k;

	if (!want || fd < 0 || dfd < 0 ||
	    read(fd, want, FILE_PAGES * sizeof(struct opg)) != (ssize_t)(FILE_PAGES * sizeof(struct opg)))
		return 3;
	m = mmap(NULL, FILE_PAGES * PAGE, PROT_READ, MAP_SHARED, dfd, 0);
	if (m == MAP_FAILED)
		return 3;
	for (i = 0; i < FILE_PAGES; i++) {
		for (k = 0; k < WORDS; k++) {
			uint64_t w = pat(k < HALFW ? want[i].lo : want[i].hi, k);

			if (m[i * WORDS + k] != w) {
				printf("# VIOLATION seed=%s proc=%s (after exec): file page %lu word %d: want %#llx got %#llx\n",
				       seed, path, i, k, (unsigned long long)w,
				       (unsigned long long)m[i * WORDS + k]);
				return 2;
			}
		}
	}
	return 0;
}

/*
 * Self-test: make the shadow of one page wrong (-X: of private anonymous
 * memory; -Z: of a ptext or pdata region, where a page that follows the
 * file becomes an own page with a wrong value) and check that the check
 * reports it.
 */
static void corrupt_shadow(void)
{
	int s;
	unsigned long i;

	for (s = 0; s < NSLOT; s++) {
		struct region *r = &reg[s];

		if (!r->used || (selftest_pf ? !pfile(r) : r->type != R_ANON))
			continue;
		for (i = 0; i < r->n; i++) {
			struct pg *p = &r->pg[i];

			if (!(p->prot & PROT_READ) || p->mz ||
			    (p->st != P_VAL && !selftest_pf))
				continue;
			oplog("SELF-TEST: corrupt the shadow of r%d (%s) page %lu (%s)", s,
			      tname[r->type], i, p->st == P_VAL ? "own" : "follows the file");
			if (p->st == P_OBJ) {
				p->lo = r->obj[r->objoff + i].lo;
				p->hi = r->obj[r->objoff + i].hi;
				p->st = P_VAL;
			}
			p->lo ^= 0x100;
			if (!check_page(r, i, 1))
				violation("self-test: the corrupted page was not reported");
			return;
		}
	}
	if (!selftest_late++)
		oplog("SELF-TEST: no page to corrupt yet, trying after each next op");
	if (selftest_pf) {
		/* None mapped yet: map one. */
		mmap_force = R_PTEXT + rnd(2);
		op_mmap();
		mmap_force = -1;
	}
	selftest++;
}

static void run_ops(unsigned long n)
{
	unsigned long i;

	for (i = 0; i < n && !P.bad; i++) {
		unsigned long x = unrelated_only ? 86 : rnd(100);

		P.opi++;
		__atomic_fetch_add(&st->ops, 1, __ATOMIC_SEQ_CST);
		if (x < 18)
			op_write();
		else if (x < 25)
			op_read();
		else if (x < 34)
			op_mmap();
		else if (x < 38)
			op_munmap();
		else if (x < 44)
			op_mprotect();
		else if (x < 51)
			op_mremap();
		else if (x < 64)
			op_madvise();
		else if (x < 67)
			op_mlock();
		else if (x < 74)
			op_fork();
		else if (x < 77)
			reap_oldest();
		else if (x < 84)
			op_threads();
		else if (x < 86)
			op_exec();
		else if (x < 88)
			op_unrelated(unrelated_selftest && !st->groups);
		else if (x < 96)
			op_pfile();
		else {
			oplog("sweep");
			sweep(0);
		}
		if (P.depth == 0 && selftest >= 0 && (long)P.opi == selftest && !P.bad)
			corrupt_shadow();
		if (P.opi % SWEEP == 0 && !P.bad)
			sweep(0);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: fuzz -s SEED -n OPS [-d DEPTH] [-v] [-k] [-X OP] [-Z OP] [-D DIR] [-F DIR] [-u] [-Y]\n");
	exit(2);
}

/*
 * The files of ptext and pdata: one on /tmp (tmpfs), one on /scratch if
 * it is ext4 (page cache of a block file system: writeback, block
 * allocation, punching blocks), else on /tmp too. Every page holds data
 * at first, so that a page that reads zero was punched or truncated.
 */
static void pf_setup(void)
{
	struct statfs sf;
	int ext4 = !statfs("/scratch", &sf) && sf.f_type == PF_EXT4_MAGIC;
	unsigned long p;
	int f;

	pfs = mmap(NULL, sizeof(*pfs), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (pfs == MAP_FAILED)
		die("mmap");
	for (f = 0; f < PF_NF; f++) {
		snprintf(pf_path[f], sizeof(pf_path[f]), "%s/fuzz-pf%d-%d",
			 f && ext4 ? "/scratch" : "/tmp", f, getpid());
		pf_fd[f] = open(pf_path[f], O_RDWR | O_CREAT | O_TRUNC, 0700);
		if (pf_fd[f] < 0)
			die(pf_path[f]);
		for (p = 0; p < PF_PAGES; p++) {
			pfs->sh[f][p].lo = pfs->sh[f][p].hi = rnd64() | 1;
			if (pf_pwrite_page(f, p, 0, pfs->sh[f][p].lo))
				die(pf_path[f]);
		}
	}
}

#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"
static long saved_shared = -1;
static pid_t shared_owner;

static void restore_shared_sharing(void)
{
	if (saved_shared >= 0 && getpid() == shared_owner)
		pts_write_long(SHARED_KNOB, saved_shared);
}

/* vm.pt_share_shared=2 until the first process exits. */
static void force_shared_sharing(void)
{
	saved_shared = pts_read_long(SHARED_KNOB);
	if (saved_shared < 0)
		return;
	shared_owner = getpid();
	atexit(restore_shared_sharing);
	pts_write_long(SHARED_KNOB, 2);
}

int main(int argc, char **argv)
{
	const char *dir = "/dev/shm", *fdir = NULL;
	unsigned long nops = 200;
	int c, keep = 0, s;
	struct sigaction sa;
	char *raw;

	if (argc == 6 && !strcmp(argv[1], "-C"))
		return exec_checker(argv[2], argv[3], argv[4], argv[5]);
	if (argc > 1 && !strcmp(argv[1], "-W"))
		return unrelated_worker(argc, argv);
	while ((c = getopt(argc, argv, "s:n:d:vkX:Z:D:F:uY")) != -1) {
		switch (c) {
		case 's': P.seed = strtoull(optarg, NULL, 0); break;
		case 'n': nops = strtoul(optarg, NULL, 0); break;
		case 'd': maxdepth = atoi(optarg); break;
		case 'v': verbose = 1; break;
		case 'k': keep = 1; break;
		case 'X': selftest = atol(optarg); break;
		case 'Z': selftest = atol(optarg); selftest_pf = 1; break;
		case 'D': dir = optarg; break;
		case 'F': fdir = optarg; break;
		case 'u': unrelated_only = 1; break;
		case 'Y': unrelated_selftest = 1; break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	root_ops = nops;
	unrelated_setup(dir, fdir);
	if (!keep && pts_force_sharing())
		force_shared_sharing();
	P.rng = P.seed * 0x2545F4914F6CDD1DULL + 1;
	strcpy(P.path, "0");

	st = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	fileshadow = mmap(NULL, FILE_PAGES * sizeof(struct opg), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (st == MAP_FAILED || fileshadow == MAP_FAILED)
		die("mmap");
	st->procs = 1;

	snprintf(datapath, sizeof(datapath), "%s/fuzz-%d", dir, getpid());
	datafd = open(datapath, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (datafd < 0 || ftruncate(datafd, FILE_PAGES * PAGE))
		die(datapath);
	pf_setup();

	/* The arena: NSLOT slots of 32 MiB, 2 MiB aligned, PROT_NONE. */
	raw = mmap(NULL, (NSLOT * SLOT_PAGES + PMD_PAGES) * PAGE, PROT_NONE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (raw == MAP_FAILED)
		die("mmap arena");
	arena = (char *)(((unsigned long)raw + PMD_PAGES * PAGE - 1) & ~(PMD_PAGES * PAGE - 1));
	for (s = 0; s < NSLOT; s++)
		reg[s].used = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	printf("# fuzz seed=%llu ops=%lu depth=%d pt_share=%d pt_share_shared=%ld\n",
	       (unsigned long long)P.seed, nops, maxdepth, pts_mode(),
	       pts_read_long(SHARED_KNOB));
	fflush(stdout);
	run_ops(nops);
	while (P.nkids)
		reap_oldest();
	if (!P.bad)
		sweep(1);
	close(datafd);
	unlink(datapath);
	for (s = 0; s < PF_NF; s++)
		unlink(pf_path[s]);
	fin_line();
	return P.bad || st->viol ? 1 : 0;
}
