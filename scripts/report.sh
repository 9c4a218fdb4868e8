#!/bin/sh
# Comparison report in the style of mmtests' compare-kernels: one row per
# metric, one column per kernel (mode), the ratio to the first kernel, and
# the spread of the repetitions ((max-min)/median).
# Usage: scripts/report.sh results.tsv "KERNEL..." QUICK
set -eu
tsv=${1:?usage: report.sh results.tsv KERNELS QUICK}
kernels=${2:?}
quick=${3:-0}

# Columns named native-* (RUN/native-* in scripts/compare.sh) ran on real
# hardware (scripts/native-bench.sh), the others in QEMU under icount.
native=0 guest=0
for k in $kernels; do
	case ${k##*/} in native-*) native=1 ;; *) guest=1 ;; esac
done
cat <<EOF2
# ptshare benchmark report

- Kernels: $kernels (first is the reference for ratios)
EOF2
if [ "$guest" = 1 ]; then cat <<'EOF2'
- Method: each kernel boots in QEMU TCG with `-icount shift=0,sleep=off`
  (1 CPU): guest time advances 1 ns per guest instruction, so every time
  below is **virtual time** (instruction count), repeatable to ~0.01% and
  blind to cache misses. Values are medians of the repetitions; spread is
  (max-min)/median. Wall time of each boot is in the last table.
EOF2
fi
if [ "$native" = 1 ]; then cat <<'EOF2'
- Method (native-* columns): the same suite run on the machine itself,
  on the kernel it had booted (`make native-bench`), so times there are
  **wall-clock time**, with the machine's caches, frequency scaling and
  other load in them; compare native runs of one machine only, and
  mind the spread. Values are medians of the repetitions; spread is
  (max-min)/median. Wall time of each run is in the last table.
EOF2
fi
[ "$native" = 0 ] || [ "$guest" = 0 ] || cat <<'EOF2'
- Native and QEMU columns measure different clocks: their ratios
  compare wall time with virtual time, not one kernel with another.
EOF2
cat <<EOF2
- Suite: $( [ "$quick" = 1 ] && echo "QUICK subset" || echo "full")
EOF2
if grep -q '^patch-scripts	' "$tsv"; then cat <<'EOF2'
- patch-scripts: bash applies 80 glibc patches one at a time (push), then
  removes them (pop), Morton's apatch/rpatch steps with GNU patch and
  busybox tools (natively, the machine's). *_forks is "processes" of
  /proc/stat over the pass (system-wide); *_execs are the programs the
  driver started (counted by the script, not by the kernel); *_pt_* are
  ptshare's /proc/vmstat counters.
EOF2
fi
if grep -q '^pgbench	' "$tsv"; then cat <<'EOF2'
- pgbench: Debian's PostgreSQL 15, shared_buffers 1 GiB filled by pgbench -i
  and pg_prewarm, 200 clients of pgbench -S (mode=select: connected once;
  mode=connect: -C, a new backend per transaction), in 4 KiB pages and in
  hugetlb pages (huge_pages=on); on ptshare with vm.pt_share_shared=2.
  backend_pte_kb is the sum of the client backends' VmPTE, each at its
  largest sample; backend_minflt the postmaster's cminflt over the run
  (its reaped backends); pagetables_kb the peak rise of PageTables in
  /proc/meminfo (ptshare counts a shared table in every sharer's VmPTE,
  but once in PageTables).
  keep=1: the session that ran pg_prewarm stays connected, so that one
  process maps all the pool with full tables, which ptshare attaches.
EOF2
fi
if grep -q '^zygote	' "$tsv"; then cat <<'EOF2'
- zygote: a dynamically linked parent dlopen()s about 200 MiB of Debian's
  libraries (bench/zygote-libs.txt: LLVM 15, ICU data, Z3, x265, Python,
  OpenSSL's libcrypto...), reads every page of its file mappings, then
  forks children that read them again without exec. file_tables_whole is
  how many of the file_tables (2 MiB ranges the mappings touch) one VMA
  covers: only those can be shared at fork. child_pte_kb sums the
  children's VmPTE, which counts a shared table in every sharer;
  pt_alive_kb is the rise of nr_page_table_pages with all children alive,
  the memory their tables really take. fork_shared_private_file is the
  delta of ptshare's counter over all the forks. subshell: bash runs
  x=$(echo hi) n times (fork without exec); child_minflt is its cminflt.
EOF2
fi
if grep -q '^redis	' "$tsv"; then cat <<'EOF2'
- redis: DEBUG POPULATE fills the dataset, then BGSAVE to tmpfs while
  redis-benchmark (SET, GET) runs; fork_us is redis's latest_fork_usec,
  idle_* the latencies before any snapshot. cow_kb is redis's
  rdb_last_cow_size (the child's smaps Private_Dirty); since patch 9 smaps
  counts pages under a shared table as shared, as after a copying fork.
EOF2
fi
echo

# The headline: the rows the README quotes, picked by suite, a pattern
# of the parameters and the metric; rows the run did not produce are left
# out (QUICK has no 8 GiB, no THP on, no 100 children).
headline() {
	awk -F'\t' -v kernels="$kernels" '
	BEGIN { nk = split(kernels, K, " ") }
	FNR == NR { if (split($0, t, "|") == 4) h[++nh] = $0; next }
	{ for (i = 1; i <= nh; i++) {
		split(h[i], r, "|")
		if ($1 == r[2] && $5 ~ r[3] && $6 == r[4]) v[i, $3] = $7
	} }
	function fmt(x) { return (x >= 100 ? sprintf("%.0f", x) : (x >= 1 ? sprintf("%.2f", x) : sprintf("%.3f", x))) }
	END {
		printf "## Headline\n\n| what |"
		for (j = 1; j <= nk; j++) printf " %s |", K[j]
		for (j = 2; j <= nk; j++) printf " %s/%s |", K[j], K[1]
		printf "\n|---|"
		for (j = 2; j <= 2 * nk; j++) printf "---|"
		printf "\n"
		for (i = 1; i <= nh; i++) {
			if (!((i, K[1]) in v)) continue
			split(h[i], r, "|")
			printf "| %s |", r[1]
			for (j = 1; j <= nk; j++) printf " %s |", ((i, K[j]) in v) ? fmt(v[i, K[j]]) : "-"
			for (j = 2; j <= nk; j++)
				printf " %s |", ((i, K[j]) in v && v[i, K[1]] > 0) ? sprintf("%.3f", v[i, K[j]] / v[i, K[1]]) : "-"
			printf "\n"
		}
	}' - "$tsv" <<'EOF2'
fork(), 1 GiB, THP off, us|fork-latency|size_mib=1024,mode=fork,thp=never|fork_us_median
fork(), 8 GiB, THP off, us|fork-latency|size_mib=8192,mode=fork,thp=never|fork_us_median
fork(), 8 GiB, THP on, us|fork-latency|size_mib=8192,mode=fork,thp=always|fork_us_median
fork+exit+wait, 1 GiB, THP off, us|fork-latency|size_mib=1024,mode=fork-exit,thp=never|fork_exit_us_median
fork+exec+wait, 1 GiB, THP off, us|fork-latency|size_mib=1024,mode=fork-exec,thp=never|fork_exec_us_median
fork+exit+wait, 0 MiB, us|fork-latency|size_mib=0,mode=fork-exit,thp=never|fork_exit_us_median
parent rewrites all after the child exited, page faults|cost-shifting|mode=parent-rewrite|rewrite_minflt_median
child rewrites 100% after fork, total us|cost-shifting|mode=child-write,pct=100,|total_us_median
page-table pages, 100 children alive|pt-memory|children=100,|pt_alive_pages
page-table pages, 10 children alive|pt-memory|children=10,|pt_alive_pages
100 readers of 1 GiB shmem, inherited: page tables alive, kB|shm-readers|size_mib=1024,children=100$|pt_alive_kb
100 readers of 1 GiB shmem, inherited: their minor faults|shm-readers|size_mib=1024,children=100$|child_minflt
100 readers of 1 GiB shmem, inherited: until all read, us|shm-readers|size_mib=1024,children=100$|readers_us
1000 readers of 1 GiB shmem, each maps it: page tables alive, kB|shm-readers|size_mib=1024,children=1000,mapping=own$|pt_alive_kb
1000 readers of 1 GiB shmem, each maps it: their minor faults|shm-readers|size_mib=1024,children=1000,mapping=own$|child_minflt
1000 readers of 1 GiB shmem, each maps it: until all read, us|shm-readers|size_mib=1024,children=1000,mapping=own$|readers_us
1000 readers of a 1 GiB ext4 file, each maps it: page tables alive, kB|shm-readers|size_mib=1024,children=1000,mapping=own,backing=file|pt_alive_kb
1000 readers of a 1 GiB ext4 file, each maps it: their minor faults|shm-readers|size_mib=1024,children=1000,mapping=own,backing=file|child_minflt
10 readers of 256 MiB shmem, each maps it: page tables alive, kB|shm-readers|size_mib=256,children=10,mapping=own$|pt_alive_kb
10 readers of 256 MiB shmem, each maps it: their minor faults|shm-readers|size_mib=256,children=10,mapping=own$|child_minflt
zygote, 100 children read 200 MiB of libraries: page tables alive, kB|zygote|children=100,|pt_alive_kb
zygote, 100 children: their VmPTE sum, kB|zygote|children=100,|child_pte_kb
zygote, 100 children: their minor faults|zygote|children=100,|child_minflt
zygote, 100 children: until all read, us|zygote|children=100,|children_us
zygote, 10 children: page tables alive, kB|zygote|children=10,|pt_alive_kb
zygote, 10 children: their minor faults|zygote|children=10,|child_minflt
zygote, 10 children: until all read, us|zygote|children=10,|children_us
bash $(...) subshells: their minor faults|zygote|^n=|child_minflt
bash $(...) subshell, us each|zygote|^n=|subshell_us
AIM9 fork_test, ops/s|aim9|mode=fork|fork_test
AIM9 exec_test, ops/s|aim9|mode=exec|exec_test
patch-scripts push 80 patches, ms|patch-scripts|patches=|push_ms_median
patch-scripts pop 80 patches, ms|patch-scripts|patches=|pop_ms_median
redis 1 GiB BGSAVE latest_fork_usec|redis|dataset=1024MiB|fork_us_median
redis 4 GiB BGSAVE latest_fork_usec|redis|dataset=4096MiB|fork_us_median
redis 4 GiB SET p99 during BGSAVE, ms|redis|dataset=4096MiB|set_p99_ms_median
redis 256 MiB BGSAVE latest_fork_usec|redis|dataset=256MiB|fork_us_median
pgbench -S, 4 KiB pages, tps|pgbench|pages=4k,clients=[0-9]+,mode=select|tps
pgbench -S, 4 KiB pages, connect all clients, ms|pgbench|pages=4k,clients=[0-9]+,mode=select|connect_all_ms
pgbench -S, 4 KiB pages, backends' VmPTE sum, kB|pgbench|pages=4k,clients=[0-9]+,mode=select|backend_pte_kb
pgbench -S, 4 KiB pages, backends' minor faults|pgbench|pages=4k,clients=[0-9]+,mode=select|backend_minflt
pgbench -S, 4 KiB pages, PageTables rise, kB|pgbench|pages=4k,clients=[0-9]+,mode=select|pagetables_kb
pgbench -S -C, 4 KiB pages, tps|pgbench|pages=4k,clients=[0-9]+,mode=connect|tps
pgbench -S -C, 4 KiB pages, average connection, ms|pgbench|pages=4k,clients=[0-9]+,mode=connect|connect_avg_ms
pgbench -S, huge pages, tps|pgbench|pages=huge,clients=[0-9]+,mode=select|tps
pgbench -S, huge pages, connect all clients, ms|pgbench|pages=huge,clients=[0-9]+,mode=select|connect_all_ms
pgbench -S, huge pages, backends' VmPTE sum, kB|pgbench|pages=huge,clients=[0-9]+,mode=select|backend_pte_kb
pgbench -S, huge pages, backends' minor faults|pgbench|pages=huge,clients=[0-9]+,mode=select|backend_minflt
pgbench -S -C, huge pages, tps|pgbench|pages=huge,clients=[0-9]+,mode=connect|tps
pgbench -S -C, huge pages, average connection, ms|pgbench|pages=huge,clients=[0-9]+,mode=connect|connect_avg_ms
pgbench -S, 4 KiB, prewarm session kept, tps|pgbench|pages=4k,clients=[0-9]+,keep=1,mode=select|tps
pgbench -S, 4 KiB, prewarm session kept, PageTables rise, kB|pgbench|pages=4k,clients=[0-9]+,keep=1,mode=select|pagetables_kb
pgbench -S, 4 KiB, prewarm session kept, backends' minor faults|pgbench|pages=4k,clients=[0-9]+,keep=1,mode=select|backend_minflt
EOF2
	echo
	echo "Ratios below 1 mean less time, fewer faults or fewer pages than"
	echo "$(echo "$kernels" | cut -d' ' -f1), except ops/s and tps, where above 1 is faster."
}
headline

awk -F'\t' -v kernels="$kernels" '
BEGIN { nk = split(kernels, K, " "); split("median value mean min max", S, " "); for (i in S) STATS[S[i]] = 1 }
{
	suite = $1; m = $6
	base = m; stat = "value"
	if (m ~ /_(min|median|max|mean)$/) {
		stat = m; sub(/.*_/, "", stat); sub(/_(min|median|max|mean)$/, "", base)
	}
	# The full parameters are in results.jsonl; the table shows the ones
	# that tell rows apart.
	param = $5
	gsub(/(^|,)(madv|thp_sys|rewrite|link)=[^,]*/, "", param); sub(/^,/, "", param)
	key = suite SUBSEP $2 SUBSEP param SUBSEP base
	if (!(key in seen)) { seen[key] = 1; order[++n] = key; unit[key] = $8 }
	kk = $3	# bench.sh labels carry the mode (ptshare-2)
	v[key, kk, stat] = $7
}
function fmt(x) { return (x >= 100 ? sprintf("%.0f", x) : (x >= 1 ? sprintf("%.2f", x) : sprintf("%.3f", x))) }
END {
	last = ""
	for (i = 1; i <= n; i++) {
		split(order[i], a, SUBSEP)
		if (a[1] != last) {
			last = a[1]
			printf "\n## %s\n\n| bench | param | metric | unit |", a[1]
			for (j = 1; j <= nk; j++) printf " %s |", K[j]
			for (j = 2; j <= nk; j++) printf " %s/%s |", K[j], K[1]
			printf " spread |\n|---|---|---|---|"
			for (j = 1; j <= 2 * nk; j++) printf "---|"
			printf "\n"
		}
		nz = 0
		for (j = 1; j <= nk; j++)
			for (st in STATS) if (v[order[i], K[j], st] + 0 != 0) nz = 1
		if (!nz) continue	# e.g. anon_huge_kb with THP off
		printf "| %s | %s | %s | %s |", a[2], a[3], a[4], unit[order[i]]
		sp = ""
		for (j = 1; j <= nk; j++) {
			x = v[order[i], K[j], "median"]
			if (x == "") x = v[order[i], K[j], "value"]
			if (x == "") x = v[order[i], K[j], "mean"]
			val[j] = x
			printf " %s |", (x == "" ? "-" : fmt(x))
			mn = v[order[i], K[j], "min"]; mx = v[order[i], K[j], "max"]
			if (mn != "" && x + 0 > 0) sp = sp (sp == "" ? "" : " / ") sprintf("%.1f%%", 100 * (mx - mn) / x)
		}
		for (j = 2; j <= nk; j++)
			printf " %s |", (val[1] + 0 > 0 && val[j] != "" ? sprintf("%.3f", val[j] / val[1]) : "-")
		printf " %s |\n", (sp == "" ? "-" : sp)
	}
}' "$tsv"
