#!/bin/sh
# Regenerate the vanilla references that make test judges ptshare against:
#   selftests  baseline/vanilla.txt: the outcome of every mm selftest case
#              on the vanilla kernel (about 30 minutes under TCG)
#   observe    baseline/observe-vanilla.txt: the readings of
#              tests/ptshare/observe (smaps, pagemap, kpagecount, RSS,
#              oom_score, move_pages and mbind) on the vanilla kernel, which
#              the plan entry "observe" compares ptshare's with (a few
#              minutes). observe runs twice in the guest, and a reading that
#              differs between the two runs is an error: it would not be a
#              reference.
# Usage: scripts/baseline.sh [selftests] [observe]   (default: both)
set -eu
. "$(dirname "$0")/lib.sh"

what=${*:-selftests observe}
for w in $what; do
	case "$w" in
	selftests|observe) ;;
	*) die "unknown baseline '$w' (selftests, observe)" ;;
	esac
done

case " $what " in
*" selftests "*)
	"$ROOT/scripts/test.sh" -k vanilla selftests || true
	run=$BUILD/runs/latest-test
	[ -s "$run/cases.txt" ] || die "no results in $run"
	{
		echo "# mm selftest cases on vanilla $KVER_DEB, guest config config/guest.config."
		echo "# Regenerate with: make baseline. Reasons for skips: baseline/README.md"
		grep -v '^[A-Z]* kernel/' "$run/cases.txt"
	} >"$ROOT/baseline/vanilla.txt"
	log "baseline: $(grep -c '^PASS' "$ROOT/baseline/vanilla.txt") pass," \
		"$(grep -c '^SKIP' "$ROOT/baseline/vanilla.txt") skip," \
		"$(grep -c '^FAIL' "$ROOT/baseline/vanilla.txt") fail"
	;;
*)
	# Alone: build what the guest needs, as test.sh does.
	"$ROOT/scripts/deps.sh"
	"$ROOT/scripts/tree.sh"
	[ "${BUILD_KERNEL:-1}" = 0 ] || "$ROOT/scripts/build-kernel.sh" vanilla
	make -s -C "$ROOT/tests/ptshare" OUT="$BUILD/ptshare-tests"
	"$ROOT/scripts/mkrootfs.sh"
	;;
esac

case " $what " in
*" observe "*)
	run=$BUILD/runs/observe-vanilla-$(date +%Y%m%d-%H%M%S)
	mkdir -p "$run"
	# The guest of test.sh: 3 CPUs, 2 NUMA nodes, 6 GiB. Output to tmpfs
	# first (a write to the 9p share would pin the writer's pages).
	set +e
	# shellcheck disable=SC2016 # $? and $rc are the guest's
	"$ROOT/scripts/run-guest.sh" -k vanilla -o "$run" -t 1800 -s 3 -- \
		'cd /ptshare && ./observe >/tmp/observe-1.txt && ./observe >/tmp/observe-2.txt;
		rc=$?; cp /tmp/observe-1.txt /tmp/observe-2.txt /host/; exit $rc' \
		>"$run/console.out" 2>&1
	grc=$?
	set -e
	[ "$grc" = 0 ] || die "observe on vanilla: run-guest.sh exited $grc ($run/console.out)"
	one=$run/share/observe-1.txt two=$run/share/observe-2.txt
	[ -s "$one" ] && [ -s "$two" ] || die "observe printed nothing ($run)"
	if grep -q '^observe [^ ]*/error ' "$one"; then
		grep '^observe [^ ]*/error ' "$one" >&2
		die "a scenario of observe failed on vanilla ($one)"
	fi
	if ! cmp -s "$one" "$two"; then
		diff "$one" "$two" | head -20 >&2
		die "observe's readings differ between two runs on vanilla: not deterministic ($run)"
	fi
	{
		echo "# tests/ptshare/observe on vanilla $KVER_DEB, guest config config/guest.config"
		echo "# (3 CPUs, 2 NUMA nodes, 6 GiB), two identical runs in one boot."
		echo "# The plan entry 'observe' compares ptshare's readings with these."
		echo "# Regenerate with: make baseline (or scripts/baseline.sh observe)."
		cat "$one"
	} >"$ROOT/baseline/observe-vanilla.txt"
	log "baseline: $(grep -c '^observe ' "$one") observe readings in baseline/observe-vanilla.txt"
	;;
esac
