#!/bin/sh
# Build the kernel's own mm selftests from the pinned source, statically
# linked so that they run in the busybox guest without a libc.
# Output: build/selftests/mm/<binary>
set -eu
. "$(dirname "$0")/lib.sh"

[ -f "$VANILLA_SRC/Makefile" ] || "$ROOT/scripts/tree.sh"
hdr=$BUILD/headers
out=$BUILD/selftests/mm
fixes=$ROOT/tests/selftests-fixes
# The selftests build from a copy of the pinned tools/, with the fixes of
# tests/selftests-fixes/ applied (each says why); the kernel trees stay
# pristine.  A change to the fixes or to the list of files copied makes a
# new copy and a full build.
copy=$BUILD/selftests-src
# -I of the kernel tree: the files the mm selftests include from it.
from_tree="tools mm/gup_test.h lib/test_hmm_uapi.h include/vdso/time64.h"
stamp=$({ echo "$from_tree"; cat "$fixes"/*.patch 2>/dev/null; } |
	sha1sum | cut -c1-12)
if [ "$(cat "$copy/.stamp" 2>/dev/null)" != "$stamp" ]; then
	log "copying the selftests source and applying tests/selftests-fixes"
	rm -rf "$copy" "$out"
	mkdir -p "$copy"
	# shellcheck disable=SC2086 # a list of paths without blanks
	git -C "$VANILLA_SRC" archive HEAD $from_tree | tar -x -C "$copy"
	for p in "$fixes"/*.patch; do
		[ -f "$p" ] || continue
		patch -s -p1 -d "$copy" <"$p" || die "$p does not apply"
	done
	echo "$stamp" >"$copy/.stamp"
fi
st=$copy/tools/testing/selftests

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
