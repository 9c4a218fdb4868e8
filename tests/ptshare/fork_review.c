// SPDX-License-Identifier: GPL-2.0
/*
 * fork_review: the findings of the review in issue 18, each as cases
 * that fail where the finding is real and pass with vanilla semantics.
 * Sharing is forced (vm.pt_share=2) unless a case says otherwise.
 *
 *  - Finding 7, prctl numbers: prctl(74) and prctl(75), 6.13's shadow
 *    stack calls, fail with EINVAL on 6.12 as on vanilla.
 *  - Finding 2: a page with more than 1024 pipe references
 *    (vmsplice), shared at fork; after the parent's munmap the child's
 *    write must copy it, and the pipe must still read the old data.
 *  - Finding 4: with every unshare allocation failing (fail_ptshare):
 *    mlockall(MCL_CURRENT) locks every VMA or fails with ENOMEM having
 *    locked none; clear_refs "4" clears every soft-dirty bit or fails.
 *    Reads of a sharer through /proc/PID/mem and PTRACE_PEEKDATA unshare
 *    nothing (the ptshare_unshare_* counters do not move), and still
 *    succeed when unsharing would fail.
 *  - Finding 5: pages of a shared table are mapped by two processes:
 *    pagemap does not call them exclusive, /proc/kpagecount says 2,
 *    move_pages(MPOL_MF_MOVE) in the child gives -EACCES and mbind
 *    (MPOL_MF_MOVE) moves nothing.
 *  - Finding 6: the child's RssAnon right after fork is the parent's,
 *    and its VmRSS still counts the 64 MiB it maps after the parent
 *    rewrote its own copy.
 *  - Finding 7, Pss: three sharers, one of which copied the table by
 *    mprotect(): Pss is a third of the region in each.
 *  - Finding 1, last because today's kernel oopses on it: a user's word
 *    in a 2 MiB or 1 GiB hugetlb page that looks like a PMD table entry;
 *    mprotect(PROT_READ), and mlock+munlock of the 1 GiB page, succeed
 *    and leave the word alone, with vm.pt_share=0 and 2.  Each runs in a
 *    child, so that an oops ends only the child (it may stay stuck in the
 *    kernel; the parent gives up on it after a timeout).
 * Finding 8 (a partial zap of a shared table) has no user-reachable
 * trigger; finding 3 is a build failure.  Neither has a case here.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "pts.h"

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT		26
#endif
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB		(21 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB		(30 << MAP_HUGE_SHIFT)
#endif
#ifndef F_SETPIPE_SZ
#define F_SETPIPE_SZ		1031
#endif
#define MPOL_BIND		2
#define MPOL_MF_MOVE		(1 << 1)

#define FAIL_DIR	"/sys/kernel/debug/fail_ptshare"
#define TABLES		4
#define SIZE		(TABLES * PTS_PMD)		/* 8 MiB */
#define NPAGES		(SIZE / PTS_PAGE)
#define KB(bytes)	((long)((bytes) / 1024))
#define PM_PFN		((1ULL << 55) - 1)
#define PM_SOFT_DIRTY	(1ULL << 55)
#define PM_EXCLUSIVE	(1ULL << 56)
#define PM_PRESENT	(1ULL << 63)
#define WAIT_SECS	120

static int ptshare;

static uint64_t val(unsigned long i, int gen)
{
	return ((uint64_t)(gen + 1) << 48) | i;
}

static void fill(char *p, unsigned long npages, int gen)
{
	for (unsigned long i = 0; i < npages; i++)
		*(uint64_t *)(p + i * PTS_PAGE) = val(i, gen);
}

/* Number of the n pages at p whose first word does not hold gen. */
static unsigned long bad(const char *p, unsigned long npages, int gen)
{
	unsigned long nbad = 0;

	for (unsigned long i = 0; i < npages; i++)
		if (*(const uint64_t *)(p + i * PTS_PAGE) != val(i, gen))
			nbad++;
	return nbad;
}

static int write_file(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fputs(s, f) < 0 ? -1 : 0;
	if (fclose(f))
		ret = -1;
	return ret;
}

/* Private read-write memory outside any shared table: for buffers. */
static void *xmap(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	return p;
}

static void xpipe(int fd[2])
{
	if (pipe(fd)) {
		perror("pipe");
		exit(1);
	}
}

static pid_t xfork(void)
{
	pid_t pid;

	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	return pid;
}

/* ---- fault injection: every unshare allocation fails ---- */

static int fail_ready(void)
{
	static int ready = -1;

	if (ready < 0) {
		if (access(FAIL_DIR, F_OK))
			mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL);
		ready = !access(FAIL_DIR "/probability", W_OK);
	}
	return ready;
}

static int fail_on(void)
{
	return write_file(FAIL_DIR "/verbose", "0") ||
	       write_file(FAIL_DIR "/interval", "1") ||
	       write_file(FAIL_DIR "/space", "0") ||
	       write_file(FAIL_DIR "/times", "-1") ||
	       write_file(FAIL_DIR "/probability", "100");
}

static void fail_off(void)
{
	write_file(FAIL_DIR "/probability", "0");
	write_file(FAIL_DIR "/times", "1");
}

/* ---- children ---- */

/* waitpid() for at most secs seconds; 0, or -1 if the child is still there. */
static int wait_for(pid_t pid, int secs, int *status)
{
	for (int i = 0; i < secs * 10; i++) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid)
			return 0;
		if (r < 0) {
			tap_diag("waitpid(%d): %s", pid, strerror(errno));
			return -1;
		}
		usleep(100 * 1000);
	}
	return -1;
}

/*
 * The wait status of a child, or -1 if it did not end within secs
 * seconds, nor after a SIGKILL (stuck in the kernel, after an oops say).
 */
static int reap(pid_t pid, int secs)
{
	int status;

	if (!wait_for(pid, secs, &status))
		return status;
	tap_diag("child %d still there after %d s: SIGKILL", pid, secs);
	kill(pid, SIGKILL);
	if (!wait_for(pid, 10, &status))
		return status;
	tap_diag("child %d does not die: stuck in the kernel?", pid);
	return -1;
}

static const char *describe(int status)
{
	static char buf[64];

	if (status == -1)
		snprintf(buf, sizeof(buf), "did not end");
	else if (WIFEXITED(status))
		snprintf(buf, sizeof(buf), "exit %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, sizeof(buf), "status %#x", status);
	return buf;
}

static int exit_code(int status)
{
	return status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Pipes both ways between a parent and one child. */
struct chan {
	int down[2], up[2];
};

static void chan_open(struct chan *c)
{
	xpipe(c->down);
	xpipe(c->up);
}

static void chan_child(struct chan *c)
{
	close(c->down[1]);
	close(c->up[0]);
}

static void chan_parent(struct chan *c)
{
	close(c->down[0]);
	close(c->up[1]);
}

static void chan_close_parent(struct chan *c)
{
	close(c->down[1]);
	close(c->up[0]);
}

/* Wait for the other side's byte; 0 if the other side closed instead. */
static int await(int fd)
{
	char b;

	return read(fd, &b, 1) == 1;
}

static void signal_fd(int fd)
{
	if (write(fd, "g", 1) != 1)
		perror("write");
}

static int send_all(int fd, const void *buf, size_t n)
{
	return write(fd, buf, n) == (ssize_t)n ? 0 : -1;
}

static int recv_all(int fd, void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);

		if (r <= 0)
			return -1;
		got += r;
	}
	return 0;
}

static long unshares(void)
{
	return pts_vmstat("ptshare_unshare_copy") +
	       pts_vmstat("ptshare_unshare_reuse") +
	       pts_vmstat("ptshare_unshare_fail");
}

static long fork_shared(void)
{
	return pts_vmstat("ptshare_fork_shared");
}

/* Says how many tables the fork that followed shared0's reading shared. */
static void diag_shared(long shared0)
{
	if (ptshare)
		tap_diag("fork shared %ld PTE tables", fork_shared() - shared0);
}

/* A child that only waits for its end, sharing the parent's tables. */
static pid_t spawn_sleeper(struct chan *c)
{
	pid_t pid;

	chan_open(c);
	pid = xfork();
	if (!pid) {
		chan_child(c);
		await(c->down[0]);
		_exit(0);
	}
	chan_parent(c);
	return pid;
}

static int end_sleeper(pid_t pid, struct chan *c)
{
	int status;

	signal_fd(c->down[1]);
	chan_close_parent(c);
	status = reap(pid, 30);
	if (exit_code(status))
		tap_diag("sleeper %d: %s", pid, describe(status));
	return status;
}

/* ---- /proc readers ---- */

static char *pidstr(pid_t pid)
{
	static char buf[4][16];
	static int next;
	char *b = buf[next++ % 4];

	if (pid)
		snprintf(b, 16, "%d", pid);
	else
		snprintf(b, 16, "self");
	return b;
}

/*
 * In /proc/WHO/smaps, the VMA that holds addr: the kB of field (-1 if
 * absent), and its VmFlags in flags if flags is not NULL.
 */
static long smaps_at(pid_t pid, const void *addr, const char *field,
		     char *flags, size_t flen)
{
	unsigned long s, e, a = (unsigned long)addr;
	size_t len = field ? strlen(field) : 0;
	char path[64], line[512];
	long ret = -1;
	int in = 0;
	FILE *f;

	if (flags)
		flags[0] = 0;
	snprintf(path, sizeof(path), "/proc/%s/smaps", pidstr(pid));
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			if (in)
				break;
			in = s <= a && a < e;
			continue;
		}
		if (!in)
			continue;
		if (field && !strncmp(line, field, len) && line[len] == ':')
			ret = strtol(line + len + 1, NULL, 10);
		if (flags && !strncmp(line, "VmFlags:", 8))
			snprintf(flags, flen, "%s", line + 8);
	}
	fclose(f);
	return ret;
}

/* Is f one of the space-separated words of flags (a VmFlags line)? */
static int has_flag(const char *flags, const char *f)
{
	size_t len = strlen(f);

	for (const char *p = flags; (p = strstr(p, f)); p += len)
		if ((p == flags || p[-1] == ' ') &&
		    (p[len] == ' ' || p[len] == '\n' || !p[len]))
			return 1;
	return 0;
}

/*
 * The VMAs of this process that mlockall(MCL_CURRENT) locks on vanilla
 * (all but VM_IO, VM_PFNMAP, VM_DONTEXPAND, VM_MIXEDMAP, hugetlb and the
 * gate VMA) and that are not locked; prints the first few.
 */
static int unlocked_vmas(void)
{
	static const char *const special[] = { "io", "pf", "de", "mm", "ht" };
	char line[512], head[512] = "";
	unsigned long s, e;
	FILE *f = fopen("/proc/self/smaps", "r");
	int n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		int skip = 0;

		if (sscanf(line, "%lx-%lx ", &s, &e) == 2) {
			snprintf(head, sizeof(head), "%s", line);
			head[strcspn(head, "\n")] = 0;
			continue;
		}
		if (strncmp(line, "VmFlags:", 8) || strstr(head, "[vsyscall]"))
			continue;
		for (unsigned int i = 0; i < sizeof(special) / sizeof(*special); i++)
			skip |= has_flag(line + 8, special[i]);
		if (skip || has_flag(line + 8, "lo"))
			continue;
		if (n++ < 3)
			tap_diag("child: VMA not locked: %s", head);
	}
	if (f)
		fclose(f);
	return n;
}

/* n pagemap entries of WHO from addr on; 0 or -1. */
static int pagemap(pid_t pid, const void *addr, unsigned long n,
		   uint64_t *out)
{
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s/pagemap", pidstr(pid));
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	got = pread(fd, out, n * 8, (unsigned long)addr / PTS_PAGE * 8);
	close(fd);
	return got == (ssize_t)(n * 8) ? 0 : -1;
}

/* How many of n pagemap entries have all the bits of mask set. */
static long count_bits(const uint64_t *pm, unsigned long n, uint64_t mask)
{
	long cnt = 0;

	for (unsigned long i = 0; i < n; i++)
		cnt += (pm[i] & mask) == mask;
	return cnt;
}

/* ---- finding 7: the prctl numbers ---- */

static void test_prctl_numbers(void)
{
	static const struct {
		int nr;
		const char *name;
	} calls[] = {
		{ 74, "PR_GET_SHADOW_STACK_STATUS" },
		{ 75, "PR_SET_SHADOW_STACK_STATUS" },
	};

	for (unsigned int i = 0; i < 2; i++) {
		int r, err;

		errno = 0;
		r = prctl(calls[i].nr, 0, 0, 0, 0);
		err = errno;
		tap_diag("prctl(%d, 0, 0, 0, 0) = %d (%s)", calls[i].nr, r,
			 r < 0 ? strerror(err) : "no error");
		tap_result(r == -1 && err == EINVAL,
			   "prctl %d (6.13's %s) fails with EINVAL on 6.12",
			   calls[i].nr, calls[i].name);
	}
}

/* ---- finding 2: take-over of a page with 1024+ pipe references ---- */

#define SPLICE_PIPES	5
#define PIPE_BYTES	(1 << 20)

static void test_pipe_refs(void)
{
	const char *name = "vmsplice past 1024 references: the child's write after the parent's munmap does not reach the pipe";
	int pipes[SPLICE_PIPES][2], npipes = 0, status;
	long refs = 0, shared0;
	struct chan c;
	char *p;
	pid_t pid;

	p = pts_map_aligned(PTS_PMD, PROT_READ | PROT_WRITE);
	if (!p) {
		tap_result(0, "%s (mmap failed)", name);
		return;
	}
	memset(p, 'x', PTS_PMD);	/* the whole table, so it is shared */
	memset(p, 'P', PTS_PAGE);
	for (; npipes < SPLICE_PIPES; npipes++) {
		int *fd = pipes[npipes];

		xpipe(fd);
		if (fcntl(fd[1], F_SETPIPE_SZ, PIPE_BYTES) < 0) {
			pts_write_long("/proc/sys/fs/pipe-max-size", PIPE_BYTES);
			if (fcntl(fd[1], F_SETPIPE_SZ, PIPE_BYTES) < 0) {
				tap_diag("F_SETPIPE_SZ %d: %s", PIPE_BYTES,
					 strerror(errno));
				close(fd[0]);
				close(fd[1]);
				break;
			}
		}
		for (int j = 0; j < PIPE_BYTES / (int)PTS_PAGE; j++) {
			struct iovec iov = { p, PTS_PAGE };

			if (vmsplice(fd[1], &iov, 1, SPLICE_F_NONBLOCK) !=
			    (ssize_t)PTS_PAGE)
				break;
			refs++;
		}
	}
	tap_diag("%ld vmsplice references to the page in %d pipes", refs,
		 npipes);
	if (refs < 1100 || !npipes) {
		tap_skip("could not take 1100 references through pipes", "%s",
			 name);
		goto out;
	}

	chan_open(&c);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		char got = 0;

		chan_child(&c);
		if (!await(c.down[0]))
			_exit(3);
		p[0] = 'C';
		if (read(pipes[0][0], &got, 1) != 1) {
			tap_diag("child: read from the pipe: %s", strerror(errno));
			_exit(2);
		}
		tap_diag("child: wrote 'C' into its page; the pipe reads '%c', the page '%c'",
			 got, p[0]);
		fflush(stdout);
		_exit(got == 'P' && p[0] == 'C' ? 0 : 1);
	}
	chan_parent(&c);
	diag_shared(shared0);
	munmap(p, PTS_PMD);
	p = NULL;
	signal_fd(c.down[1]);
	status = reap(pid, WAIT_SECS);
	chan_close_parent(&c);
	if (exit_code(status))
		tap_diag("child: %s", describe(status));
	tap_result(exit_code(status) == 0, "%s", name);
out:
	for (int i = 0; i < npipes; i++) {
		close(pipes[i][0]);
		close(pipes[i][1]);
	}
	if (p)
		munmap(p, PTS_PMD);
}

/* ---- finding 4: mlockall with failing unshares ---- */

static void test_mlockall(void)
{
	const char *name = "mlockall(MCL_CURRENT) with every unshare failing: every VMA locked, or ENOMEM and none";
	long shared0;
	char *p;
	int status;
	pid_t pid;

	if (!fail_ready()) {
		tap_skip("no " FAIL_DIR, "%s", name);
		return;
	}
	p = pts_map_tables(SIZE);
	fill(p, NPAGES, 1);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		long lck0, lck;
		char flags[512];
		int r, err, locked, others, ok;

		lck0 = pts_status_kb("VmLck");
		if (fail_on()) {
			fail_off();
			_exit(10);
		}
		errno = 0;
		r = mlockall(MCL_CURRENT);
		err = errno;
		fail_off();
		lck = pts_status_kb("VmLck");
		smaps_at(0, p, NULL, flags, sizeof(flags));
		locked = has_flag(flags, "lo");
		others = unlocked_vmas();
		tap_diag("child: mlockall -> %s; VmLck %ld kB (%ld before); the shared region %s; %d other VMAs not locked",
			 r ? strerror(err) : "0", lck, lck0,
			 locked ? "locked" : "not locked", others);
		ok = (r == 0 && locked && !others && lck >= KB(SIZE)) ||
		     (r == -1 && err == ENOMEM && !locked && lck == 0);
		munlockall();
		fflush(stdout);
		_exit(ok ? 0 : 1);
	}
	diag_shared(shared0);
	status = reap(pid, WAIT_SECS);
	fail_off();
	if (exit_code(status) == 10) {
		tap_skip("cannot set up " FAIL_DIR, "%s", name);
	} else {
		if (exit_code(status))
			tap_diag("child: %s", describe(status));
		tap_result(exit_code(status) == 0, "%s", name);
	}
	tap_result(bad(p, NPAGES, 1) == 0,
		   "parent memory intact after the child's mlockall");
	munmap(p, SIZE);
}

/* ---- finding 4: reads of a sharer never unshare ---- */

/* pread() of n bytes at addr from /proc/PID/mem. */
static ssize_t mem_read(pid_t pid, const void *addr, void *buf, size_t n)
{
	char path[64];
	ssize_t got;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	got = pread(fd, buf, n, (unsigned long)addr);
	err = errno;
	close(fd);
	errno = err;
	return got;
}

/* Compare what was read of the region (gen's data) with what it holds. */
static unsigned long bad_words(const char *buf, int gen)
{
	return bad(buf, NPAGES, gen);
}

static void read_procmem(char *p, int inject)
{
	long u0, u1, shared0 = fork_shared();
	struct chan c;
	pid_t pid = spawn_sleeper(&c);
	char *buf = xmap(SIZE);
	unsigned long nbad = NPAGES;
	ssize_t got;
	int err;

	diag_shared(shared0);
	u0 = unshares();
	if (inject && fail_on()) {
		fail_off();
		tap_skip("cannot set up " FAIL_DIR,
			 "/proc/PID/mem read of a sharer with every unshare failing");
		goto out;
	}
	got = mem_read(pid, p, buf, SIZE);
	err = errno;
	if (inject)
		fail_off();
	u1 = unshares();
	if (got > 0)
		nbad = bad_words(buf, 2);
	tap_diag("/proc/%d/mem: pread %zd of %lu bytes%s%s, %lu of %lu pages wrong; unshare counters moved by %ld",
		 pid, got, SIZE, got < 0 ? ": " : "",
		 got < 0 ? strerror(err) : "", nbad, NPAGES, u1 - u0);
	if (inject) {
		tap_result(got == (ssize_t)SIZE && !nbad,
			   "/proc/PID/mem read of a sharer succeeds with every unshare failing");
	} else {
		tap_result(got == (ssize_t)SIZE && !nbad,
			   "/proc/PID/mem read of a sharer returns its data");
		tap_result(u1 == u0,
			   "/proc/PID/mem read of a sharer unshares nothing");
	}
out:
	munmap(buf, SIZE);
	end_sleeper(pid, &c);
}

static void read_ptrace(char *p, int inject)
{
	const char *what = inject ?
		"PTRACE_PEEKDATA of a sharer succeeds with every unshare failing" :
		"PTRACE_PEEKDATA of a sharer returns its data";
	long u0, u1, shared0 = fork_shared();
	unsigned long nbad = 0, nerr = 0;
	struct chan c;
	pid_t pid = spawn_sleeper(&c);
	int status, first_err = 0;

	diag_shared(shared0);
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) ||
	    waitpid(pid, &status, 0) != pid || !WIFSTOPPED(status)) {
		tap_diag("PTRACE_ATTACH %d: %s", pid, strerror(errno));
		tap_result(0, "%s", what);
		if (!inject)
			tap_result(0, "PTRACE_PEEKDATA of a sharer unshares nothing");
		end_sleeper(pid, &c);
		return;
	}
	u0 = unshares();
	if (inject && fail_on()) {
		fail_off();
		ptrace(PTRACE_DETACH, pid, 0, 0);
		tap_skip("cannot set up " FAIL_DIR, "%s", what);
		end_sleeper(pid, &c);
		return;
	}
	for (unsigned long i = 0; i < NPAGES; i++) {
		long v;

		errno = 0;
		v = ptrace(PTRACE_PEEKDATA, pid, p + i * PTS_PAGE, 0);
		if (v == -1 && errno) {
			if (!nerr++)
				first_err = errno;
		} else if ((uint64_t)v != val(i, 2)) {
			nbad++;
		}
	}
	if (inject)
		fail_off();
	u1 = unshares();
	ptrace(PTRACE_DETACH, pid, 0, 0);
	tap_diag("PTRACE_PEEKDATA of %lu pages of %d: %lu failed%s%s, %lu wrong; unshare counters moved by %ld",
		 NPAGES, pid, nerr, nerr ? ", first with " : "",
		 nerr ? strerror(first_err) : "", nbad, u1 - u0);
	tap_result(!nerr && !nbad, "%s", what);
	if (!inject)
		tap_result(u1 == u0,
			   "PTRACE_PEEKDATA of a sharer unshares nothing");
	end_sleeper(pid, &c);
}

static void test_reads(void)
{
	char *p = pts_map_tables(SIZE);

	fill(p, NPAGES, 2);
	/* Each read goes to a new child, whose tables are all shared. */
	read_procmem(p, 0);
	read_ptrace(p, 0);
	if (fail_ready()) {
		read_procmem(p, 1);
		read_ptrace(p, 1);
	} else {
		tap_skip("no " FAIL_DIR,
			 "/proc/PID/mem read of a sharer succeeds with every unshare failing");
		tap_skip("no " FAIL_DIR,
			 "PTRACE_PEEKDATA of a sharer succeeds with every unshare failing");
	}
	tap_result(bad(p, NPAGES, 2) == 0, "parent memory intact after the reads");
	munmap(p, SIZE);
}

/* ---- finding 4: clear_refs with failing unshares ---- */

static int soft_dirty_works(void)
{
	uint64_t pm = 0;
	char *q = xmap(PTS_PAGE);
	int ok;

	q[0] = 1;
	ok = !pagemap(0, q, 1, &pm) && (pm & PM_SOFT_DIRTY);
	munmap(q, PTS_PAGE);
	return ok;
}

static void test_clear_refs(void)
{
	const char *name = "clear_refs 4 with every unshare failing: every soft-dirty bit cleared, or an error";
	long shared0;
	char *p;
	int status;
	pid_t pid;

	if (!fail_ready()) {
		tap_skip("no " FAIL_DIR, "%s", name);
		return;
	}
	if (!soft_dirty_works()) {
		tap_skip("no soft-dirty bit in pagemap", "%s", name);
		return;
	}
	p = pts_map_tables(SIZE);
	fill(p, NPAGES, 3);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		uint64_t *pm = xmap(NPAGES * 8);
		long sd0 = -1, sd1 = -1;
		ssize_t n;
		int fd, err;

		if (!pagemap(0, p, NPAGES, pm))
			sd0 = count_bits(pm, NPAGES, PM_SOFT_DIRTY);
		fd = open("/proc/self/clear_refs", O_WRONLY);
		if (fd < 0 || fail_on()) {
			fail_off();
			_exit(10);
		}
		errno = 0;
		n = write(fd, "4", 1);
		err = errno;
		fail_off();
		close(fd);
		if (!pagemap(0, p, NPAGES, pm))
			sd1 = count_bits(pm, NPAGES, PM_SOFT_DIRTY);
		tap_diag("child: soft-dirty pages %ld of %lu; write(clear_refs, \"4\") -> %zd%s%s; soft-dirty pages after: %ld",
			 sd0, NPAGES, n, n < 0 ? " " : "",
			 n < 0 ? strerror(err) : "", sd1);
		fflush(stdout);
		_exit((n == 1 && sd1 == 0) || n == -1 ? 0 : 1);
	}
	diag_shared(shared0);
	status = reap(pid, WAIT_SECS);
	fail_off();
	if (exit_code(status) == 10) {
		tap_skip("cannot set up " FAIL_DIR " or open clear_refs", "%s",
			 name);
	} else {
		if (exit_code(status))
			tap_diag("child: %s", describe(status));
		tap_result(exit_code(status) == 0, "%s", name);
	}
	tap_result(bad(p, NPAGES, 3) == 0,
		   "parent memory intact after the child's clear_refs");
	munmap(p, SIZE);
}

/* ---- finding 5: mapcount, pagemap, move_pages and mbind ---- */

#define NUMA_SIZE	(2 * PTS_PMD)
#define NUMA_PAGES	(NUMA_SIZE / PTS_PAGE)

static long sys_move_pages(unsigned long n, void **pages, const int *nodes,
			   int *status, int flags)
{
	return syscall(__NR_move_pages, 0, n, pages, nodes, status, flags);
}

static long sys_mbind(void *p, unsigned long len, int mode,
		      const unsigned long *mask, unsigned long maxnode,
		      unsigned int flags)
{
	return syscall(__NR_mbind, p, len, mode, mask, maxnode, flags);
}

/* The nodes of the region's pages (negative: an error for the page). */
static int where(void **pages, int *nodes)
{
	return sys_move_pages(NUMA_PAGES, pages, NULL, nodes, 0) ? -1 : 0;
}

static long count_moved(const int *before, const int *after)
{
	long moved = 0;

	for (unsigned long i = 0; i < NUMA_PAGES; i++)
		moved += before[i] != after[i];
	return moved;
}

struct numa_report {
	long present, excl;		/* the child's pagemap */
	long ret, err, eacces, other, moved;
};

static void test_numa(void)
{
	const char *pm_name = "pagemap: pages of a shared table are not PM_MMAP_EXCLUSIVE in parent or child";
	const char *kpc_name = "/proc/kpagecount: the pages parent and child map count 2";
	const char *mp_name = "move_pages(MPOL_MF_MOVE) in the child: -EACCES for every page the parent maps";
	const char *mb_name = "mbind(MPOL_MF_MOVE) in the child moves no page the parent maps";
	struct numa_report r = { 0 };
	void **pages = xmap(NUMA_PAGES * sizeof(void *));
	uint64_t *pm = xmap(NUMA_PAGES * 8);
	int *before = xmap(NUMA_PAGES * sizeof(int));
	int *after = xmap(NUMA_PAGES * sizeof(int));
	int *target = xmap(NUMA_PAGES * sizeof(int));
	int *status = xmap(NUMA_PAGES * sizeof(int));
	long shared0, p_present = -1, p_excl = -1, kpc_bad = 0, kpc_err = 0;
	struct chan c;
	int st, kfd;
	pid_t pid;
	char *p;

	p = pts_map_tables(NUMA_SIZE);
	fill(p, NUMA_PAGES, 4);
	for (unsigned long i = 0; i < NUMA_PAGES; i++)
		pages[i] = p + i * PTS_PAGE;

	/* pagemap and kpagecount while the child shares the tables */
	chan_open(&c);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		chan_child(&c);
		r.present = r.excl = -1;
		if (!pagemap(0, p, NUMA_PAGES, pm)) {
			r.present = count_bits(pm, NUMA_PAGES, PM_PRESENT);
			r.excl = count_bits(pm, NUMA_PAGES,
					    PM_PRESENT | PM_EXCLUSIVE);
		}
		send_all(c.up[1], &r, sizeof(r));
		if (!await(c.down[0]))
			_exit(0);

		/* move_pages() to the other node */
		r.ret = -1;
		if (!where(pages, before)) {
			for (unsigned long i = 0; i < NUMA_PAGES; i++)
				target[i] = before[i] == 0 ? 1 : 0;
			errno = 0;
			r.ret = sys_move_pages(NUMA_PAGES, pages, target,
					       status, MPOL_MF_MOVE);
			r.err = errno;
			for (unsigned long i = 0; i < NUMA_PAGES; i++) {
				if (status[i] == -EACCES)
					r.eacces++;
				else
					r.other++;
			}
			if (!where(pages, after))
				r.moved = count_moved(before, after);
			else
				r.moved = -1;
		}
		send_all(c.up[1], &r, sizeof(r));
		_exit(0);
	}
	chan_parent(&c);
	diag_shared(shared0);
	if (recv_all(c.up[0], &r, sizeof(r)))
		r.present = r.excl = -1;
	if (!pagemap(0, p, NUMA_PAGES, pm)) {
		p_present = count_bits(pm, NUMA_PAGES, PM_PRESENT);
		p_excl = count_bits(pm, NUMA_PAGES, PM_PRESENT | PM_EXCLUSIVE);
	}
	tap_diag("pagemap: %ld of %lu pages present and %ld exclusive in the parent, %ld present and %ld exclusive in the child",
		 p_present, NUMA_PAGES, p_excl, r.present, r.excl);
	tap_result(p_present == (long)NUMA_PAGES && r.present == (long)NUMA_PAGES &&
		   p_excl == 0 && r.excl == 0, "%s", pm_name);
	kfd = open("/proc/kpagecount", O_RDONLY);
	if (kfd < 0 || p_present != (long)NUMA_PAGES) {
		tap_skip(kfd < 0 ? "cannot open /proc/kpagecount" :
			 "no pagemap of the region", "%s", kpc_name);
	} else {
		uint64_t cnt, first_bad = 0;

		for (unsigned long i = 0; i < NUMA_PAGES; i++) {
			uint64_t pfn = pm[i] & PM_PFN;

			if (!pfn ||
			    pread(kfd, &cnt, 8, pfn * 8) != 8) {
				kpc_err++;
			} else if (cnt != 2 && !kpc_bad++) {
				first_bad = cnt;
			}
		}
		tap_diag("kpagecount: %ld of %lu pages not 2 (the first: %llu), %ld not readable",
			 kpc_bad, NUMA_PAGES, (unsigned long long)first_bad,
			 kpc_err);
		tap_result(!kpc_bad && !kpc_err, "%s", kpc_name);
	}
	if (kfd >= 0)
		close(kfd);

	if (access("/sys/devices/system/node/node1", F_OK)) {
		chan_close_parent(&c);
		reap(pid, WAIT_SECS);
		tap_skip("one NUMA node", "%s", mp_name);
		tap_skip("one NUMA node", "%s", mb_name);
		goto out;
	}
	signal_fd(c.down[1]);
	memset(&r, 0, sizeof(r));
	r.ret = -2;
	recv_all(c.up[0], &r, sizeof(r));
	chan_close_parent(&c);
	st = reap(pid, WAIT_SECS);
	if (exit_code(st))
		tap_diag("child: %s", describe(st));
	tap_diag("child: move_pages -> %ld%s%s; status -EACCES for %ld pages, something else for %ld; %ld pages moved",
		 r.ret, r.ret ? " " : "", r.ret ? strerror(r.err) : "",
		 r.eacces, r.other, r.moved);
	if (r.ret && r.err == ENOSYS)
		tap_skip("move_pages not supported", "%s", mp_name);
	else
		tap_result(r.ret == 0 && r.eacces == (long)NUMA_PAGES &&
			   r.moved == 0, "%s", mp_name);

	/* mbind() to the other node, in a new child */
	chan_open(&c);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		unsigned long mask;

		chan_child(&c);
		memset(&r, 0, sizeof(r));
		r.ret = -1;
		if (!where(pages, before) && before[0] >= 0) {
			mask = 1UL << (before[0] == 0 ? 1 : 0);
			errno = 0;
			r.ret = sys_mbind(p, NUMA_SIZE, MPOL_BIND, &mask,
					  8 * sizeof(mask), MPOL_MF_MOVE);
			r.err = errno;
			if (!where(pages, after))
				r.moved = count_moved(before, after);
			else
				r.moved = -1;
		}
		send_all(c.up[1], &r, sizeof(r));
		_exit(0);
	}
	chan_parent(&c);
	diag_shared(shared0);
	memset(&r, 0, sizeof(r));
	r.ret = -2;
	recv_all(c.up[0], &r, sizeof(r));
	chan_close_parent(&c);
	st = reap(pid, WAIT_SECS);
	if (exit_code(st))
		tap_diag("child: %s", describe(st));
	tap_diag("child: mbind(MPOL_BIND, other node, MPOL_MF_MOVE) -> %ld%s%s; %ld pages moved",
		 r.ret, r.ret ? " " : "", r.ret ? strerror(r.err) : "",
		 r.moved);
	tap_result(r.ret == 0 && r.moved == 0, "%s", mb_name);
out:
	tap_result(bad(p, NUMA_PAGES, 4) == 0,
		   "parent memory intact after the child's move_pages and mbind");
	munmap(p, NUMA_SIZE);
	munmap(pages, NUMA_PAGES * sizeof(void *));
	munmap(pm, NUMA_PAGES * 8);
	munmap(before, NUMA_PAGES * sizeof(int));
	munmap(after, NUMA_PAGES * sizeof(int));
	munmap(target, NUMA_PAGES * sizeof(int));
	munmap(status, NUMA_PAGES * sizeof(int));
}

/* ---- finding 6: RSS of the sharers ---- */

#define BIG		(64UL << 20)
#define BIG_PAGES	(BIG / PTS_PAGE)

static void test_rss(void)
{
	long shared0, parent_anon, child[2] = { -1, -1 }, rss, anon;
	char path[64];
	struct chan c;
	int st;
	pid_t pid;
	char *p = pts_map_tables(BIG);

	fill(p, BIG_PAGES, 5);
	chan_open(&c);
	parent_anon = pts_status_kb("RssAnon");
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		chan_child(&c);
		child[0] = pts_status_kb("RssAnon");
		child[1] = pts_status_kb("VmRSS");
		send_all(c.up[1], child, sizeof(child));
		await(c.down[0]);
		_exit(0);
	}
	chan_parent(&c);
	diag_shared(shared0);
	recv_all(c.up[0], child, sizeof(child));
	tap_diag("right after fork: parent RssAnon %ld kB; child RssAnon %ld kB, VmRSS %ld kB",
		 parent_anon, child[0], child[1]);
	tap_result(child[0] >= 0 && labs(child[0] - parent_anon) <= 512,
		   "child RssAnon right after fork is the parent's");

	fill(p, BIG_PAGES, 6);
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	rss = pts_proc_kb(path, "VmRSS");
	anon = pts_proc_kb(path, "RssAnon");
	tap_diag("after the parent rewrote its 64 MiB: child VmRSS %ld kB, RssAnon %ld kB; parent VmRSS %ld kB",
		 rss, anon, pts_status_kb("VmRSS"));
	tap_result(rss >= KB(BIG),
		   "child VmRSS counts the 64 MiB it maps after the parent rewrote its copy");
	signal_fd(c.down[1]);
	chan_close_parent(&c);
	st = reap(pid, WAIT_SECS);
	if (exit_code(st))
		tap_diag("child: %s", describe(st));
	munmap(p, BIG);
}

/* ---- finding 7: Pss of three sharers ---- */

static void test_pss(void)
{
	static const char *const who[] = { "parent", "copier", "other child" };
	long shared0, pss[3], err = -1;
	double third = KB(SIZE) / 3.0;
	struct chan c[2];
	pid_t pids[2];
	char *p = pts_map_tables(SIZE);

	fill(p, NPAGES, 7);
	shared0 = fork_shared();
	for (int k = 0; k < 2; k++) {
		chan_open(&c[k]);
		pids[k] = xfork();
		if (!pids[k]) {
			chan_child(&c[k]);
			if (!await(c[k].down[0]))
				_exit(0);
			if (k == 0) {
				/* the copier: unshares by copy, writes nothing */
				long e = mprotect(p, SIZE, PROT_READ) ? errno : 0;

				send_all(c[k].up[1], &e, sizeof(e));
				await(c[k].down[0]);
			}
			_exit(0);
		}
		chan_parent(&c[k]);
	}
	diag_shared(shared0);
	signal_fd(c[0].down[1]);
	recv_all(c[0].up[0], &err, sizeof(err));
	if (err)
		tap_diag("copier: mprotect(PROT_READ): %s",
			 err < 0 ? "no answer" : strerror(err));
	pss[0] = smaps_at(0, p, "Pss", NULL, 0);
	pss[1] = smaps_at(pids[0], p, "Pss", NULL, 0);
	pss[2] = smaps_at(pids[1], p, "Pss", NULL, 0);
	tap_diag("Pss of the 8192 kB region: parent %ld kB, copier %ld kB, other child %ld kB (a third: %.0f kB)",
		 pss[0], pss[1], pss[2], third);
	for (int k = 0; k < 3; k++)
		tap_result(pss[k] >= 0 && pss[k] > third * 0.98 &&
			   pss[k] < third * 1.02,
			   "Pss of three sharers, one of which copied the table: a third in the %s",
			   who[k]);
	for (int k = 0; k < 2; k++) {
		int st;

		signal_fd(c[k].down[1]);
		chan_close_parent(&c[k]);
		st = reap(pids[k], WAIT_SECS);
		if (exit_code(st))
			tap_diag("child %d: %s", k, describe(st));
	}
	munmap(p, SIZE);
}

/* ---- finding 1: hugetlb pages read as PTE tables ---- */

#define HP_DIR		"/sys/kernel/mm/hugepages/hugepages-"
#define CRAFTED		((0x3ffffffffULL << 12) | 1)

struct hpool {
	const char *dir;
	long saved;
};

static long hp_read(struct hpool *h, const char *file)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", h->dir, file);
	return pts_read_long(path);
}

static void hp_write(struct hpool *h, const char *file, long v)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%s", h->dir, file);
	pts_write_long(path, v);
}

/* At least one free page in the pool: 0, or -1 if none could be had. */
static int hp_reserve(struct hpool *h)
{
	long nr = hp_read(h, "nr_hugepages");

	if (nr < 0)
		return -1;
	if (h->saved < 0)
		h->saved = nr;
	for (int attempt = 0; attempt < 2; attempt++) {
		if (hp_read(h, "free_hugepages") >= 1)
			return 0;
		if (attempt) {
			write_file("/proc/sys/vm/drop_caches", "3");
			write_file("/proc/sys/vm/compact_memory", "1");
		}
		hp_write(h, "nr_hugepages", hp_read(h, "nr_hugepages") + 1);
	}
	return hp_read(h, "free_hugepages") >= 1 ? 0 : -1;
}

static void hp_restore(struct hpool *h)
{
	if (h->saved >= 0)
		hp_write(h, "nr_hugepages", h->saved);
}

enum hp_op { HP_MPROTECT, HP_MLOCK };

/* A child of an earlier case is stuck in the kernel (after an oops). */
static int hp_stuck;

static void hugetlb_case(struct hpool *h, size_t size, int size_flag,
			 const char *size_name, int mode, enum hp_op op)
{
	const char *op_name = op == HP_MPROTECT ?
		"mprotect(PROT_READ) returns 0" : "mlock and munlock return 0";
	char name[200];
	long shared0;
	char *keep;
	int status, code;
	pid_t pid;

	snprintf(name, sizeof(name),
		 "hugetlb %s with a table-like first word, vm.pt_share=%d: %s and keep the word",
		 size_name, mode, op_name);
	if (hp_reserve(h)) {
		if (hp_stuck) {
			tap_diag("no free huge page: an earlier child holds one, stuck in the kernel");
			tap_result(0, "%s", name);
		} else {
			tap_skip("cannot reserve a huge page", "%s", name);
		}
		return;
	}
	if (ptshare)
		pts_set_mode(mode);
	/* Tables the child shares at fork where mode allows it. */
	keep = pts_map_tables(SIZE);
	fill(keep, NPAGES, 8);
	shared0 = fork_shared();
	pid = xfork();
	if (!pid) {
		char *hp = mmap(NULL, size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB |
				size_flag, -1, 0);
		uint64_t v;
		int r, err;

		if (hp == MAP_FAILED) {
			tap_diag("child: mmap of %s: %s", size_name,
				 strerror(errno));
			fflush(stdout);
			_exit(2);
		}
		*(volatile uint64_t *)hp = CRAFTED;
		tap_diag("child: %s page mapped, first word %#llx; now %s",
			 size_name, (unsigned long long)CRAFTED,
			 op == HP_MPROTECT ? "mprotect" : "mlock");
		fflush(stdout);
		errno = 0;
		if (op == HP_MPROTECT) {
			r = mprotect(hp, size, PROT_READ);
			err = errno;
		} else {
			r = mlock(hp, size);
			err = errno;
			if (!r) {
				r = munlock(hp, size);
				err = errno;
			}
		}
		v = *(volatile uint64_t *)hp;
		tap_diag("child: %s -> %s; first word %#llx",
			 op == HP_MPROTECT ? "mprotect" : "mlock, munlock",
			 r ? strerror(err) : "0", (unsigned long long)v);
		fflush(stdout);
		_exit(r ? 3 : v != CRAFTED ? 4 : 0);
	}
	diag_shared(shared0);
	status = reap(pid, 30);
	hp_stuck |= status == -1;
	if (ptshare)
		pts_set_mode(2);
	code = exit_code(status);
	if (code)
		tap_diag("child: %s", describe(status));
	if (code == 2)
		tap_skip("mmap of the huge page failed", "%s", name);
	else
		tap_result(code == 0, "%s", name);
	munmap(keep, SIZE);
}

static void test_hugetlb(void)
{
	struct hpool h2 = { HP_DIR "2048kB", -1 };
	struct hpool h1 = { HP_DIR "1048576kB", -1 };
	static const int modes[] = { 0, 2 };

	for (int m = 0; m < 2; m++)
		hugetlb_case(&h2, PTS_PMD, MAP_HUGE_2MB, "2 MiB", modes[m],
			     HP_MPROTECT);
	hugetlb_case(&h2, PTS_PMD, MAP_HUGE_2MB, "2 MiB", 2, HP_MLOCK);
	hp_restore(&h2);
	if (access(h1.dir, F_OK)) {
		for (int m = 0; m < 2; m++)
			tap_skip("no 1 GiB huge pages",
				 "hugetlb 1 GiB with a table-like first word, vm.pt_share=%d: mprotect(PROT_READ) returns 0 and keep the word",
				 modes[m]);
		tap_skip("no 1 GiB huge pages",
			 "hugetlb 1 GiB with a table-like first word, vm.pt_share=2: mlock and munlock return 0 and keep the word");
		return;
	}
	for (int m = 0; m < 2; m++)
		hugetlb_case(&h1, 1UL << 30, MAP_HUGE_1GB, "1 GiB", modes[m],
			     HP_MPROTECT);
	hugetlb_case(&h1, 1UL << 30, MAP_HUGE_1GB, "1 GiB", 2, HP_MLOCK);
	hp_restore(&h1);
}

/*
 * Usage: fork_review            every case
 *        fork_review hugetlb    only the hugetlb cases: the 1 GiB ones need
 *                               a gigantic page, which a guest can still
 *                               allocate right after boot, before the
 *                               selftests fragment its memory
 */
int main(int argc, char **argv)
{
	ptshare = pts_force_sharing();
	if (!ptshare)
		tap_diag("no vm.pt_share: a kernel without ptshare, where every case must pass");
	if (argc > 1 && !strcmp(argv[1], "hugetlb")) {
		test_hugetlb();
		return tap_finish();
	}
	test_prctl_numbers();
	test_pipe_refs();
	test_mlockall();
	test_reads();
	test_clear_refs();
	test_numa();
	test_rss();
	test_pss();
	test_hugetlb();
	if (fail_ready())
		fail_off();
	return tap_finish();
}
