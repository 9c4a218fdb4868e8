#!/bin/sh
# Show that the tests catch real bugs: for each deliberately broken patch
# in tests/planted/, build the ptshare kernel with that patch on top of the
# series, run the tests the patch names, and check that they fail.
#
# Usage: scripts/planted.sh [PATCH...]   (default: tests/planted/*.patch)
#
# Each planted patch says in its changelog, as trailers:
#   Caught-by: NAME...   plan entries to run (ONLY=, see scripts/test.sh)
#   Flavour: F           ptshare (default) or debug: the config to build
#   PT-Share: N          vm.pt_share for the run (default 2)
# Prints "CAUGHT patch # ..." or "MISSED patch # ..." for each, and ends
# with "N caught, N missed". Exit status 1 if any was missed.
#
# The patch is applied to build/linux only while its kernel builds, into
# build/out-planted or build/out-planted-debug, and reverted right after.
set -eu
. "$(dirname "$0")/lib.sh"

[ $# -gt 0 ] || set -- "$ROOT"/tests/planted/*.patch
"$ROOT/scripts/deps.sh"
"$ROOT/scripts/tree.sh"
[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
	die "$SRC has uncommitted edits; commit and export them first"

# A trailer of the patch's changelog (the part before the first "---").
trailer() { # PATCH NAME DEFAULT
	v=$(sed -n '/^---$/q; s/^'"$2"': *//p' "$1" | head -1)
	echo "${v:-$3}"
}

applied=
revert() {
	[ -z "$applied" ] || git -C "$SRC" apply -R "$applied"
	applied=
}
trap revert EXIT INT TERM

caught=0 missed=0
: >"$BUILD/planted.txt"
for p in "$@"; do
	p=$(cd "$(dirname "$p")" && pwd)/$(basename "$p")
	name=$(basename "$p" .patch)
	only=$(trailer "$p" Caught-by "")
	flavour=planted
	[ "$(trailer "$p" Flavour ptshare)" = debug ] && flavour=planted-debug
	mode=$(trailer "$p" PT-Share 2)
	[ -n "$only" ] || die "$name: no Caught-by: trailer"

	git -C "$SRC" apply --check "$p" || die "$name: does not apply to the series"
	git -C "$SRC" apply "$p"
	applied=$p
	"$ROOT/scripts/build-kernel.sh" "$flavour"
	revert

	set +e
	ONLY=$only PT_SHARE=$mode HARNESS_CHECKS=0 BUILD_KERNEL=0 \
		"$ROOT/scripts/test.sh" -k "$flavour" >"$BUILD/planted-$name.log" 2>&1
	set -e
	failed=$(grep '^FAIL ' "$BUILD/planted-$name.log" | sed 's/ #.*//; s/^FAIL //' |
		tr '\n' ' ')
	if [ -n "$failed" ]; then
		caught=$((caught + 1))
		line="CAUGHT $name # failed: $failed"
	else
		missed=$((missed + 1))
		line="MISSED $name # ran: $only (log: $BUILD/planted-$name.log)"
	fi
	echo "$line" | tee -a "$BUILD/planted.txt"
done
echo "$caught caught, $missed missed"
[ "$missed" = 0 ]
