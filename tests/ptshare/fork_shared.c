// SPDX-License-Identifier: GPL-2.0
/*
 * fork_shared: the PTE tables of shared mappings shared at fork
 * (vm.pt_share_shared=1, vm.pt_share=2).
 *
 * For each kind of shared mapping (MAP_SHARED|MAP_ANONYMOUS, a memfd, a
 * SysV segment, a file in the root file system), a parent maps 8 MiB at a
 * PTE table boundary, writes every page and forks. The child must:
 *   - read every page right without faulting it in (ptshare only: fewer
 *     than 16 minor faults, where vanilla needs one per 16 pages);
 *   - count the pages its tables map in its RSS (VmRSS equal to what
 *     smaps_rollup finds walking its tables), then and at the end;
 *   - read right after the parent migrated the pages to another node
 *     while the tables are shared, and still without faults;
 *   - see a hole punched, and get SIGBUS past a truncation, done by the
 *     parent while the tables are shared;
 *   - see the parent's writes and have its own writes seen, after either
 *     side let go of a table by writing;
 *   - keep the contents through mprotect and munmap of part of a table;
 * and /proc/kpagecount counts both mappings of each page while shared.
 * Last, the Pss of three mappers of a memfd, one of which let go of the
 * tables and faulted the pages back in, is a third in each.
 * On a kernel without ptshare every case still runs, and only the checks
 * that need sharing are skipped.
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

enum kind { K_SHARED_ANON, K_MEMFD, K_SYSV, K_FILE, NR_KINDS };
static const char *const kind_name[] = {
	"MAP_SHARED|MAP_ANONYMOUS", "memfd", "SysV shm", "file",
};

static int sharing;	/* the kernel shares shared mappings' tables */

struct region {
	char *p;
	int fd;		/* -1 if none */
	int shmid;	/* -1 if none */
	char path[64];
};

static unsigned char pattern(unsigned long i, int gen)
{
	return (unsigned char)(i * 7 + gen * 31 + 1);
}

static void fill(char *p, int gen)
{
	for (unsigned long i = 0; i < NPAGES; i++)
		memset(p + i * PTS_PAGE, pattern(i, gen), 64);
}

/* Pages of p whose first byte is not the pattern of gen. */
static long wrong(const char *p, int gen)
{
	long n = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		n += (unsigned char)p[i * PTS_PAGE] != pattern(i, gen);
	return n;
}

static int map_region(enum kind k, struct region *r)
{
	char *want = pts_map_at_table(SIZE, PROT_NONE);
	int flags = MAP_SHARED | MAP_FIXED;

	r->fd = r->shmid = -1;
	r->p = NULL;
	if (!want)
		return -1;
	switch (k) {
	case K_SHARED_ANON:
		r->p = mmap(want, SIZE, PROT_READ | PROT_WRITE,
			    flags | MAP_ANONYMOUS, -1, 0);
		break;
	case K_MEMFD:
	case K_FILE:
		if (k == K_MEMFD) {
			r->fd = memfd_create("fork_shared", 0);
		} else {
			snprintf(r->path, sizeof(r->path),
				 "/tmp/fork_shared.%d", getpid());
			r->fd = open(r->path, O_RDWR | O_CREAT | O_TRUNC, 0600);
		}
		if (r->fd < 0 || ftruncate(r->fd, SIZE))
			return -1;
		r->p = mmap(want, SIZE, PROT_READ | PROT_WRITE, flags, r->fd,
			    0);
		break;
	case K_SYSV:
		r->shmid = shmget(IPC_PRIVATE, SIZE, IPC_CREAT | 0600);
		if (r->shmid < 0)
			return -1;
		r->p = shmat(r->shmid, want, SHM_REMAP);
		shmctl(r->shmid, IPC_RMID, NULL);
		break;
	default:
		return -1;
	}
	if (r->p == MAP_FAILED || r->p != want) {
		r->p = NULL;
		return -1;
	}
	madvise(r->p, SIZE, MADV_NOHUGEPAGE);
	return 0;
}

static void unmap_region(enum kind k, struct region *r)
{
	if (r->p && k == K_SYSV)
		shmdt(r->p);
	else if (r->p)
		munmap(r->p, SIZE);
	if (r->fd >= 0)
		close(r->fd);
	if (r->path[0])
		unlink(r->path);
	memset(r, 0, sizeof(*r));
}

/* Parent and child take turns: each step waits for the other's byte. */
struct turns {
	int to_child[2], to_parent[2];
};

/* What the child reports, field by field, in one write. */
struct report {
	long wrong_first, faults_first, rss_first, present_first;
	long wrong_after_migrate, faults_after_migrate;
	long hole_byte, sigbus;
	long wrong_parent_gen, wrong_after_mprotect, wrong_after_munmap;
	long rss_consistent_end;
};

/* The pages later steps look at: the first half, but the hole. */
static int kept(unsigned long i, int hole)
{
	return i < NPAGES / 2 && !(hole && i == 3);
}

/* Pages among the kept ones whose first byte is not the pattern of gen. */
static long wrong_kept(const char *p, int gen, int hole, unsigned long skip)
{
	long n = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		if (kept(i, hole) && i != skip)
			n += (unsigned char)p[i * PTS_PAGE] != pattern(i, gen);
	return n;
}

static void child(struct region *r, struct turns *t, int out)
{
	struct report rep = { 0 };
	int hole = r->fd >= 0;
	char *p = r->p;
	long f0;

	/* 1. read everything the parent wrote, through the shared tables */
	f0 = pts_minflt();
	rep.wrong_first = wrong(p, 1);
	rep.faults_first = pts_minflt() - f0;
	rep.rss_first = pts_rss_consistent();
	rep.present_first = pts_pagemap_count(p, NPAGES, 63);
	pts_give(t->to_parent[1]);

	/* 2. the parent migrated the first half while the tables are shared */
	if (!pts_take(t->to_child[0]))
		_exit(91);
	f0 = pts_minflt();
	rep.wrong_after_migrate = wrong(p, 1);
	rep.faults_after_migrate = pts_minflt() - f0;
	pts_give(t->to_parent[1]);

	/* 3. the parent punched a hole at page 3 and truncated to half */
	if (!pts_take(t->to_child[0]))
		_exit(92);
	rep.hole_byte = -1;
	rep.sigbus = -1;
	if (hole) {
		rep.hole_byte = pts_probe(p + 3 * PTS_PAGE);
		rep.sigbus = pts_probe(p + SIZE / 2) == -1;
	}

	/* 4. write a new generation; the parent checks it and writes one */
	for (unsigned long i = 0; i < NPAGES; i++)
		if (kept(i, hole))
			memset(p + i * PTS_PAGE, pattern(i, 2), 64);
	pts_give(t->to_parent[1]);
	if (!pts_take(t->to_child[0]))
		_exit(93);
	rep.wrong_parent_gen = wrong_kept(p, 3, hole, -1);

	/* 5. mprotect one page of the second table, munmap one of the first */
	mprotect(p + PTS_PMD + 5 * PTS_PAGE, PTS_PAGE, PROT_READ);
	rep.wrong_after_mprotect = wrong_kept(p, 3, hole, -1);
	munmap(p + 9 * PTS_PAGE, PTS_PAGE);
	rep.wrong_after_munmap = wrong_kept(p, 3, hole, 9);

	rep.rss_consistent_end = pts_rss_consistent();
	if (write(out, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(94);
	_exit(0);
}

static void test_kind(enum kind k)
{
	const char *name = kind_name[k];
	struct report rep;
	struct region r;
	struct turns t;
	long shared0, detach0, moved = -1, kc;
	int out[2], st;
	pid_t pid;

	if (map_region(k, &r)) {
		tap_result(0, "%s: map 8 MiB at a table boundary (%s)", name,
			   strerror(errno));
		unmap_region(k, &r);
		return;
	}
	fill(r.p, 1);
	if (pipe(t.to_child) || pipe(t.to_parent) || pipe(out)) {
		perror("pipe");
		exit(1);
	}
	shared0 = pts_vmstat("ptshare_fork_shared_file");
	detach0 = pts_vmstat("ptshare_unshare_detach");
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid)
		child(&r, &t, out[1]);

	tap_diag("%s: fork shared %ld tables of the shared mapping", name,
		 pts_vmstat("ptshare_fork_shared_file") - shared0);
	if (sharing)
		tap_result(pts_vmstat("ptshare_fork_shared_file") - shared0 >= 4,
			   "%s: fork shares the 4 tables", name);
	else
		tap_skip("no vm.pt_share_shared", "%s: fork shares the 4 tables",
			 name);

	/* 1. the child read; 2. migrate while the tables are shared */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	kc = pts_kpagecount_not(r.p, NPAGES, 2);
	if (kc < 0)
		tap_skip("cannot read /proc/kpagecount",
			 "%s: kpagecount 2 for pages parent and child map", name);
	else
		tap_result(kc == 0,
			   "%s: kpagecount 2 for pages parent and child map (%ld differ)",
			   name, kc);
	moved = pts_migrate_all(r.p, NPAGES / 2);
	pts_give(t.to_child[1]);

	/* 3. hole and truncation while the tables are shared */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	if (r.fd >= 0) {
		if (fallocate(r.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      3 * PTS_PAGE, PTS_PAGE))
			tap_diag("%s: punch hole: %s", name, strerror(errno));
		if (ftruncate(r.fd, SIZE / 2))
			tap_diag("%s: ftruncate: %s", name, strerror(errno));
	}
	pts_give(t.to_child[1]);

	/* 4. the child wrote generation 2; write generation 3 */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	tap_result(wrong_kept(r.p, 2, r.fd >= 0, -1) == 0,
		   "%s: the parent sees the child's writes", name);
	for (unsigned long i = 0; i < NPAGES; i++)
		if (kept(i, r.fd >= 0))
			memset(r.p + i * PTS_PAGE, pattern(i, 3), 64);
	pts_give(t.to_child[1]);

reap:
	close(out[1]);
	memset(&rep, 0xff, sizeof(rep));
	if (read(out[0], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		tap_diag("%s: no report from the child", name);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tap_diag("%s: child status 0x%x", name, st);

	tap_diag("%s: child read 8 MiB with %ld minor faults; %ld pages present",
		 name, rep.faults_first, rep.present_first);
	tap_result(rep.wrong_first == 0, "%s: the child reads what the parent wrote",
		   name);
	if (sharing) {
		tap_result(rep.faults_first >= 0 && rep.faults_first < 16,
			   "%s: the child reads without faulting its pages in",
			   name);
		tap_result(rep.present_first == (long)NPAGES &&
			   rep.rss_first == 1,
			   "%s: the child maps every page after fork, and counts them in its RSS",
			   name);
	} else {
		tap_skip("no vm.pt_share_shared",
			 "%s: the child reads without faulting its pages in",
			 name);
		tap_skip("no vm.pt_share_shared",
			 "%s: the child maps every page after fork, and counts them in its RSS",
			 name);
	}
	if (moved < 0) {
		tap_skip("move_pages failed", "%s: contents after migration",
			 name);
	} else {
		tap_diag("%s: migrated %ld pages; the child then read with %ld minor faults",
			 name, moved, rep.faults_after_migrate);
		tap_result(rep.wrong_after_migrate == 0 && moved > 0,
			   "%s: the child reads right after the parent migrated shared pages",
			   name);
		if (sharing)
			tap_result(rep.faults_after_migrate < 16,
				   "%s: migration keeps the tables shared", name);
	}
	if (r.fd >= 0) {
		tap_result(rep.hole_byte == 0,
			   "%s: the child reads zeros in the hole the parent punched",
			   name);
		tap_result(rep.sigbus == 1,
			   "%s: SIGBUS past the parent's truncation", name);
	} else {
		tap_skip("no file", "%s: hole punching", name);
		tap_skip("no file", "%s: truncation", name);
	}
	tap_result(rep.wrong_parent_gen == 0,
		   "%s: the child sees the parent's writes", name);
	tap_result(rep.wrong_after_mprotect == 0,
		   "%s: contents right after mprotect of one page", name);
	tap_result(rep.wrong_after_munmap == 0,
		   "%s: contents right after munmap of one page", name);
	tap_result(rep.rss_consistent_end == 1,
		   "%s: the child's RSS agrees with its tables at the end", name);
	tap_result(pts_rss_consistent(),
		   "%s: the parent's RSS agrees with its tables at the end", name);
	if (sharing)
		tap_diag("%s: %ld tables let go of", name,
			 pts_vmstat("ptshare_unshare_detach") - detach0);
	close(out[0]);
	close(t.to_child[0]);
	close(t.to_child[1]);
	close(t.to_parent[0]);
	close(t.to_parent[1]);
	unmap_region(k, &r);
}

/*
 * Three mappers of one memfd table: the parent and two children share it;
 * the writer lets go of it by writing every page, and faults them back into
 * a table of its own; the reader reads every page through the shared one.
 * Each maps every page once, so each has a third of the Pss, as on vanilla
 * (where both children fault the pages in).
 */
static void test_pss_three(void)
{
	static const char *const who[] = { "parent", "writer", "reader" };
	struct region r;
	int go[2][2], ready[2][2];
	long pss[3];
	pid_t pids[2];
	char c = 0;

	if (map_region(K_MEMFD, &r)) {
		tap_result(0, "Pss of three memfd mappers: map (%s)",
			   strerror(errno));
		unmap_region(K_MEMFD, &r);
		return;
	}
	fill(r.p, 1);
	for (int k = 0; k < 2; k++) {
		if (pipe(go[k]) || pipe(ready[k])) {
			perror("pipe");
			exit(1);
		}
		pids[k] = fork();
		if (pids[k] < 0) {
			perror("fork");
			exit(1);
		}
		if (!pids[k]) {
			if (k == 0) {
				fill(r.p, 2);
			} else {
				/* read every page; the writer may be writing */
				for (unsigned long i = 0; i < NPAGES; i++)
					(void)*(volatile char *)(r.p + i * PTS_PAGE);
			}
			pts_give(ready[k][1]);
			pts_take(go[k][0]);
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		close(ready[k][1]);	/* a child that died gives EOF */
		if (!pts_take(ready[k][0]))
			tap_diag("Pss: child %d did not get ready", k);
	}
	pss[0] = pts_pss_at(getpid(), (uintptr_t)r.p);
	pss[1] = pts_pss_at(pids[0], (uintptr_t)r.p);
	pss[2] = pts_pss_at(pids[1], (uintptr_t)r.p);
	tap_diag("Pss of the 8 MiB memfd: parent %ld kB, writer %ld kB, reader %ld kB (a third: %ld kB)",
		 pss[0], pss[1], pss[2], (long)(SIZE / 1024 / 3));
	for (int k = 0; k < 3; k++)
		tap_result(pss[k] > 0 && labs(pss[k] - (long)(SIZE / 1024 / 3)) <= 2,
			   "Pss of three memfd mappers, one of which let go of the tables: a third in the %s",
			   who[k]);
	for (int k = 0; k < 2; k++) {
		if (write(go[k][1], &c, 1) != 1)
			perror("write");
		waitpid(pids[k], NULL, 0);
		close(go[k][0]);
		close(go[k][1]);
		close(ready[k][0]);
	}
	unmap_region(K_MEMFD, &r);
}

int main(void)
{
	long saved = pts_read_long(SHARED_KNOB);

	if (saved >= 0 && pts_force_sharing() &&
	    pts_write_long(SHARED_KNOB, 1) == 0)
		sharing = 1;
	for (int k = 0; k < NR_KINDS; k++)
		test_kind(k);
	test_pss_three();
	if (saved >= 0)
		pts_write_long(SHARED_KNOB, saved);
	return tap_finish();
}
