// SPDX-License-Identifier: GPL-2.0
/*
 * observe: what processes can observe about their memory, for a
 * differential comparison of ptshare with vanilla (issue 18: "everything a
 * process can observe is what vanilla shows for the same memory, whether
 * or not a table is shared").
 *
 * It runs a fixed set of deterministic scenarios with vm.pt_share forced
 * to 2 (nothing to force on vanilla) and takes one reading per line,
 *
 *   observe <scenario>/<process>/<metric> <value>
 *
 * each normalised so that it is the same on any kernel with the same
 * semantics: numbers of the region's own smaps entry, pagemap and
 * kpagecount summaries over the region, RSS deltas measured around the
 * region's life (what the process's RSS drops by when it unmaps the
 * region), never whole-process numbers that depend on libc.
 *
 *   s1  the parent writes 16 MiB (2 MiB aligned, MADV_NOHUGEPAGE), clears
 *       its soft-dirty bits and writes the first half again, forks:
 *       readings in parent and child right after the fork
 *   s2  as s1 without the soft-dirty step, then the parent rewrites every
 *       page: readings in both
 *   s3  three sharers (parent and two children); child1 mprotects the
 *       region PROT_READ and back, without writing: readings in all three
 *   s4  the region on node 0; the child calls move_pages(MPOL_MF_MOVE) to
 *       node 1 on pages its parent maps (per-page status), mbind(MPOL_BIND,
 *       MPOL_MF_MOVE) and mbind(..., MPOL_MF_MOVE | MPOL_MF_STRICT) on two
 *       other parts (return value), then the node of each part's pages in
 *       both processes (move_pages with nodes NULL). Skipped with one node.
 *   s5  parent: its child exits, the parent reads; child: its parent exits
 *       (the child takes the table over), the child reads
 *   s6a a MAP_SHARED anonymous region, written, then fork (a control:
 *       ptshare shares no table of it)
 *   s6b a private mapping of a tmpfs file (/dev/shm), first half read and second
 *       half written, then fork (a control: file mappings are not shared)
 *   s7  as s2 with 512 MiB, for oom_score: the share of the region that
 *       the process's oom_score drops by when it unmaps the region
 *       (1.0 on vanilla; one point of oom_score is 1.5/1000 of RAM plus
 *       swap, so a 16 MiB region would be below its resolution)
 *
 * At each reading point of a process, over the region: the fields of its
 * smaps entry (kB) and its VmFlags; counts of pages with pagemap's present,
 * swapped, exclusive (bit 56), soft-dirty (55) and file/shared (61) bits;
 * the histogram of /proc/kpagecount over its present pages ("2:4096": 4096
 * pages mapped twice); for a child, how many of its pages are the parent's
 * (same PFN). When the scenario ends, each process unmaps the region, and
 * VmRSS, RssAnon, RssFile and RssShmem of /proc/PID/status at the reading
 * minus after the unmap give the *_delta readings.
 *
 * The processes of a scenario are workers that take commands over pipes
 * from this process (the observer), which reads their /proc files. The
 * observer maps none of the regions, so that its own memory use moves no
 * reading. Each worker runs every command path once before it is read
 * (warm_up), so that the text and stack pages it faults in later do not
 * move its RSS between a reading and the unmap that closes it. observe
 * re-executes itself with address randomization off, so that every run
 * has the same layout. A scenario that cannot run records
 * "<scenario>/error <why>", which no baseline has.
 *
 * Usage:
 *   observe            print the readings (exit status 1 if a scenario
 *                      could not run)
 *   observe -e FILE    compare them with FILE (readings of vanilla, made
 *                      by scripts/baseline.sh) and print TAP: one case per
 *                      reading, "not ok N KEY # vanilla X, ptshare Y"
 *                      when they differ
 *   -k KNOWN           known differences, lines "KEY VALUE REASON...": a
 *                      reading that differs from vanilla's but equals
 *                      VALUE is reported as a SKIP naming REASON; any
 *                      other value is judged as usual
 *   -K KNOWN           more known differences, read only when the tables
 *                      of shared memory are shared (vm.pt_share_shared
 *                      1 or 2): the child of s6a maps the parent's pages
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "pts.h"

#define REGION		(16UL << 20)
#define NPAGES		(REGION / PTS_PAGE)
#define BIG		(512UL << 20)
#define MAXPROC		3
#define REPLY_MS	300000
#define DATA_FILE	"/dev/shm/observe.dat"	/* tmpfs: its pages stay dirty */

#define MPOL_DEFAULT	0
#define MPOL_BIND	2
#define MF_STRICT	(1 << 0)
#define MF_MOVE		(1 << 1)

#define PM_PFN		((1ULL << 55) - 1)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_EXCLUSIVE	(1ULL << 56)
#define PM_FILE		(1ULL << 61)
#define PM_SWAP		(1ULL << 62)
#define PM_PRESENT	(1ULL << 63)

enum kind { PRIVATE_ANON, SHARED_ANON, PRIVATE_FILE };

/* ---- readings ---------------------------------------------------------- */

struct reading {
	char key[80];
	char val[120];
};
static struct reading *rd;
static int nrd, rdcap;
static const char *scen;

static void put_key(const char *key, const char *fmt, ...)
{
	va_list ap;

	if (nrd == rdcap) {
		rdcap = rdcap ? 2 * rdcap : 512;
		rd = realloc(rd, rdcap * sizeof(*rd));
		if (!rd) {
			perror("realloc");
			exit(1);
		}
	}
	snprintf(rd[nrd].key, sizeof(rd[nrd].key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(rd[nrd].val, sizeof(rd[nrd].val), fmt, ap);
	va_end(ap);
	nrd++;
}

#define put(proc, metric, ...) do {					\
	char k_[80];							\
	snprintf(k_, sizeof(k_), "%s/%s/%s", scen, proc, metric);	\
	put_key(k_, __VA_ARGS__);					\
} while (0)

/* A histogram of small integer keys, printed "k:n,k:n" by key. */
struct hist {
	int n;
	long key[32], cnt[32];
};

static void hist_add(struct hist *h, long key)
{
	int i;

	for (i = 0; i < h->n; i++)
		if (h->key[i] == key)
			break;
	if (i == h->n) {
		if (h->n == 32)
			return;
		h->key[h->n] = key;
		h->cnt[h->n++] = 0;
	}
	h->cnt[i]++;
}

static const char *errname(long e)
{
	switch (e) {
	case EPERM: return "EPERM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case ENOMEM: return "ENOMEM";
	case EACCES: return "EACCES";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EINVAL: return "EINVAL";
	case ENODEV: return "ENODEV";
	case EAGAIN: return "EAGAIN";
	case ENOSYS: return "ENOSYS";
	}
	return NULL;
}

/* A return value or status: a number, or -ENAME for a negative errno. */
static char *rcstr(long v, char *buf, size_t len)
{
	const char *e = v < 0 ? errname(-v) : NULL;

	if (e)
		snprintf(buf, len, "-%s", e);
	else
		snprintf(buf, len, "%ld", v);
	return buf;
}

/* With errnames, keys are statuses (move_pages): negative ones print -ENAME. */
static char *hist_str(struct hist *h, int errnames, char *buf, size_t len)
{
	size_t o = 0;
	char tmp[32];

	/* sort by key */
	for (int i = 1; i < h->n; i++)
		for (int j = i; j > 0 && h->key[j - 1] > h->key[j]; j--) {
			long k = h->key[j], c = h->cnt[j];

			h->key[j] = h->key[j - 1];
			h->cnt[j] = h->cnt[j - 1];
			h->key[j - 1] = k;
			h->cnt[j - 1] = c;
		}
	buf[0] = 0;
	for (int i = 0; i < h->n && o < len; i++) {
		const char *k = errnames ? rcstr(h->key[i], tmp, sizeof(tmp)) :
			(snprintf(tmp, sizeof(tmp), "%ld", h->key[i]), tmp);

		o += snprintf(buf + o, len - o, "%s%s:%ld", i ? "," : "", k,
			      h->cnt[i]);
	}
	if (!h->n)
		snprintf(buf, len, "none");
	return buf;
}

/* ---- workers ------------------------------------------------------------- */

struct cmd {
	char op;
	int region, node, flags;
	long first, n, value;
};

struct reply {
	long rc;
	char text[112];
};

static int cmdp[MAXPROC][2], repp[MAXPROC][2];
static char *reg[2];
static size_t reglen[2];
static void *wpages[NPAGES];
static int wnodes[NPAGES], wstatus[NPAGES];

static int read_full(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/* A region of len bytes at a PTE table boundary, 4 KiB pages only. */
static char *map_region(int kind, size_t len)
{
	char *p = pts_map_at_table(len, kind == PRIVATE_ANON ?
				   PROT_READ | PROT_WRITE : PROT_NONE);
	int fd;

	if (!p)
		return NULL;
	if (kind == SHARED_ANON) {
		if (mmap(p, len, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != p)
			return NULL;
	} else if (kind == PRIVATE_FILE) {
		fd = open(DATA_FILE, O_RDONLY);
		if (fd < 0)
			return NULL;
		if (mmap(p, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED,
			 fd, 0) != p) {
			close(fd);
			return NULL;
		}
		close(fd);
	}
	if (madvise(p, len, MADV_NOHUGEPAGE))
		return NULL;
	return p;
}

static long move_pages_cmd(struct cmd *c, struct reply *r)
{
	struct hist h = { 0 };
	long rc;

	for (long i = 0; i < c->n; i++) {
		wpages[i] = reg[c->region] + (c->first + i) * PTS_PAGE;
		wnodes[i] = c->node;
		wstatus[i] = -12345;
	}
	rc = syscall(SYS_move_pages, 0, c->n, wpages, wnodes, wstatus, c->flags);
	if (rc < 0)
		rc = -errno;
	for (long i = 0; i < c->n; i++)
		hist_add(&h, wstatus[i]);
	hist_str(&h, 1, r->text, sizeof(r->text));
	return rc;
}

static long mbind_cmd(struct cmd *c)
{
	unsigned long mask = 1UL << c->node;

	if (syscall(SYS_mbind, reg[c->region] + c->first * PTS_PAGE,
		    c->n * PTS_PAGE, MPOL_BIND, &mask, 8 * sizeof(mask), c->flags))
		return -errno;
	return 0;
}

static long set_policy(int node)
{
	unsigned long mask = node < 0 ? 0 : 1UL << node;

	if (syscall(SYS_set_mempolicy, node < 0 ? MPOL_DEFAULT : MPOL_BIND,
		    node < 0 ? NULL : &mask, node < 0 ? 0 : 8 * sizeof(mask)))
		return -errno;
	return 0;
}

static void worker(int slot);

static long do_cmd(struct cmd *c, struct reply *r)
{
	volatile uint64_t sum = 0;
	char *p = reg[c->region];
	long n = c->n < 0 ? (long)(reglen[c->region] / PTS_PAGE) - c->first : c->n;
	pid_t pid;
	int st;

	switch (c->op) {
	case 'n':
		return 0;
	case 'm':
		reglen[c->region] = c->n;
		reg[c->region] = map_region(c->flags, c->n);
		return reg[c->region] ? (long)reg[c->region] : -errno;
	case 'w':
		for (long i = c->first; i < c->first + n; i++)
			*(volatile uint64_t *)(p + i * PTS_PAGE) =
				((uint64_t)c->value << 32) | i;
		return 0;
	case 'r':
		for (long i = c->first; i < c->first + n; i++)
			sum += *(volatile uint64_t *)(p + i * PTS_PAGE);
		return 0;
	case 'p':
		if (mprotect(p, reglen[c->region], PROT_READ) ||
		    mprotect(p, reglen[c->region], PROT_READ | PROT_WRITE))
			return -errno;
		return 0;
	case 'u':
		if (munmap(p, reglen[c->region]))
			return -errno;
		reg[c->region] = NULL;
		return 0;
	case 'f':
		pid = fork();
		if (pid == 0)
			worker(c->value);	/* does not return */
		return pid < 0 ? -errno : pid;
	case 'W':
		if (waitpid(c->value, &st, 0) != c->value)
			return -errno;
		return st;
	case 'B':
		return set_policy(c->node);
	case 'M':
		return move_pages_cmd(c, r);
	case 'P':
		return mbind_cmd(c);
	case 'x':
		_exit(0);
	}
	return -EINVAL;
}

/*
 * Run every path a command takes once, on nothing, so that the text and
 * stack pages they need are mapped before the first reading.
 */
static void warm_up(void)
{
	struct cmd c = { .op = 'w', .n = 0 };
	struct reply r;
	static char dummy[PTS_PAGE] __attribute__((aligned(4096)));

	do_cmd(&c, &r);
	c.op = 'r';
	do_cmd(&c, &r);
	mprotect(dummy, 0, PROT_READ);
	munmap(dummy, 0);
	syscall(SYS_move_pages, 0, 0, wpages, wnodes, wstatus, 0);
	syscall(SYS_mbind, dummy, 0, MPOL_DEFAULT, NULL, 0, 0);
	memset(wpages, 0, sizeof(wpages));
	memset(wnodes, 0, sizeof(wnodes));
	memset(wstatus, 0, sizeof(wstatus));
	memset(&r, 0, sizeof(r));
	hist_str(&(struct hist){ 0 }, 1, r.text, sizeof(r.text));
}

static void worker(int slot)
{
	struct cmd c;
	struct reply r;

	signal(SIGPIPE, SIG_DFL);
	warm_up();
	for (;;) {
		if (read_full(cmdp[slot][0], &c, sizeof(c)))
			_exit(2);
		memset(&r, 0, sizeof(r));
		r.rc = do_cmd(&c, &r);
		if (write_full(repp[slot][1], &r, sizeof(r)))
			_exit(2);
	}
}

/* ---- the observer ------------------------------------------------------ */

struct proc {
	const char *name;
	pid_t pid;
	int slot;
	long st[4];		/* VmRSS, RssAnon, RssFile, RssShmem at reading */
	long oom;		/* oom_score at reading */
};

static const char *const st_field[4] = { "VmRSS", "RssAnon", "RssFile", "RssShmem" };
static struct proc procs[MAXPROC];
static int nprocs;
static jmp_buf scen_jmp;
static char scen_err[200];
static int scen_errors;

static void __attribute__((noreturn, format(printf, 1, 2))) fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(scen_err, sizeof(scen_err), fmt, ap);
	va_end(ap);
	longjmp(scen_jmp, 1);
}

/* Send a command and wait for its reply ('x' has none). */
static long call(struct proc *p, struct cmd c, char *text)
{
	struct pollfd pfd = { .fd = repp[p->slot][0], .events = POLLIN };
	struct reply r;

	if (write_full(cmdp[p->slot][1], &c, sizeof(c)))
		fail("cannot send '%c' to %s", c.op, p->name);
	if (c.op == 'x')
		return 0;
	if (poll(&pfd, 1, REPLY_MS) != 1 || read_full(pfd.fd, &r, sizeof(r)))
		fail("no reply to '%c' from %s", c.op, p->name);
	if (text)
		snprintf(text, sizeof(r.text), "%s", r.text);
	return r.rc;
}

#define CMD(p, ...)	call(p, (struct cmd){ __VA_ARGS__ }, NULL)

static long must(long rc, struct proc *p, const char *what)
{
	if (rc < 0)
		fail("%s in %s: %s", what, p->name, strerror(-rc));
	return rc;
}

static struct proc *new_proc(const char *name, pid_t pid)
{
	struct proc *p = &procs[nprocs];

	*p = (struct proc){ .name = name, .pid = pid, .slot = nprocs };
	nprocs++;
	return p;
}

static struct proc *spawn_parent(const char *name)
{
	pid_t pid;

	if (nprocs)
		fail("spawn_parent: slot 0 taken");
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		fail("fork: %s", strerror(errno));
	if (pid == 0)
		worker(0);
	new_proc(name, pid);
	must(CMD(&procs[0], .op = 'n'), &procs[0], "ready");
	return &procs[0];
}

static struct proc *spawn_child(struct proc *parent, const char *name)
{
	struct proc *c;
	long pid;

	if (nprocs == MAXPROC)
		fail("too many processes");
	pid = must(CMD(parent, .op = 'f', .value = nprocs), parent, "fork");
	c = new_proc(name, pid);
	must(CMD(c, .op = 'n'), c, "ready");
	return c;
}

static char *map(struct proc *p, int region, int kind, size_t len)
{
	return (char *)must(CMD(p, .op = 'm', .region = region, .flags = kind,
				.n = len), p, "mmap");
}

static void status_now(struct proc *p, long st[4])
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", p->pid);
	for (int i = 0; i < 4; i++)
		if ((st[i] = pts_proc_kb(path, st_field[i])) < 0)
			fail("no %s in %s", st_field[i], path);
}

static long oom_now(struct proc *p)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/oom_score", p->pid);
	return pts_read_long(path);
}

/*
 * The fields of a VMA's smaps entry, in kB. Not Referenced: it reads the
 * accessed bits and PG_referenced, which change with timing (a first run
 * on a fresh system differs from the next).
 */
static const char *const smaps_field[] = {
	"Size", "Rss", "Pss", "Pss_Dirty", "Shared_Clean", "Shared_Dirty",
	"Private_Clean", "Private_Dirty", "Anonymous", "Swap", "SwapPss",
	"Locked",
};
#define NSMAPS (sizeof(smaps_field) / sizeof(smaps_field[0]))

/* The fields of the smaps entry of the VMA that holds addr. */
static void read_smaps(struct proc *p, char *addr)
{
	char path[64], line[512], vmflags[120] = "none";
	long val[NSMAPS];
	unsigned long s, e;
	int in = 0, found = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", p->pid);
	f = fopen(path, "r");
	if (!f)
		fail("cannot open %s", path);
	for (size_t i = 0; i < NSMAPS; i++)
		val[i] = -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2 &&
		    (!colon || colon > strchr(line, ' '))) {
			if (found)
				break;
			in = s <= (unsigned long)addr && (unsigned long)addr < e;
			found = in;
			continue;
		}
		if (!in || !colon)
			continue;
		*colon = 0;
		if (!strcmp(line, "VmFlags")) {
			/* "rd wr mr ..." as one token: "rd_wr_mr_..." */
			char *q = colon + 1, *o = vmflags;

			q += strspn(q, " ");
			for (; *q && *q != '\n' && o < vmflags + sizeof(vmflags) - 1; q++)
				*o++ = *q == ' ' ? '_' : *q;
			while (o > vmflags && o[-1] == '_')
				o--;
			*o = 0;
			continue;
		}
		for (size_t i = 0; i < NSMAPS; i++)
			if (!strcmp(line, smaps_field[i]))
				val[i] = strtol(colon + 1, NULL, 10);
	}
	fclose(f);
	if (!found)
		fail("no VMA at the region in %s", path);
	for (size_t i = 0; i < NSMAPS; i++)
		put(p->name, smaps_field[i], "%ld", val[i]);
	put(p->name, "VmFlags", "%s", vmflags);
}

static uint64_t pm[MAXPROC][NPAGES];

static void read_pagemap(struct proc *p, char *addr, uint64_t *out)
{
	char path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/pagemap", p->pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		fail("cannot open %s", path);
	n = pread(fd, out, NPAGES * 8, (off_t)((uintptr_t)addr / PTS_PAGE * 8));
	close(fd);
	if (n != NPAGES * 8)
		fail("short read of %s", path);
}

/*
 * Everything about the region that the process p can see: its smaps entry,
 * pagemap flags, kpagecount of its pages, and with ref (the parent, read
 * first) how many of its pages are the parent's pages at the same address.
 */
static void read_region(struct proc *p, char *addr, struct proc *ref)
{
	uint64_t *e = pm[p->slot];
	long present = 0, excl = 0, sd = 0, file = 0, swap = 0, same = 0;
	struct hist kpc = { 0 };
	char buf[120];
	int fd;

	read_smaps(p, addr);
	read_pagemap(p, addr, e);
	fd = open("/proc/kpagecount", O_RDONLY);
	if (fd < 0)
		fail("cannot open /proc/kpagecount");
	for (unsigned long i = 0; i < NPAGES; i++) {
		uint64_t cnt;

		present += !!(e[i] & PM_PRESENT);
		swap += !!(e[i] & PM_SWAP);
		excl += !!(e[i] & PM_EXCLUSIVE);
		sd += !!(e[i] & PM_SOFT_DIRTY);
		file += !!(e[i] & PM_FILE);
		if (!(e[i] & PM_PRESENT))
			continue;
		if (ref && (pm[ref->slot][i] & PM_PRESENT) &&
		    (pm[ref->slot][i] & PM_PFN) == (e[i] & PM_PFN))
			same++;
		if (pread(fd, &cnt, 8, (e[i] & PM_PFN) * 8) != 8)
			fail("cannot read /proc/kpagecount");
		hist_add(&kpc, cnt);
	}
	close(fd);
	put(p->name, "pagemap_present", "%ld", present);
	put(p->name, "pagemap_swapped", "%ld", swap);
	put(p->name, "pagemap_exclusive", "%ld", excl);
	put(p->name, "pagemap_soft_dirty", "%ld", sd);
	put(p->name, "pagemap_file_shared", "%ld", file);
	put(p->name, "kpagecount", "%s", hist_str(&kpc, 0, buf, sizeof(buf)));
	if (ref)
		put(p->name, "same_pfn_as_parent", "%ld", same);
}

/* A reading point of p: its status now, and the region's readings. */
static void reading(struct proc *p, char *addr, struct proc *ref)
{
	status_now(p, p->st);
	p->oom = oom_now(p);
	if (addr)
		read_region(p, addr, ref);
}

/*
 * Close the readings of ps[]: each unmaps the region (in the order given),
 * then the RSS deltas between each reading and now are what the process's
 * RSS counted for the region. With region_pages, the share of the region
 * that oom_score counted too.
 */
static void unmap_all(struct proc **ps, int n, long region_pages)
{
	long after[MAXPROC][4], oom_after[MAXPROC];

	for (int i = 0; i < n; i++)
		must(CMD(ps[i], .op = 'u', .region = 0), ps[i], "munmap");
	for (int i = 0; i < n; i++) {
		status_now(ps[i], after[i]);
		oom_after[i] = oom_now(ps[i]);
	}
	for (int i = 0; i < n; i++) {
		for (int f = 0; f < 4; f++) {
			char m[32];

			snprintf(m, sizeof(m), "%s_delta", st_field[f]);
			put(ps[i]->name, m, "%ld", ps[i]->st[f] - after[i][f]);
		}
		if (region_pages) {
			/* oom_score = (1000 + badness * 1000 / total) * 2 / 3 */
			long total = (pts_proc_kb("/proc/meminfo", "MemTotal") +
				      pts_proc_kb("/proc/meminfo", "SwapTotal")) / 4;
			double pages = (ps[i]->oom - oom_after[i]) * 1.5 * total / 1000;
			long tenths = (long)(pages * 10 / region_pages + 0.5);

			put(ps[i]->name, "oom_score_share", "%ld.%ld",
			    tenths / 10, tenths % 10);
		}
	}
}

static void clear_soft_dirty(struct proc *p)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", p->pid);
	if (pts_write_long(path, 4))
		fail("cannot write %s", path);
}

/* ---- scenarios ----------------------------------------------------------- */

static void s1(void)
{
	struct proc *par = spawn_parent("parent"), *ch;
	char *r = map(par, 0, PRIVATE_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	clear_soft_dirty(par);
	CMD(par, .op = 'w', .value = 2, .n = NPAGES / 2);
	ch = spawn_child(par, "child");
	reading(par, r, NULL);
	reading(ch, r, par);
	unmap_all((struct proc *[]){ ch, par }, 2, 0);
}

static void s2(void)
{
	struct proc *par = spawn_parent("parent"), *ch;
	char *r = map(par, 0, PRIVATE_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	ch = spawn_child(par, "child");
	CMD(par, .op = 'w', .value = 2, .n = -1);
	reading(par, r, NULL);
	reading(ch, r, par);
	unmap_all((struct proc *[]){ ch, par }, 2, 0);
}

static void s3(void)
{
	struct proc *par = spawn_parent("parent"), *c1, *c2;
	char *r = map(par, 0, PRIVATE_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	c1 = spawn_child(par, "child1");
	c2 = spawn_child(par, "child2");
	must(CMD(c1, .op = 'p', .region = 0), c1, "mprotect");
	reading(par, r, NULL);
	reading(c1, r, par);
	reading(c2, r, par);
	unmap_all((struct proc *[]){ c2, c1, par }, 3, 0);
}

/* The node of each page of [first, first + n) of p's region. */
static void nodes_of(struct proc *p, char *r, long first, long n, const char *metric)
{
	static void *pages[NPAGES];
	static int status[NPAGES];
	struct hist h = { 0 };
	char buf[120];

	for (long i = 0; i < n; i++) {
		pages[i] = r + (first + i) * PTS_PAGE;
		status[i] = -12345;
	}
	if (syscall(SYS_move_pages, p->pid, n, pages, NULL, status, 0))
		fail("move_pages query of %s: %s", p->name, strerror(errno));
	for (long i = 0; i < n; i++)
		hist_add(&h, status[i]);
	put(p->name, metric, "%s", hist_str(&h, 1, buf, sizeof(buf)));
}

static void s4(void)
{
	const long q = NPAGES / 4;	/* 2 tables */
	struct proc *par, *ch;
	char text[120], buf[32];
	long rc;
	char *r;

	if (access("/sys/devices/system/node/node1", F_OK)) {
		put_key("s4", "skip");
		return;
	}
	par = spawn_parent("parent");
	r = map(par, 0, PRIVATE_ANON, REGION);
	must(CMD(par, .op = 'B', .node = 0), par, "set_mempolicy");
	CMD(par, .op = 'w', .value = 1, .n = -1);
	must(CMD(par, .op = 'B', .node = -1), par, "set_mempolicy");
	ch = spawn_child(par, "child");
	/* tables 0-3: move_pages; 4-5: mbind strict; 6-7: mbind */
	rc = call(ch, (struct cmd){ .op = 'M', .first = 0, .n = 2 * q,
				    .node = 1, .flags = MF_MOVE }, text);
	put(ch->name, "move_pages_rc", "%s", rcstr(rc, buf, sizeof(buf)));
	put(ch->name, "move_pages_status", "%s", text);
	rc = CMD(ch, .op = 'P', .first = 2 * q, .n = q, .node = 1,
		 .flags = MF_MOVE | MF_STRICT);
	put(ch->name, "mbind_move_strict_rc", "%s", rcstr(rc, buf, sizeof(buf)));
	rc = CMD(ch, .op = 'P', .first = 3 * q, .n = q, .node = 1,
		 .flags = MF_MOVE);
	put(ch->name, "mbind_move_rc", "%s", rcstr(rc, buf, sizeof(buf)));
	for (int i = 0; i < 2; i++) {
		struct proc *p = i ? par : ch;

		nodes_of(p, r, 0, 2 * q, "nodes_after_move_pages");
		nodes_of(p, r, 2 * q, q, "nodes_after_mbind_move_strict");
		nodes_of(p, r, 3 * q, q, "nodes_after_mbind_move");
	}
}

static void s5_parent(void)
{
	struct proc *par = spawn_parent("parent"), *ch;
	char *r = map(par, 0, PRIVATE_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	ch = spawn_child(par, "child");
	CMD(ch, .op = 'x');
	must(CMD(par, .op = 'W', .value = ch->pid), par, "waitpid");
	nprocs--;	/* gone */
	reading(par, r, NULL);
	unmap_all((struct proc *[]){ par }, 1, 0);
}

static void s5_child(void)
{
	struct proc *par = spawn_parent("parent"), *ch;
	char *r = map(par, 0, PRIVATE_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	ch = spawn_child(par, "child");
	CMD(par, .op = 'x');
	if (waitpid(par->pid, NULL, 0) != par->pid)
		fail("waitpid: %s", strerror(errno));
	par->pid = 0;	/* gone; the child is ours now (subreaper) */
	reading(ch, r, NULL);
	unmap_all((struct proc *[]){ ch }, 1, 0);
}

static void s6a(void)
{
	struct proc *par = spawn_parent("parent"), *ch;
	char *r = map(par, 0, SHARED_ANON, REGION);

	CMD(par, .op = 'w', .value = 1, .n = -1);
	ch = spawn_child(par, "child");
	reading(par, r, NULL);
	reading(ch, r, par);
	unmap_all((struct proc *[]){ ch, par }, 2, 0);
}

static void s6b(void)
{
	struct proc *par, *ch;
	static char buf[1 << 16];
	char *r;
	int fd;

	/* a tmpfs file of REGION bytes, all in the page cache */
	fd = open(DATA_FILE, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		fail("cannot create %s", DATA_FILE);
	memset(buf, 0x5a, sizeof(buf));
	for (unsigned long o = 0; o < REGION; o += sizeof(buf))
		if (write(fd, buf, sizeof(buf)) != sizeof(buf))
			fail("cannot write %s", DATA_FILE);
	close(fd);
	par = spawn_parent("parent");
	r = map(par, 0, PRIVATE_FILE, REGION);
	CMD(par, .op = 'r', .n = NPAGES / 2);
	CMD(par, .op = 'w', .value = 1, .first = NPAGES / 2, .n = -1);
	ch = spawn_child(par, "child");
	reading(par, r, NULL);
	reading(ch, r, par);
	unmap_all((struct proc *[]){ ch, par }, 2, 0);
	unlink(DATA_FILE);
}

static void s7(void)
{
	struct proc *par = spawn_parent("parent"), *ch;

	map(par, 0, PRIVATE_ANON, BIG);
	CMD(par, .op = 'w', .value = 1, .n = -1);
	ch = spawn_child(par, "child");
	CMD(par, .op = 'w', .value = 2, .n = -1);
	reading(par, NULL, NULL);
	reading(ch, NULL, NULL);
	unmap_all((struct proc *[]){ ch, par }, 2, BIG / PTS_PAGE);
}

static void run(const char *name, const char *label, void (*fn)(void))
{
	scen = label;
	nprocs = 0;
	for (int i = 0; i < MAXPROC; i++)
		if (pipe(cmdp[i]) || pipe(repp[i])) {
			perror("pipe");
			exit(1);
		}
	if (!setjmp(scen_jmp)) {
		fn();
		for (int i = 0; i < nprocs; i++)
			if (procs[i].pid > 0)
				call(&procs[i], (struct cmd){ .op = 'x' }, NULL);
	} else {
		char k[80];

		fprintf(stderr, "observe: %s: %s\n", name, scen_err);
		scen_errors++;
		snprintf(k, sizeof(k), "%s/error", name);
		put_key(k, "%s", scen_err);
		for (int i = 0; i < nprocs; i++)
			if (procs[i].pid > 0)
				kill(procs[i].pid, SIGKILL);
	}
	for (int i = 0; i < MAXPROC; i++) {
		close(cmdp[i][0]);
		close(cmdp[i][1]);
		close(repp[i][0]);
		close(repp[i][1]);
	}
	/* every worker, also those reparented to us (subreaper) */
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

/* ---- output ------------------------------------------------------------- */

static void print_raw(void)
{
	for (int i = 0; i < nrd; i++)
		printf("observe %s %s\n", rd[i].key, rd[i].val);
}

/* Known differences (-k): key, the value ptshare reads, and why. */
static struct known {
	char key[80], val[120], why[160];
} *known;
static int nknown;

static void read_known(const char *file)
{
	char line[400], *k, *v, *why;
	FILE *f = fopen(file, "r");

	if (!f) {
		perror(file);
		exit(2);
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0] || line[0] == '#')
			continue;
		k = line;
		v = strchr(k, ' ');
		if (!v)
			continue;
		*v++ = 0;
		why = strchr(v, ' ');
		if (why)
			*why++ = 0;
		known = realloc(known, (nknown + 1) * sizeof(*known));
		if (!known)
			exit(1);
		snprintf(known[nknown].key, sizeof(known->key), "%.79s", k);
		snprintf(known[nknown].val, sizeof(known->val), "%.119s", v);
		snprintf(known[nknown].why, sizeof(known->why), "%.159s",
			 why ? why : "known difference");
		nknown++;
	}
	fclose(f);
}

/* The reason if KEY reading VAL is a known difference, else NULL. */
static const char *known_why(const char *key, const char *val)
{
	for (int i = 0; i < nknown; i++)
		if (!strcmp(known[i].key, key) && !strcmp(known[i].val, val))
			return known[i].why;
	return NULL;
}

static int compare(const char *file)
{
	const char *here = pts_mode() >= 0 ? "ptshare" : "this kernel";
	struct reading *exp = NULL;
	int nexp = 0, cap = 0, skip4;
	char line[256];
	char *used;
	FILE *f = fopen(file, "r");

	if (!f) {
		tap_result(0, "baseline # cannot read %s: run make baseline", file);
		return tap_finish();
	}
	while (fgets(line, sizeof(line), f)) {
		char *k, *v;

		if (strncmp(line, "observe ", 8))
			continue;
		line[strcspn(line, "\n")] = 0;
		k = line + 8;
		v = strchr(k, ' ');
		if (!v)
			continue;
		*v++ = 0;
		if (nexp == cap) {
			cap = cap ? 2 * cap : 512;
			exp = realloc(exp, cap * sizeof(*exp));
			if (!exp)
				exit(1);
		}
		snprintf(exp[nexp].key, sizeof(exp[nexp].key), "%.79s", k);
		snprintf(exp[nexp].val, sizeof(exp[nexp].val), "%.119s", v);
		nexp++;
	}
	fclose(f);
	tap_diag("observe: %d readings here, %d in %s (vanilla)", nrd, nexp, file);
	used = calloc(nexp + 1, 1);
	/* s4 needs two NUMA nodes: skipped here or in the baseline */
	skip4 = 0;
	for (int i = 0; i < nrd; i++)
		skip4 |= !strcmp(rd[i].key, "s4");
	for (int j = 0; j < nexp; j++)
		skip4 |= !strcmp(exp[j].key, "s4");
	for (int i = 0; i < nrd; i++) {
		int j;

		if (skip4 && !strncmp(rd[i].key, "s4", 2) &&
		    (rd[i].key[2] == '/' || !rd[i].key[2]))
			continue;
		for (j = 0; j < nexp; j++)
			if (!strcmp(exp[j].key, rd[i].key))
				break;
		if (j == nexp) {
			tap_result(0, "%s # no vanilla reading (make baseline), %s %s",
				   rd[i].key, here, rd[i].val);
			continue;
		}
		used[j] = 1;
		if (!strcmp(exp[j].val, rd[i].val))
			tap_result(1, "%s", rd[i].key);
		else if (known_why(rd[i].key, rd[i].val))
			printf("ok %d %s # SKIP known difference: vanilla %s, %s %s (%s)\n",
			       ++tap_n, rd[i].key, exp[j].val, here, rd[i].val,
			       known_why(rd[i].key, rd[i].val));
		else
			tap_result(0, "%s # vanilla %s, %s %s", rd[i].key,
				   exp[j].val, here, rd[i].val);
	}
	for (int j = 0; j < nexp; j++) {
		if (used[j])
			continue;
		if (skip4 && !strncmp(exp[j].key, "s4", 2) &&
		    (exp[j].key[2] == '/' || !exp[j].key[2])) {
			if (exp[j].key[2])
				printf("ok %d %s # SKIP one NUMA node\n", ++tap_n,
				       exp[j].key);
			continue;
		}
		tap_result(0, "%s # vanilla %s, %s: no reading", exp[j].key,
			   exp[j].val, here);
	}
	if (skip4)
		tap_diag("s4 skipped: needs two NUMA nodes here and in the baseline");
	return tap_finish();
}

int main(int argc, char **argv)
{
	const char *expected = NULL;
	int pers = personality(0xffffffff);
	int opt;

	while ((opt = getopt(argc, argv, "e:k:K:")) != -1) {
		switch (opt) {
		case 'e':
			expected = optarg;
			break;
		case 'k':
			read_known(optarg);
			break;
		case 'K':
			if (pts_read_long("/proc/sys/vm/pt_share_shared") > 0)
				read_known(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-e VANILLA_READINGS [-k KNOWN] [-K KNOWN_SHARED]]\n",
				argv[0]);
			return 2;
		}
	}
	/* The same address layout every run: no randomization. */
	if (pers != -1 && !(pers & ADDR_NO_RANDOMIZE) &&
	    personality(pers | ADDR_NO_RANDOMIZE) != -1)
		execv("/proc/self/exe", argv);

	setvbuf(stdout, NULL, _IOLBF, 0);
	pts_force_sharing();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1)) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);

	run("s1", "s1", s1);
	run("s2", "s2", s2);
	run("s3", "s3", s3);
	run("s4", "s4", s4);
	run("s5", "s5", s5_parent);
	run("s5", "s5", s5_child);
	run("s6a", "s6a", s6a);
	run("s6b", "s6b", s6b);
	run("s7", "s7", s7);

	if (!expected) {
		print_raw();
		return scen_errors ? 1 : 0;
	}
	return compare(expected);
}
