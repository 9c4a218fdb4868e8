/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers of the ptshare tests that fork once and check, page by page, what
 * parent and child each see (fork_ops, fork_mm, fork_gup):
 *
 *  - page generations: page i in generation g holds pts_val(i, g) in its
 *    first word and the complement in its last, so that a page of another
 *    generation or index, zeroed or torn shows;
 *  - a duo: parent and child in lock step, a pipe each way, and the case's
 *    result combined from both sides.
 */
#ifndef PTSHARE_PTS_DUO_H
#define PTSHARE_PTS_DUO_H

#include <stdint.h>
#include <sys/wait.h>
#include "tap.h"
#include "pts.h"

#define PTS_WORDS	(PTS_PAGE / 8)

/* Expectations only, never written (fork_ops): zeroes, an unmapped page. */
#define PTS_ZERO	(-1)
#define PTS_HOLE	(-2)

/* Result of one side of a duo; the child's is its exit status. */
enum { RES_OK, RES_FAIL, RES_SKIP };

/* Who speaks in diagnostics; duo_fork() makes it "child" in the child. */
static const char *pts_me = "parent";

/* What a page of zeroes holds, to compare with. */
static const char pts_zero_page[PTS_PAGE];

/*
 * Generation 0 holds the same in every page, not its index (fork_mm sets
 * this for KSM, which merges only pages alike).
 */
static int pts_same_g0;

/* Word 0 of page i in generation g; never 0, so a zeroed page shows. */
static inline uint64_t pts_val(unsigned long i, int g)
{
	if (g == 0 && pts_same_g0)
		i = 0;
	return ((uint64_t)(g + 1) << 48) | i;
}

static inline void pts_put(char *page, unsigned long i, int g)
{
	uint64_t *w = (uint64_t *)page;

	w[0] = pts_val(i, g);
	w[PTS_WORDS - 1] = ~pts_val(i, g);
}

static inline int pts_is_mapped(const char *p)
{
	unsigned char v;

	return mincore((void *)p, PTS_PAGE, &v) == 0 || errno != ENOMEM;
}

/*
 * 0 if page p (page i of the region) holds generation g, else 1, reported
 * unless what is NULL (callers report the first few bad pages only).
 */
static inline unsigned long pts_bad_page(const char *p, unsigned long i, int g,
					 const char *what)
{
	const uint64_t *w = (const uint64_t *)p;
	int ok;

	if (g == PTS_HOLE)
		ok = !pts_is_mapped(p);
	else if (g == PTS_ZERO)
		ok = !memcmp(p, pts_zero_page, PTS_PAGE);
	else
		ok = w[0] == pts_val(i, g) &&
		     w[PTS_WORDS - 1] == ~pts_val(i, g);
	if (ok)
		return 0;
	if (!what)
		return 1;
	if (g == PTS_HOLE)
		tap_diag("%s: %s: page %lu is still mapped", pts_me, what, i);
	else
		tap_diag("%s: %s: page %lu has %#llx/%#llx, want gen %d",
			 pts_me, what, i, (unsigned long long)w[0],
			 (unsigned long long)w[PTS_WORDS - 1], g);
	return 1;
}

/* Pages [first, first + n), the first at p, not holding generation g. */
static inline unsigned long pts_check(const char *p, unsigned long first,
				      unsigned long n, int g, const char *what)
{
	unsigned long bad = 0;

	for (unsigned long i = 0; i < n; i++)
		if (pts_bad_page(p + i * PTS_PAGE, first + i, g,
				 bad < 3 ? what : NULL))
			bad++;
	return bad;
}

/* Write generation g to every step-th page of [first, first + n). */
static inline void pts_fill(char *p, unsigned long first, unsigned long n,
			    int g, unsigned long step)
{
	for (unsigned long i = 0; i < n; i++)
		if ((first + i) % step == 0)
			pts_put(p + i * PTS_PAGE, first + i, g);
}

/* Two processes in lock step: fork with a pipe each way. */
struct duo {
	pid_t peer;		/* the other process */
	int child;		/* this is the child */
	int to, from;
};

/* fork(), as in the parent and the child; -1 if the pipes or fork fail. */
static inline pid_t duo_fork(struct duo *d)
{
	int p2c[2], c2p[2];
	pid_t pid;

	if (pipe(p2c) || pipe(c2p))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	d->child = !pid;
	d->peer = pid ? pid : getppid();
	d->to = pid ? p2c[1] : c2p[1];
	d->from = pid ? c2p[0] : p2c[0];
	/* Close the other ends, so that a peer that dies shows as EOF. */
	close(pid ? p2c[0] : p2c[1]);
	close(pid ? c2p[1] : c2p[0]);
	if (!pid)
		pts_me = "child";
	return pid;
}

static inline void duo_signal(struct duo *d)
{
	write(d->to, "x", 1);
}

/* Returns when the peer signals, or has exited (EOF). */
static inline void duo_wait(struct duo *d)
{
	char x;

	while (read(d->from, &x, 1) < 0 && errno == EINTR)
		;
}

/*
 * In the child: exit with its result. In the parent: reap the child and
 * combine its result with the parent's: a failure on either side, or a
 * child that died, fails the case; else a skip on either side skips it.
 */
static inline int duo_end(struct duo *d, int r)
{
	int status;

	close(d->to);
	close(d->from);
	if (d->child) {
		fflush(stdout);
		_exit(r);
	}
	if (waitpid(d->peer, &status, 0) != d->peer || !WIFEXITED(status) ||
	    WEXITSTATUS(status) == RES_FAIL || WEXITSTATUS(status) > RES_SKIP)
		return RES_FAIL;
	if (r == RES_FAIL)
		return RES_FAIL;
	return r == RES_SKIP || WEXITSTATUS(status) == RES_SKIP ?
	       RES_SKIP : RES_OK;
}

/* The TAP line of a case whose result is r; why is the reason of a skip. */
static inline void duo_report(int r, const char *why, const char *name)
{
	if (r == RES_SKIP)
		tap_skip(why, "%s", name);
	else
		tap_result(r == RES_OK, "%s", name);
}

#endif
