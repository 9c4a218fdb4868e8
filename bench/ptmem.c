// SPDX-License-Identifier: GPL-2.0
/*
 * ptmem: how much memory do page tables take when a large process has many
 * children alive at once?  Without ptshare every child holds its own copy
 * of the parent's PTE tables; with it they share one until written.
 *
 * The parent touches SIZE_MIB of memory and forks N children.  Each child
 * reports that it is running and then blocks reading a pipe.  While all
 * are alive the parent reads the system-wide nr_page_table_pages from
 * /proc/vmstat and VmPTE from /proc/<pid>/status of itself and of each
 * child.  Closing the pipe then releases the children (EOF), and they are
 * reaped.  Children that lose their parent see EOF too, so none is left
 * behind if the parent dies.
 *
 * nr_page_table_pages is system wide, so run this on a quiet system (the
 * guest); the baseline is read after the memory is touched but before
 * the first fork.
 */
#include "bench.h"

struct opts {
	unsigned long size_mib;
	unsigned long children;
	enum bench_madv madv;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: ptmem [-s SIZE_MIB] [-n CHILDREN] [-H on|off|none] [-h]\n"
"  -s  touched private anonymous memory in MiB (default 64)\n"
"  -n  number of children alive at once (default 4)\n"
"  -H  madvise the area: on = MADV_HUGEPAGE, off = MADV_NOHUGEPAGE,\n"
"      none = leave it to the sysfs mode (default off: with huge pages\n"
"      there are no PTE tables to count)\n"
"  -h  this help\n");
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	o->size_mib = 64;
	o->children = 4;
	o->madv = BENCH_MADV_OFF;

	while ((c = bench_getopt(argc, argv, "s:n:H:h", usage)) != -1) {
		switch (c) {
		case 's':
			o->size_mib = bench_parse_ulong(optarg, c, 0, ULONG_MAX);
			break;
		case 'n':
			o->children = bench_parse_ulong(optarg, c, 1, 100000);
			break;
		case 'H':
			o->madv = bench_parse_madv(optarg, c);
			break;
		}
	}
}

/* Child: say "running", then block until the parent closes the pipe. */
static void __noreturn child(int ready_fd, int release_fd)
{
	char c = 0;

	if (write(ready_fd, &c, 1) != 1)
		_exit(3);
	while (read(release_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Close the release pipe and reap the n children forked so far. */
static void release(int release_wr, pid_t *pids, unsigned long n)
{
	unsigned long i;

	close(release_wr);
	for (i = 0; i < n; i++)
		bench_reap(pids[i], NULL);
}

/* Fork n children and wait until each has reported that it runs. */
static void spawn(pid_t *pids, unsigned long n, int ready[2], int rel[2])
{
	unsigned long i;
	char c;

	fflush(stdout);		/* nothing buffered may be inherited */
	for (i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			int err = errno;

			release(rel[1], pids, i);
			errno = err;
			bench_die_errno("fork of child %lu", i + 1);
		}
		if (!pids[i]) {
			/* Keep no write end, or EOF would never come. */
			close(rel[1]);
			close(ready[0]);
			child(ready[1], rel[0]);
		}
	}
	for (i = 0; i < n; i++) {
		if (read(ready[0], &c, 1) != 1) {
			release(rel[1], pids, n);
			bench_die("child did not start");
		}
	}
}

static void report_pt(const char *metric, long pages)
{
	char name[64];

	snprintf(name, sizeof(name), "%s_pages", metric);
	bench_result(name, pages, "pages", 1);
	snprintf(name, sizeof(name), "%s_kb", metric);
	bench_result(name, pages * (sysconf(_SC_PAGESIZE) / 1024), "kB", 1);
}

/*
 * Page tables freed at exit may be released only after an RCU grace
 * period (MMU_GATHER_RCU_TABLE_FREE; since 6.14 the NR_PAGETABLE count
 * drops then too), so the count right after reaping still includes some
 * of the children's tables.  Poll for up to two seconds until it is back
 * at the baseline; on a busy system it may never be exactly, and the
 * last value is returned.  A pt_after stuck above pt_before on a quiet
 * guest points at leaked page tables.
 */
static long pt_pages_settled(long baseline)
{
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	long pages = bench_pt_pages();
	int i;

	for (i = 0; i < 200 && pages > baseline; i++) {
		nanosleep(&tick, NULL);
		pages = bench_pt_pages();
	}
	return pages;
}

struct vmpte {
	long min, max;
	double mean;
};

/* VmPTE of every child in kB: min, mean and max. */
static void read_children(pid_t *pids, unsigned long n, struct vmpte *v)
{
	double sum = 0;
	unsigned long i;
	long kb;

	v->min = LONG_MAX;
	v->max = 0;
	for (i = 0; i < n; i++) {
		kb = bench_vmpte_kb(pids[i]);
		sum += kb;
		if (kb < v->min)
			v->min = kb;
		if (kb > v->max)
			v->max = kb;
	}
	v->mean = sum / n;
}

int main(int argc, char **argv)
{
	long before, alive, after, parent_kb;
	int ready[2], rel[2];
	struct vmpte child;
	struct opts o;
	pid_t *pids;

	bench_init("ptmem");
	parse_opts(argc, argv, &o);
	pids = calloc(o.children, sizeof(*pids));
	if (!pids)
		bench_die("out of memory");

	bench_param("size_mib=%lu", o.size_mib);
	bench_param("children=%lu", o.children);
	bench_param("thp=%s", bench_thp_label(o.madv));
	bench_param("madv=%s", bench_madv_name(o.madv));

	bench_mem_setup(bench_mib(o.size_mib), o.madv);
	if (pipe(ready) || pipe(rel))
		bench_die_errno("pipe");

	before = bench_pt_pages();
	spawn(pids, o.children, ready, rel);
	alive = bench_pt_pages();
	parent_kb = bench_vmpte_kb(getpid());
	read_children(pids, o.children, &child);
	release(rel[1], pids, o.children);

	/* pt_after: after reaping, to show the children's tables are freed. */
	after = pt_pages_settled(before);
	report_pt("pt_before", before);
	report_pt("pt_alive", alive);
	report_pt("pt_delta", alive - before);
	report_pt("pt_after", after);
	bench_result("parent_vmpte_kb", parent_kb, "kB", 1);
	bench_result("child_vmpte_kb_mean", child.mean, "kB", o.children);
	bench_result("child_vmpte_kb_min", child.min, "kB", o.children);
	bench_result("child_vmpte_kb_max", child.max, "kB", o.children);
	return 0;
}
