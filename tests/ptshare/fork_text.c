// SPDX-License-Identifier: GPL-2.0
/*
 * fork_text: the PTE tables of private file mappings (program text, data
 * of executables and libraries) shared at fork (vm.pt_share=2, and
 * vm.pt_share_shared=1 for the tables fork would not copy).
 *
 * For a file on tmpfs and one on ext4 (/scratch, if the guest has it),
 * a parent maps 8 MiB of it MAP_PRIVATE at a PTE table boundary, twice:
 *   - "text": PROT_READ|PROT_EXEC, read but never written, so the VMA has
 *     no anon_vma and fork would copy nothing of it;
 *   - "data": PROT_READ|PROT_WRITE, a quarter of its pages written
 *     (copy-on-write anonymous pages beside page-cache pages).
 * The parent reads every page and forks. Then:
 *   1. the child reads every page right, without faulting them in
 *      (ptshare only), and its RSS agrees with its tables; kpagecount
 *      counts both mappings of each page; each has half the Pss;
 *   2. the parent migrates every page while the tables are shared (file
 *      folios through the i_mmap tree, anonymous ones through the
 *      anon_vma tree): the child still reads right, still without faults;
 *   3. the child writes page 1 through /proc/self/mem (FOLL_FORCE, as a
 *      debugger's breakpoint) and the parent writes the child's page 2
 *      through /proc/PID/mem: only the child sees either; the file and
 *      the parent do not;
 *   4. the child makes page 6 writable with mprotect and writes it: the
 *      parent sees the file's byte and keeps its own protection;
 *   5. the parent punches a hole at page 5 and one over the whole second
 *      table (a zap of a whole table that must keep anonymous pages), and
 *      truncates the file to half: both read zeros in the holes, get
 *      SIGBUS past the end, and keep the pages they wrote (copy-on-write
 *      pages stay, as on vanilla);
 *   6. both RSS agree with their tables at the end; and after the fork,
 *      /proc/PID/maps of the child listed the same VMAs as the parent's.
 * Last, with vm.pt_share_shared=0, fork shares the tables of "data" but
 * not those of "text", which it would not copy: the child then maps no
 * page of the text until it touches it, as on vanilla.
 * On a kernel without ptshare every case still runs, and only the checks
 * that need sharing are skipped.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "pts.h"
#include "tap.h"

#define SIZE		(8UL << 20)
#define NPAGES		(SIZE / PTS_PAGE)
#define HOLE		5
#define PROT_PAGE	6
#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"

enum kind { K_TEXT, K_DATA, NR_KINDS };
static const char *const kind_name[] = { "text", "data" };

static int sharing;	/* the kernel shares private file tables */

static unsigned char pattern(unsigned long i)
{
	return (unsigned char)(i * 13 + 7);
}

/* The byte the parent writes into page i of "data" before the fork. */
static unsigned char parent_byte(unsigned long i)
{
	return (unsigned char)(i * 5 + 200);
}

static int parent_wrote(enum kind k, unsigned long i)
{
	return k == K_DATA && i % 4 == 3;
}

/* Set once the file's second table (pages 512-1023) was punched whole. */
static int table_punched;

/*
 * What page i should read in the parent, but for the pages the child
 * changes: the parent's own write, else the file's byte.
 */
static unsigned char expect(enum kind k, unsigned long i)
{
	if (parent_wrote(k, i))
		return parent_byte(i);
	if (table_punched && i / 512 == 1)
		return 0;
	return pattern(i);
}

static int make_file(const char *dir, char *path, size_t len)
{
	static unsigned char page[PTS_PAGE];
	int fd;

	snprintf(path, len, "%s/fork_text.%d", dir, getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0700);
	if (fd < 0)
		return -1;
	for (unsigned long i = 0; i < NPAGES; i++) {
		memset(page, pattern(i), sizeof(page));
		if (pwrite(fd, page, PTS_PAGE, i * PTS_PAGE) != PTS_PAGE) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* Map fd privately at a PTE table boundary, or return NULL. */
static char *map_private(int fd, int prot)
{
	char *at = pts_map_at_table(SIZE, PROT_NONE), *p;

	if (!at)
		return NULL;
	p = mmap(at, SIZE, prot, MAP_PRIVATE | MAP_FIXED, fd, 0);
	if (p == MAP_FAILED) {
		munmap(at, SIZE);
		return NULL;
	}
	madvise(p, SIZE, MADV_NOHUGEPAGE);
	return p;
}

/* Pages among [0, n) whose first byte is not what want(i) says. */
static long wrong(const char *p, unsigned long n, enum kind k,
		  unsigned long skip1, unsigned long skip2)
{
	long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		if (i != skip1 && i != skip2 && i != HOLE && i != PROT_PAGE)
			bad += (unsigned char)p[i * PTS_PAGE] != expect(k, i);
	return bad;
}

/* Write one byte at addr of process pid through /proc/PID/mem. */
static int poke(pid_t pid, void *addr, unsigned char v)
{
	char path[64];
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return -1;
	ret = pwrite(fd, &v, 1, (uintptr_t)addr) == 1 ? 0 : -1;
	close(fd);
	return ret;
}

/* The VMA lines of /proc/pid/maps, with the pid's own name cut off. */
static int read_maps(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return 0;
}

struct turns {
	int to_child[2], to_parent[2];
};

struct report {
	long wrong_first, faults_first, rss_first, present_first;
	long wrong_migrated, faults_migrated;
	long poke_self, saw_poke_self, saw_poke_parent;
	long mprotect_ok;
	long hole_byte, sigbus, wrong_after_trunc, kept_pokes;
	long rss_end;
};

static void child(enum kind k, char *p, struct turns *t, int out)
{
	struct report rep = { 0 };
	long f0;

	/* 1. read everything through the shared tables */
	f0 = pts_minflt();
	rep.wrong_first = wrong(p, NPAGES, k, -1, -1);
	rep.faults_first = pts_minflt() - f0;
	rep.rss_first = pts_rss_consistent();
	rep.present_first = pts_pagemap_count(p, NPAGES, 63);
	pts_give(t->to_parent[1]);

	/* 2. the parent migrated every page */
	if (!pts_take(t->to_child[0]))
		_exit(91);
	f0 = pts_minflt();
	rep.wrong_migrated = wrong(p, NPAGES, k, -1, -1);
	rep.faults_migrated = pts_minflt() - f0;

	/* 3. a breakpoint of its own, and the parent pokes page 2 */
	rep.poke_self = poke(getpid(), p + PTS_PAGE, 0xcc);
	rep.saw_poke_self = (unsigned char)p[PTS_PAGE] == 0xcc;
	pts_give(t->to_parent[1]);
	if (!pts_take(t->to_child[0]))
		_exit(92);
	rep.saw_poke_parent = (unsigned char)p[2 * PTS_PAGE] == 0xcd;

	/* 4. make one page writable, and write it */
	rep.mprotect_ok = !mprotect(p + PROT_PAGE * PTS_PAGE, PTS_PAGE,
				    PROT_READ | PROT_WRITE);
	if (rep.mprotect_ok)
		p[PROT_PAGE * PTS_PAGE] = 0x5a;
	pts_give(t->to_parent[1]);

	/* 5. the parent punched a hole and truncated to half */
	if (!pts_take(t->to_child[0]))
		_exit(93);
	table_punched = 1;
	rep.hole_byte = pts_probe(p + HOLE * PTS_PAGE);
	rep.sigbus = pts_probe(p + SIZE / 2 + PTS_PAGE) == -1;
	rep.wrong_after_trunc = wrong(p, NPAGES / 2, k, 1, 2);
	rep.kept_pokes = (unsigned char)p[PTS_PAGE] == 0xcc &&
			 (unsigned char)p[2 * PTS_PAGE] == 0xcd &&
			 (!rep.mprotect_ok ||
			  (unsigned char)p[PROT_PAGE * PTS_PAGE] == 0x5a);

	rep.rss_end = pts_rss_consistent();
	if (write(out, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(94);
	_exit(0);
}

/* The maps lines of the parent and the child, compared. */
static int same_maps(pid_t pid)
{
	static char a[65536], b[65536];

	if (read_maps(getpid(), a, sizeof(a)) || read_maps(pid, b, sizeof(b)))
		return 0;
	if (strcmp(a, b)) {
		tap_diag("maps differ:\n%s\n---\n%s", a, b);
		return 0;
	}
	return 1;
}

static void test_kind(const char *dir, enum kind k)
{
	const char *name = kind_name[k];
	char path[128], label[160];
	long shared0, moved, kc, pss;
	struct report rep;
	struct turns t;
	int fd, out[2], st, maps_same = -1;
	pid_t pid;
	char *p;

	snprintf(label, sizeof(label), "%s %s", dir, name);
	table_punched = 0;
	fd = make_file(dir, path, sizeof(path));
	p = fd < 0 ? NULL :
	    map_private(fd, k == K_TEXT ? PROT_READ | PROT_EXEC :
				   PROT_READ | PROT_WRITE);
	if (!p) {
		tap_result(0, "%s: map 8 MiB privately at a table boundary (%s)",
			   label, strerror(errno));
		if (fd >= 0) {
			close(fd);
			unlink(path);
		}
		return;
	}
	for (unsigned long i = 0; i < NPAGES; i++)
		if (parent_wrote(k, i))
			p[i * PTS_PAGE] = parent_byte(i);
	tap_result(wrong(p, NPAGES, k, -1, -1) == 0,
		   "%s: the parent reads the file and its own writes", label);

	if (pipe(t.to_child) || pipe(t.to_parent) || pipe(out)) {
		perror("pipe");
		exit(1);
	}
	shared0 = pts_vmstat("ptshare_fork_shared_private_file");
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid)
		child(k, p, &t, out[1]);

	if (sharing)
		tap_result(pts_vmstat("ptshare_fork_shared_private_file") -
			   shared0 >= 4, "%s: fork shares the 4 tables", label);
	else
		tap_skip("no private file sharing",
			 "%s: fork shares the 4 tables", label);

	/* 1. the child read; count mappers, then migrate everything */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	maps_same = same_maps(pid);
	kc = pts_kpagecount_not(p, NPAGES, 2);
	if (kc < 0)
		tap_skip("cannot read /proc/kpagecount",
			 "%s: kpagecount 2 for every page", label);
	else
		tap_result(kc == 0, "%s: kpagecount 2 for every page (%ld differ)",
			   label, kc);
	pss = pts_pss_at(getpid(), (uintptr_t)p);
	tap_result(labs(pss - (long)(SIZE / 2048)) <= 8,
		   "%s: the parent's Pss is half its RSS (%ld kB)", label, pss);
	moved = pts_migrate_all(p, NPAGES);
	if (moved < 0)
		tap_skip("move_pages failed",
			 "%s: migration while shared", label);
	else
		tap_result(moved == (long)NPAGES,
			   "%s: migration while shared moves every page (%ld)",
			   label, moved);
	pts_give(t.to_child[1]);

	/* 3. poke the child's page 2; the child poked its page 1 */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	tap_result(poke(pid, p + 2 * PTS_PAGE, 0xcd) == 0,
		   "%s: write the child's page through /proc/PID/mem", label);
	pts_give(t.to_child[1]);

	/* 4. the child wrote its mprotect'ed page; 5. punch and truncate */
	if (!pts_take(t.to_parent[0]))
		goto reap;
	tap_result((unsigned char)p[PTS_PAGE] == expect(k, 1) &&
		   (unsigned char)p[2 * PTS_PAGE] == expect(k, 2) &&
		   (unsigned char)p[PROT_PAGE * PTS_PAGE] == expect(k, PROT_PAGE),
		   "%s: the parent sees none of the child's writes", label);
	tap_result(pts_probe_write(p + PROT_PAGE * PTS_PAGE) ==
		   (k == K_DATA ? 0 : -1),
		   "%s: the parent keeps its protection", label);
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      HOLE * PTS_PAGE, PTS_PAGE))
		tap_diag("%s: punch hole: %s", label, strerror(errno));
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      PTS_PMD, PTS_PMD))
		tap_diag("%s: punch a table: %s", label, strerror(errno));
	table_punched = 1;
	if (ftruncate(fd, SIZE / 2))
		tap_diag("%s: ftruncate: %s", label, strerror(errno));
	tap_result(pts_probe(p + HOLE * PTS_PAGE) ==
		   (parent_wrote(k, HOLE) ? parent_byte(HOLE) : 0),
		   "%s: the parent reads zeros in the hole", label);
	tap_result(pts_probe(p + SIZE / 2 + PTS_PAGE) == -1,
		   "%s: the parent gets SIGBUS past the truncation", label);
	tap_result(wrong(p, NPAGES / 2, k, -1, -1) == 0,
		   "%s: the parent keeps the rest, and its own writes", label);
	pts_give(t.to_child[1]);

reap:
	close(out[1]);
	memset(&rep, 0xff, sizeof(rep));
	if (read(out[0], &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		tap_diag("%s: no report from the child", label);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		tap_diag("%s: child status 0x%x", label, st);

	tap_diag("%s: the child read 8 MiB with %ld minor faults, then %ld after migration",
		 label, rep.faults_first, rep.faults_migrated);
	tap_result(rep.wrong_first == 0,
		   "%s: the child reads the file and the parent's writes", label);
	if (sharing) {
		tap_result(rep.faults_first >= 0 && rep.faults_first < 16,
			   "%s: the child reads without faulting its pages in",
			   label);
		tap_result(rep.faults_migrated >= 0 && rep.faults_migrated < 16,
			   "%s: migration keeps the tables shared", label);
	} else {
		tap_skip("no private file sharing",
			 "%s: the child reads without faulting its pages in",
			 label);
		tap_skip("no private file sharing",
			 "%s: migration keeps the tables shared", label);
	}
	tap_result(rep.rss_first == 1 && rep.present_first == (long)NPAGES,
		   "%s: the child's RSS agrees with its tables after fork",
		   label);
	tap_result(rep.wrong_migrated == 0,
		   "%s: the child reads right after migration", label);
	tap_result(rep.poke_self == 0 && rep.saw_poke_self == 1,
		   "%s: the child writes its own text through /proc/self/mem",
		   label);
	tap_result(rep.saw_poke_parent == 1,
		   "%s: the child sees the parent's write to its /proc/PID/mem",
		   label);
	tap_result(rep.mprotect_ok == 1,
		   "%s: the child makes a page writable", label);
	tap_result(rep.hole_byte == (parent_wrote(k, HOLE) ?
				     parent_byte(HOLE) : 0),
		   "%s: the child reads zeros in the hole", label);
	tap_result(rep.sigbus == 1,
		   "%s: the child gets SIGBUS past the truncation", label);
	tap_result(rep.wrong_after_trunc == 0 && rep.kept_pokes == 1,
		   "%s: the child keeps the rest, and its own writes", label);
	tap_result(rep.rss_end == 1,
		   "%s: the child's RSS agrees with its tables at the end",
		   label);
	tap_result(pts_rss_consistent(),
		   "%s: the parent's RSS agrees with its tables at the end",
		   label);
	tap_result(maps_same == 1,
		   "%s: after fork, the child's maps are the parent's", label);

	close(out[0]);
	close(t.to_child[0]);
	close(t.to_child[1]);
	close(t.to_parent[0]);
	close(t.to_parent[1]);
	munmap(p, SIZE);
	close(fd);
	unlink(path);
}

/*
 * With vm.pt_share_shared=0, a fork shares only the tables it would copy:
 * those of "data", not those of "text", which the child faults in.
 */
static void test_knob_off(void)
{
	static const char *const why = "no private file sharing";
	long before, shared[NR_KINDS], present[NR_KINDS];
	char path[128];
	int fd, st, pipefd[2];
	char *p[NR_KINDS];
	pid_t pid;

	p[K_TEXT] = p[K_DATA] = NULL;
	fd = make_file("/tmp", path, sizeof(path));
	if (fd < 0 || pipe(pipefd)) {
		tap_result(0, "knob off: make the file (%s)", strerror(errno));
		goto out;
	}
	/* One fork per kind, data mapped only for the second one. */
	for (int k = 0; k < NR_KINDS; k++) {
		p[k] = map_private(fd, k == K_TEXT ? PROT_READ | PROT_EXEC :
					  PROT_READ | PROT_WRITE);
		if (!p[k]) {
			tap_result(0, "knob off: map %s (%s)", kind_name[k],
				   strerror(errno));
			goto out;
		}
		if (k == K_DATA)
			p[k][0] = 1;
		for (unsigned long i = 0; i < NPAGES; i++)
			(void)*(volatile char *)(p[k] + i * PTS_PAGE);
		before = pts_vmstat("ptshare_fork_shared_private_file");
		pid = fork();
		if (!pid) {
			long n = pts_pagemap_count(p[k], NPAGES, 63);

			_exit(write(pipefd[1], &n, sizeof(n)) == sizeof(n) ?
			      0 : 1);
		}
		shared[k] = pts_vmstat("ptshare_fork_shared_private_file") -
			    before;
		if (read(pipefd[0], &present[k], sizeof(present[k])) !=
		    sizeof(present[k]))
			present[k] = -1;
		waitpid(pid, &st, 0);
	}
	if (sharing) {
		tap_result(shared[K_DATA] >= 4,
			   "knob off: fork shares the tables of data (%ld)",
			   shared[K_DATA]);
		tap_result(shared[K_TEXT] == 0,
			   "knob off: fork does not share the tables of text (%ld)",
			   shared[K_TEXT]);
	} else {
		tap_skip(why, "knob off: fork shares the tables of data");
		tap_skip(why, "knob off: fork does not share the tables of text");
	}
	tap_result(present[K_DATA] == (long)NPAGES,
		   "knob off: the child maps every page of data (%ld)",
		   present[K_DATA]);
	tap_result(present[K_TEXT] == 0,
		   "knob off: the child maps no page of text before it touches one (%ld)",
		   present[K_TEXT]);
out:
	for (int k = 0; k < NR_KINDS; k++)
		if (p[k])
			munmap(p[k], SIZE);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

int main(void)
{
	long saved = pts_read_long(SHARED_KNOB);
	struct stat root, scratch;

	sharing = pts_force_sharing() && saved >= 0 &&
		  pts_vmstat("ptshare_fork_shared_private_file") >= 0 &&
		  pts_write_long(SHARED_KNOB, 1) == 0;
	for (int k = 0; k < NR_KINDS; k++)
		test_kind("/tmp", k);
	if (!stat("/", &root) && !stat("/scratch", &scratch) &&
	    root.st_dev != scratch.st_dev) {
		for (int k = 0; k < NR_KINDS; k++)
			test_kind("/scratch", k);
	} else {
		tap_skip("no /scratch file system", "ext4 files");
	}
	if (sharing)
		pts_write_long(SHARED_KNOB, 0);
	test_knob_off();
	if (saved >= 0)
		pts_write_long(SHARED_KNOB, saved);
	return tap_finish();
}
