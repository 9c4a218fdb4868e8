// SPDX-License-Identifier: GPL-2.0
/*
 * shared_events: what changes a file or shmem under shared PTE tables
 * reaches every sharer (vm.pt_share_shared=2).
 *
 * An owner maps 4 MiB (two tables) of a memfd, a SysV segment or a file
 * on the guest's ext4 scratch disk, writes every page, and starts two
 * sharers, A and B. "related": they are forked children that use the
 * inherited mapping (tables shared at fork). "unrelated": they map the
 * object themselves after fork (tables attached). Then one event per
 * scenario, and every process checks every page, its RSS against its
 * tables, and what the event must show:
 *   reclaim     the shmem is charged to a memory cgroup of the owner:
 *               memory.reclaim keeps it while the three just used it,
 *               and what later rounds reclaim (to zram swap) reads back;
 *   writeback   file: writes by every process, msync(MS_SYNC), and the
 *               data on disk read back with O_DIRECT-free pread after
 *               dropping nothing (the page cache must agree anyway);
 *   hwpoison    the owner poisons one page (MADV_HWPOISON): everybody
 *               gets SIGBUS on it, and only on it;
 *   collapse    the owner collapses the first table's range into a huge
 *               page (MADV_COLLAPSE) while A and B share its table;
 *   uffd-wp     A registers its mapping with userfaultfd in write-protect
 *               mode and protects it: A's pagemap shows every page
 *               uffd-wp, B's and the owner's none, and B's writes reach A;
 *   shmdt       SysV: A detaches, the owner removes the segment (IPC_RMID)
 *               and detaches; B still reads and writes it;
 *   seals       memfd: F_SEAL_WRITE fails with EBUSY while writable
 *               mappings exist, F_SEAL_FUTURE_WRITE succeeds, a new
 *               writable mapping then fails with EPERM, and the existing
 *               ones keep reading and writing.
 * On vanilla the same steps run and must give the same results.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "pts.h"
#include "tap.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT	21
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE	0x0010
#endif

#define SIZE		(4UL << 20)
#define NPAGES		(SIZE / PTS_PAGE)
#define POISON		5		/* the page hwpoison poisons */
#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"
#define SCRATCH		"/scratch"
#define CGROUP		"/sys/fs/cgroup"
#define CG		CGROUP "/shared_events"

enum kind { K_MEMFD, K_SYSV, K_FILE };
enum event { E_RECLAIM, E_WRITEBACK, E_HWPOISON, E_COLLAPSE, E_UFFDWP,
	     E_SHMDT, E_SEALS, NR_EVENTS };
static const char *const event_name[] = {
	"reclaim", "writeback", "hwpoison", "collapse", "uffd-wp", "shmdt",
	"seals",
};

/* The object the owner created: what a sharer needs to map it itself. */
struct object {
	enum kind kind;
	int fd, shmid;
	char path[64];
};

/* A request to a sharer, and its answer. */
enum op { OP_CHECK, OP_WRITE, OP_UFFDWP, OP_WPBITS, OP_UNMAP, OP_REMAP,
	  OP_QUIT };
struct request {
	enum op op;
	int gen;
};
struct answer {
	long wrong, sigbus, rss_ok, value;
};

static char *region;		/* this process's mapping */
static int sharing;		/* the kernel shares shared mappings' tables */
static struct object obj;
static int poisoned = -1;	/* the page that must give SIGBUS, or -1 */

static unsigned char pattern(unsigned long i, int gen)
{
	return (unsigned char)(i * 13 + gen * 29 + 3);
}

static void fill(char *p, int gen)
{
	for (unsigned long i = 0; i < NPAGES; i++)
		if ((long)i != poisoned)
			memset(p + i * PTS_PAGE, pattern(i, gen), 64);
}

static sigjmp_buf bus_jmp;

static void on_bus_ignore(int sig)
{
	(void)sig;
}

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/*
 * Pages of p that do not hold generation gen, and in *bus the pages that
 * raised SIGBUS; the poisoned page must raise it, and counts as wrong
 * if it does not.
 */
static long check(const char *p, int gen, long *bus)
{
	volatile long wrong = 0;
	volatile unsigned long i;
	unsigned char c;

	*bus = 0;
	signal(SIGBUS, on_bus);
	for (i = 0; i < NPAGES; i++) {
		if (sigsetjmp(bus_jmp, 1)) {
			(*bus)++;
			wrong += (long)i != poisoned;
			continue;
		}
		c = *(volatile const unsigned char *)(p + i * PTS_PAGE);
		wrong += (long)i == poisoned || c != pattern(i, gen);
	}
	signal(SIGBUS, SIG_DFL);
	return wrong;
}

/* Map the object at a table boundary; NULL on failure, errno set. */
static char *map_object(int prot)
{
	char *want = pts_map_at_table(SIZE, PROT_NONE);
	char *p;

	if (!want)
		return NULL;
	if (obj.kind == K_SYSV)
		p = shmat(obj.shmid, want, SHM_REMAP);
	else
		p = mmap(want, SIZE, prot, MAP_SHARED | MAP_FIXED, obj.fd, 0);
	if (p == MAP_FAILED || p != want) {
		munmap(want, SIZE);
		return NULL;
	}
	madvise(p, SIZE, MADV_NOHUGEPAGE);
	return p;
}

static void unmap_object(char *p)
{
	if (obj.kind == K_SYSV)
		shmdt(p);
	else
		munmap(p, SIZE);
}

/* Register p with userfaultfd in write-protect mode and protect it. */
static long uffd_wp(char *p)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_WP_HUGETLBFS_SHMEM,
	};
	struct uffdio_register reg = {
		.range = { (uintptr_t)p, SIZE },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct uffdio_writeprotect wp = {
		.range = { (uintptr_t)p, SIZE },
		.mode = UFFDIO_WRITEPROTECT_MODE_WP,
	};
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (fd < 0 || ioctl(fd, UFFDIO_API, &api) ||
	    ioctl(fd, UFFDIO_REGISTER, &reg) ||
	    ioctl(fd, UFFDIO_WRITEPROTECT, &wp))
		return -errno;
	return fd;	/* kept open: closing it would unregister */
}

/* A sharer: serve requests until OP_QUIT. */
static void __attribute__((noreturn)) sharer(int in, int out, int own)
{
	struct request rq;
	struct answer an;

	if (own)
		region = map_object(PROT_READ | PROT_WRITE);
	for (;;) {
		if (read(in, &rq, sizeof(rq)) != (ssize_t)sizeof(rq))
			_exit(1);
		memset(&an, 0, sizeof(an));
		poisoned = rq.op == OP_CHECK && rq.gen < 0 ? POISON : -1;
		switch (rq.op) {
		case OP_CHECK:
			an.wrong = region ? check(region, abs(rq.gen), &an.sigbus)
					  : -1;
			an.rss_ok = pts_rss_consistent();
			break;
		case OP_WRITE:
			fill(region, rq.gen);
			break;
		case OP_UFFDWP:
			an.value = uffd_wp(region);
			break;
		case OP_WPBITS:
			an.value = pts_pagemap_count(region, NPAGES, 57);
			break;
		case OP_UNMAP:
			unmap_object(region);
			region = NULL;
			an.rss_ok = pts_rss_consistent();
			break;
		case OP_REMAP:
			an.value = map_object(PROT_READ | PROT_WRITE) ? 0 : errno;
			break;
		case OP_QUIT:
			an.rss_ok = pts_rss_consistent();
			if (write(out, &an, sizeof(an)) != (ssize_t)sizeof(an))
				_exit(1);
			_exit(0);
		}
		if (write(out, &an, sizeof(an)) != (ssize_t)sizeof(an))
			_exit(1);
	}
}

struct peer {
	pid_t pid;
	int in, out;
	char name;
};

static int start_sharer(struct peer *s, char name, int own)
{
	int to[2], from[2];

	if (pipe(to) || pipe(from))
		return -1;
	s->name = name;
	s->pid = fork();
	if (s->pid < 0)
		return -1;
	if (!s->pid) {
		close(to[1]);
		close(from[0]);
		if (own && region) {
			unmap_object(region);
			region = NULL;
		}
		sharer(to[0], from[1], own);
	}
	close(to[0]);
	close(from[1]);
	s->out = to[1];
	s->in = from[0];
	return 0;
}

static struct answer ask(struct peer *s, enum op op, int gen)
{
	struct request rq = { op, gen };
	struct answer an;

	memset(&an, 0xff, sizeof(an));
	if (write(s->out, &rq, sizeof(rq)) != (ssize_t)sizeof(rq) ||
	    read(s->in, &an, sizeof(an)) != (ssize_t)sizeof(an))
		tap_diag("sharer %c does not answer", s->name);
	return an;
}

static void stop_sharer(struct peer *s, long *rss_ok)
{
	struct answer an = ask(s, OP_QUIT, 0);
	int st;

	*rss_ok = an.rss_ok == 1;
	close(s->out);
	close(s->in);
	waitpid(s->pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		tap_diag("sharer %c status 0x%x", s->name, st);
		*rss_ok = 0;
	}
}

/*
 * Every process (owner, A, B) sees generation gen (negative: with the
 * page POISON raising SIGBUS), and counts its tables right.
 */
static void check_all(const char *what, struct peer *ps, int n, int gen)
{
	struct answer an;
	long bus, wrong;
	int ok = 1;

	poisoned = gen < 0 ? POISON : -1;
	if (region) {
		wrong = check(region, abs(gen), &bus);
		if (wrong || !pts_rss_consistent()) {
			tap_diag("%s: owner: %ld pages wrong, %ld SIGBUS, RSS %s",
				 what, wrong, bus,
				 pts_rss_consistent() ? "consistent" : "off");
			ok = 0;
		}
	}
	for (int i = 0; i < n; i++) {
		an = ask(&ps[i], OP_CHECK, gen);
		if (an.wrong || an.rss_ok != 1) {
			tap_diag("%s: sharer %c: %ld pages wrong, %ld SIGBUS, RSS %s",
				 what, ps[i].name, an.wrong, an.sigbus,
				 an.rss_ok == 1 ? "consistent" : "off");
			ok = 0;
		}
	}
	tap_result(ok, "%s: every process reads what it must, and its RSS agrees with its tables",
		   what);
}

/* Write s to a cgroup file; 0 or -1. */
static int cg_write(const char *file, const char *s)
{
	int fd = open(file, O_WRONLY);
	int ret = -1;

	if (fd >= 0) {
		ret = write(fd, s, strlen(s)) == (ssize_t)strlen(s) ? 0 : -1;
		close(fd);
	}
	return ret;
}

/* Move this process into a memory cgroup of its own (or out, with 0). */
static int cg_enter(int in)
{
	char pid[16];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (!in) {
		if (cg_write(CGROUP "/cgroup.procs", pid))
			return -1;
		rmdir(CG);
		return 0;
	}
	cg_write(CGROUP "/cgroup.subtree_control", "+memory");
	mkdir(CG, 0755);
	return cg_write(CG "/cgroup.procs", pid);
}

static int make_object(enum kind k, int sealing)
{
	memset(&obj, 0, sizeof(obj));
	obj.kind = k;
	obj.fd = obj.shmid = -1;
	switch (k) {
	case K_MEMFD:
		obj.fd = memfd_create("shared_events",
				      sealing ? MFD_ALLOW_SEALING : 0);
		return obj.fd < 0 || ftruncate(obj.fd, SIZE) ? -1 : 0;
	case K_SYSV:
		obj.shmid = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600);
		return obj.shmid < 0 ? -1 : 0;
	case K_FILE:
		snprintf(obj.path, sizeof(obj.path), SCRATCH "/shared_events.%d",
			 getpid());
		obj.fd = open(obj.path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		return obj.fd < 0 || ftruncate(obj.fd, SIZE) ? -1 : 0;
	}
	return -1;
}

static void drop_object(void)
{
	if (obj.shmid >= 0)
		shmctl(obj.shmid, IPC_RMID, NULL);
	if (obj.fd >= 0)
		close(obj.fd);
	if (obj.path[0])
		unlink(obj.path);
}

/* The event itself, done by the owner (or through A), for scenario e. */
static int run_event(enum event e, const char *what, struct peer *ps)
{
	struct answer an;
	long wp_a, wp_b, wp_o;
	int gen = 1;

	switch (e) {
	case E_RECLAIM: {
		long before = pts_pagemap_count(region, NPAGES, 63), first = -1, after, bus;
		int rounds, tries;

		/*
		 * All three just read every page: reclaim must keep them
		 * (referenced by three mappings), as on vanilla.  Background
		 * reclaim may look at them in between and age them: so read
		 * again in all three, and reclaim again, up to three times.
		 * Later rounds may take them, unmapping them from every
		 * sharer; check_all() then reads them back from swap.
		 */
		for (tries = 0; tries < 3 && first != before; tries++) {
			if (tries) {
				check(region, 1, &bus);
				ask(&ps[0], OP_CHECK, 1);
				ask(&ps[1], OP_CHECK, 1);
			}
			if (cg_write(CG "/memory.reclaim", "32M") && errno != EAGAIN)
				tap_diag("%s: memory.reclaim: %s", what,
					 strerror(errno));
			first = pts_pagemap_count(region, NPAGES, 63);
		}
		tap_result(first == before,
			   "%s: reclaim keeps pages three processes just used (%ld of %ld mapped after, try %d)",
			   what, first, before, tries);
		for (rounds = 0; rounds < 8 && pts_pagemap_count(region, NPAGES, 63) == before; rounds++)
			cg_write(CG "/memory.reclaim", "32M");
		after = pts_pagemap_count(region, NPAGES, 63);
		tap_diag("%s: %d more rounds of memory.reclaim: the owner maps %ld pages",
			 what, rounds, after);
		break;
	}
	case E_WRITEBACK: {
		char buf[64];
		long bad = 0;

		ask(&ps[0], OP_WRITE, 2);
		fill(region, 3);
		ask(&ps[1], OP_WRITE, 4);
		gen = 4;
		tap_result(msync(region, SIZE, MS_SYNC) == 0,
			   "%s: msync(MS_SYNC) of what three processes wrote", what);
		for (unsigned long i = 0; i < NPAGES; i++) {
			if (pread(obj.fd, buf, sizeof(buf), i * PTS_PAGE) !=
			    (ssize_t)sizeof(buf))
				bad++;
			else
				bad += (unsigned char)buf[0] != pattern(i, gen);
		}
		tap_result(bad == 0, "%s: the file holds the last writes (%ld pages differ)",
			   what, bad);
		break;
	}
	case E_HWPOISON:
		/* The poisoner gets an action-required SIGBUS: survive it. */
		signal(SIGBUS, on_bus_ignore);
		if (madvise(region + POISON * PTS_PAGE, PTS_PAGE, MADV_HWPOISON)) {
			tap_skip(strerror(errno), "%s: MADV_HWPOISON", what);
			return 0;
		}
		gen = -1;
		break;
	case E_COLLAPSE:
		if (madvise(region, PTS_PMD, MADV_HUGEPAGE) ||
		    madvise(region, PTS_PMD, MADV_COLLAPSE))
			tap_diag("%s: MADV_COLLAPSE: %s", what, strerror(errno));
		else
			tap_diag("%s: collapsed; owner AnonHugePages/ShmemPmdMapped %ld kB",
				 what, pts_proc_kb("/proc/self/smaps_rollup",
						   "ShmemPmdMapped"));
		break;
	case E_UFFDWP:
		an = ask(&ps[0], OP_UFFDWP, 0);
		if (an.value < 0) {
			tap_skip(strerror(-an.value), "%s: userfaultfd write-protect", what);
			return 0;
		}
		wp_a = ask(&ps[0], OP_WPBITS, 0).value;
		wp_b = ask(&ps[1], OP_WPBITS, 0).value;
		wp_o = pts_pagemap_count(region, NPAGES, 57);
		tap_result(wp_a == (long)NPAGES && wp_b == 0 && wp_o == 0,
			   "%s: only A's pages are write-protected (A %ld, B %ld, owner %ld of %lu)",
			   what, wp_a, wp_b, wp_o, NPAGES);
		ask(&ps[1], OP_WRITE, 5);
		gen = 5;
		break;
	case E_SHMDT:
		an = ask(&ps[0], OP_UNMAP, 0);
		tap_result(an.rss_ok == 1, "%s: A's RSS agrees with its tables after shmdt",
			   what);
		shmctl(obj.shmid, IPC_RMID, NULL);
		obj.shmid = -1;
		unmap_object(region);
		region = NULL;
		ask(&ps[1], OP_WRITE, 6);
		gen = 6;
		break;
	case E_SEALS:
		tap_result(fcntl(obj.fd, F_ADD_SEALS, F_SEAL_WRITE) == -1 &&
			   errno == EBUSY,
			   "%s: F_SEAL_WRITE fails with EBUSY while mapped writable", what);
		tap_result(fcntl(obj.fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE) == 0,
			   "%s: F_SEAL_FUTURE_WRITE", what);
		an = ask(&ps[0], OP_REMAP, 0);
		tap_result(an.value == EPERM,
			   "%s: a new writable mapping fails with EPERM (%s)", what,
			   strerror(an.value));
		ask(&ps[1], OP_WRITE, 7);
		fill(region, 8);
		gen = 8;
		break;
	default:
		break;
	}
	return gen;
}

static void scenario(enum event e, int own)
{
	static const enum kind kinds[] = {
		[E_RECLAIM] = K_MEMFD, [E_WRITEBACK] = K_FILE,
		[E_HWPOISON] = K_MEMFD, [E_COLLAPSE] = K_MEMFD,
		[E_UFFDWP] = K_MEMFD, [E_SHMDT] = K_SYSV, [E_SEALS] = K_MEMFD,
	};
	struct peer ps[2];
	char what[80];
	long rss_ok[2], forked, attached;
	int gen, n = 0;

	snprintf(what, sizeof(what), "%s, %s", event_name[e],
		 own ? "unrelated" : "related");
	poisoned = -1;
	if (kinds[e] == K_FILE && access(SCRATCH "/lost+found", F_OK)) {
		tap_skip("no ext4 scratch disk", "%s", what);
		return;
	}
	if (e == E_RECLAIM && cg_enter(1)) {
		tap_skip("no memory cgroup", "%s", what);
		return;
	}
	if (make_object(kinds[e], e == E_SEALS) ||
	    !(region = map_object(PROT_READ | PROT_WRITE))) {
		tap_result(0, "%s: set up (%s)", what, strerror(errno));
		drop_object();
		return;
	}
	fill(region, 1);
	forked = pts_vmstat("ptshare_fork_shared_file");
	attached = pts_vmstat("ptshare_attach");
	for (n = 0; n < 2; n++)
		if (start_sharer(&ps[n], 'A' + n, own)) {
			tap_result(0, "%s: start sharer", what);
			break;
		}
	if (n == 2) {
		check_all(what, ps, 2, 1);
		forked = pts_vmstat("ptshare_fork_shared_file") - forked;
		attached = pts_vmstat("ptshare_attach") - attached;
		tap_diag("%s: %ld tables shared at fork, %ld attached", what,
			 forked, attached);
		if (sharing)
			tap_result(own ? attached >= 4 : forked >= 4,
				   "%s: A and B share the owner's two tables before the event",
				   what);
		gen = run_event(e, what, ps);
		if (gen)
			check_all(what, ps + (e == E_SHMDT), 2 - (e == E_SHMDT), gen);
	}
	for (int i = 0; i < n; i++)
		stop_sharer(&ps[i], &rss_ok[i]);
	if (n == 2)
		tap_result(rss_ok[0] && rss_ok[1],
			   "%s: the sharers' RSS agrees with their tables at exit", what);
	if (region)
		unmap_object(region);
	region = NULL;
	drop_object();
	if (e == E_RECLAIM)
		cg_enter(0);
}

int main(void)
{
	long saved = pts_read_long(SHARED_KNOB);

	if (saved >= 0 && pts_force_sharing() &&
	    pts_write_long(SHARED_KNOB, 2) == 0)
		sharing = 1;
	tap_diag("vm.pt_share_shared=%ld", pts_read_long(SHARED_KNOB));
	for (int e = 0; e < NR_EVENTS; e++) {
		scenario(e, 0);
		scenario(e, 1);
	}
	if (saved >= 0)
		pts_write_long(SHARED_KNOB, saved);
	return tap_finish();
}
