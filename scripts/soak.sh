#!/bin/sh
# make soak: build the ptshare kernel (unless BUILD_KERNEL=0), the tests and
# the rootfs, boot with vm.pt_share=2 in a 2 GiB guest (with 1 GiB of zram
# swap) and run tests/soak/soak-run.sh for MINUTES: a fork/exec storm and
# memory workers that fork over more memory than RAM and check every page,
# beside the differential fuzzer, one seed after another.
# Prints the failed seeds, the counts, and as its last line
#   soak: M minutes, S seeds, O ops, P processes, F forks, E execs,
#         C pages checked, W pages swapped out, V violations
# Exit status 0 only if V is 0 and the kernel log is clean.
#
# Environment: MINUTES (10), SOAK_FAIL (a percentage of unshare allocations
# to fail, fail_ptshare), SOAK_MIB (memory per memory worker, 512),
# FLAVOUR (ptshare, or debug), BUILD_KERNEL (1).
set -eu
. "$(dirname "$0")/lib.sh"

flavour=${FLAVOUR:-ptshare}
minutes=${MINUTES:-10}
failpct=${SOAK_FAIL:-}
mib=${SOAK_MIB:-512}
case "$minutes$mib$failpct" in
*[!0-9]*|'') die "MINUTES, SOAK_MIB and SOAK_FAIL take numbers" ;;
esac
[ "$flavour" != vanilla ] || die "the soak needs a ptshare kernel (FLAVOUR=ptshare or debug)"
[ "$minutes" -gt 0 ] || die "MINUTES must be at least 1"

"$ROOT/scripts/deps.sh"
kernels_ready "$flavour"
make -s -C "$ROOT/tests/ptshare" OUT="$BUILD/ptshare-tests"
"$ROOT/scripts/mkrootfs.sh"

run=$BUILD/runs/soak-$flavour-$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"
# The last fuzz seed may start just before the end: leave it room.
tmo=$((minutes * 60 + 900))
log "soak: $minutes min on $flavour (vm.pt_share=2${failpct:+, $failpct% unshare allocations failing}); timeout ${tmo}s"
guest_run_captured "$run" "$tmo" 2048 sysctl.vm.pt_share=2 soak.out \
	"cd /ptshare && ./soak-run ${failpct:+-F $failpct} -M $mib $minutes"
ln -sfn "$(basename "$run")" "$BUILD/runs/latest-soak"

res=$run/share/soak.out
grep -v '^soak: ' "$res" || true
guest_verdict "$grc" "$tmo" soak-run
echo "results: $run"
grep '^soak: ' "$res" || echo "soak: $minutes minutes, no summary (see $run/console.out)"
[ "$grc" = 0 ]
