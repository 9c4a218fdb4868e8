#!/bin/sh
# In-guest driver of the benchmark suite. Prints "result suite=S ..." lines
# (see bench/bench.h) on stdout, which the host collects from the console
# share. Usage: run-bench.sh QUICK(0|1)
quick=${1:-0}
B=/ptshare/bench
thp=/sys/kernel/mm/transparent_hugepage/enabled

if [ "$quick" = 1 ]; then
	sizes="0 16 256 1024"; thps="never"; reps=5; secs=2; pcts="0 10 100"
	cs_size=256; pt_size=256; pt_children="1 10"
	ps_reps=2; redis_sizes="256"; redis_reps=3; redis_req=10000
	shm_size=256; shm_readers="10"
	pg_scale=16; pg_tx=50; pg_conn=2
	zyg_children=10; subshells=1000
else
	sizes="0 16 64 256 1024 4096 8192"; thps="never always"; reps=10; secs=5
	pcts="0 1 10 50 100"; cs_size=1024; pt_size=1024; pt_children="1 10 100"
	ps_reps=5; redis_sizes="1024 4096"; redis_reps=3; redis_req=20000
	shm_size=1024; shm_readers="10 100 1000"
	pg_scale=64; pg_tx=100; pg_conn=3
	zyg_children=100; subshells=2000
fi

run() {
	suite=$1; shift
	echo "# $suite: $*" >&2
	"$@" | sed -n "s/^result /result suite=$suite /p"
}

# Kernel profile of one suite, when the kernel was booted with profile=N:
# clear the counters before the suite, copy them to /host/profile-SUITE.bin
# after it (the host turns them into listings with readprofile). The copy
# goes through tmpfs: read straight into the 9p share, the profile also
# counted the idle ticks of waiting for the host.
#
# The same suites also get /proc/vmstat rows (bench "vmstat"): counters as
# deltas over the suite, and a few gauges as they were when it started,
# which tell how much memory and page cache the suite found, so that a
# difference between kernels in a suite can be traced to its faults,
# allocations, reclaim or compaction.
vm_counters="pgfault pgmajfault pgalloc_normal pgalloc_dma32 pgscan_kswapd
	pgscan_direct pgsteal_file workingset_refault_file compact_stall
	thp_fault_alloc thp_split_pmd"
vm_gauges="nr_free_pages nr_file_pages nr_mapped nr_anon_pages
	nr_page_table_pages"
prof_start() {
	cat /proc/vmstat >/tmp/vmstat.start
	[ ! -w /proc/profile ] || echo >/proc/profile
}
vm_rows() {
	awk -v suite="$1" -v c="$vm_counters" -v g="$vm_gauges" '
		BEGIN { split(c, C); split(g, G) }
		FNR == NR { start[$1] = $2; next }
		{ end[$1] = $2 }
		END {
			for (i = 1; i in C; i++) if (C[i] in end)
				printf "result suite=%s bench=vmstat param=delta metric=%s value=%d unit=count reps=1\n",
					suite, C[i], end[C[i]] - start[C[i]]
			for (i = 1; i in G; i++) if (G[i] in start)
				printf "result suite=%s bench=vmstat param=at_start metric=%s value=%d unit=pages reps=1\n",
					suite, G[i], start[G[i]]
		}' /tmp/vmstat.start /proc/vmstat
}
prof_save() {
	vm_rows "$1"
	[ -r /proc/profile ] || return 0
	cat /proc/profile >/tmp/profile.bin
	mv /tmp/profile.bin "/host/profile-$1.bin"
}

prof_start

for t in $thps; do
	echo "$t" >"$thp"
	h=off; [ "$t" = always ] && h=none
	for s in $sizes; do
		for m in fork fork-exit fork-exec; do
			run fork-latency $B/forkbench -s "$s" -m "$m" -r "$reps" -t "$t" \
				-H "$h" -w -e $B/tiny
		done
	done
done
echo never >"$thp"
prof_save fork-latency

prof_start
run aim9 $B/aim9 -m fork -d "$secs"
run aim9 $B/aim9 -m exec -d "$secs" -e $B/tiny
prof_save aim9

# Morton's pushpatch/poppatch: 80 glibc patches, one at a time, from bash.
prof_start
run patch-scripts bash $B/patchscripts.sh -r "$ps_reps"
prof_save patch-scripts

for p in $pcts; do
	run cost-shifting $B/costshift -s "$cs_size" -m child-write -p "$p" -r "$reps"
done
run cost-shifting $B/costshift -s "$cs_size" -m parent-rewrite -r "$reps"

# BGSAVE of a redis dataset; a size needs about 1.5 times its RAM.
mem_mib=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024))
for s in $redis_sizes; do
	[ $((s * 3 / 2)) -lt "$mem_mib" ] || { echo "# redis: skip $s MiB (${mem_mib} MiB RAM)" >&2; continue; }
	run redis bash $B/redis.sh -s "$s" -r "$redis_reps" -n "$redis_req"
done

for n in $pt_children; do
	run pt-memory $B/ptmem -s "$pt_size" -n "$n" -H off
done

# N processes reading one shared region (a memfd), children of one parent;
# -s 0 gives the page tables of as many bare children. The children either
# inherit the parent's mapping, or (-u) each maps the memfd itself. On
# ptshare kernels, fork shares the tables of shared mappings and unrelated
# mappers attach to each other's (vm.pt_share_shared=2).
knob=/proc/sys/vm/pt_share_shared
if [ -w "$knob" ]; then echo 2 >"$knob"; fi
for n in $shm_readers; do
	run shm-readers $B/shmreaders -s 0 -n "$n"
	run shm-readers $B/shmreaders -s "$shm_size" -n "$n"
	run shm-readers $B/shmreaders -s "$shm_size" -n "$n" -u
	if [ -d /scratch ] && mountpoint -q /scratch; then
		run shm-readers $B/shmreaders -s "$shm_size" -n "$n" -u -f /scratch/shmreaders
	fi
done
if [ -w "$knob" ]; then echo 0 >"$knob"; fi

# PostgreSQL: pgbench -S with 200 backends reading one shared_buffers of
# 1 GiB, with connections kept (mode=select) and one per transaction
# (mode=connect), in 4 KiB pages and in hugetlb pages (huge_pages=on).
# On ptshare kernels backends attach each other's tables of the buffer
# pool (vm.pt_share_shared=2) and fill their holes in place (patch 33);
# the third run (keep=1) keeps the session that ran pg_prewarm, whose
# tables map all the pool, connected.
if [ -x /usr/lib/postgresql/15/bin/postgres ]; then
	old=; [ -w "$knob" ] && old=$(cat "$knob") && echo 2 >"$knob"
	for o in "-H off" "-H on" "-H off -k"; do
		# shellcheck disable=SC2086 # the options in $o
		run pgbench sh $B/pgbench.sh -b 1024 -s "$pg_scale" -c 200 -t "$pg_tx" \
			-r "$pg_conn" $o
	done
	[ -z "$old" ] || echo "$old" >"$knob"
fi

# Zygote: a parent preloads the libraries of zygote-libs.txt (about 200
# MiB mapped), reads every page of its file mappings, and forks children
# that read them again without exec, as Android's zygote and preforking
# servers do; then bash's $(...) subshells, the small end of it. On
# ptshare kernels (every mode but 0) fork shares the tables of private
# file mappings, those whose 2 MiB lie in one VMA (patch 35): the big
# libraries' data, and with -t (vm.pt_share_shared=1) their text and
# rodata; not the small libraries. Last, so that the
# suites before it run as they did before it was added.
zlibs=$(awk '!/^#/ && NF { print $2 }' $B/zygote-libs.txt) zmiss=
for so in $zlibs; do
	[ -e "/lib/x86_64-linux-gnu/$so" ] || [ -e "/usr/lib/x86_64-linux-gnu/$so" ] ||
		zmiss="$zmiss $so"
done
cat /proc/vmstat >/tmp/vmstat.start
if [ -n "$zmiss" ]; then
	echo "# zygote: skipped, no$zmiss (mkrootfs.sh WITH_ZYGOTE=1)" >&2
else
	# shellcheck disable=SC2086 # the list of libraries
	run zygote $B/zygote -n "$zyg_children" $zlibs
	# With -t, ptshare kernels share the tables of text too
	# (vm.pt_share_shared=1), not only those fork would copy.
	# shellcheck disable=SC2086 # the list of libraries
	run zygote $B/zygote -n "$zyg_children" -t $zlibs
fi
# Bash without ASLR, as bench/zygote runs itself: where its mappings fall
# against 2 MiB boundaries moved its faults by a few percent between boots.
aslr=/proc/sys/kernel/randomize_va_space old_aslr=$(cat $aslr)
echo 0 >$aslr
run zygote bash $B/subshell.sh -n "$subshells"
echo "$old_aslr" >$aslr
vm_rows zygote
