#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# subshell: bash runs N command substitutions, x=$(echo hi): each one forks
# a subshell that runs the builtin echo and exits, without exec. The
# small-process end of fork without exec (the zygote suite's other row):
# the child touches what bash mapped, its text, data, heap and stack.
#
# Usage: subshell.sh [-n N]
# Results (bench.h format, bench=subshell, param=n=N):
#   subshells_us            time of the N substitutions (virtual time
#                           under icount; $EPOCHREALTIME)
#   subshell_us             the same per substitution
#   child_minflt            the subshells' minor faults, summed: the
#                           cminflt of /proc/self/stat, which is
#                           getrusage(RUSAGE_CHILDREN)'s ru_minflt, read
#                           with builtins so that no other child counts
#   fork_shared, fork_shared_private_file
#                           deltas of ptshare's vmstat counters (0 on
#                           vanilla)
set -eu

n=1000
while getopts n: o; do
	case $o in
	n) n=$OPTARG ;;
	*) echo "usage: $0 [-n N]" >&2; exit 2 ;;
	esac
done

. "$(dirname "$0")/bench-lib.sh"
pt_names="fork_shared fork_shared_private_file"

# cminflt: field 11 of /proc/PID/stat into $cmin, without forking. The
# command name (field 2) of bash has no space or parenthesis.
read_cminflt() {
	local s
	read -r s </proc/$$/stat
	# shellcheck disable=SC2086 # split the fields
	set -- ${s#*) }
	cmin=$9
}

subshells() { local i x; for ((i = 0; i < n; i++)); do x=$(echo hi); done; }

read_pt
s0=$pt_fork_shared p0=$pt_fork_shared_private_file
read_cminflt
c0=$cmin
t0=${EPOCHREALTIME/./}
subshells
t1=${EPOCHREALTIME/./}
read_cminflt
read_pt

us=$((t1 - t0))
x=$((us * 1000 / n))
result() { # METRIC VALUE UNIT
	echo "result bench=subshell param=n=$n metric=$1 value=$2 unit=$3 reps=1"
}
result subshells_us "$us" us
result subshell_us "$(printf '%d.%03d' $((x / 1000)) $((x % 1000)))" us
result child_minflt $((cmin - c0)) faults
result fork_shared $((pt_fork_shared - s0)) tables
result fork_shared_private_file $((pt_fork_shared_private_file - p0)) tables
