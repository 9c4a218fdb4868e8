#!/bin/sh
# The kernel profiles of a benchmark run as markdown: for each profiled
# suite, the functions with the most ticks on any kernel, one column per
# kernel with "ticks (share of that kernel's ticks)", so that it shows
# where the kernel's time moved between kernels.
#
# Usage: scripts/profile-report.sh RESULTS_DIR "KERNEL..." [TOP]
#   reads RESULTS_DIR/profiles/KERNEL/SUITE.txt (scripts/profile.sh output);
#   TOP functions of each kernel are listed (default 12).
set -eu
. "$(dirname "$0")/lib.sh"

res=${1:?usage: profile-report.sh RESULTS_DIR KERNELS [TOP]}
kernels=${2:?usage: profile-report.sh RESULTS_DIR KERNELS [TOP]}
top=${3:-12}

suites=$(for k in $kernels; do
	for f in "$res/profiles/$k"/*.txt; do
		[ -f "$f" ] && basename "$f" .txt
	done
done | sort -u)
[ -n "$suites" ] || exit 0

echo "## Kernel profiles"
echo
echo "Timer ticks in kernel mode (boot option profile=2, read with"
echo "readprofile(8)); under icount a tick is a fixed amount of virtual"
echo "time, so the totals compare across kernels. Idle ticks appear as"
echo "pvclock_clocksource_read_nowd (the address after hlt). Whole listings:"
echo "profiles/KERNEL/SUITE.txt."
for s in $suites; do
	echo
	echo "### $s"
	echo
	files='' missing=''
	for k in $kernels; do
		f=$res/profiles/$k/$s.txt
		if [ -f "$f" ]; then files="$files $f"; else missing="$missing $k"; fi
	done
	[ -z "$missing" ] || { echo "No profile of:$missing."; continue; }
	printf '| function |'
	for k in $kernels; do printf ' %s |' "$k"; done
	echo
	printf '|---|'
	for k in $kernels; do printf -- '---|'; done
	echo
	# shellcheck disable=SC2086
	awk -v top="$top" -v nk="$(echo $kernels | wc -w)" '
		FNR == 1 { k++ }
		$1 == "total" { total[k] = $2; next }
		{ ticks[k, $3] = $1; share[k, $3] = $2
		  if (FNR <= top && !($3 in seen)) { seen[$3] = 1; order[++n] = $3 } }
		END {
			for (i = 1; i <= n; i++) {
				printf "| %s |", order[i]
				for (j = 1; j <= nk; j++)
					if ((j, order[i]) in ticks)
						printf " %d (%.1f%%) |", ticks[j, order[i]], share[j, order[i]]
					else
						printf " - |"
				print ""
			}
			printf "| **all kernel ticks** |"
			for (j = 1; j <= nk; j++) printf " %d |", total[j]
			print ""
		}' $files
done
