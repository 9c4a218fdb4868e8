// SPDX-License-Identifier: GPL-2.0
/*
 * attach_shared: unrelated processes attach to each other's PTE tables of
 * a shared mapping (vm.pt_share_shared=2).
 *
 * For a memfd, a file in the root file system and a SysV segment, the
 * test process (the owner) maps 8 MiB at a PTE table boundary and writes
 * every page. It then starts two readers, A and C, each a new program
 * (fork and exec of this one), which map the same memfd (inherited
 * descriptor), file (by path) or segment (by id) themselves. They are
 * related to the owner by nothing but the mapping. Each reader must:
 *   - read every page right, attaching the owner's tables (ptshare only:
 *     fewer than 16 minor faults where vanilla needs 128, and the
 *     ptshare_attach counter moves);
 *   - count the pages its tables map in its RSS, then and at the end;
 *   - read right, without faults, after the owner migrated the pages;
 *   - see the owner's hole punch (zeros) and truncation (SIGBUS);
 *   - see the writes of the others after a writer let go of its tables,
 *     and keep its contents through its own mprotect and munmap of a page.
 * The owner checks /proc/kpagecount (3 mappers of every page) and the Pss
 * of each of the three (a third). A reader D that maps the region
 * read-only, where the others map it read-write, must attach nothing.
 * Last, shmem mappings without an address hint are placed so that any two
 * mappers of the same pages can share tables.
 * On a kernel without ptshare the same steps run, without the checks
 * that need sharing.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ipc.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "pts.h"
#include "tap.h"

#define SIZE		(8UL << 20)
#define NPAGES		(SIZE / PTS_PAGE)
#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"

enum kind { K_MEMFD, K_FILE, K_SYSV, NR_KINDS };
static const char *const kind_name[] = { "memfd", "file", "SysV shm" };

/* What a reader reports after each step, in one write. */
struct report {
	long wrong, faults, present, rss_ok, attached;
	long hole_byte, sigbus, filled;
	uintptr_t at;	/* where the reader mapped the region */
};

static unsigned char pattern(unsigned long i, int gen)
{
	return (unsigned char)(i * 7 + gen * 31 + 1);
}

/* The pages the later steps look at: the first half, but the hole. */
static int kept(unsigned long i, int hole, unsigned long skip)
{
	return i < NPAGES / 2 && !(hole && i == 3) && i != skip;
}

/* Write generation gen into every page, or with hole >= 0 the kept ones. */
static void fill(char *p, int gen, int hole)
{
	for (unsigned long i = 0; i < NPAGES; i++)
		if (hole < 0 || kept(i, hole, -1))
			memset(p + i * PTS_PAGE, pattern(i, gen), 64);
}

static long wrong(const char *p, int gen, int hole, unsigned long skip,
		  int all)
{
	long n = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		if (all || kept(i, hole, skip))
			n += (unsigned char)p[i * PTS_PAGE] != pattern(i, gen);
	return n;
}

/* Map the region of kind k, named by id (fd, path or shmid), at a table. */
static char *map_kind(enum kind k, const char *id, int prot)
{
	char *want = pts_map_at_table(SIZE, PROT_NONE);
	char *p = MAP_FAILED;
	int fd;

	if (!want)
		return NULL;
	switch (k) {
	case K_MEMFD:
	case K_FILE:
		fd = k == K_MEMFD ? atoi(id) :
		     open(id, prot & PROT_WRITE ? O_RDWR : O_RDONLY);
		if (fd >= 0)
			p = mmap(want, SIZE, prot, MAP_SHARED | MAP_FIXED, fd, 0);
		if (k == K_FILE && fd >= 0)
			close(fd);
		break;
	case K_SYSV:
		p = shmat(atoi(id), want, SHM_REMAP |
			  (prot & PROT_WRITE ? 0 : SHM_RDONLY));
		break;
	default:
		break;
	}
	if (p == MAP_FAILED || p != want)
		return NULL;
	madvise(p, SIZE, MADV_NOHUGEPAGE);
	return p;
}

static void send_report(int out, struct report *rep)
{
	if (write(out, rep, sizeof(*rep)) != (ssize_t)sizeof(*rep))
		_exit(94);
}

static int wait_turn(int in)
{
	char c;

	return read(in, &c, 1) == 1;
}

/*
 * A reader, after exec: argv = reader KIND ID ROLE IN OUT. Each step
 * waits for a byte on IN and writes a report to OUT. ROLE "A" writes and
 * unmaps, "C" reads and mprotects, "D" maps read-only and only reads, "P"
 * only reads (test_partial()).
 */
static int reader(char **argv)
{
	enum kind k = atoi(argv[2]);
	char role = argv[4][0];
	int in = atoi(argv[5]), out = atoi(argv[6]);
	int hole = k != K_SYSV;
	struct report rep;
	long f0, a0, l0;
	char *p;

	p = map_kind(k, argv[3], role == 'D' ? PROT_READ :
		     PROT_READ | PROT_WRITE);
	/* 1. read everything the owner wrote */
	memset(&rep, 0, sizeof(rep));
	a0 = pts_vmstat("ptshare_attach");
	l0 = pts_vmstat("ptshare_fill");
	f0 = pts_minflt();
	rep.wrong = p ? wrong(p, 1, 0, -1, 1) : -1;
	rep.faults = pts_minflt() - f0;
	rep.attached = pts_vmstat("ptshare_attach") - a0;
	rep.filled = pts_vmstat("ptshare_fill") - l0;
	rep.present = p ? pts_pagemap_count(p, NPAGES, 63) : -1;
	rep.rss_ok = pts_rss_consistent();
	rep.at = (uintptr_t)p;
	send_report(out, &rep);
	if (!p || role == 'D' || role == 'P') {
		wait_turn(in);
		return 0;
	}

	/* 2. the owner migrated the first half */
	if (!wait_turn(in))
		return 1;
	memset(&rep, 0, sizeof(rep));
	f0 = pts_minflt();
	rep.wrong = wrong(p, 1, 0, -1, 1);
	rep.faults = pts_minflt() - f0;
	send_report(out, &rep);

	/* 3. the owner punched a hole at page 3 and truncated to half */
	if (!wait_turn(in))
		return 1;
	memset(&rep, 0, sizeof(rep));
	rep.hole_byte = rep.sigbus = -1;
	if (hole) {
		rep.hole_byte = pts_probe(p + 3 * PTS_PAGE);
		rep.sigbus = pts_probe(p + SIZE / 2) == -1;
	}
	/* A writes generation 2 over what is left */
	if (role == 'A')
		fill(p, 2, hole);
	send_report(out, &rep);

	/* 4. everyone sees generation 2; A munmaps a page, C mprotects one */
	if (!wait_turn(in))
		return 1;
	memset(&rep, 0, sizeof(rep));
	rep.wrong = wrong(p, 2, hole, -1, 0);
	if (role == 'A') {
		munmap(p + 9 * PTS_PAGE, PTS_PAGE);
		rep.wrong += wrong(p, 2, hole, 9, 0);
	} else {
		mprotect(p + PTS_PMD + 5 * PTS_PAGE, PTS_PAGE, PROT_READ);
		rep.wrong += wrong(p, 2, hole, -1, 0);
	}
	rep.rss_ok = pts_rss_consistent();
	send_report(out, &rep);
	wait_turn(in);
	return 0;
}

struct child {
	pid_t pid;
	int in, out;	/* the owner's ends */
};

static int start_reader(struct child *c, enum kind k, const char *id,
			char role)
{
	int to[2], from[2];
	char a_kind[8], a_role[2] = { role, 0 }, a_in[12], a_out[12];

	if (pipe(to) || pipe(from))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid) {
		snprintf(a_kind, sizeof(a_kind), "%d", k);
		snprintf(a_in, sizeof(a_in), "%d", to[0]);
		snprintf(a_out, sizeof(a_out), "%d", from[1]);
		execl("/proc/self/exe", "attach_shared", "reader", a_kind, id,
		      a_role, a_in, a_out, (char *)NULL);
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	c->in = from[0];
	c->out = to[1];
	return 0;
}

static int step(struct child *c, struct report *rep, int go)
{
	char b = 0;

	if (go && write(c->out, &b, 1) != 1)
		return 0;
	memset(rep, 0xff, sizeof(*rep));
	return read(c->in, rep, sizeof(*rep)) == (ssize_t)sizeof(*rep);
}

static void stop_reader(struct child *c, const char *name, char role)
{
	char b = 0;
	int st;

	if (write(c->out, &b, 1) != 1)
		tap_diag("%s: reader %c is gone", name, role);
	close(c->out);
	close(c->in);
	waitpid(c->pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tap_diag("%s: reader %c status 0x%x", name, role, st);
}

static void check_first_read(const char *name, char role, struct report *r,
			     int sharing)
{
	tap_diag("%s: reader %c read 8 MiB with %ld minor faults, %ld tables attached",
		 name, role, r->faults, r->attached);
	tap_result(r->wrong == 0, "%s: reader %c reads what the owner wrote",
		   name, role);
	tap_result(r->rss_ok == 1 && r->present == (long)NPAGES,
		   "%s: reader %c maps every page it read, and counts them in its RSS",
		   name, role);
	if (!sharing) {
		tap_skip("no vm.pt_share_shared=2",
			 "%s: reader %c attaches the tables", name, role);
		return;
	}
	tap_result(r->attached >= 4 && r->faults < 16,
		   "%s: reader %c attaches the tables and reads without faulting pages in",
		   name, role);
}

/*
 * Create the region of kind k (8 MiB) and map it at a table boundary; id
 * and path (64 bytes each) get its name for the readers.
 */
static char *make_region(enum kind k, char *id, char *path, int *fd,
			 int *shmid)
{
	char *p = NULL;

	switch (k) {
	case K_MEMFD:
		*fd = memfd_create("attach_shared", 0);
		snprintf(id, 64, "%d", *fd);
		break;
	case K_FILE:
		snprintf(path, 64, "/tmp/attach_shared.%d", getpid());
		*fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		snprintf(id, 64, "%s", path);
		break;
	case K_SYSV:
		*shmid = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600);
		snprintf(id, 64, "%d", *shmid);
		break;
	default:
		return NULL;
	}
	if ((k != K_SYSV && (*fd < 0 || ftruncate(*fd, SIZE))) ||
	    (k == K_SYSV && *shmid < 0) ||
	    !(p = map_kind(k, id, PROT_READ | PROT_WRITE))) {
		tap_result(0, "%s: map 8 MiB at a table boundary (%s)",
			   kind_name[k], strerror(errno));
		return NULL;
	}
	return p;
}

/* Undo make_region(). */
static void drop_region(enum kind k, char *p, const char *path, int fd,
			int shmid)
{
	if (p && k == K_SYSV)
		shmdt(p);
	else if (p)
		munmap(p, SIZE);
	if (shmid >= 0)
		shmctl(shmid, IPC_RMID, NULL);
	if (fd >= 0)
		close(fd);
	if (path[0])
		unlink(path);
}

static void test_kind(enum kind k, int sharing)
{
	const char *name = kind_name[k];
	struct child a, c, d;
	struct report ra, rc, rd;
	char id[64], path[64] = "";
	int fd = -1, shmid = -1, hole = k != K_SYSV;
	long moved, kc, pss[3];
	char *p = NULL;

	p = make_region(k, id, path, &fd, &shmid);
	if (!p)
		goto out;
	fill(p, 1, -1);

	/* 1. A, then C, read everything; D maps it read-only */
	if (start_reader(&a, k, id, 'A') || !step(&a, &ra, 0) ||
	    start_reader(&c, k, id, 'C') || !step(&c, &rc, 0) ||
	    start_reader(&d, k, id, 'D') || !step(&d, &rd, 0)) {
		tap_result(0, "%s: start the readers", name);
		goto out;
	}
	check_first_read(name, 'A', &ra, sharing);
	check_first_read(name, 'C', &rc, sharing);
	tap_result(rd.wrong == 0, "%s: read-only reader D reads what the owner wrote",
		   name);
	tap_diag("%s: reader D (read-only) read with %ld minor faults, %ld tables attached",
		 name, rd.faults, rd.attached);
	if (sharing)
		tap_result(rd.attached == 0,
			   "%s: a read-only mapper attaches no read-write mapper's table",
			   name);
	stop_reader(&d, name, 'D');

	kc = pts_kpagecount_not(p, NPAGES / 2, 3);
	if (kc < 0)
		tap_skip("cannot read /proc/kpagecount",
			 "%s: kpagecount 3 for pages three processes map", name);
	else
		tap_result(kc == 0, "%s: kpagecount 3 for pages three processes map (%ld differ)",
			   name, kc);
	pss[0] = pts_pss_at(getpid(), (uintptr_t)p);
	pss[1] = pts_pss_at(a.pid, ra.at);
	pss[2] = pts_pss_at(c.pid, rc.at);
	tap_diag("%s: Pss owner %ld kB, A %ld kB, C %ld kB", name, pss[0],
		 pss[1], pss[2]);
	tap_result(labs(pss[0] - 8192 / 3) <= 2 && labs(pss[1] - 8192 / 3) <= 2 &&
		   labs(pss[2] - 8192 / 3) <= 2,
		   "%s: Pss a third in each of the three mappers", name);

	/* 2. migrate the first half while A and C have the tables */
	moved = pts_migrate_all(p, NPAGES / 2);
	if (!step(&a, &ra, 1) || !step(&c, &rc, 1))
		goto gone;
	if (moved < 0) {
		tap_skip("move_pages failed", "%s: contents after migration", name);
	} else {
		tap_result(ra.wrong == 0 && rc.wrong == 0 && moved > 0,
			   "%s: readers read right after the owner migrated %ld pages",
			   name, moved);
		if (sharing)
			tap_result(ra.faults < 16 && rc.faults < 16,
				   "%s: migration keeps the tables attached (%ld, %ld faults)",
				   name, ra.faults, rc.faults);
	}

	/* 3. hole and truncation */
	if (hole) {
		if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      3 * PTS_PAGE, PTS_PAGE))
			tap_diag("%s: punch hole: %s", name, strerror(errno));
		if (ftruncate(fd, SIZE / 2))
			tap_diag("%s: ftruncate: %s", name, strerror(errno));
	}
	if (!step(&a, &ra, 1) || !step(&c, &rc, 1))
		goto gone;
	if (hole) {
		tap_result(ra.hole_byte == 0 && rc.hole_byte == 0,
			   "%s: readers read zeros in the hole the owner punched",
			   name);
		tap_result(ra.sigbus == 1 && rc.sigbus == 1,
			   "%s: SIGBUS in the readers past the owner's truncation",
			   name);
	}
	tap_result(wrong(p, 2, hole, -1, 0) == 0,
		   "%s: the owner sees reader A's writes", name);

	/* 4. C sees A's writes; A munmaps a page, C mprotects one */
	if (!step(&a, &ra, 1) || !step(&c, &rc, 1))
		goto gone;
	tap_result(ra.wrong == 0 && rc.wrong == 0,
		   "%s: the readers see A's writes, through munmap and mprotect of a page",
		   name);
	tap_result(ra.rss_ok == 1 && rc.rss_ok == 1 && pts_rss_consistent(),
		   "%s: every mapper's RSS agrees with its tables at the end",
		   name);
	stop_reader(&a, name, 'A');
	stop_reader(&c, name, 'C');
	goto out;
gone:
	tap_result(0, "%s: a reader died", name);
	kill(a.pid, SIGKILL);
	kill(c.pid, SIGKILL);
	waitpid(a.pid, NULL, 0);
	waitpid(c.pid, NULL, 0);
out:
	drop_region(k, p, path, fd, shmid);
}

/*
 * Partial tables: the owner's tables map only the 16 pages around the
 * first page of each 2 MiB (it wrote everything, dropped its entries and
 * read one page per table). Reader P, exec'd, reads every page. With
 * sharing it attaches the owner's tables though they have holes, and its
 * faults in the holes fill them in place for both (a few faults where
 * vanilla takes 128). Contents and RSS must be right in both processes,
 * while P maps the tables and after it exits.
 */
static void test_partial(enum kind k, int sharing)
{
	const char *name = kind_name[k];
	char id[64], path[64] = "";
	int fd = -1, shmid = -1;
	struct report rp;
	struct child b;
	long f0, owner_faults, present;
	char *p;

	p = make_region(k, id, path, &fd, &shmid);
	if (!p)
		goto out;
	fill(p, 1, -1);
	if (madvise(p, SIZE, MADV_DONTNEED)) {
		tap_result(0, "%s, partial: MADV_DONTNEED (%s)", name,
			   strerror(errno));
		goto out;
	}
	for (unsigned long off = 0; off < SIZE; off += PTS_PMD)
		(void)*(volatile char *)(p + off);

	if (start_reader(&b, k, id, 'P') || !step(&b, &rp, 0)) {
		tap_result(0, "%s, partial: start the reader", name);
		goto out;
	}
	present = pts_pagemap_count(p, NPAGES, 63);
	tap_diag("%s, partial: reader read 8 MiB with %ld minor faults, %ld tables attached, %ld holes filled; the owner maps %ld pages",
		 name, rp.faults, rp.attached, rp.filled, present);
	tap_result(rp.wrong == 0, "%s, partial: the reader reads what the owner wrote",
		   name);
	tap_result(rp.rss_ok == 1 && rp.present == (long)NPAGES,
		   "%s, partial: the reader maps every page it read, and counts them in its RSS",
		   name);
	if (sharing)
		tap_result(rp.attached >= 1 && rp.filled >= 1 && rp.faults < 16,
			   "%s, partial: the reader attaches tables with holes and fills them in place",
			   name);
	else
		tap_skip("no vm.pt_share_shared=2",
			 "%s, partial: the reader attaches tables with holes and fills them in place",
			 name);
	tap_result(pts_rss_consistent() == 1,
		   "%s, partial: the owner's RSS agrees with its tables the reader filled",
		   name);
	f0 = pts_minflt();
	tap_result(wrong(p, 1, 0, -1, 1) == 0,
		   "%s, partial: the owner reads what it wrote", name);
	owner_faults = pts_minflt() - f0;
	tap_diag("%s, partial: the owner then read 8 MiB with %ld minor faults",
		 name, owner_faults);
	stop_reader(&b, name, 'P');
	tap_result(pts_rss_consistent() == 1,
		   "%s, partial: the owner's RSS agrees with its tables after the reader exited",
		   name);
out:
	drop_region(k, p, path, fd, shmid);
}

/*
 * Patch 30: with vm.pt_share_shared=2, shmem mappings of 2 MiB or more
 * get an address that agrees with their file offset within 2 MiB, so that
 * unrelated mappers can share tables; a memfd at offsets 0 and 12 KiB and
 * a SysV segment, each mapped eight times without an address hint.
 */
static void test_placement(void)
{
	int fd = memfd_create("attach_placement", 0);
	int shmid = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600);
	long bad = 0, tried = 0;
	char *p[8];

	if (fd < 0 || ftruncate(fd, SIZE + 3 * PTS_PAGE) || shmid < 0) {
		tap_result(0, "placement: memfd and SysV segment (%s)",
			   strerror(errno));
		goto out;
	}
	for (off_t off = 0; off <= 3 * (off_t)PTS_PAGE; off += 3 * PTS_PAGE) {
		for (int i = 0; i < 8; i++) {
			p[i] = mmap(NULL, SIZE, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, off);
			if (p[i] == MAP_FAILED)
				continue;
			tried++;
			bad += ((uintptr_t)p[i] - off) % PTS_PMD != 0;
		}
		for (int i = 0; i < 8; i++)
			if (p[i] != MAP_FAILED)
				munmap(p[i], SIZE);
	}
	for (int i = 0; i < 8; i++) {
		p[i] = shmat(shmid, NULL, 0);
		if (p[i] == (char *)-1)
			continue;
		tried++;
		bad += (uintptr_t)p[i] % PTS_PMD != 0;
	}
	for (int i = 0; i < 8; i++)
		if (p[i] != (char *)-1)
			shmdt(p[i]);
	tap_result(tried == 24 && bad == 0,
		   "placement: %ld of %ld shmem mappings agree with their offset within 2 MiB",
		   tried - bad, tried);
out:
	if (fd >= 0)
		close(fd);
	if (shmid >= 0)
		shmctl(shmid, IPC_RMID, NULL);
}

int main(int argc, char **argv)
{
	long saved;
	int sharing = 0;

	if (argc == 7 && !strcmp(argv[1], "reader"))
		return reader(argv);
	saved = pts_read_long(SHARED_KNOB);
	if (saved >= 0 && pts_force_sharing() &&
	    pts_write_long(SHARED_KNOB, 2) == 0)
		sharing = 1;
	for (int k = 0; k < NR_KINDS; k++)
		test_kind(k, sharing);
	for (int k = 0; k < NR_KINDS; k++)
		test_partial(k, sharing);
	if (sharing)
		test_placement();
	else
		tap_skip("no vm.pt_share_shared=2", "placement of shmem mappings");
	if (saved >= 0)
		pts_write_long(SHARED_KNOB, saved);
	return tap_finish();
}
