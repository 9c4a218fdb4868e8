#!/bin/sh
# make test: the test suite on the ptshare kernel (scripts/test.sh), then a
# slice of it on the debug kernel (DEBUG_VM with ptshare's PTE-write check,
# PAGE_TABLE_CHECK, lockdep, DEBUG_PAGEALLOC, fault injection), where any
# kernel warning fails the run, then the cross builds (scripts/cross-build.sh:
# i386, m68k, x86_64 without CONFIG_PTSHARE). Prints the case lines of all
# runs, those of the debug run as "PASS debug:NAME", and ends with their sum:
#   N passed, N failed, N skipped
# Exit status 0 only if nothing failed.
#
# Environment: FLAVOUR (ptshare; with debug the whole suite runs there and
# there is no second run), DEBUG_ONLY (the plan entries of the debug run;
# empty skips it), DEBUG_BUDGET (minutes, default 45: if the first run took
# longer, the debug run is skipped and reported as one SKIP, so that a slow
# machine stays within CI's time), CROSS (1; 0 skips the cross builds),
# CROSS_ARCHS, and what scripts/test.sh takes.
set -eu
. "$(dirname "$0")/lib.sh"

flavour=${FLAVOUR:-ptshare}
# The project's own tests and the selftests closest to ptshare: COW, GUP,
# mremap, KSM, THP, soft-dirty, mlock, userfaultfd (DEBUG_ONLY to change).
slice=${DEBUG_ONLY-fork_cow fork_ops fork_mm fork_gup fork_threads fork_exec fork_stats fork_prctl fork_hwpoison cow_attacks fork_review fork_shared fork_text fork_uprobe attach_shared shared_events attach_punch observe fuzz fuzz-fail cow gup_longterm gup_test-u gup_test-a mremap_test mremap_dontunmap ksm_functional_tests madv_populate mkdirty soft-dirty mlock2-tests uffd-stress-anon pagemap_ioctl khugepaged transhuge-stress}
budget=${DEBUG_BUDGET:-45}
case "$budget" in *[!0-9]*|'') die "DEBUG_BUDGET takes minutes" ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s)

# run NAME PREFIX COMMAND...: run one test.sh, show its output with PREFIX
# before each case name, keep the case lines in $tmp/NAME.
run() {
	name=$1 prefix=$2
	shift 2
	# set -e would end the subshell at a failing "$@" before the echo.
	{ rc=0; "$@" || rc=$?; echo "$rc" >"$tmp/$name.rc"; } |
		sed -E "s/^(PASS|FAIL|SKIP) /\1 $prefix/" | tee "$tmp/$name.out"
	rc=$(cat "$tmp/$name.rc")
	# A run that died before its verdict (a build that broke) is a failure.
	if [ "$rc" != 0 ] && ! grep -q '^FAIL ' "$tmp/$name.out"; then
		echo "FAIL ${prefix}run # scripts/test.sh exited $rc before any verdict" |
			tee -a "$tmp/$name.out"
	fi
}

run main "" "$ROOT/scripts/test.sh" -k "$flavour"
used=$((($(date +%s) - start) / 60))
if [ "$flavour" = debug ] || [ -z "$slice" ]; then
	:
elif [ "$used" -gt "$budget" ]; then
	echo "SKIP debug:slice # the first run took $used min, more than DEBUG_BUDGET=$budget" |
		tee "$tmp/debug.out"
else
	log "debug kernel: $slice"
	run debug "debug:" env ONLY="$slice" HARNESS_CHECKS=0 "$ROOT/scripts/test.sh" -k debug
fi

# The series must build where ptshare is not: i386, m68k (the generic
# set_ptes()), x86_64 with CONFIG_PTSHARE=n (CROSS=0 skips it).
if [ "$flavour" != debug ] && [ "${CROSS:-1}" = 1 ]; then
	log "cross builds: ${CROSS_ARCHS:-i386 m68k x86_64}"
	run cross "" "$ROOT/scripts/cross-build.sh"
fi

cat "$tmp"/*.out >"$tmp/all"
echo "# all runs together (ptshare suite, debug slice, cross builds), $((($(date +%s) - start) / 60)) min"
summarize "$tmp/all"
