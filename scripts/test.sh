#!/bin/sh
# The test suite (make test): build the kernel and the tests, boot the kernel
# in QEMU, run the mm selftests and the project's own tests, and judge every
# case against the vanilla baseline. Prints one line per case and ends with
# "N passed, N failed, N skipped". Exit status 0 only if nothing failed.
#
# Usage: scripts/test.sh [-k FLAVOUR] [-t TIMEOUT] [PLAN...]
#   FLAVOUR  ptshare (default), debug or vanilla
#   PLAN     early, selftests, ptshare (default: all three, in that order); ONLY="cow mkdirty" narrows
set -eu
. "$(dirname "$0")/lib.sh"

flavour=ptshare tmo=${TEST_TIMEOUT:-4200}
while [ $# -gt 0 ]; do
	case "$1" in
	-k) flavour=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
plans=${*:-early selftests ptshare}

"$ROOT/scripts/deps.sh"
"$ROOT/scripts/tree.sh"
# BUILD_KERNEL=0: test the kernel already built (scripts/planted.sh does).
[ "${BUILD_KERNEL:-1}" = 0 ] || "$ROOT/scripts/build-kernel.sh" "$flavour"
"$ROOT/scripts/build-selftests.sh"
make -s -C "$ROOT/tests/ptshare" OUT="$BUILD/ptshare-tests"
"$ROOT/scripts/mkrootfs.sh"

run=$BUILD/runs/test-$flavour-$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"

# The harness must catch a crashed and a hung guest: prove it on this kernel.
harness_check() { # NAME EXPECTED_STATUS TIMEOUT COMMAND
	set +e
	"$ROOT/scripts/run-guest.sh" -k "$flavour" -o "$run/harness-$1" -t "$3" -m 1024 \
		-- "$4" >"$run/harness-$1.out" 2>&1
	got=$?
	set -e
	if [ "$got" = "$2" ]; then
		echo "PASS harness/$1 # run-guest.sh exited $got"
	else
		echo "FAIL harness/$1 # run-guest.sh exited $got, want $2"
	fi
}
if [ "${HARNESS_CHECKS:-1}" = 1 ]; then
	harness_check detects-oops 126 300 'echo c >/proc/sysrq-trigger'
	harness_check detects-hang 124 60 'sleep 100000'
	harness_check exit-status 7 300 'exit 7'
	# and must read every verdict the programs print
	"$ROOT/scripts/check-parse.sh" || true
fi >"$run/harness.txt"
set +e
# 3 CPUs: the migration selftest needs 3 or more, besides two NUMA nodes.
# PT_SHARE=0|1|2 boots with vm.pt_share set, PT_SHARE_SHARED=0|1|2 with
# vm.pt_share_shared (ptshare kernels only).
[ "$flavour" != vanilla ] || PT_SHARE= PT_SHARE_SHARED=
append="${PT_SHARE:+sysctl.vm.pt_share=$PT_SHARE}${PT_SHARE_SHARED:+ sysctl.vm.pt_share_shared=$PT_SHARE_SHARED}"
"$ROOT/scripts/run-guest.sh" -k "$flavour" -o "$run" -t "$tmo" -s 3 \
	${append:+--append "$append"} -- \
	"${ONLY:+ONLY='$ONLY' }suite.sh $plans" >"$run/console.out" 2>&1
grc=$?
set -e
tail -3 "$run/console.out" >&2

cp "$run/harness.txt" "$run/cases.txt"
for p in $plans; do
	# With ONLY, list what ran; else every plan entry must have a result.
	plan=$ROOT/tests/plans/$p.plan
	[ -z "${ONLY:-}" ] || plan=
	"$ROOT/scripts/parse-results.sh" "$run/share/results/$p" $plan | sed "s|^\([A-Z]*\) |\1 $p/|" >>"$run/cases.txt"
done
case $grc in
124) echo "FAIL kernel/guest # hung: killed after ${tmo}s" ;;
125) echo "FAIL kernel/guest # crashed: no exit status" ;;
126) echo "FAIL kernel/log # WARN/BUG/oops in console.log" ;;
*) echo "PASS kernel/log # no kernel warnings in console.log" ;;
esac >>"$run/cases.txt"

"$ROOT/scripts/compare-baseline.sh" "$run/cases.txt" \
	"$ROOT/baseline/vanilla.txt" >"$run/verdict.txt"
# A narrowed run cannot miss the cases it did not mean to run.
[ -z "${ONLY:-}" ] || sed -i '/ # missing: /d' "$run/verdict.txt"
cat "$run/verdict.txt"
# What a failed test printed last, so that a CI log alone can be read.
sed -n 's|^FAIL \([a-z]*\)/\([^/ ]*\)/.*|\1/\2|p' "$run/verdict.txt" | sort -u |
while read -r t; do
	f=$run/share/results/$t.out
	[ -f "$f" ] || continue
	echo "--- $t: what it printed around its failures ($f)"
	{ grep -B 6 -E '^(not ok|Bail out)' "$f" || tail -n 10 "$f"; } |
		tail -n 30 | sed 's/^/| /'
done
# Which tests shared tables at all (a test that pinned pages never does).
for p in $plans; do
	cov=$run/coverage-$p.txt
	"$ROOT/scripts/coverage.sh" "$run/share/results/$p" >"$cov"
	[ -s "$cov" ] || continue
	echo "$p $(tail -n 1 "$cov") ($cov)"
	awk '$2 == "fork_shared=0" { printf "%s %s", n++ ? "" : "  none in:", $1 }
		END { if (n) print "" }' "$cov"
done
ln -sfn "$(basename "$run")" "$BUILD/runs/latest-test"
echo "results: $run"
summarize "$run/verdict.txt"
