#!/bin/sh
# make fuzz: build the kernel (unless BUILD_KERNEL=0), the fuzzer and the
# rootfs, boot the kernel in QEMU and run the differential fuzzer
# (tests/fuzz) for SEEDS seeds. On ptshare the kernel boots with
# sysctl.vm.pt_share=2 (and the fuzzer forces 2 too); FLAVOUR=vanilla runs
# the same seeds on the unpatched kernel: a seed that passes there and fails
# on ptshare is a ptshare bug.
# Prints one line per seed and ends with
#   fuzz: S seeds, O ops, P processes, V violations
# Exit status 0 only if every seed passed and the kernel log is clean.
#
# Environment: FLAVOUR (ptshare), SEEDS (10), FUZZ_SEED0 (1), FUZZ_OPS
# (ops of the first process per seed, 200), FUZZ_DEPTH (3), FUZZ_TIMEOUT
# (seconds for the whole boot, default from SEEDS and FUZZ_OPS),
# BUILD_KERNEL (1; 0 uses the kernel already built), FUZZ_FAIL (a
# percentage: that share of the unshare allocations fail, fail_ptshare).
set -eu
. "$(dirname "$0")/lib.sh"

flavour=${FLAVOUR:-ptshare}
seeds=${SEEDS:-10}
seed0=${FUZZ_SEED0:-1}
ops=${FUZZ_OPS:-200}
depth=${FUZZ_DEPTH:-3}
failpct=${FUZZ_FAIL:-}
case "$seeds$seed0$ops$depth$failpct" in
*[!0-9]*) die "SEEDS, FUZZ_SEED0, FUZZ_OPS, FUZZ_DEPTH and FUZZ_FAIL take numbers" ;;
esac
[ -z "$failpct" ] || [ "$flavour" != vanilla ] || die "FUZZ_FAIL needs a ptshare kernel"
# Under TCG a seed of 200 ops takes 10-60 s; leave room.
tmo=${FUZZ_TIMEOUT:-$((300 + seeds * (ops + 60)))}

"$ROOT/scripts/deps.sh"
kernels_ready "$flavour"
make -s -C "$ROOT/tests/ptshare" OUT="$BUILD/ptshare-tests"
"$ROOT/scripts/mkrootfs.sh"

run=$BUILD/runs/fuzz-$flavour-$(date +%Y%m%d-%H%M%S)
mkdir -p "$run"
append=
[ "$flavour" = vanilla ] || append=sysctl.vm.pt_share=2
log "fuzz: $seeds seeds from $seed0, $ops ops each, on $flavour${append:+ ($append)}; timeout ${tmo}s"
guest_run_captured "$run" "$tmo" 3072 "$append" fuzz.out \
	"cd /ptshare && ./fuzz-run -n $ops -d $depth ${failpct:+-F $failpct} $seed0 $seeds"
ln -sfn "$(basename "$run")" "$BUILD/runs/latest-fuzz"

res=$run/share/fuzz.out
# Per seed: "ok"/"not ok" with the fuzzer's report, and the stats line.
grep -v '^fuzz: \|^1\.\.' "$res" || true
guest_verdict "$grc" "$tmo" fuzz-run
echo "results: $run"
# The summary from the per-seed lines, so that it is there even when the
# guest died half-way.
awk '/^# seed [0-9]+: ops=/ {
	n++
	for (i = 1; i <= NF; i++) {
		split($i, kv, "=")
		if (kv[1] == "ops") o += kv[2]
		if (kv[1] == "procs") p += kv[2]
		if (kv[1] == "violations") v += kv[2]
	}
}
END { printf "fuzz: %d seeds, %d ops, %d processes, %d violations\n", n, o, p, v }' "$res"
[ "$grc" = 0 ]
