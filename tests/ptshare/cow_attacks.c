// SPDX-License-Identifier: GPL-2.0
/*
 * The classic copy-on-write attacks, aimed at page tables shared at fork.
 *
 *  - dirtycow/anon: the child races MADV_DONTNEED against writes through
 *    /proc/self/mem (GUP with FOLL_FORCE) on memory whose PTE tables it
 *    shares with its parent, while the parent keeps reading. The Dirty COW
 *    bug (CVE-2016-5195) let such a write land in the page the COW should
 *    have protected; here that page would be the parent's.
 *  - dirtycow/file: the same race on a read-only file mapped private, the
 *    original exploit: the file must not change.
 *  - dirtycow/thp-zero: the same race on a PMD-mapped huge zero page
 *    (CVE-2017-1000405): the zero page must stay zero.
 *  - setuid-exec: an unprivileged process that shares its tables with its
 *    child, and the child execs a setuid-root program. The program must
 *    start with an empty address space (its mm shares nothing), its writes
 *    must not reach the unprivileged parent, and the exec drops the child's
 *    shares (ptshare_zap_drop).
 *
 * vmsplice and GUP pins are in fork_gup, ptrace and process_vm_writev in
 * fork_ops. Every check here holds on any kernel; on a ptshare kernel the
 * tests also check that the tables were shared at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pts.h"
#include "tap.h"

#define PAGE		PTS_PAGE
#define SIZE		(4UL << 20)		/* 2 PTE tables */
#define NPAGES		(SIZE / PAGE)
#define RACE_ROUNDS	3000
#define EVIL		'E'

static int have_ptshare;

/* Shared tables at fork: the ptshare_fork_shared delta around a fork. */
static long shared_before;

static void note_fork(void)
{
	shared_before = pts_vmstat("ptshare_fork_shared");
}

static int tables_were_shared(void)
{
	return pts_vmstat("ptshare_fork_shared") > shared_before;
}

/* Pages of [p, p + len) that do not all hold byte c. */
static unsigned long bad_pages(const char *p, size_t len, char c)
{
	unsigned long bad = 0, i, j;

	for (i = 0; i < len; i += PAGE)
		for (j = 0; j < PAGE; j++)
			if (p[i + j] != c) {
				bad++;
				break;
			}
	return bad;
}

/* The racer: MADV_DONTNEED on one page as long as the writer writes. */
struct race {
	char *page;
	volatile int stop;
};

static void *dontneed_loop(void *arg)
{
	struct race *r = arg;

	while (!r->stop)
		madvise(r->page, PAGE, MADV_DONTNEED);
	return NULL;
}

/*
 * In the calling process: write EVIL into page through /proc/self/mem
 * RACE_ROUNDS times while another thread zaps it. Returns the number of
 * writes that failed, or -1 if the race could not be set up.
 */
static long dirtycow_race(char *page)
{
	struct race r = { .page = page };
	char evil[64];
	pthread_t t;
	long failed = 0;
	int fd, i;

	memset(evil, EVIL, sizeof(evil));
	fd = open("/proc/self/mem", O_RDWR);
	if (fd < 0)
		return -1;
	if (pthread_create(&t, NULL, dontneed_loop, &r)) {
		close(fd);
		return -1;
	}
	for (i = 0; i < RACE_ROUNDS; i++)
		if (pwrite(fd, evil, sizeof(evil), (off_t)(uintptr_t)page) !=
		    sizeof(evil))
			failed++;
	r.stop = 1;
	pthread_join(t, NULL);
	close(fd);
	tap_diag("%d: %ld of %d forced writes raced with MADV_DONTNEED", getpid(),
		 RACE_ROUNDS - failed, RACE_ROUNDS);
	fflush(stdout);
	return failed;
}

/* Wait for a child; 0 if it exited with status 0. */
static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	if (!WIFEXITED(st)) {
		tap_diag("child died with signal %d", WTERMSIG(st));
		return -1;
	}
	return WEXITSTATUS(st);
}

/* The parent's reader: count reads that did not see its own byte. */
struct reader {
	const char *p;
	size_t len;
	char c;
	volatile int stop;
	unsigned long wrong;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	unsigned long i;

	while (!r->stop)
		for (i = 0; i < r->len; i += PAGE)
			if (r->p[i] != r->c || r->p[i + 63] != r->c)
				r->wrong++;
	return NULL;
}

/*
 * The parent's side of a race: read rd's pages while the child races,
 * reap it, and report whether the fork shared tables. Returns the child's
 * exit status; rd->wrong counts the reads that saw another byte.
 */
static int watch_race(const char *what, pid_t pid, struct reader *rd)
{
	pthread_t t;
	int rc;

	pthread_create(&t, NULL, read_loop, rd);
	rc = reap(pid);
	rd->stop = 1;
	pthread_join(t, NULL);
	if (have_ptshare)
		tap_result(tables_were_shared(), "%s: tables shared at fork", what);
	if (rc || rd->wrong)
		tap_diag("%s: child status %d, %lu wrong reads in the parent during the race",
			 what, rc, rd->wrong);
	return rc;
}

static void dirtycow_anon(void)
{
	const char *name = "dirtycow/anon: parent memory intact";
	struct reader rd = { 0 };
	char *p = pts_map_tables(SIZE);
	pid_t pid;
	int rc;

	memset(p, 'P', SIZE);
	note_fork();
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		tap_result(0, "%s (fork: %s)", name, strerror(errno));
		return;
	}
	if (!pid) {
		char *victim = p + SIZE / 2 + 5 * PAGE;
		long failed = dirtycow_race(victim);

		/* The child's page: its last write or zeroes; the rest 'P'. */
		if (failed < 0 || failed == RACE_ROUNDS)
			_exit(2);
		memset(victim, 'P', PAGE);
		_exit(bad_pages(p, SIZE, 'P') ? 3 : 0);
	}
	rd.p = p;
	rd.len = SIZE;
	rd.c = 'P';
	rc = watch_race("dirtycow/anon", pid, &rd);
	tap_result(rc == 0, "dirtycow/anon: child raced and kept its own copy");
	tap_result(!rd.wrong && !bad_pages(p, SIZE, 'P'), "%s", name);
	munmap(p, SIZE);
}

static void dirtycow_file(void)
{
	const char *path = "/tmp/cow_attacks.ro";
	char *buf, *p, *hole;
	struct reader rd = { 0 };
	pid_t pid;
	int fd, rc;
	long failed;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0444);
	buf = malloc(SIZE);
	if (fd < 0 || !buf) {
		tap_result(0, "dirtycow/file: set up %s", path);
		return;
	}
	memset(buf, 'F', SIZE);
	if (write(fd, buf, SIZE) != SIZE) {
		tap_result(0, "dirtycow/file: write %s", path);
		return;
	}
	close(fd);
	fd = open(path, O_RDONLY);
	hole = pts_map_at_table(SIZE, PROT_NONE);
	p = hole ? mmap(hole, SIZE, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) :
		   MAP_FAILED;
	if (fd < 0 || p == MAP_FAILED) {
		tap_result(0, "dirtycow/file: map %s", path);
		return;
	}
	madvise(p, SIZE, MADV_NOHUGEPAGE);
	/*
	 * A forced write gives the VMA anonymous pages, which makes its
	 * tables eligible for sharing; then fault in the rest read-only.
	 */
	if (dirtycow_race(p) == RACE_ROUNDS) {
		tap_result(0, "dirtycow/file: no forced write landed before fork");
		return;
	}
	memset(buf, 0, SIZE);
	memcpy(buf, p, SIZE);
	note_fork();
	fflush(stdout);
	pid = fork();
	if (!pid) {
		char *victim = p + SIZE / 2 + 7 * PAGE;

		failed = dirtycow_race(victim);
		_exit(failed < 0 || failed == RACE_ROUNDS ? 2 : 0);
	}
	/* Page 0 holds the parent's own forced write. */
	rd.p = p + PAGE;
	rd.len = SIZE - PAGE;
	rd.c = 'F';
	rc = watch_race("dirtycow/file", pid, &rd);
	tap_result(rc == 0, "dirtycow/file: child raced");
	tap_result(!bad_pages(p + PAGE, SIZE - PAGE, 'F') && !rd.wrong,
		   "dirtycow/file: parent sees the file");
	if (pread(fd, buf, SIZE, 0) != SIZE)
		memset(buf, 0, SIZE);
	tap_result(!bad_pages(buf, SIZE, 'F'), "dirtycow/file: the read-only file is unchanged");
	munmap(p, SIZE);
	close(fd);
	unlink(path);
	free(buf);
}

static int thp_zero_page_usable(void)
{
	const char *t = "/sys/kernel/mm/transparent_hugepage/";
	char path[128], mode[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%suse_zero_page", t);
	if (pts_read_long(path) != 1)
		return 0;
	snprintf(path, sizeof(path), "%senabled", t);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (!fgets(mode, sizeof(mode), f))
		mode[0] = 0;
	fclose(f);
	return !strstr(mode, "[never]");
}

/* Read-only memory faulted in by reads: huge zero pages where possible. */
static char *map_zero(void)
{
	char *p = pts_map_at_table(SIZE, PROT_READ);
	volatile char sink;
	size_t i;

	if (!p)
		return NULL;
	madvise(p, SIZE, MADV_HUGEPAGE);
	for (i = 0; i < SIZE; i += PAGE)
		sink = p[i];
	(void)sink;
	return p;
}

static void dirtycow_thp_zero(void)
{
	char *p, *fresh;
	pid_t pid;
	int rc;

	if (!thp_zero_page_usable()) {
		tap_skip("THP or its huge zero page is off", "dirtycow/thp-zero");
		return;
	}
	p = map_zero();
	if (!p) {
		tap_result(0, "dirtycow/thp-zero: map");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (!pid) {
		long failed = dirtycow_race(p + 3 * PAGE);

		_exit(failed < 0 || failed == RACE_ROUNDS ? 2 : 0);
	}
	rc = reap(pid);
	if (rc)
		tap_diag("dirtycow/thp-zero: child status %d", rc);
	tap_result(rc == 0, "dirtycow/thp-zero: child raced");
	tap_result(!bad_pages(p, SIZE, 0), "dirtycow/thp-zero: parent still reads zeroes");
	fresh = map_zero();
	tap_result(fresh && !bad_pages(fresh, SIZE, 0),
		   "dirtycow/thp-zero: the huge zero page is still zero");
	if (fresh)
		munmap(fresh, SIZE);
	munmap(p, SIZE);
}

/*
 * Run as the setuid-root program: the address space must be empty where
 * the parent's shared tables were. Exit 0 if so; 10 if setuid did not
 * raise the euid, 11 if the address is taken, 12 if it is not zero-filled.
 */
static int suid_helper(const char *addr_str)
{
	char *want = (char *)strtoul(addr_str, NULL, 0), *p;

	if (geteuid() != 0)
		return 10;
	p = mmap(want, SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != want)
		return 11;
	if (bad_pages(p, SIZE, 0))
		return 12;
	memset(p, 'R', SIZE);	/* a privileged write, for the parent to miss */
	return 0;
}

/* Bits of the unprivileged process's exit status in setuid_exec(). */
enum {
	SU_NOT_SHARED = 1, SU_HELPER = 2, SU_LEAK = 4, SU_NO_DROP = 8,
	SU_REWRITE = 16, SU_NO_SUID = 32, SU_SETUP = 64,
};

static int setuid_exec_unprivileged(const char *helper)
{
	long drops;
	char arg[32];
	int ret = 0, rc;
	char *p;
	pid_t pid;

	if (setgid(65534) || setuid(65534) || geteuid() == 0)
		return SU_SETUP;
	p = pts_map_tables(SIZE);
	memset(p, 'S', SIZE);
	snprintf(arg, sizeof(arg), "%p", (void *)p);
	note_fork();
	drops = pts_vmstat("ptshare_zap_drop");
	fflush(stdout);
	pid = fork();
	if (!pid) {
		execl(helper, helper, "--suid-helper", arg, (char *)NULL);
		_exit(127);
	}
	rc = reap(pid);
	if (rc == 10)
		return SU_NO_SUID;
	if (rc) {
		tap_diag("setuid-exec: the setuid program exited %d", rc);
		ret |= SU_HELPER;
	}
	if (have_ptshare && !tables_were_shared())
		ret |= SU_NOT_SHARED;
	if (have_ptshare && pts_vmstat("ptshare_zap_drop") - drops < 2)
		ret |= SU_NO_DROP;
	if (bad_pages(p, SIZE, 'S'))
		ret |= SU_LEAK;
	memset(p, 'T', SIZE);
	if (bad_pages(p, SIZE, 'T'))
		ret |= SU_REWRITE;
	return ret;
}

static void setuid_exec(void)
{
	const char *helper = "/tmp/cow_attacks.suid";
	char buf[65536];
	int in, out, st = -1;
	ssize_t n;
	pid_t pid;

	if (geteuid() != 0) {
		tap_skip("needs root to install a setuid-root program", "setuid-exec");
		return;
	}
	in = open("/proc/self/exe", O_RDONLY);
	unlink(helper);
	out = open(helper, O_WRONLY | O_CREAT | O_EXCL, 0700);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, n) != n)
			break;
	if (in < 0 || out < 0 || close(out) || chown(helper, 0, 0) ||
	    chmod(helper, 04755)) {
		tap_result(0, "setuid-exec: install %s: %s", helper, strerror(errno));
		return;
	}
	close(in);
	fflush(stdout);
	pid = fork();
	if (!pid)
		_exit(setuid_exec_unprivileged(helper));
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		st = SU_SETUP << 8;
	st = WEXITSTATUS(st);
	unlink(helper);
	if (st & (SU_SETUP | SU_NO_SUID)) {
		tap_skip(st & SU_SETUP ? "cannot drop privileges" :
			 "setuid bit not honoured here", "setuid-exec");
		return;
	}
	if (have_ptshare)
		tap_result(!(st & SU_NOT_SHARED), "setuid-exec: tables shared at fork");
	tap_result(!(st & SU_HELPER),
		   "setuid-exec: the setuid program starts with nothing mapped there");
	if (have_ptshare)
		tap_result(!(st & SU_NO_DROP), "setuid-exec: exec dropped the shares (ptshare_zap_drop)");
	tap_result(!(st & SU_LEAK),
		   "setuid-exec: the privileged writes did not reach the unprivileged parent");
	tap_result(!(st & SU_REWRITE), "setuid-exec: the parent rewrites its memory");
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--suid-helper"))
		return suid_helper(argv[2]);
	have_ptshare = pts_force_sharing();
	dirtycow_anon();
	dirtycow_file();
	dirtycow_thp_zero();
	setuid_exec();
	return tap_finish();
}
