// SPDX-License-Identifier: GPL-2.0
/*
 * zygote: a parent that preloads big shared libraries forks children that
 * do not exec, as Android's zygote forks apps and preforking servers fork
 * workers.  Each child touches what it inherited: the text, read-only
 * data and data of the libraries.
 *
 * The parent dlopen()s every LIBRARY (RTLD_NOW | RTLD_GLOBAL: relocations
 * are done before fork, as a zygote's preload does), then reads one byte
 * of every page of every readable file-backed mapping in /proc/self/maps
 * so that its own tables are populated, and forks N children.  Each child
 * reads every page of the same mappings, reports its minor faults, and
 * blocks until released.  The parent reports:
 *   file_mapped_kb  readable file-backed mappings (libraries, ld.so, this
 *                   program): what every child reads;
 *   file_vmas       how many VMAs that is;
 *   file_tables     2 MiB ranges those mappings touch: the PTE tables a
 *                   child needs for them;
 *   file_tables_whole  of those, the ranges that lie inside one VMA: the
 *                   only ones ptshare may share at fork;
 *   parent_pte_kb   the parent's VmPTE just before the first fork;
 *   children_us     time from the first fork until the last child has read
 *                   everything (virtual time under icount);
 *   child_pte_kb    the children's VmPTE, summed (ptshare counts a shared
 *                   table in every sharer's VmPTE, as if fork had copied
 *                   it, so this does not show what sharing saves);
 *   pt_alive_kb     page-table memory of the whole system with all the
 *                   children alive, less what it was before the first
 *                   fork: the memory the children's tables really take;
 *   child_minflt    the children's minor faults while reading, summed;
 *   fork_shared, fork_shared_private_file
 *                   the deltas of ptshare's vmstat counters over the
 *                   forks (tables shared, and those of private file
 *                   mappings); 0 on kernels without them.
 *
 * Built dynamically (not -static like the other benchmarks): dlopen needs
 * ld.so, and a zygote is a dynamically linked process.  It runs without
 * address-space randomisation (it re-executes itself so): where mmap puts
 * a library against the 2 MiB boundaries decides how many of its tables
 * one VMA covers, and with ASLR that changed from boot to boot by a few
 * tables and a few percent of the children's faults, more than the
 * difference between two kernels that both share.
 */
#include "bench.h"

#include <dlfcn.h>
#include <sys/personality.h>

struct range {
	uintptr_t start, end;
};

struct maps {
	struct range *r;
	size_t nr, cap;
	unsigned long mapped_kb;
	unsigned long tables, tables_whole;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: zygote [-n CHILDREN] [-t] [-h] LIBRARY...\n"
"  -n  number of children that read what they inherited (default 100)\n"
"  -t  on ptshare kernels, set vm.pt_share_shared=1 for the run, so that\n"
"      fork shares the tables of text too (those it would not copy)\n"
"  -h  this help\n"
"LIBRARY: a name or path for dlopen(), e.g. libLLVM-15.so.1\n");
}

#define SHARED_KNOB "/proc/sys/vm/pt_share_shared"

/*
 * With -t, share text tables at fork too (vm.pt_share_shared=1): by
 * default fork shares only the tables it would copy, those with
 * anonymous pages (data, relocations). Returns the knob's old value, or
 * -1 if there is no knob (vanilla) or nothing to set.
 */
static long set_text_sharing(int text)
{
	FILE *f;
	long old;

	if (!text)
		return -1;
	f = fopen(SHARED_KNOB, "r+");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &old) != 1 || old >= 1) {
		fclose(f);
		return -1;
	}
	rewind(f);
	fprintf(f, "1\n");
	if (fclose(f))
		bench_die_errno("write %s", SHARED_KNOB);
	return old;
}

static void restore_text_sharing(long old)
{
	FILE *f;

	if (old < 0)
		return;
	f = fopen(SHARED_KNOB, "w");
	if (!f || fprintf(f, "%ld\n", old) < 0 || fclose(f))
		bench_die_errno("restore %s", SHARED_KNOB);
}

/* Re-execute without ASLR, once; if that fails, run randomised. */
static void no_aslr(char **argv)
{
	int pers = personality(0xffffffff);

	if (pers == -1 || (pers & ADDR_NO_RANDOMIZE))
		return;
	if (personality(pers | ADDR_NO_RANDOMIZE) == -1) {
		bench_warn("personality: %s; layout randomised", strerror(errno));
		return;
	}
	execv("/proc/self/exe", argv);
	bench_warn("exec /proc/self/exe: %s; layout randomised",
		   strerror(errno));
}

static void preload(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!dlopen(argv[i], RTLD_NOW | RTLD_GLOBAL))
			bench_die("dlopen %s: %s", argv[i], dlerror());
}

static void maps_add(struct maps *m, uintptr_t start, uintptr_t end)
{
	if (m->nr == m->cap) {
		m->cap = m->cap ? 2 * m->cap : 256;
		m->r = realloc(m->r, m->cap * sizeof(*m->r));
		if (!m->r)
			bench_die("out of memory for %zu ranges", m->cap);
	}
	m->r[m->nr].start = start;
	m->r[m->nr].end = end;
	m->nr++;
}

/*
 * Count the 2 MiB ranges the mappings touch, and those that one VMA
 * covers entirely.  /proc/self/maps lists VMAs in address order, so a
 * range shared by two neighbours is the last one counted.
 */
static void maps_count_tables(struct maps *m)
{
	uintptr_t last = UINTPTR_MAX, first_pmd, end_pmd;

	for (size_t i = 0; i < m->nr; i++) {
		first_pmd = m->r[i].start / BENCH_PMD_SIZE;
		end_pmd = (m->r[i].end - 1) / BENCH_PMD_SIZE;
		m->tables += end_pmd - first_pmd + 1;
		if (first_pmd == last)
			m->tables--;
		last = end_pmd;

		first_pmd = (m->r[i].start + BENCH_PMD_SIZE - 1) /
			    BENCH_PMD_SIZE;
		end_pmd = m->r[i].end / BENCH_PMD_SIZE;
		if (end_pmd > first_pmd)
			m->tables_whole += end_pmd - first_pmd;
	}
}

/*
 * The readable file-backed mappings of this process.  PROT_NONE ones
 * (the gaps ld.so leaves between a library's segments) are left out:
 * reading them would fault, and no table of theirs is ever populated.
 */
static void read_maps(struct maps *m)
{
	char line[4096], perms[8], path[4096];
	unsigned long start, end;
	FILE *f;

	f = fopen("/proc/self/maps", "r");
	if (!f)
		bench_die_errno("open /proc/self/maps");
	while (fgets(line, sizeof(line), f)) {
		path[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %4095s",
			   &start, &end, perms, path) < 3)
			bench_die("cannot parse maps line: %s", line);
		if (path[0] != '/' || perms[0] != 'r')
			continue;
		maps_add(m, start, end);
		m->mapped_kb += (end - start) >> 10;
	}
	fclose(f);
	if (!m->nr)
		bench_die("no readable file mapping in /proc/self/maps");
	maps_count_tables(m);
}

/* Read one byte of every page; the sum keeps the compiler from eliding. */
static unsigned long read_all(const struct maps *m)
{
	unsigned long sum = 0;

	for (size_t i = 0; i < m->nr; i++) {
		volatile const char *p = (const char *)m->r[i].start;
		size_t len = m->r[i].end - m->r[i].start;

		for (size_t off = 0; off < len; off += BENCH_PAGE_SIZE)
			sum += p[off];
	}
	return sum;
}

/*
 * A ptshare vmstat counter, or 0 where the kernel has none (vanilla):
 * unlike bench_read_key(), a missing key is not an error here.
 */
static long vmstat_or_zero(const char *key)
{
	size_t klen = strlen(key);
	char line[256];
	long val = 0;
	FILE *f;

	f = fopen("/proc/vmstat", "r");
	if (!f)
		bench_die_errno("open /proc/vmstat");
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) || line[klen] != ' ')
			continue;
		sscanf(line + klen, "%ld", &val);
		break;
	}
	fclose(f);
	return val;
}

/* Child: read everything, send the fault count, wait for EOF. */
static void __noreturn child(const struct maps *m, int done_fd, int rel_fd)
{
	long f0 = bench_self_minflt(), faults;
	unsigned long sum = read_all(m);
	char c;

	faults = bench_self_minflt() - f0;
	if (sum == 1)		/* keep the reads */
		faults++;
	if (write(done_fd, &faults, sizeof(faults)) != (ssize_t)sizeof(faults))
		_exit(3);
	while (read(rel_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

static void report_maps(const struct maps *m)
{
	bench_result("file_mapped_kb", m->mapped_kb, "kB", 1);
	bench_result("file_vmas", m->nr, "count", 1);
	bench_result("file_tables", m->tables, "tables", 1);
	bench_result("file_tables_whole", m->tables_whole, "tables", 1);
	bench_result("parent_pte_kb", bench_vmpte_kb(getpid()), "kB", 1);
}

int main(int argc, char **argv)
{
	long faults, total_faults = 0, pte_kb = 0, pt_before, pt_alive;
	long shared0, shared_pf0;
	unsigned long children = 100;
	long old_knob;
	int text = 0;
	struct maps m = { 0 };
	int done[2], rel[2], c;
	uint64_t t0;
	pid_t *pids;

	bench_init("zygote");
	no_aslr(argv);
	/* Not bench_getopt(): that one refuses operands, the libraries. */
	while ((c = getopt(argc, argv, "+n:th")) != -1) {
		if (c == 'n') {
			children = bench_parse_ulong(optarg, c, 1, 100000);
		} else if (c == 't') {
			text = 1;
		} else {
			usage(c == 'h' ? stdout : stderr);
			return c == 'h' ? 0 : 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (!argc) {
		usage(stderr);
		return 2;
	}
	bench_param("children=%lu", children);
	bench_param("libs=%d", argc);
	bench_param("text=%d", text);
	old_knob = set_text_sharing(text);

	preload(argc, argv);
	read_maps(&m);
	read_all(&m);
	report_maps(&m);

	pids = calloc(children, sizeof(*pids));
	if (!pids || pipe(done) || pipe(rel))
		bench_die_errno("setup");
	fflush(stdout);
	pt_before = bench_pt_pages();
	shared0 = vmstat_or_zero("ptshare_fork_shared");
	shared_pf0 = vmstat_or_zero("ptshare_fork_shared_private_file");
	t0 = bench_now_ns();
	for (unsigned long i = 0; i < children; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			bench_die_errno("fork of child %lu", i + 1);
		if (!pids[i]) {
			close(rel[1]);
			close(done[0]);
			child(&m, done[1], rel[0]);
		}
	}
	for (unsigned long i = 0; i < children; i++) {
		if (read(done[0], &faults, sizeof(faults)) !=
		    (ssize_t)sizeof(faults))
			bench_die("a child did not report");
		total_faults += faults;
	}
	bench_result("children_us", bench_ns_to_us(bench_now_ns() - t0), "us",
		     1);
	pt_alive = bench_pt_pages();
	for (unsigned long i = 0; i < children; i++)
		pte_kb += bench_vmpte_kb(pids[i]);
	bench_result("fork_shared", vmstat_or_zero("ptshare_fork_shared") -
		     shared0, "tables", 1);
	bench_result("fork_shared_private_file",
		     vmstat_or_zero("ptshare_fork_shared_private_file") -
		     shared_pf0, "tables", 1);
	close(rel[1]);
	for (unsigned long i = 0; i < children; i++)
		bench_reap(pids[i], NULL);
	bench_result("child_pte_kb", pte_kb, "kB", 1);
	bench_result("pt_alive_kb", (pt_alive - pt_before) *
		     (sysconf(_SC_PAGESIZE) / 1024), "kB", 1);
	bench_result("child_minflt", total_faults, "faults", 1);
	restore_text_sharing(old_knob);
	return 0;
}
