#!/bin/sh
# Run a test plan inside the guest.
# Usage: run-plan.sh PLAN DIR RESULTS
#   PLAN     lines "NAME TIMEOUT COMMAND..." (# comments), see tests/plans/
#   DIR      directory the commands run in
#   RESULTS  where NAME.out (stdout+stderr) and NAME.rc (exit status) go
# A line "=== NAME rc=N secs=S" goes to stdout after each test, for the log.
# On a ptshare kernel NAME.ptshare gets what the test did to shared tables:
# the deltas of the ptshare_* counters of /proc/vmstat over its run.
plan=$1 dir=$2 results=$3
mkdir -p "$results"

pts_counters() {
	grep '^ptshare_' /proc/vmstat 2>/dev/null || true
}

grep -v '^[[:space:]]*\(#\|$\)' "$plan" | while read -r name secs cmd; do
	[ -n "${ONLY:-}" ] && case " $ONLY " in *" $name "*) ;; *) continue ;; esac
	echo "=== start $name"
	# As run_vmtests.sh does: drop the page cache and compact free memory,
	# so that what a test gets from the huge page allocator does not
	# depend on the tests that ran before it.
	echo 3 >/proc/sys/vm/drop_caches
	echo 1 >/proc/sys/vm/compact_memory
	start=$(date +%s)
	pts_counters >/tmp/plan-pts.start
	# Output goes to tmpfs first: writes to the 9p share pin the writer's
	# pages (MMF_HAS_PINNED), and an mm that ever pinned never shares
	# page tables at fork, which would hide ptshare from every test.
	(
		cd "$dir" || exit 1
		hugepages 0 0
		# coreutils' timeout, by path: busybox sh runs its own applet
		# for a bare "timeout", which leaves a watcher process behind
		# for up to a second after the test, and the watcher's exit
		# moves the system-wide counters the next test measures.
		/usr/bin/timeout -s KILL "$secs" sh -c "$cmd"
	) >"/tmp/plan-$name.out" 2>&1 </dev/null
	rc=$?
	pts_counters | awk 'FNR == NR { s[$1] = $2; next }
		{ printf "%s%s=%d", n++ ? " " : "", $1, $2 - s[$1] }
		END { if (n) print "" }' /tmp/plan-pts.start - >"$results/$name.ptshare"
	[ -s "$results/$name.ptshare" ] || rm -f "$results/$name.ptshare"
	cat "/tmp/plan-$name.out" >"$results/$name.out"
	rm -f "/tmp/plan-$name.out"
	echo "$rc" >"$results/$name.rc"
	echo "=== $name rc=$rc secs=$(( $(date +%s) - start ))"
done
