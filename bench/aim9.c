// SPDX-License-Identifier: GPL-2.0
/*
 * aim9: the AIM9 fork_test and exec_test, for a small process.
 *
 *   fork  fork; the child exits at once; the parent waits.  Repeat.
 *   exec  fork; the child execs a tiny program; the parent waits.  Repeat.
 *
 * This is the case where ptshare must not lose: a small process has only a
 * handful of PTE tables, so sharing them saves little and any fixed
 * overhead in fork, fault or exit shows up directly in operations per
 * second.  Built static by default; "make dynamic" also builds it dynamic,
 * which mimics a normal process (more mappings: ld.so, libc, their data).
 * The param field records which one ran.
 *
 * -T TABLES adds that many PTE tables of private anonymous memory (2 MiB
 * each, THP off) with -p PAGES pages present in each, and the parent
 * writes one page of each table after every operation, as a process that
 * uses its memory does.  Sweeping TABLES with vm.pt_share=0 and 2 shows
 * from which size on sharing at fork pays: vm.pt_share_min_tables.
 */
#include "bench.h"
#include <sys/auxv.h>

enum mode { MODE_FORK, MODE_EXEC };

struct opts {
	enum mode mode;
	double seconds;		/* run for this long, if iterations == 0 */
	unsigned long iterations;
	const char *exec_path;
	unsigned long tables;	/* -T: extra PTE tables */
	unsigned long pages;	/* -p: pages present per extra table */
	char *mem;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: aim9 [-m fork|exec] [-d SECONDS | -n ITERATIONS] [-e PATH]\n"
"            [-T TABLES] [-p PAGES] [-h]\n"
"  -m  fork: fork + child _exit(0) + wait (AIM9 fork_test)\n"
"      exec: fork + execl(PATH) in the child + wait (AIM9 exec_test)\n"
"      (default fork)\n"
"  -d  run for SECONDS of CLOCK_MONOTONIC (default 5; may be fractional)\n"
"  -n  run exactly ITERATIONS operations instead\n"
"  -e  program to exec (default: 'tiny' next to this program)\n"
"  -T  add TABLES PTE tables (2 MiB each) of private memory, which the\n"
"      parent writes one page of after every operation (default 0)\n"
"  -p  pages present in each of those tables (default 16, at most 512)\n"
"  -h  this help\n");
}

/* tiny sits next to aim9 in the build output, wherever that is mounted. */
static const char *default_exec_path(void)
{
	static char path[PATH_MAX];
	char *slash;
	ssize_t n;

	n = readlink("/proc/self/exe", path, sizeof(path) - 8);
	if (n <= 0)
		return "./tiny";
	path[n] = '\0';
	slash = strrchr(path, '/');
	strcpy(slash ? slash + 1 : path, "tiny");
	return path;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = MODE_FORK;
	o->seconds = 5;
	o->pages = 16;

	while ((c = bench_getopt(argc, argv, "m:d:n:e:T:p:h", usage)) != -1) {
		switch (c) {
		case 'm':
			if (!strcmp(optarg, "fork"))
				o->mode = MODE_FORK;
			else if (!strcmp(optarg, "exec"))
				o->mode = MODE_EXEC;
			else
				bench_die("-m: '%s' is not one of fork, exec",
					  optarg);
			break;
		case 'd':
			o->seconds = bench_parse_double(optarg, c);
			o->iterations = 0;
			break;
		case 'n':
			o->iterations = bench_parse_ulong(optarg, c, 1,
							  ULONG_MAX);
			break;
		case 'e':
			o->exec_path = optarg;
			break;
		case 'T':
			o->tables = bench_parse_ulong(optarg, c, 0, 4096);
			break;
		case 'p':
			o->pages = bench_parse_ulong(optarg, c, 1,
						     BENCH_PMD_SIZE / BENCH_PAGE_SIZE);
			break;
		}
	}
	if (!o->exec_path)
		o->exec_path = default_exec_path();
	if (o->mode == MODE_EXEC && access(o->exec_path, X_OK))
		bench_die_errno("exec program %s (give one with -e)",
				o->exec_path);
}

/*
 * The -T tables: all pages touched, then all but the first -p of each
 * table dropped again, which leaves the tables in place, sparse.
 */
static char *tables_setup(const struct opts *o)
{
	size_t keep = o->pages * BENCH_PAGE_SIZE;
	unsigned long t;
	char *mem;

	mem = bench_mem_setup(o->tables * BENCH_PMD_SIZE, BENCH_MADV_OFF);
	for (t = 0; t < o->tables && keep < BENCH_PMD_SIZE; t++)
		if (madvise(mem + t * BENCH_PMD_SIZE + keep,
			    BENCH_PMD_SIZE - keep, MADV_DONTNEED))
			bench_die_errno("madvise(MADV_DONTNEED)");
	return mem;
}

/* The parent uses its memory: one write into each -T table. */
static void tables_write(const struct opts *o)
{
	static unsigned char val;
	volatile char *p = o->mem;
	unsigned long t;

	val++;
	for (t = 0; t < o->tables; t++)
		p[t * BENCH_PMD_SIZE] = val;
}

/* VmPTE of this process in kB: what vm.pt_share_min_tables is compared to. */
static long vmpte_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPTE: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* One AIM9 operation: fork, let the child exit or exec, reap it. */
static void one_op(const struct opts *o)
{
	pid_t pid = fork();

	if (pid < 0)
		bench_die_errno("fork");
	if (!pid) {
		if (o->mode == MODE_EXEC)
			execl(o->exec_path, o->exec_path, (char *)NULL);
		_exit(o->mode == MODE_EXEC ? 127 : 0);
	}
	bench_reap(pid, NULL);
	tables_write(o);
}

/*
 * Returns the number of operations done and their elapsed time.  In
 * duration mode the clock is read once per operation; with the vDSO that
 * costs tens of nanoseconds against the hundreds of microseconds of a fork.
 */
static unsigned long run(const struct opts *o, uint64_t *elapsed_ns)
{
	uint64_t start = bench_now_ns(), now = start;
	uint64_t end = start + (uint64_t)(o->seconds * 1e9);
	unsigned long n = 0;

	while (o->iterations ? n < o->iterations : now < end) {
		one_op(o);
		n++;
		if (!o->iterations)
			now = bench_now_ns();
	}
	if (o->iterations)
		now = bench_now_ns();
	*elapsed_ns = now - start;
	return n;
}

/* Minor faults so far of this process (RUSAGE_SELF) or its reaped children. */
static long minflt(int who)
{
	struct rusage ru;

	if (getrusage(who, &ru))
		bench_die_errno("getrusage");
	return ru.ru_minflt;
}

int main(int argc, char **argv)
{
	long self_flt, child_flt;
	const char *test;
	struct opts o;
	uint64_t ns;
	unsigned long n;

	bench_init("aim9");
	parse_opts(argc, argv, &o);
	test = o.mode == MODE_FORK ? "fork_test" : "exec_test";

	bench_param("mode=%s", o.mode == MODE_FORK ? "fork" : "exec");
	if (o.iterations)
		bench_param("iterations=%lu", o.iterations);
	else
		bench_param("seconds=%g", o.seconds);
	/* AT_BASE is the dynamic loader's address, 0 for a static binary. */
	bench_param("link=%s", getauxval(AT_BASE) ? "dynamic" : "static");
	if (o.tables) {
		bench_param("tables=%lu", o.tables);
		bench_param("pages=%lu", o.pages);
		o.mem = tables_setup(&o);
	}

	fflush(stdout);		/* nothing buffered may be inherited */
	self_flt = minflt(RUSAGE_SELF);
	child_flt = minflt(RUSAGE_CHILDREN);
	n = run(&o, &ns);
	self_flt = minflt(RUSAGE_SELF) - self_flt;
	child_flt = minflt(RUSAGE_CHILDREN) - child_flt;

	bench_result(test, n / (ns / 1e9), "ops/s", n);
	bench_result(o.mode == MODE_FORK ? "fork_test_us" : "exec_test_us",
		     bench_ns_to_us(ns) / n, "us", n);
	/*
	 * Where an operation's faults fall: the parent's (COW of its stack
	 * and data after each fork) and the child's (its COW faults, and for
	 * exec the new program's faults, file fault-around included).
	 */
	bench_result("parent_minflt_per_op", (double)self_flt / n, "faults", n);
	bench_result("child_minflt_per_op", (double)child_flt / n, "faults", n);
	bench_result("vmpte_kb", vmpte_kb(), "kB", 1);
	return 0;
}
