// SPDX-License-Identifier: GPL-2.0
/*
 * shmreaders: N processes that read one shared region, as the backends of
 * a database read its shared buffers.
 *
 * The parent maps SIZE_MIB of shmem (a memfd, MAP_SHARED), writes every
 * page, and forks N children.  Each child reads one byte of every page,
 * reports its minor faults, and blocks until released.  The parent
 * reports, once all have read:
 *   readers_us     time from the first fork until the last child has
 *                  read everything (virtual time under icount);
 *   child_pte_kb   the children's VmPTE, summed (shared tables count in
 *                  every sharer's VmPTE, as if fork had copied them);
 *   pt_alive_kb    page-table memory of the whole system while all the
 *                  children are alive, less what it was before the first
 *                  fork: the memory the children's tables really take;
 *   child_minflt   the children's minor faults while reading, summed.
 * Run it with -s 0 for the page tables of N bare children, to subtract.
 * Without ptshare, or with vm.pt_share_shared=0, every child builds its
 * own tables by faulting (one fault per 16 pages, with fault-around);
 * with vm.pt_share_shared=1 it starts with the parent's.
 *
 * With -u, no reader inherits the region: an owner process maps the
 * memfd, writes every page and waits, and each child maps the memfd
 * itself, as backends that attach a SysV segment or open the same memfd
 * or file do.  Fork then shares nothing of it; with vm.pt_share_shared=2,
 * a child attaches the tables that the owner (or another child) built.
 * The owner's tables count in the page tables before the first reader.
 * With -f FILE, the region is a file created there (on ext4, say)
 * instead of a memfd.
 */
#include "bench.h"

#include <signal.h>

#include <sys/resource.h>

struct opts {
	unsigned long size_mib;
	unsigned long children;
	int unrelated;
	const char *file;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: shmreaders [-s SIZE_MIB] [-n CHILDREN] [-u] [-f FILE] [-h]\n"
"  -s  shared memory (a memfd) in MiB (default 64; 0 for bare children)\n"
"  -n  number of reading children (default 10)\n"
"  -u  each child maps the memfd itself (default: inherits the mapping)\n"
"  -f  a file to create and map instead of a memfd (e.g. on ext4)\n"
"  -h  this help\n");
}

static long minflt(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

/*
 * Child: read every page (of its own mapping of @fd if @p is NULL), send
 * its fault count, wait for EOF.
 */
static void __noreturn reader(const char *p, int fd, size_t size,
			      int done_fd, int release_fd)
{
	volatile const char *v;
	unsigned long sum = 0;
	long f0 = minflt(), faults;
	char c;

	if (!p && size) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			_exit(4);
		madvise((void *)p, size, MADV_NOHUGEPAGE);
	}
	v = p;

	for (size_t off = 0; off < size; off += 4096)
		sum += v[off];
	faults = minflt() - f0;
	if (sum == 1)		/* keep the reads */
		faults++;
	if (write(done_fd, &faults, sizeof(faults)) != (ssize_t)sizeof(faults))
		_exit(3);
	while (read(release_fd, &c, 1) < 0 && errno == EINTR)
		;
	_exit(0);
}

/* Map the memfd @fd shared, and write every page. */
static char *map_and_fill(int fd, size_t size)
{
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		bench_die_errno("mmap");
	madvise(p, size, MADV_NOHUGEPAGE);
	for (size_t off = 0; off < size; off += 4096)
		p[off] = (char)(off >> 12);
	return p;
}

/*
 * The owner of -u: a process that maps the memfd, writes every page and
 * keeps the mapping until it is killed.  Returns once it is ready.
 */
static pid_t start_owner(int fd, size_t size)
{
	int ready[2];
	pid_t pid;
	char c = 0;

	if (pipe(ready))
		bench_die_errno("pipe");
	pid = fork();
	if (pid < 0)
		bench_die_errno("fork of the owner");
	if (!pid) {
		map_and_fill(fd, size);
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		bench_die("the owner did not get ready");
	close(ready[0]);
	return pid;
}

int main(int argc, char **argv)
{
	struct opts o = { .size_mib = 64, .children = 10 };
	long faults, total_faults = 0, pte_kb = 0, pt_before, pt_alive;
	int done[2], rel[2], c;
	size_t size;
	uint64_t t0;
	pid_t *pids;
	char *p = NULL;
	pid_t owner = 0;
	int fd = -1;

	bench_init("shmreaders");
	while ((c = bench_getopt(argc, argv, "s:n:uf:h", usage)) != -1) {
		switch (c) {
		case 's':
			o.size_mib = bench_parse_ulong(optarg, c, 0, ULONG_MAX);
			break;
		case 'n':
			o.children = bench_parse_ulong(optarg, c, 1, 100000);
			break;
		case 'u':
			o.unrelated = 1;
			break;
		case 'f':
			o.file = optarg;
			break;
		}
	}
	bench_param("size_mib=%lu", o.size_mib);
	bench_param("children=%lu", o.children);
	if (o.unrelated)
		bench_param("mapping=own");
	if (o.file)
		bench_param("backing=file");
	size = bench_mib(o.size_mib);

	if (size) {
		if (o.file)
			fd = open(o.file, O_RDWR | O_CREAT | O_TRUNC, 0600);
		else
			fd = memfd_create("shmreaders", 0);
		if (fd < 0 || ftruncate(fd, size))
			bench_die_errno("%s of %lu MiB", o.file ? o.file : "memfd",
					o.size_mib);
	}
	if (size && o.unrelated) {
		owner = start_owner(fd, size);
	} else if (size) {
		p = map_and_fill(fd, size);
		close(fd);
	}
	pids = calloc(o.children, sizeof(*pids));
	if (!pids || pipe(done) || pipe(rel))
		bench_die_errno("setup");

	fflush(stdout);
	pt_before = bench_pt_pages();
	t0 = bench_now_ns();
	for (unsigned long i = 0; i < o.children; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			bench_die_errno("fork of child %lu", i + 1);
		if (!pids[i]) {
			close(rel[1]);
			close(done[0]);
			reader(p, fd, size, done[1], rel[0]);
		}
	}
	for (unsigned long i = 0; i < o.children; i++) {
		if (read(done[0], &faults, sizeof(faults)) !=
		    (ssize_t)sizeof(faults))
			bench_die("a child did not report");
		total_faults += faults;
	}
	bench_result("readers_us", bench_ns_to_us(bench_now_ns() - t0), "us",
		     1);
	pt_alive = bench_pt_pages();
	for (unsigned long i = 0; i < o.children; i++)
		pte_kb += bench_vmpte_kb(pids[i]);
	close(rel[1]);
	for (unsigned long i = 0; i < o.children; i++)
		bench_reap(pids[i], NULL);
	if (owner) {
		kill(owner, SIGKILL);
		waitpid(owner, NULL, 0);
	}
	if (o.file)
		unlink(o.file);
	bench_result("child_pte_kb", pte_kb, "kB", 1);
	bench_result("pt_alive_kb", (pt_alive - pt_before) *
		     (sysconf(_SC_PAGESIZE) / 1024), "kB", 1);
	bench_result("child_minflt", total_faults, "faults", 1);
	return 0;
}
