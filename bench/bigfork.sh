#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# bigfork: fork latency of big processes, 1, 4 and 8 GiB of touched private
# anonymous memory with THP off; the sizes of issue 3's targets (at least
# 100x faster than vanilla at 1 GiB, 250x at 8 GiB). Runs on any kernel, as
# root, in a guest with room for the largest size (10 GiB for 8 GiB):
#   scripts/run-guest.sh -k vanilla --icount -m 10240 -t 5400 -- \
#       'sh /ptshare/bench/bigfork.sh > /host/bigfork.out 2>&1'
# and the same with -k ptshare. Prints forkbench's "result" lines for
# fork (the fork() call alone) and fork-exit (fork, child exit, wait),
# REPS timed repetitions after one warm-up, each starting from freshly
# written memory (forkbench -w).
# Usage: bigfork.sh [-r REPS] [SIZE_MIB...]
set -eu
reps=5
while getopts r: o; do
	case $o in
	r) reps=$OPTARG ;;
	*) echo "usage: bigfork.sh [-r REPS] [SIZE_MIB...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- 1024 4096 8192
fb=$(dirname "$0")/forkbench
thp=/sys/kernel/mm/transparent_hugepage/enabled

echo never >$thp
echo "# bigfork: $(uname -r), vm.pt_share=$(cat /proc/sys/vm/pt_share 2>/dev/null || echo none), $reps reps"
for s in "$@"; do
	for m in fork fork-exit; do
		"$fb" -s "$s" -m "$m" -r "$reps" -W 1 -w -t never -H off
	done
done
