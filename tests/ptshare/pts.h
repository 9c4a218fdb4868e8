/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the ptshare tests: force PTE table sharing for the
 * life of a test, read /proc/vmstat and /proc/self/status, map regions
 * aligned to PTE tables.
 */
#ifndef PTSHARE_PTS_H
#define PTSHARE_PTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PTS_PAGE	4096UL
#define PTS_PMD		(2UL << 20)
#define PTS_MODE_FILE	"/proc/sys/vm/pt_share"

static int pts_saved_mode = -1;
static pid_t pts_mode_owner;

/* vm.pt_share, or -1 on a kernel without ptshare. */
static inline int pts_mode(void)
{
	FILE *f = fopen(PTS_MODE_FILE, "r");
	int mode = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &mode) != 1)
		mode = -1;
	fclose(f);
	return mode;
}

static inline int pts_set_mode(int mode)
{
	FILE *f = fopen(PTS_MODE_FILE, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%d\n", mode) > 0 ? 0 : -1;
	if (fclose(f))
		ret = -1;
	return ret;
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

/* A "Name:   N kB" field of /proc/self/status, in kB, or -1. */
static inline long pts_status_kb(const char *field)
{
	return pts_proc_kb("/proc/self/status", field);
}

/*
 * Private anonymous read-write memory of n bytes at a PTE table boundary,
 * mapped with 4 KiB pages only. Exits on failure.
 */
static inline char *pts_map_tables(size_t n)
{
	char *raw, *p;

	raw = mmap(NULL, n + PTS_PMD, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	p = (char *)(((unsigned long)raw + PTS_PMD - 1) & ~(PTS_PMD - 1));
	if (p > raw)
		munmap(raw, p - raw);
	munmap(p + n, raw + n + PTS_PMD - (p + n));
	if (madvise(p, n, MADV_NOHUGEPAGE)) {
		perror("madvise(MADV_NOHUGEPAGE)");
		exit(1);
	}
	return p;
}

#endif
