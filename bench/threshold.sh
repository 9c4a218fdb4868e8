#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# threshold: from how many PTE tables on does sharing them at fork pay?
# The evidence for the default of vm.pt_share_min_tables. Runs in a guest
# with a ptshare kernel, as root:
#   scripts/run-guest.sh -k ptshare --icount -m 2048 -- 'sh /ptshare/bench/threshold.sh'
# For TABLES = 0 1 2 3 4 8 16 extra PTE tables (2 MiB each, THP off) with
# PAGES = 16 or 512 pages present in each, it runs aim9 fork_test (and
# exec_test with 16 pages) REPS times with vm.pt_share=0 (copy) and 2
# (share), the two modes interleaved, and prints one line per point:
#   threshold test=T tables=N pages=P vmpte_kb=K copy=OPS share=OPS ratio=R
# OPS is the median of REPS runs in operations per second, R = share/copy:
# above 1 sharing is faster. The parent writes one page of every extra
# table after each operation (aim9 -T), so the unshare faults sharing
# causes are in the timing.
# Usage: threshold.sh [-r REPS] [-d SECONDS]
set -eu
reps=3 secs=1
while getopts r:d: o; do
	case $o in
	r) reps=$OPTARG ;;
	d) secs=$OPTARG ;;
	*) echo "usage: threshold.sh [-r REPS] [-d SECONDS]" >&2; exit 2 ;;
	esac
done
aim9=$(dirname "$0")/aim9
ctl=/proc/sys/vm/pt_share
[ -w $ctl ] || { echo "threshold.sh: no writable $ctl: not a ptshare kernel, or not root" >&2; exit 1; }
old=$(cat $ctl)
trap 'echo "$old" >$ctl' EXIT

# metric NAME: the value of "metric=NAME" in aim9's output on stdin
metric() { sed -n "s/.* metric=$1 value=\([0-9.]*\) .*/\1/p"; }
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

point() { # TEST TABLES PAGES
	: >/tmp/thr.0; : >/tmp/thr.2
	i=0
	while [ $i -lt "$reps" ]; do
		for m in 0 2; do
			echo $m >$ctl
			"$aim9" -m "$1" -d "$secs" -T "$2" -p "$3" >/tmp/thr.out
			metric "$1_test" </tmp/thr.out >>/tmp/thr.$m
		done
		i=$((i + 1))
	done
	c=$(median </tmp/thr.0) s=$(median </tmp/thr.2)
	k=$(metric vmpte_kb </tmp/thr.out)
	echo "threshold test=$1 tables=$2 pages=$3 vmpte_kb=$k copy=$c share=$s ratio=$(awk "BEGIN { printf \"%.3f\", $s / $c }")"
}

echo "# threshold: aim9 -d $secs, median of $reps, vm.pt_share=0 (copy) vs 2 (share)"
for t in 0 1 2 3 4 8 16; do
	point fork $t 16
	[ $t = 0 ] || point fork $t 512
	point exec $t 16
done
rm -f /tmp/thr.0 /tmp/thr.2 /tmp/thr.out
