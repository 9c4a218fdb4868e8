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
for f; do
	printf '%s ' "$(basename "$f" .ptshare)"
	tr ' ' '\n' <"$f" | sed -n 's/^ptshare_\(fork_shared\|unshare_copy\|unshare_reuse\|zap_drop\)=/\1=/p' |
		tr '\n' ' ' | sed 's/ $//'
	echo
done | awk '
	{ print; n++ }
	$2 ~ /^fork_shared=/ && substr($2, 13) + 0 > 0 { s++ }
	END { printf "coverage: %d of %d tests shared PTE tables at fork\n", s, n }'
