// SPDX-License-Identifier: GPL-2.0
/*
 * fork_uprobe: a uprobe's breakpoint is written into each process on its
 * own, also where fork shares the PTE table of the probed text
 * (vm.pt_share=2, vm.pt_share_shared=1).
 *
 * uprobes install a breakpoint in every process that maps the probed
 * file executable, one process at a time, by replacing the page in that
 * process's page table with an anonymous copy that holds the breakpoint
 * (kernel/events/uprobes.c, __replace_page()), without a page fault. A
 * parent maps 8 MiB of a file of NOPs as text at a PTE table boundary and
 * forks; the child shares the tables. Then the parent adds a uprobe at
 * offset 0x3000 of the file through tracefs and enables it:
 *   - both processes read the breakpoint (0xcc) there, and the file still
 *     holds the NOP;
 *   - each has a page of its own there (different PFNs, not a file page),
 *     as on a kernel that copies tables: a breakpoint written through
 *     the shared table would be one page for both;
 *   - both RSS agree with their tables;
 * and after the probe is disabled and removed, both read the NOP again,
 * their other pages are intact, and their RSS agree with their tables.
 * Needs CONFIG_UPROBE_EVENTS (the debug kernel) and root: skipped without.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "pts.h"
#include "tap.h"

#define SIZE		(8UL << 20)
#define NPAGES		(SIZE / PTS_PAGE)
#define PROBE_OFF	0x3000UL
#define NOP		0x90
#define BREAKPOINT	0xcc
#define SHARED_KNOB	"/proc/sys/vm/pt_share_shared"
#define EVENT		"ptshare_fu/probe"

static const char *tracing;	/* tracefs, or NULL */

static const char *find_tracing(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[128];

	mount("tracefs", dirs[0], "tracefs", 0, NULL);
	for (unsigned int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/uprobe_events", dirs[i]);
		if (!access(path, W_OK))
			return dirs[i];
	}
	return NULL;
}

/* Append (or with append 0, truncate and write) a line to a tracefs file. */
static int trace_write(const char *file, const char *line, int append)
{
	char path[160];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s", tracing, file);
	fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
	if (fd < 0)
		return -1;
	ret = write(fd, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : -1;
	close(fd);
	return ret;
}

static int probe_add(const char *file)
{
	char line[256];

	snprintf(line, sizeof(line), "p:%s %s:0x%lx\n", EVENT, file, PROBE_OFF);
	return trace_write("uprobe_events", line, 1);
}

static int probe_enable(int on)
{
	return trace_write("events/" EVENT "/enable", on ? "1\n" : "0\n", 0);
}

static void probe_remove(void)
{
	probe_enable(0);
	trace_write("uprobe_events", "-:" EVENT "\n", 1);
}

/* The pagemap entry of the page at p. */
static uint64_t pagemap_of(const void *p)
{
	uint64_t e = 0;

	if (pts_pagemap(p, 1, &e))
		return 0;
	return e;
}

/* Pages other than the probed one that do not read NOP. */
static long wrong_others(const char *p)
{
	long bad = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		if (i * PTS_PAGE != PROBE_OFF)
			bad += (unsigned char)p[i * PTS_PAGE] != NOP;
	return bad;
}

/* What the child reports, once with the probe on and once after. */
struct view {
	long byte, others_wrong, rss_ok;
	uint64_t pagemap;
};

static void look(const char *p, struct view *v)
{
	v->byte = (unsigned char)p[PROBE_OFF];
	v->others_wrong = wrong_others(p);
	v->rss_ok = pts_rss_consistent();
	v->pagemap = pagemap_of(p + PROBE_OFF);
}

static void child(const char *p, int go, int out)
{
	struct view v[2];

	for (int i = 0; i < 2; i++) {
		if (!pts_take(go))
			_exit(91);
		look(p, &v[i]);
		if (write(out, &v[i], sizeof(v[i])) != (ssize_t)sizeof(v[i]))
			_exit(92);
	}
	_exit(0);
}

static int make_file(char *path, size_t len)
{
	static unsigned char page[PTS_PAGE];
	int fd;

	snprintf(path, len, "/tmp/fork_uprobe.%d", getpid());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0700);
	if (fd < 0)
		return -1;
	memset(page, NOP, sizeof(page));
	for (unsigned long i = 0; i < NPAGES; i++) {
		if (pwrite(fd, page, PTS_PAGE, i * PTS_PAGE) != PTS_PAGE) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

static char *map_text(int fd)
{
	char *at = pts_map_at_table(SIZE, PROT_NONE), *p;

	if (!at)
		return NULL;
	p = mmap(at, SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
		 fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, SIZE, MADV_NOHUGEPAGE);
	for (unsigned long i = 0; i < NPAGES; i++)
		(void)*(volatile char *)(p + i * PTS_PAGE);
	return p;
}

static int file_byte(int fd)
{
	unsigned char c;

	return pread(fd, &c, 1, PROBE_OFF) == 1 ? c : -1;
}

static void run(int sharing)
{
	int go[2], out[2], fd, st;
	struct view mine[2], theirs[2];
	long shared0, shared;
	char path[128];
	pid_t pid;
	char *p;

	fd = make_file(path, sizeof(path));
	p = fd < 0 ? NULL : map_text(fd);
	if (!p || pipe(go) || pipe(out)) {
		tap_result(0, "map 8 MiB of NOPs as text (%s)", strerror(errno));
		goto out;
	}
	shared0 = pts_vmstat("ptshare_fork_shared_private_file");
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid)
		child(p, go[0], out[1]);
	shared = pts_vmstat("ptshare_fork_shared_private_file") - shared0;
	if (sharing)
		tap_result(shared >= 4, "fork shares the 4 tables of the text (%ld)",
			   shared);
	else
		tap_skip("no private file sharing", "fork shares the tables");

	tap_result(probe_add(path) == 0 && probe_enable(1) == 0,
		   "add and enable a uprobe at 0x%lx of the file", PROBE_OFF);
	look(p, &mine[0]);
	pts_give(go[1]);
	if (read(out[0], &theirs[0], sizeof(theirs[0])) != sizeof(theirs[0]))
		memset(&theirs[0], 0, sizeof(theirs[0]));
	tap_result(mine[0].byte == BREAKPOINT && theirs[0].byte == BREAKPOINT,
		   "both read the breakpoint (parent 0x%lx, child 0x%lx)",
		   mine[0].byte, theirs[0].byte);
	tap_result(file_byte(fd) == NOP, "the file still holds the NOP");
	tap_result((mine[0].pagemap >> 63) && (theirs[0].pagemap >> 63) &&
		   !((mine[0].pagemap >> 61) & 1) &&
		   !((theirs[0].pagemap >> 61) & 1),
		   "each maps an anonymous page at the breakpoint");
	if ((mine[0].pagemap & ((1ULL << 55) - 1)) == 0)
		tap_skip("no PFNs in pagemap", "each has a breakpoint page of its own");
	else
		tap_result((mine[0].pagemap & ((1ULL << 55) - 1)) !=
			   (theirs[0].pagemap & ((1ULL << 55) - 1)),
			   "each has a breakpoint page of its own");
	tap_result(mine[0].others_wrong == 0 && theirs[0].others_wrong == 0,
		   "the other pages read NOP in both");
	tap_result(mine[0].rss_ok && theirs[0].rss_ok,
		   "both RSS agree with their tables with the probe on");

	probe_remove();
	look(p, &mine[1]);
	pts_give(go[1]);
	if (read(out[0], &theirs[1], sizeof(theirs[1])) != sizeof(theirs[1]))
		memset(&theirs[1], 0, sizeof(theirs[1]));
	tap_result(mine[1].byte == NOP && theirs[1].byte == NOP,
		   "both read the NOP after the probe is removed (0x%lx, 0x%lx)",
		   mine[1].byte, theirs[1].byte);
	tap_result(mine[1].others_wrong == 0 && theirs[1].others_wrong == 0 &&
		   mine[1].rss_ok && theirs[1].rss_ok,
		   "after removal, the other pages and both RSS are right");
	waitpid(pid, &st, 0);
	tap_result(WIFEXITED(st) && !WEXITSTATUS(st), "the child exits cleanly");
out:
	if (p)
		munmap(p, SIZE);
	if (fd >= 0) {
		close(fd);
		unlink(path);
	}
}

int main(void)
{
	long saved = pts_read_long(SHARED_KNOB);
	int sharing;

	tracing = find_tracing();
	if (!tracing) {
		tap_skip("no uprobe_events (CONFIG_UPROBE_EVENTS) or not root",
			 "uprobes in processes that share text tables");
		return tap_finish();
	}
	sharing = pts_force_sharing() && saved >= 0 &&
		  pts_vmstat("ptshare_fork_shared_private_file") >= 0 &&
		  pts_write_long(SHARED_KNOB, 1) == 0;
	probe_remove();	/* a leftover of an interrupted run */
	run(sharing);
	if (saved >= 0)
		pts_write_long(SHARED_KNOB, saved);
	return tap_finish();
}
