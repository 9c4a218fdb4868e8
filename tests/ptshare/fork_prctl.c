// SPDX-License-Identifier: GPL-2.0
/*
 * fork_prctl: the per-process mode of prctl(PR_SET_PT_SHARE).
 *
 * A process with 4 PTE tables (8 MiB) of touched private memory forks
 * under each combination that decides whether fork shares:
 *  - PR_PT_SHARE_NEVER with vm.pt_share=2: nothing is shared;
 *  - PR_PT_SHARE_ALWAYS in auto mode with vm.pt_share_min_tables far
 *    above the process's size: its 4 tables are shared, where the
 *    default mode shares none;
 *  - PR_PT_SHARE_ALWAYS with vm.pt_share=0: nothing is shared, the
 *    sysctl turns sharing off for everyone;
 * judged by /proc/vmstat ptshare_fork_shared, with the memory checked
 * and written in the child and checked again in the parent.  Also: the
 * default mode is PR_PT_SHARE_DEFAULT, the mode is inherited by fork
 * and kept across execve, and bad arguments fail with EINVAL.
 * On a kernel without ptshare, both calls must fail with EINVAL.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "pts.h"

#ifndef PR_SET_PT_SHARE
/* ASCII "PTSS" and "PTSG", past mainline's numbers as PR_SET_VMA is. */
#define PR_SET_PT_SHARE		0x50545353
#define PR_GET_PT_SHARE		0x50545347
#define PR_PT_SHARE_DEFAULT	0
#define PR_PT_SHARE_NEVER	1
#define PR_PT_SHARE_ALWAYS	2
#endif

#define TABLES		4
#define SIZE		(TABLES * PTS_PMD)
#define NPAGES		(SIZE / PTS_PAGE)
#define MIN_TABLES	"/proc/sys/vm/pt_share_min_tables"
#define GET_ARG		"--print-mode"

static char *mem;
static long saved_min_tables = -1;

static int set_mode(long mode)
{
	return prctl(PR_SET_PT_SHARE, mode, 0, 0, 0);
}

static int get_mode(void)
{
	return prctl(PR_GET_PT_SHARE, 0, 0, 0, 0);
}

static void restore_min_tables(void)
{
	if (saved_min_tables >= 0)
		pts_write_long(MIN_TABLES, saved_min_tables);
}

static uint64_t val(unsigned long i, int gen)
{
	return ((uint64_t)(gen + 1) << 48) | i;
}

static void fill(int gen)
{
	for (unsigned long i = 0; i < NPAGES; i++)
		*(uint64_t *)(mem + i * PTS_PAGE) = val(i, gen);
}

static unsigned long bad(int gen)
{
	unsigned long nbad = 0;

	for (unsigned long i = 0; i < NPAGES; i++)
		if (*(uint64_t *)(mem + i * PTS_PAGE) != val(i, gen))
			nbad++;
	return nbad;
}

/*
 * Fork once with the current settings.  The child checks the parent's
 * data, writes its own and exits 0 if it read and reread it right.
 * Returns the tables fork shared, or -1 if either side saw wrong data.
 */
static long fork_and_check(void)
{
	long before = pts_vmstat("ptshare_fork_shared");
	long shared;
	int status;
	pid_t pid;

	fill(0);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		if (bad(0))
			_exit(2);
		fill(1);
		_exit(bad(1) ? 3 : 0);
	}
	shared = pts_vmstat("ptshare_fork_shared") - before;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		tap_diag("child: status 0x%x", status);
		return -1;
	}
	if (bad(0)) {
		tap_diag("parent: memory changed by the child");
		return -1;
	}
	return shared;
}

static void test_einval(void)
{
	tap_result(set_mode(3) == -1 && errno == EINVAL,
		   "PR_SET_PT_SHARE with an unknown mode fails with EINVAL");
	tap_result(prctl(PR_SET_PT_SHARE, PR_PT_SHARE_NEVER, 1, 0, 0) == -1 &&
		   errno == EINVAL,
		   "PR_SET_PT_SHARE with a non-zero arg3 fails with EINVAL");
	tap_result(prctl(PR_GET_PT_SHARE, 1, 0, 0, 0) == -1 && errno == EINVAL,
		   "PR_GET_PT_SHARE with a non-zero arg2 fails with EINVAL");
	tap_result(get_mode() == PR_PT_SHARE_DEFAULT,
		   "the mode is still the default after the failed calls");
}

static void test_never(void)
{
	long shared;

	pts_set_mode(2);
	shared = fork_and_check();
	tap_result(shared >= TABLES,
		   "vm.pt_share=2, default mode: fork shares (%ld tables)",
		   shared);
	set_mode(PR_PT_SHARE_NEVER);
	shared = fork_and_check();
	tap_result(shared == 0,
		   "vm.pt_share=2, PR_PT_SHARE_NEVER: fork shares nothing (%ld tables), memory intact",
		   shared);
}

static void test_always(void)
{
	long shared;

	pts_set_mode(1);
	pts_write_long(MIN_TABLES, 1000000);
	set_mode(PR_PT_SHARE_DEFAULT);
	shared = fork_and_check();
	tap_result(shared == 0,
		   "auto, min_tables 1000000, default mode: fork shares nothing (%ld tables)",
		   shared);
	set_mode(PR_PT_SHARE_ALWAYS);
	shared = fork_and_check();
	tap_result(shared >= TABLES,
		   "auto, min_tables 1000000, PR_PT_SHARE_ALWAYS: fork shares (%ld tables), memory intact",
		   shared);
	pts_set_mode(0);
	shared = fork_and_check();
	tap_result(shared == 0,
		   "vm.pt_share=0, PR_PT_SHARE_ALWAYS: fork shares nothing (%ld tables)",
		   shared);
}

/* The mode a child sees after fork, and after fork and execve. */
static void test_inherit(void)
{
	int status, mode = -1;
	pid_t pid;

	set_mode(PR_PT_SHARE_NEVER);
	pid = fork();
	if (!pid)
		_exit(get_mode());
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		mode = WEXITSTATUS(status);
	tap_result(mode == PR_PT_SHARE_NEVER,
		   "fork: the child inherits the mode (%d)", mode);

	set_mode(PR_PT_SHARE_ALWAYS);
	mode = -1;
	pid = fork();
	if (!pid) {
		execl("/proc/self/exe", "fork_prctl", GET_ARG, (char *)NULL);
		_exit(100);
	}
	if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status))
		mode = WEXITSTATUS(status);
	tap_result(mode == PR_PT_SHARE_ALWAYS,
		   "execve: the new program keeps the mode (%d)", mode);
	set_mode(PR_PT_SHARE_DEFAULT);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], GET_ARG))
		return get_mode();

	if (pts_mode() < 0) {
		tap_result(get_mode() == -1 && errno == EINVAL,
			   "no ptshare: PR_GET_PT_SHARE fails with EINVAL");
		tap_result(set_mode(PR_PT_SHARE_NEVER) == -1 && errno == EINVAL,
			   "no ptshare: PR_SET_PT_SHARE fails with EINVAL");
		return tap_finish();
	}

	mem = pts_map_tables(SIZE);
	pts_force_sharing();	/* restores vm.pt_share at exit */
	saved_min_tables = pts_read_long(MIN_TABLES);
	atexit(restore_min_tables);

	tap_result(get_mode() == PR_PT_SHARE_DEFAULT,
		   "a new process has PR_PT_SHARE_DEFAULT");
	test_einval();
	test_never();
	test_always();
	test_inherit();
	return tap_finish();
}
