// SPDX-License-Identifier: GPL-2.0
/*
 * forkbench: fork latency against the size of the forking process.
 *
 * The process maps SIZE_MIB of private anonymous memory, writes every
 * 4 KiB page so that every PTE is populated, and then times one of:
 *
 *   fork       the fork() call in the parent only: the cost that ptshare
 *              removes by sharing PTE tables instead of copying them.
 *              The child waits on a pipe until the parent has read its
 *              clock, then exits; it is reaped outside the timing.
 *   fork-exit  fork + child _exit + waitpid: adds the teardown of the
 *              child's mappings, which ptshare also changes.
 *   fork-exec  fork + execv(PATH) in the child + waitpid: the shell
 *              pattern, where the copied page tables are thrown away
 *              immediately.
 *
 * THP: the harness sets the sysfs mode; this program only applies the
 * madvise part.  -t names the scenario (never, always, madvise-on,
 * madvise-off) and implies -H (madvise-on: MADV_HUGEPAGE, madvise-off:
 * MADV_NOHUGEPAGE); -H sets the advice explicitly.  A -t that disagrees
 * with sysfs only warns, so a misconfigured run is visible but still runs.
 */
#include "bench.h"

enum mode { MODE_FORK, MODE_FORK_EXIT, MODE_FORK_EXEC };

static const char *const mode_names[] = { "fork", "fork-exit", "fork-exec" };
static const char *const metric_names[] = { "fork_us", "fork_exit_us",
					    "fork_exec_us" };

struct opts {
	unsigned long size_mib;
	enum mode mode;
	int reps;
	int warmup;
	int rewrite;
	const char *thp;	/* -t label, or NULL */
	enum bench_madv madv;
	int madv_set;		/* -H given */
	const char *exec_path;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: forkbench [-s SIZE_MIB] [-m fork|fork-exit|fork-exec] [-r REPS]\n"
"                 [-t never|always|madvise-on|madvise-off] [-H on|off|none]\n"
"                 [-e PATH] [-w] [-W WARMUP] [-h]\n"
"  -s  touched private anonymous memory in MiB (default 0)\n"
"  -m  what to time (default fork):\n"
"        fork       the fork() call in the parent only\n"
"        fork-exit  fork + child _exit(0) + waitpid\n"
"        fork-exec  fork + execv(PATH) in the child + waitpid\n"
"  -r  timed repetitions (default 10)\n"
"  -t  THP scenario label; madvise-on/-off imply -H on/off; warns if\n"
"      /sys/kernel/mm/transparent_hugepage/enabled disagrees\n"
"  -H  madvise the area: on = MADV_HUGEPAGE, off = MADV_NOHUGEPAGE,\n"
"      none = no advice (default none, or as implied by -t)\n"
"  -e  program to exec for fork-exec (default /bin/true)\n"
"  -w  rewrite every page before each repetition (untimed), so every fork\n"
"      starts from writable PTEs as after a fresh fill\n"
"  -W  untimed warm-up repetitions before the timed ones (default 0)\n"
"  -h  this help\n");
}

static enum mode parse_mode(const char *s)
{
	int i;

	for (i = 0; i < 3; i++)
		if (!strcmp(s, mode_names[i]))
			return i;
	bench_die("-m: '%s' is not one of fork, fork-exit, fork-exec", s);
}

/* Check -t, and let it imply the advice unless -H was given. */
static void apply_thp_label(struct opts *o)
{
	static const char *const labels[] = { "never", "always",
					      "madvise-on", "madvise-off" };
	const char *sys = bench_thp_sysfs();
	size_t n;
	int i;

	for (i = 0; i < 4; i++)
		if (!strcmp(o->thp, labels[i]))
			break;
	if (i == 4)
		bench_die("-t: '%s' is not one of never, always, madvise-on, madvise-off",
			  o->thp);
	if (!o->madv_set && i == 2)
		o->madv = BENCH_MADV_ON;
	if (!o->madv_set && i == 3)
		o->madv = BENCH_MADV_OFF;

	/* "madvise-on" matches sysfs "madvise", "never" matches "never". */
	n = strcspn(o->thp, "-");
	if (strlen(sys) != n || strncmp(sys, o->thp, n))
		bench_warn("-t %s but THP sysfs mode is '%s'", o->thp, sys);
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->mode = MODE_FORK;
	o->reps = 10;
	o->exec_path = "/bin/true";

	while ((c = bench_getopt(argc, argv, "s:m:r:t:H:e:wW:h",
				 usage)) != -1) {
		switch (c) {
		case 's':
			o->size_mib = bench_parse_ulong(optarg, c, 0, ULONG_MAX);
			break;
		case 'm':
			o->mode = parse_mode(optarg);
			break;
		case 'r':
			o->reps = bench_parse_ulong(optarg, c, 1, 1000000);
			break;
		case 't':
			o->thp = optarg;
			break;
		case 'H':
			o->madv = bench_parse_madv(optarg, c);
			o->madv_set = 1;
			break;
		case 'e':
			o->exec_path = optarg;
			break;
		case 'w':
			o->rewrite = 1;
			break;
		case 'W':
			o->warmup = bench_parse_ulong(optarg, c, 0, 1000000);
			break;
		}
	}
	if (o->thp)
		apply_thp_label(o);
	if (o->mode == MODE_FORK_EXEC && access(o->exec_path, X_OK))
		bench_die_errno("-e %s", o->exec_path);
}

static pid_t do_fork(void)
{
	pid_t pid = fork();

	if (pid < 0)
		bench_die_errno("fork");
	return pid;
}

/* The child of fork-exec; reports a failed exec through status 127. */
static void __noreturn exec_child(const char *path)
{
	char *const argv[] = { (char *)path, NULL };

	execv(path, argv);
	_exit(127);
}

/*
 * The child of fork: it waits on @fd until the parent has read its clock,
 * so that a scheduler that runs the child first cannot put the child's
 * exit (the teardown of its mappings) into the parent's fork time.
 */
static void __noreturn fork_child(int fd)
{
	char c;

	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* One repetition; returns the timed interval in microseconds. */
static double one_rep(const struct opts *o)
{
	uint64_t t0, t1;
	int go[2] = { -1, -1 };
	pid_t pid;

	if (o->mode == MODE_FORK && pipe(go))
		bench_die_errno("pipe");
	t0 = bench_now_ns();
	pid = do_fork();
	if (!pid) {
		if (o->mode == MODE_FORK_EXEC)
			exec_child(o->exec_path);
		if (o->mode == MODE_FORK) {
			close(go[1]);
			fork_child(go[0]);
		}
		_exit(0);
	}
	if (o->mode == MODE_FORK) {
		/* Only the parent's return from fork() is timed. */
		t1 = bench_now_ns();
		/* EOF on the pipe lets the child exit. */
		close(go[1]);
		close(go[0]);
		bench_reap(pid, NULL);
	} else {
		bench_reap(pid, NULL);
		t1 = bench_now_ns();
	}
	return bench_ns_to_us(t1 - t0);
}

int main(int argc, char **argv)
{
	struct opts o;
	size_t size;
	char *mem;
	double *us;
	long huge_kb;
	int i;

	bench_init("forkbench");
	parse_opts(argc, argv, &o);
	size = bench_mib(o.size_mib);
	us = bench_samples(o.reps);

	bench_param("size_mib=%lu", o.size_mib);
	bench_param("mode=%s", mode_names[o.mode]);
	bench_param("thp=%s", o.thp ? o.thp : bench_thp_label(o.madv));
	bench_param("madv=%s", bench_madv_name(o.madv));
	bench_param("thp_sys=%s", bench_thp_sysfs());
	bench_param("rewrite=%d", o.rewrite);

	mem = bench_mem_setup(size, o.madv);
	/* Lets the harness check that THP really was (not) in effect. */
	huge_kb = bench_anon_huge_kb();

	fflush(stdout);		/* nothing buffered may be inherited */
	for (i = 0; i < o.warmup + o.reps; i++) {
		if (o.rewrite && i)
			bench_touch(mem, size);
		us[i < o.warmup ? 0 : i - o.warmup] = one_rep(&o);
	}

	if (huge_kb >= 0)
		bench_result("anon_huge_kb", huge_kb, "kB", 1);
	bench_report_stats(metric_names[o.mode], us, o.reps, "us");
	return 0;
}
