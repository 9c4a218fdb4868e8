// SPDX-License-Identifier: GPL-2.0
/*
 * The load of a soak run: for SECONDS, a fork/exec storm and memory
 * workers that fork over large regions and check every page, while the
 * guest swaps.
 *
 *   soak-load [-s STORMERS] [-m MEMWORKERS] [-M MIB] [-X] SECONDS
 *
 * A stormer forks and execs short programs in a loop, as make does with a
 * compiler: each child execs busybox true, or sh -c with a pipe, and is
 * waited for. A memory worker maps MIB of private anonymous memory, writes
 * a tag into every page (worker, generation, page), forks a child that
 * checks every page and rewrites a random half with its own tag, and
 * checks every page again in the parent after the child exits: the
 * parent's pages must hold the parent's tags, the child's its own. With
 * more memory than RAM the pages swap out and in under both processes,
 * and on ptshare the tables are shared at each fork.
 *
 * Prints "soak-load: forks=F execs=E gens=G pages_checked=C mismatches=X
 * oom_killed=K workers_died=D" and exits 1 if X or D is not 0. A checking
 * child that the OOM killer took (SIGKILL) is counted in K, not in X.
 * -X damages one page in every checking child, to show that X counts.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PAGE	4096UL

/* Counters of one worker, reported to the parent through a pipe. */
struct tally {
	unsigned long forks, execs, gens, checked, mismatches, killed;
};

static time_t deadline;
static int selftest;	/* -X: the child damages a page, which must be seen */

static int time_left(void)
{
	return time(NULL) < deadline;
}

static uint64_t tag(unsigned int who, unsigned long gen, unsigned long page)
{
	return ((uint64_t)who << 48) ^ ((uint64_t)gen << 24) ^ page ^ 0x5a5a5a5a00000000ULL;
}

/* Stamp a page: its tag at the start and at the end. */
static void stamp(char *p, uint64_t t)
{
	memcpy(p, &t, sizeof(t));
	memcpy(p + PAGE - sizeof(t), &t, sizeof(t));
}

static int stamped(const char *p, uint64_t t)
{
	return !memcmp(p, &t, sizeof(t)) && !memcmp(p + PAGE - sizeof(t), &t, sizeof(t));
}

static void stormer(struct tally *t)
{
	static char *const progs[][4] = {
		{ "/bin/busybox", "true", NULL },
		{ "/bin/sh", "-c", "echo x | cat >/dev/null", NULL },
		{ "/bin/busybox", "ls", "/ptshare", NULL },
	};
	unsigned int i = 0;
	int st;

	while (time_left()) {
		pid_t pid = fork();

		if (pid < 0) {
			usleep(10000);
			continue;
		}
		if (!pid) {
			int fd = open("/dev/null", O_WRONLY);

			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execv(progs[i % 3][0], progs[i % 3]);
			_exit(127);
		}
		t->forks++;
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st))
			t->execs++;
		i++;
	}
}

/* Count the pages of [p, p + n pages) whose stamp is not want(page). */
static unsigned long check(const char *p, unsigned long n, const unsigned char *mine,
			   unsigned int self, unsigned int other, unsigned long gen,
			   unsigned long *checked)
{
	unsigned long i, bad = 0;

	for (i = 0; i < n; i++) {
		unsigned int who = mine && mine[i] ? other : self;

		if (!stamped(p + i * PAGE, tag(who, gen, i)))
			bad++;
	}
	*checked += n;
	return bad;
}

static void memworker(unsigned int id, size_t bytes, struct tally *t)
{
	unsigned long n = bytes / PAGE, i, gen;
	unsigned int self = 2 * id + 1, kid = 2 * id + 2;
	unsigned char *half = malloc(n);
	char *p;
	int st;

	p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || !half) {
		t->mismatches++;
		return;
	}
	madvise(p, bytes, MADV_NOHUGEPAGE);
	for (gen = 0; time_left(); gen++) {
		pid_t pid;
		int pfd[2];

		for (i = 0; i < n; i++)
			stamp(p + i * PAGE, tag(self, gen, i));
		srand(gen * 7919 + id);
		for (i = 0; i < n; i++)
			half[i] = rand() & 1;
		if (pipe(pfd))
			break;
		pid = fork();
		if (pid < 0) {
			close(pfd[0]);
			close(pfd[1]);
			usleep(10000);
			continue;
		}
		if (!pid) {
			struct tally c = { 0 };

			c.mismatches = check(p, n, NULL, self, 0, gen, &c.checked);
			for (i = 0; i < n; i++)
				if (half[i])
					stamp(p + i * PAGE, tag(kid, gen, i));
			if (selftest)
				stamp(p, 0);
			c.mismatches += check(p, n, half, self, kid, gen, &c.checked);
			write(pfd[1], &c, sizeof(c));
			_exit(0);
		}
		close(pfd[1]);
		t->forks++;
		if (waitpid(pid, &st, 0) != pid)
			st = -1;
		if (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
			t->killed++;	/* the OOM killer's choice, not a fault */
		} else {
			struct tally c = { 0 };

			if (!WIFEXITED(st) || WEXITSTATUS(st) ||
			    read(pfd[0], &c, sizeof(c)) != sizeof(c))
				c.mismatches = 1;
			t->checked += c.checked;
			t->mismatches += c.mismatches;
		}
		close(pfd[0]);
		/* The parent's pages still hold the parent's tags. */
		t->mismatches += check(p, n, NULL, self, 0, gen, &t->checked);
		t->gens++;
	}
	munmap(p, bytes);
	free(half);
}

int main(int argc, char **argv)
{
	unsigned int stormers = 2, memworkers = 2, mib = 512, k, nkids;
	struct tally sum = { 0 };
	int opt, fds[64], st, died = 0;
	pid_t kids[64];

	while ((opt = getopt(argc, argv, "s:m:M:X")) != -1) {
		switch (opt) {
		case 's': stormers = atoi(optarg); break;
		case 'm': memworkers = atoi(optarg); break;
		case 'M': mib = atoi(optarg); break;
		case 'X': selftest = 1; break;
		default: goto usage;
		}
	}
	if (optind != argc - 1 || atoi(argv[optind]) <= 0 ||
	    stormers + memworkers > 64 || !mib)
		goto usage;
	deadline = time(NULL) + atoi(argv[optind]);
	nkids = stormers + memworkers;
	for (k = 0; k < nkids; k++) {
		int pfd[2];

		if (pipe(pfd) || (kids[k] = fork()) < 0) {
			perror("soak-load: worker");
			return 2;
		}
		if (!kids[k]) {
			struct tally t = { 0 };

			close(pfd[0]);
			if (k < stormers)
				stormer(&t);
			else
				memworker(k - stormers, (size_t)mib << 20, &t);
			write(pfd[1], &t, sizeof(t));
			_exit(0);
		}
		close(pfd[1]);
		fds[k] = pfd[0];
	}
	for (k = 0; k < nkids; k++) {
		struct tally t;

		if (waitpid(kids[k], &st, 0) != kids[k] || !WIFEXITED(st) || WEXITSTATUS(st) ||
		    read(fds[k], &t, sizeof(t)) != sizeof(t)) {
			died++;
			continue;
		}
		sum.forks += t.forks;
		sum.execs += t.execs;
		sum.gens += t.gens;
		sum.checked += t.checked;
		sum.mismatches += t.mismatches;
		sum.killed += t.killed;
	}
	printf("soak-load: forks=%lu execs=%lu gens=%lu pages_checked=%lu mismatches=%lu oom_killed=%lu workers_died=%d\n",
	       sum.forks, sum.execs, sum.gens, sum.checked, sum.mismatches, sum.killed, died);
	return sum.mismatches || died ? 1 : 0;
usage:
	fprintf(stderr, "usage: soak-load [-s STORMERS] [-m MEMWORKERS] [-M MIB] [-X] SECONDS\n");
	return 2;
}
