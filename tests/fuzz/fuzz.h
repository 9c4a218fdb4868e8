/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What fuzz.c (the fork tree and its shadow model) and unrelated.c (groups
 * of unrelated processes that share a file) have in common: the process's
 * state and random numbers, the operation log, the report of a violation.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stdint.h>
#include <sys/types.h>

#define PAGE		4096UL
#define WORDS		512
#define HALFW		256
#define PMD_PAGES	512UL		/* pages per PTE table */
#define MAXKIDS		2		/* concurrent children per process */
#define LOGN		48
#define LOGW		176
#define GOLDEN		0x9E3779B97F4A7C15ULL

/* Counted over all processes of a seed (shared memory). */
struct stats {
	long ops, procs, viol;
	/* groups of unrelated processes: groups, SIGBUS caught, zaps */
	long groups, sigbus, punches, truncs;
	/*
	 * private mappings of a file (ptext, pdata): regions mapped, writes
	 * through /proc/self/mem, pwrite()s, hole punches and truncations
	 * of the file, SIGBUS met beyond its end
	 */
	long pfmaps, pfpokes, pfwrites, pfpunches, pftruncs, pfbus;
};

/* This process. */
struct proc {
	uint64_t seed, rng;
	char path[64];		/* "0", "0.3", "0.3.1": place in the fork tree */
	int depth, nkids, born_conc, bad, nforks;
	pid_t kids[MAXKIDS];
	unsigned long opi;
	char log[LOGN][LOGW];
	unsigned long logn;
};

extern struct proc P;
extern struct stats *st;
extern int verbose;
extern unsigned long root_ops;
extern int unrelated_only;	/* -u: every op of the first process is a group */

uint64_t rnd64(void);
unsigned long rnd(unsigned long n);
void out(const char *buf, size_t n);
void oplog(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void die(const char *what) __attribute__((noreturn));
int frozen(void);

/* unrelated.c */
void op_unrelated(int selftest);
int unrelated_worker(int argc, char **argv);
void unrelated_setup(const char *shm_dir, const char *file_dir);

#endif
