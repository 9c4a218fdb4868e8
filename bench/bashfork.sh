#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# bashfork: the cost of fork for a small, dynamically linked process, the
# case McCracken's patch made slower: bash forking a subshell that exits
# at once (fork+exit), and bash running a tiny static program (fork+exec).
# Runs on any kernel; scripts/smallproc.sh boots vanilla and ptshare
# several times and compares them.
#
# Usage: bashfork.sh [-n ITERATIONS] [-r REPS] [-e PATH]
#   each repetition times ITERATIONS operations of each kind, and the
#   result is the time per operation; PATH is the program to exec (default
#   'tiny' next to this script).
# Results (bench.h format, bench=smallproc as in the runs before the
# script was renamed): bash_fork_exit_us_{min,median,max} and
# bash_fork_exec_us_{min,median,max}, microseconds per operation over the
# repetitions. Time is $EPOCHREALTIME (under QEMU icount, virtual time).
set -eu

n=1000 reps=5 prog=$(dirname "$0")/tiny
while getopts n:r:e: o; do
	case $o in
	n) n=$OPTARG ;;
	r) reps=$OPTARG ;;
	e) prog=$OPTARG ;;
	*) echo "usage: $0 [-n ITERATIONS] [-r REPS] [-e PATH]" >&2; exit 2 ;;
	esac
done
[ -x "$prog" ] || { echo "bashfork: $prog is not executable" >&2; exit 1; }

. "$(dirname "$0")/bench-lib.sh"

fork_exit() { local i; for ((i = 0; i < n; i++)); do ( : ); done; }
fork_exec() { local i; for ((i = 0; i < n; i++)); do "$prog"; done; }

# time_per_op FUNCTION: microseconds per operation, 2 decimals
time_per_op() {
	local t0 t1 x
	t0=$(now_us)
	"$1"
	t1=$(now_us)
	x=$(( (t1 - t0) * 100 / n ))
	printf '%d.%02d\n' $((x / 100)) $((x % 100))
}

report() { # METRIC VALUES...
	local m=$1 v c
	shift
	mapfile -t v <<<"$(printf '%s\n' "$@" | sort -n)"
	c=${#v[@]}
	echo "result bench=smallproc param=n=$n metric=${m}_min value=${v[0]} unit=us reps=$c"
	echo "result bench=smallproc param=n=$n metric=${m}_median value=${v[c / 2]} unit=us reps=$c"
	echo "result bench=smallproc param=n=$n metric=${m}_max value=${v[c - 1]} unit=us reps=$c"
}

fork_exit; fork_exec	# warm-up: page cache, bash's own first faults
fe=() fx=()
for ((r = 0; r < reps; r++)); do
	fe+=("$(time_per_op fork_exit)")
	fx+=("$(time_per_op fork_exec)")
done
report bash_fork_exit_us "${fe[@]}"
report bash_fork_exec_us "${fx[@]}"
