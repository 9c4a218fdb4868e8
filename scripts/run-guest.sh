#!/bin/sh
# Boot a kernel flavour in QEMU and run a command inside the guest.
#
# Usage: scripts/run-guest.sh [options] [--] COMMAND...
#   -k FLAVOUR   kernel: vanilla, ptshare (default) or debug
#   -o DIR       run directory (default build/runs/FLAVOUR-DATE); it gets
#                console.log, and share/ which the guest sees as /host
#   -t SECONDS   host-side timeout for the whole boot (default 3600)
#   -m MIB       guest memory, split over 2 NUMA nodes (default 6144)
#   -s CPUS      guest CPUs (default 2; forced to 1 with --icount)
#   --icount     deterministic virtual time: -icount shift=0,sleep=off
#   --kvm        use KVM instead of TCG (does not boot on every host)
#   --append STR extra kernel command line
#   -i           interactive shell on the console instead of COMMAND
# COMMAND runs under the guest's sh in /host (the share). Its exit status is
# the exit status of this script. Otherwise:
#   124  the guest did not finish within the timeout and was killed
#   125  the guest ended without reporting an exit status (panic, crash),
#        or QEMU itself was killed before the timeout (host out of memory)
#   126  the command finished but the kernel log has a WARN/BUG/oops/lockdep
#        report (printed on stderr)
set -eu
. "$(dirname "$0")/lib.sh"

flavour=ptshare out= tmo=3600 mem=6144 cpus=2 icount= accel=tcg append= interactive=
while [ $# -gt 0 ]; do
	case "$1" in
	-k) flavour=$2; shift 2 ;;
	-o) out=$2; shift 2 ;;
	-t) tmo=$2; shift 2 ;;
	-m) mem=$2; shift 2 ;;
	-s) cpus=$2; shift 2 ;;
	--icount) icount=1; shift ;;
	--kvm) accel=kvm; shift ;;
	--append) append=$2; shift 2 ;;
	-i) interactive=1; shift ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see the header of $0)" ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || [ -n "$interactive" ] || die "no command given"
case "$tmo$mem$cpus" in *[!0-9]*) die "-t, -m and -s take numbers" ;; esac

kernel=$(flavour_out "$flavour")/arch/x86/boot/bzImage
[ -f "$kernel" ] || die "no $flavour kernel: run scripts/build-kernel.sh $flavour"
[ -f "$BUILD/rootfs.cpio" ] || die "no rootfs: run scripts/mkrootfs.sh"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 missing: run scripts/deps.sh"

[ -n "$out" ] || out=$BUILD/runs/$flavour-$(date +%Y%m%d-%H%M%S)
mkdir -p "$out/share"
out=$(cd "$out" && pwd)
rm -f "$out/share/exit-status" "$out/share/cmd"
if [ -n "$interactive" ]; then
	echo 'exec setsid cttyhack sh -l' >"$out/share/cmd"
else
	printf '%s\n' "$*" >"$out/share/cmd"
fi

accel_opt="-accel tcg,thread=multi"
if [ -n "$icount" ]; then
	accel_opt="-accel tcg -icount shift=0,sleep=off"
	cpus=1
elif [ "$accel" = kvm ]; then
	accel_opt="-accel kvm"
fi
# Two NUMA nodes. With two or more CPUs, each node gets its own socket(s) of
# CPUs (one socket spanning two nodes makes the scheduler warn); one CPU sits
# on node 0 and node 1 has memory only.
half=$((mem / 2))
if [ "$cpus" -ge 2 ]; then
	numa="-numa node,memdev=m0,cpus=0-$((cpus / 2 - 1)) -numa node,memdev=m1,cpus=$((cpus / 2))-$((cpus - 1))"
else
	numa="-numa node,memdev=m0,cpus=0 -numa node,memdev=m1"
fi
# A sparse scratch disk for an ext4 file system in the guest (O_DIRECT).
scratch=$out/scratch.img
rm -f "$scratch"
truncate -s 2G "$scratch"

log "booting $flavour ($accel${icount:+, icount}, ${cpus} cpu, ${mem} MiB) -> $out/console.log"
qemu() {
	# shellcheck disable=SC2086
	timeout -k 10 "$tmo" qemu-system-x86_64 $accel_opt -cpu max -M pc \
		-smp "$cpus,sockets=$cpus" -m "$mem" \
		-object memory-backend-ram,id=m0,size=${half}M \
		-object memory-backend-ram,id=m1,size=$((mem - half))M $numa \
		-kernel "$kernel" -initrd "$BUILD/rootfs.cpio" \
		-append "console=ttyS0 panic=-1 loglevel=5 rdinit=/init $append" \
		-virtfs local,path="$out/share",mount_tag=host,security_model=none,id=host \
		-drive file="$scratch",format=raw,if=virtio,cache=unsafe \
		-display none -monitor none -serial stdio -no-reboot -nodefaults
}
started=$(date +%s)
set +e
if [ -n "$interactive" ]; then
	qemu
	echo $? >"$out/qemu-rc"
else
	{ qemu </dev/null 2>&1; echo $? >"$out/qemu-rc"; } | tee "$out/console.log"
fi
set -e
rm -f "$scratch"
qrc=$(cat "$out/qemu-rc")
secs=$(( $(date +%s) - started ))

# timeout(1) gives 124, or 137 when QEMU needed the KILL; a 137 long
# before the timeout is someone else's SIGKILL, most often the host's
# OOM killer when guests together ask for more memory than it has.
if [ "$qrc" = 137 ] && [ "$secs" -lt "$tmo" ]; then
	log "FAIL: QEMU was killed (SIGKILL) after ${secs}s, before the ${tmo}s timeout: out of host memory? (see dmesg; log: $out/console.log)"
	exit 125
fi
if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	log "FAIL: guest still running after ${tmo}s: killed (log: $out/console.log)"
	exit 124
fi
[ -n "$interactive" ] && exit 0
if ! "$ROOT/scripts/check-log.sh" "$out/console.log"; then
	log "FAIL: kernel reported a problem (log: $out/console.log)"
	exit 126
fi
if [ ! -s "$out/share/exit-status" ]; then
	log "FAIL: guest ended without an exit status (qemu rc $qrc; log: $out/console.log)"
	exit 125
fi
rc=$(cat "$out/share/exit-status")
log "guest command exited with $rc"
exit "$rc"
