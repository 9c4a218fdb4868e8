#!/bin/sh
# Build the kernel's own mm selftests from the pinned source, statically
# linked so that they run in the busybox guest without a libc.
# Output: build/selftests/mm/<binary>
set -eu
. "$(dirname "$0")/lib.sh"

[ -f "$VANILLA_SRC/Makefile" ] || "$ROOT/scripts/tree.sh"
hdr=$BUILD/headers
out=$BUILD/selftests/mm
st=$VANILLA_SRC/tools/testing/selftests

if [ ! -f "$hdr/include/linux/userfaultfd.h" ]; then
	log "installing kernel headers"
	make -s -C "$VANILLA_SRC" O="$BUILD/out-headers" INSTALL_HDR_PATH="$hdr" headers_install
fi

mkdir -p "$out"
log "building mm selftests"
# khugepaged.c in 6.12.118 uses ksft_* without including kselftest.h.
make -s -C "$st/mm" OUTPUT="$out" \
	KHDR_INCLUDES="-isystem $hdr/include" \
	USERLDFLAGS=-static \
	EXTRA_CFLAGS="-static -include $st/kselftest.h" \
	-j"$JOBS" >"$out/build.log" 2>&1 || {
	tail -30 "$out/build.log" >&2
	die "selftests build failed (full log: $out/build.log)"
}
cp "$st/mm/run_vmtests.sh" "$st/mm/check_config.sh" "$out/" 2>/dev/null || true
n=$(find "$out" -maxdepth 1 -type f -perm -u+x | wc -l)
log "built $n selftest programs in $out"
