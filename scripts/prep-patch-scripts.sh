#!/bin/sh
# The workload of the patch-scripts benchmark (Morton's pushpatch/poppatch):
# Debian's glibc-source ships glibc-2.36.tar.xz with the whole
# debian/patches/series already applied. Reverse-apply the series (last patch
# first) to get the pristine tree, then keep
#   $BUILD/patch-scripts/base/      only the files that the chosen patches touch,
#                                   pristine except for git-updates.diff (below)
#   $BUILD/patch-scripts/patches/   the chosen patches, NNN-name.diff
#   $BUILD/patch-scripts/series     their names, in order
# The chosen patches are the first $PATCHES (default 80) of the series after
# git-updates.diff: that one is upstream's 2.36 stable branch (770 KB, a
# third of the series' size) and stays applied in the base, so the workload
# is Debian's own patches, of the sizes a developer pushes and pops.
# Checks that they push and pop cleanly on the host. Idempotent.
set -eu
. "$(dirname "$0")/lib.sh"

n=${PATCHES:-80}
out=$BUILD/patch-scripts
dl=$BUILD/glibc-source
[ -f "$out/series" ] && [ "$(wc -l <"$out/series")" = "$n" ] && exit 0

command -v patch >/dev/null || die "patch missing (apt-get install patch)"
mkdir -p "$dl"
if ! ls "$dl"/glibc-source_*.deb >/dev/null 2>&1; then
	log "downloading glibc-source"
	(cd "$dl" && apt-get download -q glibc-source 2>&1 | grep -v unsandboxed >&2) || true
	ls "$dl"/glibc-source_*.deb >/dev/null 2>&1 || die "apt-get download glibc-source failed"
fi
work=$dl/work
rm -rf "$work" "$out.tmp"
mkdir -p "$work/tree" "$out.tmp/patches" "$out.tmp/base"
dpkg-deb -x "$(ls "$dl"/glibc-source_*.deb | tail -1)" "$work/deb"
src=$work/deb/usr/src/glibc
tar -C "$work/tree" --strip-components=1 -xJf "$src"/glibc-*.tar.xz
pdir=$src/debian/patches
grep -v '^[[:space:]]*#' "$pdir/series" | awk 'NF { print $1 }' >"$work/series"
[ "$(head -1 "$work/series")" = git-updates.diff ] || die "series does not start with git-updates.diff"

# Pristine: reverse the whole series, last patch first; then re-apply
# git-updates.diff, the base of the workload.
tac "$work/series" >"$work/reverse"
while read -r p; do
	patch -d "$work/tree" -R -p1 -s -f -E --no-backup-if-mismatch <"$pdir/$p" >/dev/null ||
		die "cannot reverse $p"
done <"$work/reverse"
patch -d "$work/tree" -p1 -s -f --no-backup-if-mismatch <"$pdir/git-updates.diff" >/dev/null ||
	die "cannot re-apply git-updates.diff"

# The workload patches, with flat names that keep their order.
sed -n "2,$((n + 1))p" "$work/series" >"$work/chosen"
[ "$(wc -l <"$work/chosen")" = "$n" ] || die "the series has fewer than $n patches after git-updates.diff"
i=0
while read -r p; do
	i=$((i + 1))
	name=$(printf '%03d-%s' "$i" "$(echo "$p" | tr / _)")
	cp "$pdir/$p" "$out.tmp/patches/$name"
	echo "$name" >>"$out.tmp/series"
done <"$work/chosen"

# The files they touch (old and new names, -p1), those that exist in the base.
cat "$out.tmp"/patches/* | awk '/^(\+\+\+|---) / { f = $2; sub(/^[^\/]*\//, "", f);
	if (f != "" && $2 != "/dev/null") print f }' | sort -u >"$work/files"
(cd "$work/tree" && while read -r f; do [ -f "$f" ] && printf '%s\n' "$f"; done <"$work/files" |
	cpio -pdm --quiet "$out.tmp/base")

# Check on the host that the series pushes and pops cleanly, one patch at a
# time, and that popping restores the base exactly.
cp -a "$out.tmp/base" "$work/check"
while read -r p; do
	patch -d "$work/check" -p1 -s -f --no-backup-if-mismatch <"$out.tmp/patches/$p" >/dev/null ||
		die "$p does not apply in sequence"
done <"$out.tmp/series"
tac "$out.tmp/series" | while read -r p; do
	patch -d "$work/check" -R -p1 -s -f -E --no-backup-if-mismatch <"$out.tmp/patches/$p" >/dev/null ||
		die "$p does not reverse in sequence"
done
find "$work/check" -depth -type d -empty -delete
diff -r "$out.tmp/base" "$work/check" >/dev/null || die "push+pop does not restore the base"

rm -rf "$work" "$out"
mv "$out.tmp" "$out"
log "patch-scripts: $n patches, $(find "$out/base" -type f | wc -l) files, $(du -sm "$out" | cut -f1) MiB in $out"
