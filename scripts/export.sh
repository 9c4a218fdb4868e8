#!/bin/sh
# Export the commits of build/linux (after the pristine base) into patches/
# as git format-patch files, and rewrite patches/series to match.
# Refuses when the tree has uncommitted edits. Runs checkpatch on each patch.
set -eu
. "$(dirname "$0")/lib.sh"

[ -d "$SRC/.git" ] || die "no tree at $SRC (scripts/tree.sh)"
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
	die "$SRC has uncommitted edits: commit them first"
fi
base=$(git -C "$SRC" rev-list --max-parents=0 HEAD | tail -1)
tmp=$(mktemp -d)
git -C "$SRC" format-patch -q --no-signature --zero-commit -N -o "$tmp" "$base..HEAD"
rm -f "$ROOT"/patches/*.patch
: >"$ROOT/patches/series"
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || break
	cp "$f" "$ROOT/patches/"
	basename "$f" >>"$ROOT/patches/series"
done
rm -rf "$tmp"
n=$(grep -c . "$ROOT/patches/series" || true)
log "exported $n patch(es) to patches/"
if [ "${CHECKPATCH:-1}" = 1 ] && [ "$n" -gt 0 ]; then
	(cd "$SRC" && ./scripts/checkpatch.pl -q --no-tree --strict \
		$(sed "s|^|$ROOT/patches/|" "$ROOT/patches/series")) ||
		log "warning: checkpatch found issues (above)"
fi
