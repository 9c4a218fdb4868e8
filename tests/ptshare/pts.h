/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the ptshare tests: force PTE table sharing for the
 * life of a test, read /proc/vmstat and /proc/self/status, map regions
 * aligned to PTE tables.
 */
#ifndef PTSHARE_PTS_H
#define PTSHARE_PTS_H

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#define PTS_PAGE	4096UL
#define PTS_PMD		(2UL << 20)
#define PTS_MODE_FILE	"/proc/sys/vm/pt_share"

static int pts_saved_mode = -1;
static pid_t pts_mode_owner;

/* The number a file such as a sysctl or sysfs knob holds, or -1. */
static inline long pts_read_long(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* vm.pt_share, or -1 on a kernel without ptshare. */
static inline int pts_mode(void)
{
	return pts_read_long(PTS_MODE_FILE);
}

/* Write a number to a file such as a sysctl. Returns 0 or -1. */
static inline int pts_write_long(const char *path, long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%ld\n", v) > 0 ? 0 : -1;
	if (fclose(f))
		ret = -1;
	return ret;
}

static inline int pts_set_mode(int mode)
{
	return pts_write_long(PTS_MODE_FILE, mode);
}

static void pts_restore_mode(void)
{
	if (pts_saved_mode >= 0 && getpid() == pts_mode_owner)
		pts_set_mode(pts_saved_mode);
}

/*
 * Share every eligible table at fork (vm.pt_share=2) until this process
 * exits. Returns 1 on a ptshare kernel, 0 on any other.
 */
static inline int pts_force_sharing(void)
{
	int mode = pts_mode();

	if (mode < 0)
		return 0;
	if (pts_saved_mode < 0) {
		pts_saved_mode = mode;
		pts_mode_owner = getpid();
		atexit(pts_restore_mode);
	}
	if (pts_set_mode(2)) {
		fprintf(stderr, "cannot write %s\n", PTS_MODE_FILE);
		exit(1);
	}
	return 1;
}

/* A /proc/vmstat counter, or -1 if the kernel has none of that name. */
static inline long pts_vmstat(const char *name)
{
	FILE *f = fopen("/proc/vmstat", "r");
	char key[128];
	long val, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%127s %ld", key, &val) == 2) {
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* A "Name:   N kB" field of a /proc file such as smaps_rollup, or -1. */
static inline long pts_proc_kb(const char *path, const char *field)
{
	FILE *f = fopen(path, "r");
	size_t len = strlen(field);
	char line[256];
	long ret = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, len) && line[len] == ':') {
			ret = strtol(line + len + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return ret;
}

/* This process's minor faults so far. */
static inline long pts_minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/* A "Name:   N kB" field of /proc/self/status, in kB, or -1. */
static inline long pts_status_kb(const char *field)
{
	return pts_proc_kb("/proc/self/status", field);
}

/* Private anonymous memory of n bytes at a PTE table boundary, or NULL. */
static inline char *pts_map_at_table(size_t n, int prot)
{
	char *raw, *p;

	raw = mmap(NULL, n + PTS_PMD, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((unsigned long)raw + PTS_PMD - 1) & ~(PTS_PMD - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + n, raw + n + PTS_PMD - (p + n));
	return p;
}

/*
 * As pts_map_at_table(), asking for 4 KiB pages only; the tests that use it
 * report a failed mmap as a failed case and go on if MADV_NOHUGEPAGE fails.
 */
static inline char *pts_map_aligned(size_t n, int prot)
{
	char *p = pts_map_at_table(n, prot);

	if (p)
		madvise(p, n, MADV_NOHUGEPAGE);
	return p;
}

/*
 * Private anonymous read-write memory of n bytes at a PTE table boundary,
 * mapped with 4 KiB pages only. Exits on failure.
 */
static inline char *pts_map_tables(size_t n)
{
	char *p = pts_map_at_table(n, PROT_READ | PROT_WRITE);

	if (!p) {
		perror("mmap");
		exit(1);
	}
	if (madvise(p, n, MADV_NOHUGEPAGE)) {
		perror("madvise(MADV_NOHUGEPAGE)");
		exit(1);
	}
	return p;
}

/*
 * The /proc/self/pagemap entries of the n pages at p, into e. Returns 0,
 * or -1 if they cannot be read.
 */
static inline int pts_pagemap(const void *p, unsigned long n, uint64_t *e)
{
	int fd = open("/proc/self/pagemap", O_RDONLY);
	ssize_t want = n * sizeof(*e);
	int ret;

	if (fd < 0)
		return -1;
	ret = pread(fd, e, want, (uintptr_t)p / PTS_PAGE * 8) == want ? 0 : -1;
	close(fd);
	return ret;
}

/* How many of the n pages at p have pagemap bit `bit` set, or -1. */
static inline long pts_pagemap_count(const void *p, unsigned long n, int bit)
{
	uint64_t *e = malloc(n * sizeof(*e));
	long count = 0;

	if (!e || pts_pagemap(p, n, e)) {
		free(e);
		return -1;
	}
	for (unsigned long i = 0; i < n; i++)
		count += (e[i] >> bit) & 1;
	free(e);
	return count;
}

/*
 * Pages among the n at p whose /proc/kpagecount is not want, or -1 if the
 * counts cannot be read (PFNs need CAP_SYS_ADMIN) or a page is absent.
 */
static inline long pts_kpagecount_not(const void *p, unsigned long n,
				      uint64_t want)
{
	uint64_t *e = malloc(n * sizeof(*e)), count;
	int kc = open("/proc/kpagecount", O_RDONLY);
	long bad = -1;

	if (e && kc >= 0 && !pts_pagemap(p, n, e)) {
		bad = 0;
		for (unsigned long i = 0; i < n; i++) {
			uint64_t pfn = e[i] & ((1ULL << 55) - 1);

			if (!(e[i] >> 63) || !pfn ||
			    pread(kc, &count, 8, pfn * 8) != 8) {
				bad = -1;
				break;
			}
			bad += count != want;
		}
	}
	if (kc >= 0)
		close(kc);
	free(e);
	return bad;
}

/*
 * The RSS counters of this process (VmRSS) agree with the pages its page
 * tables map (smaps_rollup's Rss, which walks them, shared or not). The
 * counters are per-CPU and may lag by a batch per CPU: allow 64 pages per
 * CPU, far less than the 512 pages of one table. Says why on stderr, as
 * a TAP comment, when they do not.
 */
static inline int pts_rss_consistent(void)
{
	long counted = pts_status_kb("VmRSS");
	long walked = pts_proc_kb("/proc/self/smaps_rollup", "Rss");
	long slack = 64 * 4 * sysconf(_SC_NPROCESSORS_ONLN);

	if (counted < 0 || walked < 0 || labs(counted - walked) > slack) {
		fprintf(stderr, "# VmRSS %ld kB, smaps_rollup Rss %ld kB\n",
			counted, walked);
		return 0;
	}
	return 1;
}

/* The Pss of the VMA that starts at `at` in process pid, in kB, or -1. */
static inline long pts_pss_at(pid_t pid, uintptr_t at)
{
	char path[64], line[256];
	unsigned long start, end;
	int in = 0;
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			in = start == at;
			continue;
		}
		if (in && !strncmp(line, "Pss:", 4)) {
			v = strtol(line + 4, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/*
 * Move the n pages at p to NUMA node 1 with MPOL_MF_MOVE_ALL (other
 * processes map them too). Returns how many moved, or -1 without NUMA.
 */
static inline long pts_migrate_all(void *p, unsigned long n)
{
	void **pages = calloc(n, sizeof(*pages));
	int *nodes = calloc(n, sizeof(*nodes));
	int *status = calloc(n, sizeof(*status));
	long moved = -1;

	if (pages && nodes && status) {
		for (unsigned long i = 0; i < n; i++) {
			pages[i] = (char *)p + i * PTS_PAGE;
			nodes[i] = 1;
		}
		if (syscall(SYS_move_pages, 0, n, pages, nodes, status,
			    1 << 2) >= 0) {
			moved = 0;
			for (unsigned long i = 0; i < n; i++)
				moved += status[i] == 1;
		}
	}
	free(pages);
	free(nodes);
	free(status);
	return moved;
}

static sigjmp_buf pts_bus_jmp __attribute__((unused));

static void __attribute__((unused)) pts_on_bus(int sig)
{
	(void)sig;
	siglongjmp(pts_bus_jmp, 1);
}

/* The byte at p, or -1 if reading it raises SIGBUS. */
static inline int pts_probe(const volatile char *p)
{
	int v;

	signal(SIGBUS, pts_on_bus);
	if (sigsetjmp(pts_bus_jmp, 1))
		v = -1;
	else
		v = (unsigned char)*p;
	signal(SIGBUS, SIG_DFL);
	return v;
}

/*
 * Turns between two processes over pipes: give hands the turn over (the
 * process exits with status 90 if the other end is gone), take waits for
 * it and says whether it came.
 */
static inline void pts_give(int fd)
{
	char c = 0;

	if (write(fd, &c, 1) != 1)
		_exit(90);
}

static inline int pts_take(int fd)
{
	char c;

	return read(fd, &c, 1) == 1;
}

/*
 * Write the byte at p back to itself: 0, or -1 if that raises SIGSEGV
 * (no write permission) or SIGBUS.
 */
static inline int pts_probe_write(volatile char *p)
{
	int v = 0;

	signal(SIGBUS, pts_on_bus);
	signal(SIGSEGV, pts_on_bus);
	if (sigsetjmp(pts_bus_jmp, 1))
		v = -1;
	else
		*p = *p;
	signal(SIGBUS, SIG_DFL);
	signal(SIGSEGV, SIG_DFL);
	return v;
}

#endif
