// SPDX-License-Identifier: GPL-2.0
/*
 * Pages the kernel holds references or pins on (GUP) across fork(), checked
 * by content:
 *
 *  - vmsplice: one process vmsplice()s pages into a pipe (a read-only GUP
 *    reference) and unmaps them; the other writes its copy; what comes out
 *    of the pipe must be the old data (CVE-2020-29374 when the child
 *    splices).
 *  - vmsplice before fork: the parent splices, forks, unmaps; the child,
 *    now the last sharer of the tables, writes; the pipe must still hold
 *    the old data. Also with the pages swapped out (MADV_PAGEOUT) before
 *    the fork. This is what the cow selftest's "vmsplice() before fork(),
 *    unmap in parent after fork()" cases check with THPs.
 *  - O_DIRECT reads into a private buffer after fork (a write pin on pages
 *    shared with the other process) and while forking (pages pinned by an
 *    in-flight AIO read when fork runs): the data lands in the reader only.
 *  - io_uring fixed buffers (long-term pins) registered before fork: the ring
 *    keeps seeing the parent's memory, never the child's.
 *
 * "CASE/in-child" is the child splicing or reading, "CASE/in-parent" the
 * parent. Regions are 2 MiB aligned with 4 KiB PTEs, the pages of interest
 * spread over several PTE tables. These hold on any kernel.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>
#include "pts_duo.h"

/* Every case runs with PTE table sharing forced, on kernels that have it. */
static void __attribute__((constructor)) force_sharing(void)
{
	pts_force_sharing();
}

#define PAGE		4096UL
#define SIZE		(8UL << 20)		/* 4 PTE tables */
#define NPAGES		(SIZE / PAGE)

#define NSPLICE		16			/* pages vmspliced: a pipe's worth */
/* The O_DIRECT target: pages [DIO_FIRST, DIO_FIRST + DIO_PAGES), across a table. */
#define DIO_FIRST	384UL
#define DIO_PAGES	512UL
#define DIO_HEAD	512UL			/* bytes of each page not read in */
#define DIO_ROUNDS	4
#define URING_SIZE	(4UL << 20)

enum { G0, G_WRITER, G_FILE, G_MARK, G_OTHER };

static char bounce[DIO_PAGES * PAGE] __attribute__((aligned(4096)));

static unsigned long splice_page(int k)
{
	return k * (NPAGES / NSPLICE) + 3;
}

/*
 * The splicer: vmsplice() pages into the pipe, unmap them, let the writer
 * write its copy, then read the pipe: it must hold the data of fork time.
 */
static int splicer(struct duo *d, char *mem, int pipefd[2])
{
	struct iovec iov[NSPLICE];
	unsigned long bad = 0;
	ssize_t n;
	int k, err;

	for (k = 0; k < NSPLICE; k++) {
		iov[k].iov_base = mem + splice_page(k) * PAGE;
		iov[k].iov_len = PAGE;
	}
	n = vmsplice(pipefd[1], iov, NSPLICE, 0);
	err = errno;
	munmap(mem, SIZE);
	duo_signal(d);
	duo_wait(d);			/* the writer has written */
	if (n < (ssize_t)PAGE) {
		tap_diag("%s: vmsplice: %s", pts_me,
			 n < 0 ? strerror(err) : "short");
		return n < 0 && err == ENOSYS ? RES_SKIP : RES_FAIL;
	}
	for (k = 0; k < n / (ssize_t)PAGE; k++) {
		if (read(pipefd[0], bounce, PAGE) != (ssize_t)PAGE) {
			tap_diag("%s: short read from the pipe", pts_me);
			return RES_FAIL;
		}
		bad += pts_bad_page(bounce, splice_page(k), G0,
				    "read from the pipe");
	}
	return bad ? RES_FAIL : RES_OK;
}

/* Write the writer's generation everywhere and check it reads back. */
static int splice_writer_now(char *mem)
{
	pts_fill(mem, 0, NPAGES, G_WRITER, 1);
	if (pts_check(mem, 0, NPAGES, G_WRITER, "writer's own writes"))
		return RES_FAIL;
	return RES_OK;
}

static int splice_writer(struct duo *d, char *mem)
{
	int r;

	duo_wait(d);			/* the splicer has spliced and unmapped */
	r = splice_writer_now(mem);
	duo_signal(d);
	return r;
}

/*
 * Generation 0 in every page of the region, then fork; a failed fork
 * fails the case: -1.
 */
static int fill_and_fork(struct duo *d, char *mem, const char *name)
{
	pts_fill(mem, 0, NPAGES, G0, 1);
	if (duo_fork(d) < 0) {
		tap_result(0, "%s (fork: %s)", name, strerror(errno));
		return -1;
	}
	return 0;
}

static void vmsplice_case(int in_child)
{
	const char *name = in_child ? "vmsplice/in-child" : "vmsplice/in-parent";
	char *mem = pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	int pipefd[2], r;
	struct duo d;

	if (!mem || pipe(pipefd)) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	if (fill_and_fork(&d, mem, name))
		return;
	if (d.child == in_child)
		r = splicer(&d, mem, pipefd);
	else
		r = splice_writer(&d, mem);
	r = duo_end(&d, r);
	duo_report(r, "vmsplice not supported", name);
	close(pipefd[0]);
	close(pipefd[1]);
	munmap(mem, SIZE);
}

/*
 * The parent splices before fork and unmaps after it; the child writes.
 * With pageout, the spliced pages are swapped out first: the pipe's
 * references keep them in the swap cache, behind swap entries.
 */
static void vmsplice_before_fork_case(int pageout)
{
	const char *name = pageout ? "vmsplice/before-fork-swapped" :
				     "vmsplice/before-fork";
	char *mem = pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	struct iovec iov[NSPLICE];
	int pipefd[2], r, k;
	struct duo d;
	ssize_t n;

	if (!mem || pipe(pipefd)) {
		tap_result(0, "%s (setup: %s)", name, strerror(errno));
		return;
	}
	pts_fill(mem, 0, NPAGES, G0, 1);
	for (k = 0; k < NSPLICE; k++) {
		iov[k].iov_base = mem + splice_page(k) * PAGE;
		iov[k].iov_len = PAGE;
	}
	n = vmsplice(pipefd[1], iov, NSPLICE, 0);
	if (n < (ssize_t)PAGE) {
		tap_skip("vmsplice not supported", "%s", name);
		goto out;
	}
	if (pageout && madvise(mem, SIZE, MADV_PAGEOUT)) {
		tap_skip("MADV_PAGEOUT not supported", "%s", name);
		goto out;
	}
	if (duo_fork(&d) < 0) {
		tap_result(0, "%s (fork: %s)", name, strerror(errno));
		goto out;
	}
	if (d.child) {
		duo_wait(&d);		/* the parent has unmapped */
		r = splice_writer_now(mem);
		duo_signal(&d);
		duo_end(&d, r);
	}
	munmap(mem, SIZE);
	mem = NULL;
	duo_signal(&d);
	duo_wait(&d);			/* the child has written */
	r = RES_OK;
	for (k = 0; k < n / (ssize_t)PAGE; k++) {
		if (read(pipefd[0], bounce, PAGE) != (ssize_t)PAGE) {
			tap_diag("%s: short read from the pipe", pts_me);
			r = RES_FAIL;
			break;
		}
		if (pts_bad_page(bounce, splice_page(k), G0,
				 "read from the pipe"))
			r = RES_FAIL;
	}
	duo_report(duo_end(&d, r), "", name);
out:
	close(pipefd[0]);
	close(pipefd[1]);
	if (mem)
		munmap(mem, SIZE);
}

static int dio_fd = -1;
static char dio_dir[256];

/* Page k of the file's first part: page DIO_FIRST + k as of generation G_FILE. */
static void file_page(char *page, unsigned long k)
{
	memset(page, 0, PAGE);
	pts_put(page, DIO_FIRST + k, G_FILE);
}

/*
 * A file that O_DIRECT works on: /scratch (ext4 in the guest), else the
 * current directory, else /tmp. First part: DIO_PAGES page images; second
 * part: the same pages without their first DIO_HEAD bytes, back to back.
 */
static const char *open_dio_file(void)
{
	static const char *const dirs[] = { "/scratch", ".", "/tmp" };
	static char page[PAGE] __attribute__((aligned(4096)));

	for (unsigned int k = 0; k < sizeof(dirs) / sizeof(dirs[0]); k++) {
		char path[300];
		int fd, ok = 1;

		snprintf(path, sizeof(path), "%s/ptshare-dio-XXXXXX", dirs[k]);
		fd = mkstemp(path);
		if (fd < 0)
			continue;
		for (unsigned long i = 0; i < DIO_PAGES; i++) {
			file_page(page, i);
			ok &= pwrite(fd, page, PAGE, i * PAGE) == (ssize_t)PAGE;
			ok &= pwrite(fd, page + DIO_HEAD, PAGE - DIO_HEAD,
				     DIO_PAGES * PAGE + i * (PAGE - DIO_HEAD)) ==
			      (ssize_t)(PAGE - DIO_HEAD);
		}
		ok &= fsync(fd) == 0;
		close(fd);
		dio_fd = ok ? open(path, O_RDWR | O_DIRECT) : -1;
		unlink(path);
		if (dio_fd >= 0 && pread(dio_fd, page, PAGE, 0) == (ssize_t)PAGE) {
			snprintf(dio_dir, sizeof(dio_dir), "%s", dirs[k]);
			return NULL;
		}
		if (dio_fd >= 0)
			close(dio_fd);
		dio_fd = -1;
	}
	return "O_DIRECT works in none of /scratch, . and /tmp";
}

static int want_dio(unsigned long i)
{
	return i >= DIO_FIRST && i < DIO_FIRST + DIO_PAGES ? G_FILE : G0;
}

static unsigned long check_dio(char *mem, const char *what)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		bad += pts_bad_page(mem + i * PAGE, i, want_dio(i),
				    bad < 3 ? what : NULL);
	return bad;
}

/* The reader: O_DIRECT into pages it shares with the other process. */
static int dio_reader(struct duo *d, char *mem)
{
	ssize_t want = DIO_PAGES * PAGE;
	unsigned long bad = 0;

	if (pread(dio_fd, mem + DIO_FIRST * PAGE, want, 0) != want) {
		tap_diag("%s: O_DIRECT read: %s", pts_me, strerror(errno));
		bad++;
	}
	bad += check_dio(mem, "after O_DIRECT read");
	duo_signal(d);
	duo_wait(d);			/* the other has written its copy */
	bad += check_dio(mem, "after the other wrote");
	return bad ? RES_FAIL : RES_OK;
}

static int dio_other(struct duo *d, char *mem)
{
	unsigned long bad;

	duo_wait(d);			/* the reader has read */
	bad = pts_check(mem, 0, NPAGES, G0, "other side of the O_DIRECT read");
	pts_fill(mem, 0, NPAGES, G_OTHER, 1);
	bad += pts_check(mem, 0, NPAGES, G_OTHER, "own writes");
	duo_signal(d);
	return bad ? RES_FAIL : RES_OK;
}

static void dio_after_fork(int in_child, const char *no_dio)
{
	const char *name = in_child ? "dio-read-after-fork/in-child" :
				      "dio-read-after-fork/in-parent";
	char *mem;
	struct duo d;
	int r;

	if (no_dio) {
		tap_skip(no_dio, "%s", name);
		return;
	}
	mem = pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	if (!mem) {
		tap_result(0, "%s (mmap: %s)", name, strerror(errno));
		return;
	}
	if (fill_and_fork(&d, mem, name))
		return;
	if (d.child == in_child)
		r = dio_reader(&d, mem);
	else
		r = dio_other(&d, mem);
	duo_report(duo_end(&d, r), "", name);
	munmap(mem, SIZE);
}

/* Is every byte of the 8 at p either that of a or that of b? */
static int bytes_of(const void *p, uint64_t a, uint64_t b)
{
	const unsigned char *c = p, *x = (void *)&a, *y = (void *)&b;

	for (int k = 0; k < 8; k++)
		if (c[k] != x[k] && c[k] != y[k])
			return 0;
	return 1;
}

/*
 * The child of a fork that ran while an AIO O_DIRECT read was filling the
 * parent's pages: each page holds what the parent had at fork time, except
 * that the read may have landed before the fork (byte by byte, to allow a
 * copy racing with the device). Never the parent's later writes.
 */
static unsigned long child_view(char *mem)
{
	unsigned long bad = 0, landed = 0;

	for (unsigned long i = 0; i < NPAGES; i++) {
		uint64_t *w = (uint64_t *)(mem + i * PAGE);

		if (i < DIO_FIRST || i >= DIO_FIRST + DIO_PAGES) {
			bad += pts_bad_page((char *)w, i, G0,
					    bad < 3 ? "outside" : NULL);
			continue;
		}
		landed += w[PTS_WORDS - 1] == ~pts_val(i, G_FILE);
		if (w[0] == pts_val(i, G0) &&
		    bytes_of(&w[PTS_WORDS - 1], ~pts_val(i, G0),
			     ~pts_val(i, G_FILE)))
			continue;
		if (bad++ < 3)
			tap_diag("%s: page %lu has %#llx/%#llx during the read",
				 pts_me, i, (unsigned long long)w[0],
				 (unsigned long long)w[PTS_WORDS - 1]);
	}
	tap_diag("%s: %lu of %lu pages had the read's data at fork", pts_me,
		 landed,
		 DIO_PAGES);
	return bad;
}

/* The parent: its marks in the heads, the file in the tails. */
static unsigned long parent_view(char *mem)
{
	unsigned long bad = 0;

	for (unsigned long i = DIO_FIRST; i < DIO_FIRST + DIO_PAGES; i++) {
		uint64_t *w = (uint64_t *)(mem + i * PAGE);

		if (w[0] == pts_val(i, G_MARK) &&
		    w[PTS_WORDS - 1] == ~pts_val(i, G_FILE))
			continue;
		if (bad++ < 3)
			tap_diag("%s: page %lu has %#llx/%#llx after the read",
				 pts_me, i, (unsigned long long)w[0],
				 (unsigned long long)w[PTS_WORDS - 1]);
	}
	bad += pts_check(mem, 0, DIO_FIRST, G0, "below the read");
	return bad + pts_check(mem + (DIO_FIRST + DIO_PAGES) * PAGE,
			       DIO_FIRST + DIO_PAGES,
			       NPAGES - DIO_FIRST - DIO_PAGES, G0, "above the read");
}

/* One round: submit the read, fork at once, write the heads, reap both. */
static unsigned long dio_round(char *mem, aio_context_t ctx, struct iovec *iov)
{
	struct iocb cb = {
		.aio_fildes = dio_fd,
		.aio_lio_opcode = IOCB_CMD_PREADV,
		.aio_buf = (uintptr_t)iov,
		.aio_nbytes = DIO_PAGES,
		.aio_offset = DIO_PAGES * PAGE,
	};
	struct iocb *cbs[1] = { &cb };
	struct io_event ev;
	unsigned long bad = 0;
	int status;
	pid_t pid;

	pts_fill(mem, 0, NPAGES, G0, 1);
	fflush(stdout);
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1) {
		tap_diag("io_submit: %s", strerror(errno));
		return 1;
	}
	pid = fork();
	if (!pid) {
		pts_me = "child";
		bad = child_view(mem);
		fflush(stdout);
		_exit(bad ? RES_FAIL : RES_OK);
	}
	for (unsigned long i = DIO_FIRST; i < DIO_FIRST + DIO_PAGES; i++)
		*(uint64_t *)(mem + i * PAGE) = pts_val(i, G_MARK);
	if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 ||
	    ev.res != (int64_t)(DIO_PAGES * (PAGE - DIO_HEAD))) {
		tap_diag("AIO read failed: %s", strerror(errno));
		bad++;
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		bad++;
	return bad + parent_view(mem);
}

static void dio_during_fork(const char *no_dio)
{
	const char *name = "dio-read-during-fork";
	static struct iovec iov[DIO_PAGES];
	aio_context_t ctx = 0;
	unsigned long bad = 0;
	char *mem;

	if (no_dio) {
		tap_skip(no_dio, "%s", name);
		return;
	}
	if (syscall(SYS_io_setup, 1, &ctx)) {
		tap_skip("AIO not supported", "%s", name);
		return;
	}
	mem = pts_map_aligned(SIZE, PROT_READ | PROT_WRITE);
	if (!mem) {
		tap_result(0, "%s (mmap: %s)", name, strerror(errno));
		return;
	}
	for (unsigned long k = 0; k < DIO_PAGES; k++) {
		iov[k].iov_base = mem + (DIO_FIRST + k) * PAGE + DIO_HEAD;
		iov[k].iov_len = PAGE - DIO_HEAD;
	}
	for (int round = 0; round < DIO_ROUNDS; round++)
		bad += dio_round(mem, ctx, iov);
	syscall(SYS_io_destroy, ctx);
	tap_result(!bad, "%s", name);
	munmap(mem, SIZE);
}

/* A minimal io_uring, raw system calls only. */
struct ring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
};

static int ring_setup(struct ring *r)
{
	struct io_uring_params p = { 0 };
	char *sq, *cq;

	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	sq = mmap(NULL, p.sq_off.array + p.sq_entries * sizeof(unsigned int),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_SQ_RING);
	cq = mmap(NULL, p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe),
		  PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		  IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe),
		       PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
		       IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned int *)(sq + p.sq_off.tail);
	r->sq_mask = (unsigned int *)(sq + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)(sq + p.sq_off.array);
	r->cq_head = (unsigned int *)(cq + p.cq_off.head);
	r->cq_tail = (unsigned int *)(cq + p.cq_off.tail);
	r->cq_mask = (unsigned int *)(cq + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	return 0;
}

/* IORING_OP_WRITE_FIXED from registered buffer 0; returns cqe->res. */
static int ring_write_fixed(struct ring *r, int fd, void *buf, unsigned int len,
			    off_t off)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask, head;
	struct io_uring_sqe *sqe = &r->sqes[idx];
	int res;

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_WRITE_FIXED;
	sqe->fd = fd;
	sqe->addr = (uintptr_t)buf;
	sqe->len = len;
	sqe->off = off;
	sqe->buf_index = 0;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 1, IORING_ENTER_GETEVENTS,
		    NULL, 0) < 0)
		return -errno;
	head = *r->cq_head;
	if (head == __atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE))
		return -EAGAIN;
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

/* Chunks of the buffer the ring writes out: 4 pages each, one across a table. */
static const unsigned long uring_chunks[] = { 0, 510, 1020 };
#define CHUNK	(4 * PAGE)

static int want_uring(unsigned long i)
{
	return i % 2 ? G0 : G_WRITER;
}

/* Have the ring write the chunks to a memfd and compare with the parent's data. */
static unsigned long ring_view(struct ring *r, int memfd, char *mem)
{
	unsigned long bad = 0;

	for (unsigned int k = 0; k < 3; k++) {
		unsigned long first = uring_chunks[k];
		int res = ring_write_fixed(r, memfd, mem + first * PAGE, CHUNK, 0);

		if (res != (int)CHUNK ||
		    pread(memfd, bounce, CHUNK, 0) != (ssize_t)CHUNK) {
			tap_diag("WRITE_FIXED: %s", strerror(res < 0 ? -res : EIO));
			bad++;
			continue;
		}
		for (unsigned long i = 0; i < CHUNK / PAGE; i++)
			bad += pts_bad_page(bounce + i * PAGE, first + i,
					    want_uring(first + i),
					    bad < 3 ? "written by the ring" : NULL);
	}
	return bad;
}

static int uring_child(struct duo *d, char *mem)
{
	unsigned long bad;

	duo_wait(d);			/* the parent has written */
	bad = pts_check(mem, 0, URING_SIZE / PAGE, G0,
			"registered buffer in child");
	pts_fill(mem, 0, URING_SIZE / PAGE, G_OTHER, 1);
	bad += pts_check(mem, 0, URING_SIZE / PAGE, G_OTHER, "own writes");
	duo_signal(d);
	return bad ? RES_FAIL : RES_OK;
}

static void uring_report(unsigned long bad1, int r2, const char *why)
{
	if (why) {
		tap_skip(why, "uring-fixed/ring-sees-parent-writes");
		tap_skip(why, "uring-fixed/child-isolated");
		return;
	}
	tap_result(!bad1, "uring-fixed/ring-sees-parent-writes");
	tap_result(r2 == RES_OK, "uring-fixed/child-isolated");
}

/*
 * Register a buffer, fork, the parent writes the even pages: the ring must
 * write out the parent's data. Then the child checks and overwrites its
 * copy: the ring and the parent must not see that.
 */
static void uring_case(void)
{
	unsigned long bad1, bad2 = 0;
	struct ring r;
	struct iovec iov;
	struct duo d;
	int memfd;
	char *mem;

	if (ring_setup(&r)) {
		uring_report(0, 0, "io_uring not available");
		return;
	}
	mem = pts_map_aligned(URING_SIZE, PROT_READ | PROT_WRITE);
	memfd = memfd_create("ptshare-uring", 0);
	if (!mem || memfd < 0) {
		uring_report(1, RES_FAIL, NULL);
		return;
	}
	pts_fill(mem, 0, URING_SIZE / PAGE, G0, 1);
	iov.iov_base = mem;
	iov.iov_len = URING_SIZE;
	if (syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_BUFFERS, &iov, 1)) {
		uring_report(0, 0, "cannot register a buffer");
		return;
	}
	if (duo_fork(&d) < 0) {
		uring_report(1, RES_FAIL, NULL);
		return;
	}
	if (d.child)
		duo_end(&d, uring_child(&d, mem));
	pts_fill(mem, 0, URING_SIZE / PAGE, G_WRITER, 2);
	bad1 = ring_view(&r, memfd, mem);
	duo_signal(&d);
	duo_wait(&d);			/* the child has checked and written */
	bad2 += ring_view(&r, memfd, mem);
	for (unsigned long i = 0; i < URING_SIZE / PAGE; i++)
		bad2 += pts_bad_page(mem + i * PAGE, i, want_uring(i),
				     bad2 < 3 ? "parent after the child wrote" : NULL);
	uring_report(bad1, duo_end(&d, bad2 ? RES_FAIL : RES_OK), NULL);
	close(memfd);
	close(r.fd);
	munmap(mem, URING_SIZE);
}

int main(void)
{
	const char *no_dio;

	vmsplice_case(1);
	vmsplice_case(0);
	vmsplice_before_fork_case(0);
	vmsplice_before_fork_case(1);
	no_dio = open_dio_file();
	if (!no_dio) {
		struct statfs fs;

		fstatfs(dio_fd, &fs);
		tap_diag("O_DIRECT file in %s (file system magic %#lx)", dio_dir,
			 (unsigned long)fs.f_type);
	}
	dio_after_fork(0, no_dio);
	dio_after_fork(1, no_dio);
	dio_during_fork(no_dio);
	uring_case();
	return tap_finish();
}
