#!/bin/sh
# Regenerate baseline/vanilla.txt: the outcome of every mm selftest case on
# the vanilla kernel, the reference that make test judges ptshare against.
set -eu
. "$(dirname "$0")/lib.sh"

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
