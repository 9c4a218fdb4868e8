// SPDX-License-Identifier: GPL-2.0
/*
 * costshift: where does the cost go that ptshare takes out of fork()?
 *
 * Sharing PTE tables makes fork cheap but defers work: the first write to
 * a shared table has to unshare (copy) it, and exit has to drop the shared
 * references.  This measures the deferred part, with THP off
 * (MADV_NOHUGEPAGE) so that every page has a PTE.
 *
 *   child-write     the child writes PERCENT of its pages, spread evenly
 *                   over the area, and exits.  Reports the child's write
 *                   time, fork to waitpid total, and the minor faults of
 *                   child and parent.  At 0% the child only exits; at 1%
 *                   a write hits every PTE table (512 pages per table) so
 *                   every table is unshared for few page copies.
 *   parent-rewrite  the child exits at once; the parent then rewrites all
 *                   of its memory.  Reports the rewrite time and faults:
 *                   after a plain fork every parent PTE is write-protected
 *                   and each page takes a fault even though the child has
 *                   gone.
 *
 * Every repetition starts from the same state: before repetitions after
 * the first, the parent rewrites all pages (untimed in child-write mode),
 * so its PTEs are writable and unshared again.
 */
#include "bench.h"

enum mode { MODE_CHILD_WRITE, MODE_PARENT_REWRITE };

struct opts {
	unsigned long size_mib;
	unsigned long percent;
	enum mode mode;
	int reps;
};

/* What the child measures of itself, sent back through a pipe. */
struct child_report {
	uint64_t write_ns;
	long write_minflt;
};

/* Per-repetition samples, one array per metric. */
struct samples {
	double *fork_us, *child_write_us, *total_us, *rewrite_us;
	double *child_minflt, *child_write_minflt, *parent_minflt;
	double *rewrite_minflt;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: costshift [-s SIZE_MIB] [-m child-write|parent-rewrite] [-p PERCENT]\n"
"                 [-r REPS] [-h]\n"
"  -s  touched private anonymous memory in MiB, THP off (default 64)\n"
"  -m  child-write: the child writes PERCENT of the pages, then exits\n"
"      parent-rewrite: the child exits at once, then the parent rewrites\n"
"      all of its memory (default child-write)\n"
"  -p  percentage of pages the child writes, 0-100, spread evenly\n"
"      (default 100; child-write only)\n"
"  -r  repetitions (default 5)\n"
"  -h  this help\n");
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->size_mib = 64;
	o->percent = 100;
	o->reps = 5;

	while ((c = bench_getopt(argc, argv, "s:m:p:r:h", usage)) != -1) {
		switch (c) {
		case 's':
			o->size_mib = bench_parse_ulong(optarg, c, 1, ULONG_MAX);
			break;
		case 'm':
			if (!strcmp(optarg, "child-write"))
				o->mode = MODE_CHILD_WRITE;
			else if (!strcmp(optarg, "parent-rewrite"))
				o->mode = MODE_PARENT_REWRITE;
			else
				bench_die("-m: '%s' is not one of child-write, parent-rewrite",
					  optarg);
			break;
		case 'p':
			o->percent = bench_parse_ulong(optarg, c, 0, 100);
			break;
		case 'r':
			o->reps = bench_parse_ulong(optarg, c, 1, 1000000);
			break;
		}
	}
}

static size_t pages_to_write(size_t npages, unsigned long percent)
{
	return npages * percent / 100;
}

/*
 * Write n of the npages pages, page i * npages / n for i < n: evenly
 * spread, so that a small percentage still reaches every PTE table.
 */
static void write_spread(char *mem, size_t npages, size_t n)
{
	volatile char *p = mem;
	size_t i;

	for (i = 0; i < n; i++)
		p[(i * npages / n) * BENCH_PAGE_SIZE] = (char)i | 1;
}

static void __noreturn
child_write(int fd, char *mem, size_t npages, size_t n)
{
	struct child_report r;
	long flt0 = bench_self_minflt();
	uint64_t t0 = bench_now_ns();

	write_spread(mem, npages, n);
	r.write_ns = bench_now_ns() - t0;
	r.write_minflt = bench_self_minflt() - flt0;
	if (write(fd, &r, sizeof(r)) != sizeof(r))
		_exit(3);
	_exit(0);
}

static void read_report(int fd, struct child_report *r)
{
	ssize_t n = read(fd, r, sizeof(*r));

	if (n != sizeof(*r))
		bench_die("short report from child (%zd bytes)", n);
}

static void rep_child_write(const struct opts *o, char *mem, size_t npages,
			    struct samples *s, int i)
{
	struct child_report r;
	struct rusage ru;
	uint64_t t0, t1, t2;
	long flt0;
	int fds[2];
	pid_t pid;

	if (pipe(fds))
		bench_die_errno("pipe");
	flt0 = bench_self_minflt();
	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0)
		bench_die_errno("fork");
	if (!pid)
		child_write(fds[1], mem, npages,
			    pages_to_write(npages, o->percent));
	t1 = bench_now_ns();
	bench_reap(pid, &ru);
	t2 = bench_now_ns();
	s->parent_minflt[i] = bench_self_minflt() - flt0;
	read_report(fds[0], &r);
	close(fds[0]);
	close(fds[1]);

	s->fork_us[i] = bench_ns_to_us(t1 - t0);
	s->total_us[i] = bench_ns_to_us(t2 - t0);
	s->child_write_us[i] = bench_ns_to_us(r.write_ns);
	s->child_minflt[i] = ru.ru_minflt;
	s->child_write_minflt[i] = r.write_minflt;
}

static void rep_parent_rewrite(char *mem, size_t size, struct samples *s,
			       int i)
{
	uint64_t t0, t1, t2, t3;
	struct rusage ru;
	long flt0;
	pid_t pid;

	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0)
		bench_die_errno("fork");
	if (!pid)
		_exit(0);
	t1 = bench_now_ns();
	bench_reap(pid, &ru);
	t2 = bench_now_ns();

	flt0 = bench_self_minflt();
	bench_touch(mem, size);
	t3 = bench_now_ns();
	s->rewrite_minflt[i] = bench_self_minflt() - flt0;

	s->fork_us[i] = bench_ns_to_us(t1 - t0);
	s->total_us[i] = bench_ns_to_us(t2 - t0);
	s->rewrite_us[i] = bench_ns_to_us(t3 - t2);
	s->child_minflt[i] = ru.ru_minflt;
}

static void alloc_samples(struct samples *s, int n)
{
	s->fork_us = bench_samples(n);
	s->child_write_us = bench_samples(n);
	s->total_us = bench_samples(n);
	s->rewrite_us = bench_samples(n);
	s->child_minflt = bench_samples(n);
	s->child_write_minflt = bench_samples(n);
	s->parent_minflt = bench_samples(n);
	s->rewrite_minflt = bench_samples(n);
}

static void report(const struct opts *o, struct samples *s)
{
	int n = o->reps;

	bench_report_stats("fork_us", s->fork_us, n, "us");
	bench_report_stats("total_us", s->total_us, n, "us");
	bench_report_stats("child_minflt", s->child_minflt, n, "faults");
	if (o->mode == MODE_CHILD_WRITE) {
		bench_report_stats("child_write_us", s->child_write_us, n, "us");
		bench_report_stats("child_write_minflt", s->child_write_minflt,
				   n, "faults");
		bench_report_stats("parent_minflt", s->parent_minflt, n,
				   "faults");
	} else {
		bench_report_stats("rewrite_us", s->rewrite_us, n, "us");
		bench_report_stats("rewrite_minflt", s->rewrite_minflt, n,
				   "faults");
	}
}

int main(int argc, char **argv)
{
	struct samples s;
	struct opts o;
	size_t size, npages;
	char *mem;
	int i;

	bench_init("costshift");
	parse_opts(argc, argv, &o);
	size = bench_mib(o.size_mib);
	npages = size / BENCH_PAGE_SIZE;
	alloc_samples(&s, o.reps);

	bench_param("size_mib=%lu", o.size_mib);
	bench_param("mode=%s", o.mode == MODE_CHILD_WRITE ?
		    "child-write" : "parent-rewrite");
	if (o.mode == MODE_CHILD_WRITE)
		bench_param("pct=%lu", o.percent);
	bench_param("madv=off");
	bench_param("thp_sys=%s", bench_thp_sysfs());

	mem = bench_mem_setup(size, BENCH_MADV_OFF);

	fflush(stdout);		/* nothing buffered may be inherited */
	for (i = 0; i < o.reps; i++) {
		if (o.mode == MODE_CHILD_WRITE) {
			if (i)
				bench_touch(mem, size);
			rep_child_write(&o, mem, npages, &s, i);
		} else {
			rep_parent_rewrite(mem, size, &s, i);
		}
	}

	if (o.mode == MODE_CHILD_WRITE)
		bench_result("pages_written",
			     pages_to_write(npages, o.percent), "pages", 1);
	bench_result("pages_total", npages, "pages", 1);
	report(&o, &s);
	return 0;
}
