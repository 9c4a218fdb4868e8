/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared helpers for the ptshare benchmarks: one parseable line per result,
 * CLOCK_MONOTONIC timing, min/median/max over repetitions, option parsing,
 * child reaping, and the touched private anonymous memory that every
 * benchmark forks with.
 *
 * Every result is printed as
 *   result bench=<name> param=<key=val,...> metric=<name> value=<number> unit=<unit> reps=<n>
 * so that a shell/awk harness can split on spaces and '='.
 *
 * Include this header before any system header: it sets _GNU_SOURCE.
 */
#ifndef PTSHARE_BENCH_H
#define PTSHARE_BENCH_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

/*
 * Pages are touched at 4 KiB strides whatever the mapping ends up using:
 * on x86_64 that is one write per PTE, which is what the page-table
 * sharing is about.
 */
#ifndef __noreturn
#define __noreturn	__attribute__((noreturn))
#endif
#ifndef __printf
#define __printf(a, b)	__attribute__((format(printf, a, b)))
#endif

#define BENCH_PAGE_SIZE		4096UL
#define BENCH_PMD_SIZE		(2UL << 20)

static const char *bench_name = "bench";
static char bench_params[512];

/* ---- errors ---------------------------------------------------------- */

static inline void __noreturn __printf(1, 2)
bench_die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", bench_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* As bench_die(), with ": strerror(errno)" appended. */
#define bench_die_errno(fmt, ...) \
	bench_die(fmt ": %s", ##__VA_ARGS__, strerror(errno))

static inline void __printf(1, 2)
bench_warn(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: warning: ", bench_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- output ---------------------------------------------------------- */

static inline void bench_init(const char *name)
{
	bench_name = name;
	bench_params[0] = '\0';
}

/* Append "key=val" to the param= field; call once per parameter. */
static inline void __printf(1, 2)
bench_param(const char *fmt, ...)
{
	size_t len = strlen(bench_params);
	va_list ap;

	if (len && len < sizeof(bench_params) - 1)
		bench_params[len++] = ',';
	va_start(ap, fmt);
	vsnprintf(bench_params + len, sizeof(bench_params) - len, fmt, ap);
	va_end(ap);
}

/*
 * Counts print as integers and times with three decimals (nanosecond
 * resolution for microseconds), so the output never needs an awk that
 * understands exponents.
 */
static inline void bench_result(const char *metric, double value,
				const char *unit, long reps)
{
	int prec = (value == (double)(long long)value) ? 0 : 3;

	printf("result bench=%s param=%s metric=%s value=%.*f unit=%s reps=%ld\n",
	       bench_name, bench_params[0] ? bench_params : "none",
	       metric, prec, value, unit, reps);
	fflush(stdout);
}

/* ---- timing and statistics -------------------------------------------- */

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline double bench_ns_to_us(uint64_t ns)
{
	return ns / 1000.0;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * Print <metric>_min, _median, _max and _mean over n samples.  The median
 * is the headline number: a single fork can be delayed by an unrelated
 * interrupt or a page-cache refill, and the median ignores such outliers.
 * Sorts v in place.
 */
static inline void bench_report_stats(const char *metric, double *v, int n,
				      const char *unit)
{
	char name[128];
	double sum = 0, median;
	int i;

	if (n <= 0)
		return;
	qsort(v, n, sizeof(*v), bench_cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	median = (n & 1) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;

	snprintf(name, sizeof(name), "%s_min", metric);
	bench_result(name, v[0], unit, n);
	snprintf(name, sizeof(name), "%s_median", metric);
	bench_result(name, median, unit, n);
	snprintf(name, sizeof(name), "%s_max", metric);
	bench_result(name, v[n - 1], unit, n);
	snprintf(name, sizeof(name), "%s_mean", metric);
	bench_result(name, sum / n, unit, n);
}

static inline double *bench_samples(int n)
{
	double *v = calloc(n, sizeof(*v));

	if (!v)
		bench_die("out of memory for %d samples", n);
	return v;
}

/* ---- option parsing --------------------------------------------------- */

static inline unsigned long bench_parse_ulong(const char *s, char opt,
					      unsigned long min,
					      unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max)
		bench_die("-%c: '%s' is not a number in [%lu, %lu]",
			  opt, s, min, max);
	return v;
}

static inline double bench_parse_double(const char *s, char opt)
{
	double v;
	char *end;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0))
		bench_die("-%c: '%s' is not a positive number", opt, s);
	return v;
}

/*
 * getopt() with the handling every benchmark shares: -h prints the usage on
 * stdout and exits 0; an unknown option, or an argument left after the
 * options, prints it on stderr and exits 2. Returns the next option of
 * optstring, or -1 when there are no more. Every letter of optstring but h
 * must have its case in the caller.
 */
static inline int bench_getopt(int argc, char **argv, const char *optstring,
			       void (*usage)(FILE *f))
{
	int c = getopt(argc, argv, optstring);

	if (c == 'h') {
		usage(stdout);
		exit(0);
	}
	if (c == '?' || (c == -1 && optind != argc)) {
		usage(stderr);
		exit(2);
	}
	return c;
}

/* MiB to bytes, refusing sizes that do not fit the address space. */
static inline size_t bench_mib(unsigned long mib)
{
	if (mib > (SIZE_MAX >> 21))
		bench_die("size %lu MiB is too large", mib);
	return (size_t)mib << 20;
}

/* ---- /proc ------------------------------------------------------------ */

/*
 * Value of the first line of path that starts with key, as a long.
 * Dies if the file or key is missing: the numbers are the whole point.
 */
static inline long bench_read_key(const char *path, const char *key)
{
	size_t klen = strlen(key);
	char line[256];
	long val = -1;
	FILE *f;

	f = fopen(path, "r");
	if (!f)
		bench_die_errno("open %s", path);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen))
			continue;
		if (sscanf(line + klen, "%ld", &val) != 1)
			val = -1;
		break;
	}
	fclose(f);
	if (val < 0)
		bench_die("no '%s' in %s", key, path);
	return val;
}

/*
 * vmstat counters are kept per CPU and only folded into the global value
 * past a threshold, so /proc/vmstat can be off by that threshold times the
 * number of CPUs.  Writing vm/stat_refresh folds them now; it needs root,
 * and without it the number is just less exact.
 */
static inline void bench_refresh_vmstat(void)
{
	int fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);

	if (fd < 0)
		return;
	/* EINVAL only reports a negative counter, after the fold is done. */
	if (write(fd, "1", 1) < 0 && errno != EINVAL)
		bench_warn("vm/stat_refresh: %s", strerror(errno));
	close(fd);
}

/* nr_page_table_pages, system wide. */
static inline long bench_pt_pages(void)
{
	bench_refresh_vmstat();
	return bench_read_key("/proc/vmstat", "nr_page_table_pages ");
}

/* VmPTE of a process, in kB. */
static inline long bench_vmpte_kb(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return bench_read_key(path, "VmPTE:");
}

/* ---- children --------------------------------------------------------- */

/*
 * Reap pid and insist that it exited with status 0: a benchmark whose child
 * crashed (or whose exec failed) must not print a plausible-looking number.
 * ru may be NULL.
 */
static inline void bench_reap(pid_t pid, struct rusage *ru)
{
	struct rusage dummy;
	int status;
	pid_t r;

	do
		r = wait4(pid, &status, 0, ru ? ru : &dummy);
	while (r < 0 && errno == EINTR);
	if (r != pid)
		bench_die_errno("wait4(%d)", (int)pid);
	if (WIFSIGNALED(status))
		bench_die("child %d killed by signal %d", (int)pid,
			  WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_die("child %d exited with status %d%s", (int)pid,
			  WEXITSTATUS(status),
			  WEXITSTATUS(status) == 127 ? " (exec failed?)" : "");
}

static inline long bench_self_minflt(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		bench_die_errno("getrusage");
	return ru.ru_minflt;
}

/* ---- transparent huge pages ------------------------------------------- */

enum bench_madv {
	BENCH_MADV_NONE,	/* leave the area to the sysfs policy */
	BENCH_MADV_ON,		/* MADV_HUGEPAGE */
	BENCH_MADV_OFF,		/* MADV_NOHUGEPAGE */
};

static inline const char *bench_madv_name(enum bench_madv m)
{
	return m == BENCH_MADV_ON ? "on" : m == BENCH_MADV_OFF ? "off" : "none";
}

static inline enum bench_madv bench_parse_madv(const char *s, char opt)
{
	if (!strcmp(s, "on"))
		return BENCH_MADV_ON;
	if (!strcmp(s, "off"))
		return BENCH_MADV_OFF;
	if (!strcmp(s, "none"))
		return BENCH_MADV_NONE;
	bench_die("-%c: '%s' is not one of on, off, none", opt, s);
}

/*
 * The bracketed word of /sys/kernel/mm/transparent_hugepage/enabled
 * ("always", "madvise" or "never"), or "none" when the kernel has no THP.
 */
static inline const char *bench_thp_sysfs(void)
{
	static char mode[16];
	char buf[128], *l, *r;
	FILE *f;

	strcpy(mode, "none");
	f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (!f)
		return mode;
	if (fgets(buf, sizeof(buf), f)) {
		l = strchr(buf, '[');
		r = l ? strchr(l, ']') : NULL;
		if (r && r - l - 1 < (long)sizeof(mode)) {
			memcpy(mode, l + 1, r - l - 1);
			mode[r - l - 1] = '\0';
		}
	}
	fclose(f);
	return mode;
}

/*
 * Name the THP situation the way the harness does: never, always,
 * madvise-on or madvise-off.  In "madvise" mode only MADV_HUGEPAGE areas
 * get huge pages, so anything else counts as madvise-off.
 */
static inline const char *bench_thp_label(enum bench_madv madv)
{
	const char *sys = bench_thp_sysfs();

	if (strcmp(sys, "madvise"))
		return sys;
	return madv == BENCH_MADV_ON ? "madvise-on" : "madvise-off";
}

/* AnonHugePages of this process in kB, or -1 if smaps_rollup is missing. */
static inline long bench_anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f;

	f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* ---- memory ----------------------------------------------------------- */

/*
 * Write one byte in every 4 KiB page.  Volatile so that the stores stay
 * even though nobody reads them: the point is the page faults and the
 * PTEs they leave behind.  val varies between calls so a rewrite really
 * changes the data.
 */
static inline void bench_touch(char *addr, size_t size)
{
	static unsigned char val;
	volatile char *p = addr;
	size_t off;

	val++;
	for (off = 0; off < size; off += BENCH_PAGE_SIZE)
		p[off] = val;
}

static inline void bench_madvise(char *addr, size_t size, enum bench_madv madv)
{
	int advice = madv == BENCH_MADV_ON ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;

	if (madv == BENCH_MADV_NONE || !madvise(addr, size, advice))
		return;
	/*
	 * Without CONFIG_TRANSPARENT_HUGEPAGE both advices fail with EINVAL.
	 * "off" is then true anyway; "on" would mislabel the results.
	 */
	if (madv == BENCH_MADV_OFF && errno == EINVAL)
		return;
	bench_die_errno("madvise(%s)", madv == BENCH_MADV_ON ?
			"MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
}

/*
 * Map size bytes of private anonymous memory, aligned to 2 MiB, apply the
 * THP advice and touch every page.  The alignment makes every 2 MiB of the
 * area eligible for a huge page (THP on) and makes the area cover whole
 * PTE tables (THP off), so results do not depend on where mmap happened to
 * put it.  Returns NULL for size 0.
 */
static inline char *bench_mem_setup(size_t size, enum bench_madv madv)
{
	size_t len, head, tail;
	char *raw, *addr;

	if (!size)
		return NULL;
	size = (size + BENCH_PAGE_SIZE - 1) & ~(BENCH_PAGE_SIZE - 1);
	len = size + BENCH_PMD_SIZE;
	raw = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		bench_die_errno("mmap of %zu MiB", size >> 20);

	/* Trim to the aligned part; unmap the slack so it is not inherited. */
	addr = (char *)(((uintptr_t)raw + BENCH_PMD_SIZE - 1) &
			~(BENCH_PMD_SIZE - 1));
	head = addr - raw;
	tail = len - head - size;
	if (head)
		munmap(raw, head);
	if (tail)
		munmap(addr + size, tail);

	bench_madvise(addr, size, madv);
	bench_touch(addr, size);
	return addr;
}

#endif /* PTSHARE_BENCH_H */
