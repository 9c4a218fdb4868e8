// SPDX-License-Identifier: GPL-2.0
/*
 * attach_punch: the reproducer of what the fuzzer's unrelated groups found
 * (docs/testing.md): mappers of a memfd attach its owner's PTE tables
 * (vm.pt_share_shared=2) while the owner punches a hole over all of it.
 *
 * Round r: the owner writes a word into every page; NR readers, forked
 * before the owner mapped the memfd (so their mappings are their own,
 * not inherited), map it at a table boundary and read every page while
 * the owner punches the whole file (fallocate PUNCH_HOLE, MADV_REMOVE, or
 * a truncation to 0 and back). Once the punch has returned, each reader
 * reads every page again: that must be zero, as on vanilla. A non-zero
 * word is a page the punch removed from the file and left mapped. The
 * kernel log tells more (BUG: Bad page cache ... still mapped when
 * deleted; Bad rss-counter state).
 *
 * It sets vm.pt_share_shared=2 while it runs (on a ptshare kernel) and
 * reports how many tables were attached (vmstat ptshare_attach).
 * Usage: attach_punch [ROUNDS] [f|m|t]   (default 300 f)
 * Exit status 1 if a reader read a stale page.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../ptshare/pts.h"

#define SIZE	(8UL << 20)
#define PMD	(2UL << 20)
#define PAGE	4096UL
#define NR	3
#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"

struct ctl {
	int phase, raced, checked;
	long stale;
};

static sigjmp_buf bus_jmp;

static void on_bus(int sig)
{
	(void)sig;
	siglongjmp(bus_jmp, 1);
}

/* The word at q, or 0 if reading it raises SIGBUS (truncated). */
static long __attribute__((noinline)) probe(volatile long *q)
{
	if (sigsetjmp(bus_jmp, 1))
		return 0;
	return *q;
}

/* The memfd mapped shared at a PTE table boundary: attachable. */
static volatile long *map_at_table(int fd)
{
	char *raw = mmap(NULL, SIZE + PMD, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p = (char *)(((unsigned long)raw + PMD - 1) & ~(PMD - 1));

	if (raw == MAP_FAILED ||
	    mmap(p, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return (volatile long *)p;
}

static void wait_for(int *v, int want)
{
	while (__atomic_load_n(v, __ATOMIC_SEQ_CST) < want)
		usleep(50);
}

static void reader(struct ctl *c, int fd, int rounds)
{
	unsigned long k;
	int r;

	for (r = 0; r < rounds; r++) {
		volatile long *p;

		wait_for(&c->phase, 2 * r + 1);
		p = map_at_table(fd);
		/* Read faults attach the owner's tables, racing the punch. */
		for (k = 0; k < SIZE / 8; k += PAGE / 8)
			probe(p + k);
		__atomic_fetch_add(&c->raced, 1, __ATOMIC_SEQ_CST);
		wait_for(&c->phase, 2 * r + 2);
		for (k = 0; k < SIZE / 8; k += PAGE / 8)
			if (p[k])
				__atomic_fetch_add(&c->stale, 1, __ATOMIC_SEQ_CST);
		munmap((void *)p, SIZE);
		__atomic_fetch_add(&c->checked, 1, __ATOMIC_SEQ_CST);
	}
	_exit(0);
}

static void punch(int fd, volatile long *o, int how)
{
	int rc;

	if (how == 'm')
		rc = madvise((void *)o, SIZE, MADV_REMOVE);
	else if (how == 't')
		rc = ftruncate(fd, 0) || ftruncate(fd, SIZE);
	else
		rc = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, SIZE);
	if (rc) {
		perror("punch");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 300, how = argc > 2 ? argv[2][0] : 'f';
	int fd = memfd_create("attach_punch", 0), r, i;
	struct ctl *c = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long shared = pts_read_long(SHARED_KNOB), attach0 = pts_vmstat("ptshare_attach");
	volatile long *o;

	if (shared >= 0 && pts_write_long(SHARED_KNOB, 2)) {
		perror(SHARED_KNOB);
		return 2;
	}
	if (fd < 0 || c == MAP_FAILED || ftruncate(fd, SIZE)) {
		perror("setup");
		return 2;
	}
	signal(SIGBUS, on_bus);
	for (i = 0; i < NR; i++)
		if (!fork())
			reader(c, fd, rounds);
	o = map_at_table(fd);
	for (r = 0; r < rounds; r++) {
		unsigned long k;

		for (k = 0; k < SIZE / 8; k += PAGE / 8)
			o[k] = r + 1;
		__atomic_store_n(&c->phase, 2 * r + 1, __ATOMIC_SEQ_CST);
		usleep(r % 7 * 100);	/* vary where the punch meets the readers */
		punch(fd, o, how);
		wait_for(&c->raced, NR * (r + 1));
		__atomic_store_n(&c->phase, 2 * r + 2, __ATOMIC_SEQ_CST);
		wait_for(&c->checked, NR * (r + 1));
	}
	while (wait(NULL) > 0)
		;
	if (shared >= 0)
		pts_write_long(SHARED_KNOB, shared);
	printf("attach_punch %c: %d rounds, %ld tables attached, %ld stale pages read after the punch\n",
	       how, rounds, attach0 < 0 ? 0 : pts_vmstat("ptshare_attach") - attach0, c->stale);
	return c->stale ? 1 : 0;
}
