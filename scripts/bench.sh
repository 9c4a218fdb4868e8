#!/bin/sh
# The benchmark suite (make bench): build the vanilla and ptshare kernels,
# boot each in QEMU under icount (deterministic virtual time), run the
# in-guest suite (tests/guest/run-bench.sh), and write results/<run-id>/ with
# results.jsonl, results.tsv, report.md, manifest.txt, each kernel's console
# log and the kernel profiles of suites 1-3 (profiles/KERNEL/SUITE.txt).
# The tree keeps report.md, results.jsonl and manifest.txt of a run
# (.gitignore leaves out the rest; results/README.md).
#
# Usage: scripts/bench.sh          full suite
#        QUICK=1 scripts/bench.sh  a subset, a few minutes per kernel
#        KERNELS="vanilla ptshare:2" which kernels to compare (first = reference);
#                 FLAVOUR:MODE boots FLAVOUR with vm.pt_share=MODE, and its
#                 column is called FLAVOUR-MODE
#        BUILD_KERNEL=0   use the kernels already in build/out-*, do not
#                 (re)build them
#        GUESTS=N  boot N kernels at a time (default: as many as host CPUs
#                 and free memory allow); timings are virtual, so only the
#                 wall times depend on it
set -eu
. "$(dirname "$0")/lib.sh"

quick=${QUICK:-0}
if [ "$quick" = 1 ]; then
	kernels=${KERNELS:-vanilla ptshare}
	mem=4096 tmo=2400
else
	kernels=${KERNELS:-vanilla ptshare:0 ptshare ptshare:2}
	mem=10240 tmo=14400
fi
flavours=$(for k in $kernels; do echo "${k%%:*}"; done | sort -u)
labels=$(for k in $kernels; do printf '%s ' "$k"; done | tr : -)

# The pgbench suite needs PostgreSQL on the host and in the guest, the
# zygote suite the libraries of bench/zygote-libs.txt.
WITH_PGSQL=${WITH_PGSQL:-1} WITH_ZYGOTE=${WITH_ZYGOTE:-1} WITH_PLOTS=1
export WITH_PGSQL WITH_ZYGOTE WITH_PLOTS
"$ROOT/scripts/deps.sh"
# shellcheck disable=SC2086 # a list of flavours
kernels_ready $flavours
make -s -C "$ROOT/bench" OUT="$BUILD/bench"
"$ROOT/scripts/mkrootfs.sh"

id=$(date +%Y%m%d-%H%M%S)
[ "$quick" = 1 ] && id=$id-quick
res=$ROOT/results/$id
# The guests' run directories go under build/runs, missing on a fresh clone.
mkdir -p "$res/parts" "$BUILD/runs"

# The rows of kernel SPEC (ptshare:2 -> parts/ptshare-2.tsv); a missing
# part means that kernel's run failed.
part_of() { echo "$res/parts/$(echo "$1" | tr : -).tsv"; }
parts_done() { # SPEC...
	for s; do [ -f "$(part_of "$s")" ] || die "the $s run failed (see above)"; done
}

# bench_kernel SPEC: boot one kernel, run the suite, leave its rows in
# $res/parts/K.tsv and its profiles in $res/profiles/K/.
bench_kernel() {
	spec=$1
	# profile=2: kernel profiles of suites 1-3 (scripts/profile.sh)
	flavour=${spec%%:*} mode=default append=profile=2
	case $spec in
	*:*) mode=${spec#*:} append="$append sysctl.vm.pt_share=$mode" ;;
	esac
	k=$(echo "$spec" | tr : -)
	run=$BUILD/runs/bench-$k-$id
	part=$(part_of "$spec")
	start=$(date +%s)
	"$ROOT/scripts/run-guest.sh" -k "$flavour" --icount -m "$mem" -t "$tmo" -o "$run" \
		--append "$append" \
		-- "run-bench.sh $quick >/host/bench.txt" >"$run.out" 2>&1 ||
		die "$k: benchmark run failed: $(tail -1 "$run.out") (log: $run/console.log)"
	wall=$(( $(date +%s) - start ))
	cp "$run/console.log" "$res/console-$k.log"
	result_rows "$k" "$mode" "$run/share/bench.txt" >"$part"
	printf 'run\tboot\t%s\t%s\t-\twall_s\t%s\ts\t1\n' "$k" "$mode" "$wall" >>"$part"
	for b in "$run"/share/profile-*.bin; do
		[ -f "$b" ] || continue
		mkdir -p "$res/profiles/$k"
		suite=${b##*/profile-}
		"$ROOT/scripts/profile.sh" "$b" "$(flavour_out "$flavour")/System.map" \
			>"$res/profiles/$k/${suite%.bin}.txt"
	done
	log "$k: $(grep -c . "$part") results, ${wall}s wall"
}

# Guests at once: icount makes each guest's timings its own instruction
# count, so parallel guests change wall time only. Bounded by host CPUs
# (one TCG thread per guest) and by memory (a guest touches up to -m).
if [ -z "${GUESTS:-}" ]; then
	avail=$(awk '/^MemAvailable:/ { print int($2 / 1024) }' /proc/meminfo)
	GUESTS=$(( avail / (mem + 1024) ))
	[ "$GUESTS" -le "$(nproc)" ] || GUESTS=$(nproc)
	[ "$GUESTS" -ge 1 ] || GUESTS=1
fi
case $GUESTS in *[!0-9]* | 0) die "GUESTS must be a positive number" ;; esac
log "$(echo $kernels | wc -w) kernels, $GUESTS guest(s) at a time, ${mem} MiB each"
export GUESTS
# What produced this run: results/<run-id>/manifest.txt.
# shellcheck disable=SC2086 # a list of flavours
"$ROOT/scripts/manifest.sh" "$res" $flavours -- \
	"QUICK=$quick KERNELS=\"$kernels\" GUESTS=$GUESTS WITH_PGSQL=$WITH_PGSQL WITH_ZYGOTE=$WITH_ZYGOTE BUILD_KERNEL=${BUILD_KERNEL:-1} scripts/bench.sh"

# A failed kernel stops the run before the next guests boot: its report
# could not be complete, and the next boots would take an hour for it.
n=0 started=
for spec in $kernels; do
	bench_kernel "$spec" &
	started="$started $spec"
	n=$((n + 1))
	[ "$n" -lt "$GUESTS" ] || { wait; n=0; parts_done $started; }
done
wait
parts_done $kernels
for spec in $kernels; do cat "$(part_of "$spec")"; done >"$res/results.tsv"
rm -r "$res/parts"

tsv_jsonl "$res/results.tsv" >"$res/results.jsonl"
"$ROOT/scripts/report.sh" "$res/results.tsv" "$labels" "$quick" >"$res/report.md"
"$ROOT/scripts/profile-report.sh" "$res" "$labels" >>"$res/report.md"
# A plot that cannot be drawn says why; the report stands without it.
"$ROOT/scripts/plot.sh" "$res" || log "some plots were not drawn (above)"
ln -sfn "$id" "$ROOT/results/latest"
cat "$res/report.md"
log "results in $res"
