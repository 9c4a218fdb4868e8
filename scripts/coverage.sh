#!/bin/sh
# Which tests of a plan really exercised ptshare: a program that pinned
# pages (MMF_HAS_PINNED) or mapped nothing eligible passes without ever
# sharing a table, so a green run alone says nothing about sharing.
#
# Usage: scripts/coverage.sh RESULTS
#   RESULTS  a plan's results directory of the guest (NAME.ptshare files:
#            ptshare_* /proc/vmstat deltas over each test, run-plan.sh)
# Prints one line per test, "NAME fork_shared=N unshare_copy=N
# unshare_reuse=N zap_drop=N", then "coverage: S of T tests shared PTE
# tables at fork". Prints nothing for a kernel without ptshare.
set -eu
. "$(dirname "$0")/lib.sh"

res=${1:?usage: coverage.sh RESULTS}
[ -d "$res" ] || die "$res: no such directory"
set -- "$res"/*.ptshare
[ -e "$1" ] || exit 0
# One awk over all files: each holds one line of NAME=VALUE pairs.
awk '
	FNR == 1 {
		name = FILENAME
		sub(/.*\//, "", name)
		sub(/\.ptshare$/, "", name)
		line = name
		for (i = 1; i <= NF; i++) {
			split($i, kv, "=")
			key = kv[1]
			sub(/^ptshare_/, "", key)
			if (key ~ /^(fork_shared|unshare_copy|unshare_reuse|zap_drop)$/)
				line = line " " key "=" kv[2]
			if (key == "fork_shared" && kv[2] + 0 > 0)
				s++
		}
		print line
		n++
	}
	END { printf "coverage: %d of %d tests shared PTE tables at fork\n", s, n }' "$@"
