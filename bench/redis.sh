#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# redis: the snapshotting server that fork()s its whole dataset. Start
# Debian's redis-server, fill it with DEBUG POPULATE (1 KiB values), then
# repeatedly BGSAVE to a tmpfs directory and, while the snapshot child runs,
# measure request latency with redis-benchmark (SET then GET, random keys).
#
# Usage: redis.sh [-s MIB] [-r REPS] [-n REQUESTS] [-c CLIENTS] [-d DIR]
#   MIB       dataset size (default 256): MIB*930 keys of 1 KiB, about MIB
#             MiB of used_memory
#   DIR       the save directory, must be tmpfs (default /tmp/redis)
#
# Results (bench.h format), each as _min/_median/_max/_mean over REPS:
#   fork_us        latest_fork_usec of INFO stats: the fork() of BGSAVE
#   save_ms        from BGSAVE to the end of the snapshot (polled every 10 ms)
#   {set,get}_{p50,p99}_ms   redis-benchmark's percentiles during the snapshot
#   cow_kb         rdb_last_cow_size: memory the child dirtied
#   overlap_pct    how much of the benchmark ran while the snapshot was running
#   pt_*_tables    deltas of ptshare's /proc/vmstat counters over a snapshot
#                  (system-wide: redis-cli's forks count too; 0 on vanilla)
# cow_kb is redis's own figure, the Private_Dirty of the child's smaps: with
# shared page tables a page mapped through a shared table has one mapping,
# so smaps calls it private and the figure overstates what was copied.
# and once, before the first snapshot, idle_{set,get}_{p50,p99}_ms (no
# snapshot running) plus used_mib (the dataset as redis counts it).
# Times come from the guest clock: virtual time under QEMU icount.
set -eu

mib=256 reps=3 req=20000 clients=10 dir=/tmp/redis port=6399
while getopts s:r:n:c:d: o; do
	case $o in
	s) mib=$OPTARG ;;
	r) reps=$OPTARG ;;
	n) req=$OPTARG ;;
	c) clients=$OPTARG ;;
	d) dir=$OPTARG ;;
	*) echo "usage: $0 [-s MIB] [-r REPS] [-n REQUESTS] [-c CLIENTS] [-d DIR]" >&2; exit 2 ;;
	esac
done
keys=$((mib * 930))
cli() { redis-cli -p "$port" "$@"; }
die() { echo "redis: $*" >&2; cli shutdown nosave >/dev/null 2>&1 || true; exit 1; }
. "$(dirname "$0")/bench-lib.sh"
pt_names="fork_shared unshare_copy unshare_reuse"
# The value of FIELD in INFO SECTION.
info() { cli info "$1" | tr -d '\r' | sed -n "s/^$2://p"; }

rm -rf "$dir"
mkdir -p "$dir"
# A big fork must not fail for the heuristic overcommit check (redis's advice).
oc=$(cat /proc/sys/vm/overcommit_memory)
echo 1 >/proc/sys/vm/overcommit_memory
trap 'echo "$oc" >/proc/sys/vm/overcommit_memory' EXIT

redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --dbfilename dump.rdb \
	--save "" --appendonly no --daemonize yes --logfile "$dir/log" \
	--enable-debug-command yes --protected-mode no
for i in $(seq 100); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done
cli ping >/dev/null 2>&1 || die "redis-server did not start: $(tail -3 "$dir/log")"

[ "$(cli debug populate "$keys" key 1024)" = OK ] || die "DEBUG POPULATE failed"
used=$(info memory used_memory)

samples=$dir/samples
: >"$samples"
# redis-benchmark --csv: "test","rps","avg","min","p50","p95","p99","max"
bench() {
	redis-benchmark -p "$port" -t set,get -n "$req" -c "$clients" -r 100000 -d 1024 --csv |
		tr -d '"' | awk -F, -v pre="$1" '$1 == "SET" || $1 == "GET" {
			t = tolower($1); print pre t "_p50_ms", $5; print pre t "_p99_ms", $7 }'
}
bench idle_ >>"$samples" || die "redis-benchmark failed"

for r in $(seq "$reps"); do
	read_pt
	a0=$pt_fork_shared a1=$pt_unshare_copy a2=$pt_unshare_reuse
	t0=$(now_us)
	cli bgsave | grep -q 'started' || die "BGSAVE did not start"
	bench "" >>"$samples" || die "redis-benchmark failed"
	t1=$(now_us)
	while [ "$(info persistence rdb_bgsave_in_progress)" = 1 ]; do sleep 0.01; done
	t2=$(now_us)
	[ "$(info persistence rdb_last_bgsave_status)" = ok ] || die "BGSAVE failed: $(tail -3 "$dir/log")"
	[ -s "$dir/dump.rdb" ] || die "no dump.rdb after BGSAVE"
	end=$t1; [ "$t2" -lt "$t1" ] && end=$t2
	echo "fork_us $(info stats latest_fork_usec)" >>"$samples"
	echo "save_ms $(((t2 - t0) / 1000))" >>"$samples"
	echo "cow_kb $(($(info persistence rdb_last_cow_size) / 1024))" >>"$samples"
	echo "overlap_pct $((100 * (end - t0) / (t1 - t0)))" >>"$samples"
	read_pt
	echo "pt_fork_shared_tables $((pt_fork_shared - a0))" >>"$samples"
	echo "pt_unshare_copy_tables $((pt_unshare_copy - a1))" >>"$samples"
	echo "pt_unshare_reuse_tables $((pt_unshare_reuse - a2))" >>"$samples"
	rm -f "$dir/dump.rdb"
done
cli shutdown nosave >/dev/null 2>&1 || true

awk -v mib="$mib" -v keys="$keys" -v used="$used" '
function out(m, v, u, r) {
	printf "result bench=redis param=dataset=%dMiB,keys=%d,value=1024 metric=%s value=%s unit=%s reps=%d\n",
		mib, keys, m, v, u, r
}
{ if (!($1 in cnt)) order[++nm] = $1; v[$1, ++cnt[$1]] = $2 }
END {
	out("used_mib", sprintf("%d", used / 1048576), "MiB", 1)
	for (i = 1; i <= nm; i++) {
		m = order[i]; k = cnt[m]; sum = 0
		for (a = 1; a <= k; a++) { s[a] = v[m, a] + 0; sum += s[a] }
		for (a = 2; a <= k; a++) for (b = a; b > 1 && s[b - 1] > s[b]; b--) { t = s[b]; s[b] = s[b - 1]; s[b - 1] = t }
		med = (k % 2) ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2
		u = m; sub(/.*_/, "", u); if (u == "pct") u = "%"; if (u == "kb") u = "KiB"
		if (k == 1) { out(m, s[1], u, 1); continue }
		out(m "_min", s[1], u, k); out(m "_median", med, u, k)
		out(m "_max", s[k], u, k); out(m "_mean", sprintf("%.3f", sum / k), u, k)
	}
}' "$samples"
rm -rf "$dir"
