#!/bin/sh
# The benchmark suite on the running kernel, without QEMU (make
# native-bench): build bench/ for this machine, run the guest's driver
# (tests/guest/run-bench.sh, with its guest paths mapped to build/native/)
# here, and write results/<run-id>/ with results.jsonl, report.md and
# manifest.txt in the format of scripts/bench.sh, plus results.tsv and the
# driver's output (console-native.log). The run has one kernel column, named
# after the running kernel: native-RELEASE without ptshare,
# native-RELEASE+ptshare with vm.pt_share in auto mode (1), and
# +ptshare-0 or +ptshare-2 in the other modes. To compare a vanilla and a
# ptshare boot of one machine, run it on each boot, then
#   scripts/compare.sh RUN_A RUN_B
#
# Times are wall-clock here, not icount's virtual time: caches, frequency
# scaling and other load are in them. Compare runs of the same machine,
# with no other load and the cpufreq governor "performance"; CPUS=N pins
# the run to one CPU, where parent and child compete as on the 1-CPU guest.
#
# Needs root: the suites set the THP mode and vm sysctls (put back at the
# end), reserve hugetlb pages and run PostgreSQL as user postgres. A suite
# whose programs the machine lacks is skipped, with a line saying why:
# patch-scripts (GNU patch, bash, the glibc-source workload of
# scripts/prep-patch-scripts.sh), redis (Debian's redis-tools), pgbench
# (Debian's postgresql-15, as scripts/deps.sh installs it with WITH_PGSQL=1),
# shm-readers of a file (a filesystem mounted on /scratch, the guest's
# disk). Without ptshare (no vm.pt_share_shared) shm-readers and pgbench
# run as on vanilla. The full suite needs about 10 GiB of free memory (it
# forks 8 GiB), QUICK=1 about 4 GiB.
#
# Usage: scripts/native-bench.sh   (as root) the full suite, as make bench
#        QUICK=1    the subset of make bench QUICK=1
#        NAME=x     the run id is DATE-native[-quick]-x (letters, digits, . _ -)
#        CPUS=list  pin the run to these CPUs (taskset -c list)
set -eu
. "$(dirname "$0")/lib.sh"

quick=${QUICK:-0}
name=${NAME:-}
cpus=${CPUS:-}
case $name in *[!A-Za-z0-9._-]*) die "NAME may hold letters, digits, '.', '_' and '-' only" ;; esac
[ "$(id -u)" = 0 ] ||
	die "needs root: the suites set the THP mode and vm sysctls, reserve hugetlb pages and run PostgreSQL as user postgres (sudo make native-bench)"
command -v cc >/dev/null || die "no C compiler: apt-get install build-essential"
[ -z "$cpus" ] || command -v taskset >/dev/null || die "CPUS needs taskset (util-linux)"
need=10240
[ "$quick" = 1 ] && need=4096
avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
[ "$avail" -ge "$need" ] ||
	die "the suite needs about $need MiB of free memory, MemAvailable is $avail MiB$([ "$quick" = 1 ] || echo '; QUICK=1 needs 4096')"

# The kernel column, and its mode as scripts/bench.sh records it.
if [ -r /proc/sys/vm/pt_share ]; then
	mode=$(cat /proc/sys/vm/pt_share)
	k=native-$(uname -r)+ptshare
	[ "$mode" = 1 ] || k=$k-$mode
else
	mode=default k=native-$(uname -r)
fi

# build/native/: bench/ (the programs and drivers, as /ptshare/bench in the
# guest), patch-scripts/ (beside it, as in the guest), bin/ (put first on
# PATH), host/ (the guest's /host: the kernel profiles, when this kernel
# was booted with profile=N) and the driver.
stage=$BUILD/native
B=$stage/bench
rm -rf "$stage"
mkdir -p "$stage/bin" "$stage/host"
make -s -C "$ROOT/bench" OUT="$B"
drv=$stage/run-bench.sh
guest=$ROOT/tests/guest/run-bench.sh
left=$(sed -e 's|/ptshare/bench||g; s|/host/||g; /^[[:space:]]*#/d' "$guest" | grep '/ptshare\|/host' || true)
[ -z "$left" ] || die "tests/guest/run-bench.sh uses guest paths that native-bench.sh does not map: $left"
sed -e "s|/ptshare/bench|$B|g; s|/host/|$stage/host/|g" "$guest" >"$drv"

# skip DRIVER REASON: the suite of bench/DRIVER cannot run here; its
# driver is replaced by one that says so.
skip() {
	log "skip ${1%.sh}: $2"
	printf '#!/bin/sh\necho "# %s: skipped: %s" >&2\n' "${1%.sh}" "$2" >"$B/$1"
}
command -v bash >/dev/null || die "bash is missing (the drivers of patch-scripts and redis)"
if ! command -v patch >/dev/null; then
	skip patchscripts.sh "no GNU patch (apt-get install patch)"
elif "$ROOT/scripts/prep-patch-scripts.sh"; then
	ln -s "$BUILD/patch-scripts" "$stage/patch-scripts"
else
	skip patchscripts.sh "no workload: scripts/prep-patch-scripts.sh failed (it downloads glibc-source with apt-get)"
fi
# Debian's redis-tools has the server as redis-check-rdb, which serves
# when called redis-server (the link of the redis-server package).
if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null; then
	skip redis.sh "no redis-cli or redis-benchmark (apt-get install redis-tools)"
elif ! command -v redis-server >/dev/null; then
	if s=$(command -v redis-check-rdb); then
		ln -s "$s" "$stage/bin/redis-server"
	else
		skip redis.sh "no redis-server (apt-get install redis-tools)"
	fi
fi
# run-bench.sh runs pgbench only where postgres is.
pg=/usr/lib/postgresql/15/bin
if [ ! -x $pg/postgres ]; then
	log "skip pgbench: no PostgreSQL 15 ($pg/postgres; Debian's postgresql-15)"
else
	why=
	for p in initdb pg_ctl pgbench psql; do
		[ -x $pg/$p ] || why="no $pg/$p (postgresql-15, postgresql-client-15)"
	done
	grep -q '^postgres:' /etc/passwd || why="no user postgres"
	[ -z "$why" ] || skip pgbench.sh "$why"
fi
mountpoint -q /scratch 2>/dev/null ||
	log "skip shm-readers of a file (-f): nothing mounted on /scratch (in the guest, an ext4 disk)"
knob=/proc/sys/vm/pt_share_shared
[ -w $knob ] ||
	log "skip vm.pt_share_shared=2 in shm-readers and pgbench: the kernel has no $knob (they run as on vanilla)"

# The driver leaves THP at never and vm.pt_share_shared at 0: put back
# what the machine had.
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_old='' knob_old=''
[ ! -r $thp ] || thp_old=$(sed 's/.*\[\(.*\)\].*/\1/' $thp)
[ ! -w $knob ] || knob_old=$(cat $knob)
restore() {
	[ -z "$thp_old" ] || echo "$thp_old" >$thp || true
	[ -z "$knob_old" ] || echo "$knob_old" >$knob || true
}
trap restore EXIT
trap 'exit 1' INT TERM
[ -n "$thp_old" ] || log "no $thp: fork-latency cannot set the THP mode"

id=$(date +%Y%m%d-%H%M%S)-native
[ "$quick" = 1 ] && id=$id-quick
[ -z "$name" ] || id=$id-$name
res=$ROOT/results/$id
mkdir -p "$res"
"$ROOT/scripts/manifest.sh" "$res" native -- \
	"QUICK=$quick NAME=$name CPUS=$cpus scripts/native-bench.sh"
log "$k (vm.pt_share: $mode): $([ "$quick" = 1 ] && echo QUICK subset || echo full suite) into $res"

set -- sh "$drv" "$quick"
[ -z "$cpus" ] || set -- taskset -c "$cpus" "$@"
PATH=$stage/bin:$PATH
export PATH
start=$(date +%s)
# The driver's progress and skips go to the terminal and the log.
{ "$@" 2>&1 >"$stage/bench.txt"; } | tee "$res/console-native.log" >&2
wall=$(($(date +%s) - start))
grep -q '^result ' "$stage/bench.txt" || die "no results (log: $res/console-native.log)"

result_rows "$k" "$mode" "$stage/bench.txt" >"$res/results.tsv"
printf 'run\tnative\t%s\t%s\t-\twall_s\t%s\ts\t1\n' "$k" "$mode" "$wall" >>"$res/results.tsv"
tsv_jsonl "$res/results.tsv" >"$res/results.jsonl"
"$ROOT/scripts/report.sh" "$res/results.tsv" "$k" "$quick" >"$res/report.md"
cat "$res/report.md"
log "$k: $(grep -c . "$res/results.tsv") results, ${wall}s wall; results in $res"
log "compare with another run: scripts/compare.sh $id RUN"
