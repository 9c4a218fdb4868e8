#!/bin/sh
# Export the commits of build/linux (after the pristine base) into patches/
# as git format-patch files with numbered subjects ("[PATCH NN/MM]"), and
# rewrite patches/series to match. Also writes patches/0000-cover-letter.patch
# ("[PATCH 00/MM]"), which is not in the series: the text of
# patches/cover-letter.txt (its header says how), filled with the patch
# count, README.md's headline table and the base, then the shortlog, the
# diffstat and the base-commit line. Refuses when the tree has uncommitted
# edits. Warns about patches whose author or Signed-off-by is not the
# series' identity (IDENT in scripts/lib.sh). Runs checkpatch on each patch.
#
# Environment: TREE=DIR exports another tree, PATCHDIR=DIR writes another
# directory (scripts/lib.sh); COVER=FILE another cover letter text;
# CHECKPATCH=0 skips checkpatch.
set -eu
. "$(dirname "$0")/lib.sh"

cover_txt=${COVER:-$ROOT/patches/cover-letter.txt}

[ -d "$SRC/.git" ] || die "no tree at $SRC (scripts/tree.sh)"
if [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
	die "$SRC has uncommitted edits: commit them first"
fi
base=$(git -C "$SRC" rev-list --max-parents=0 HEAD | tail -1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# core.abbrev=12, as the kernel recommends: the index lines then do not
# depend on how many objects the tree's repository happens to hold.
git -C "$SRC" -c core.abbrev=12 format-patch -q --no-signature --zero-commit --numbered \
	--cover-letter --base="$base" -o "$tmp" "$base..HEAD"
n=$(git -C "$SRC" rev-list --count "$base..HEAD")

# README.md's headline table as plain text for a mail: each row's text
# wrapped at 36 columns, the conditions in `...` of its run column in
# brackets after it, the numbers on its first line.
headline() {
	awk '
	function trim(s) { gsub(/^[ \t]+|[ \t]+$/, "", s); return s }
	function out(line, more, a, b, c) {
		if (more) printf "    %s\n", line
		else printf "  %-36s %10s %10s %8s\n", line, a, b, c
	}
	function row(what, a, b, c,    n, w, i, line, lines) {
		n = split(what, w, " ")
		line = ""; lines = 0
		for (i = 1; i <= n; i++) {
			if (line != "" && length(line) + 1 + length(w[i]) > (lines ? 34 : 36)) {
				out(line, lines++, a, b, c)
				line = ""
			}
			line = line == "" ? w[i] : line " " w[i]
		}
		out(line, lines, a, b, c)
	}
	/^## Headline numbers/ { on = 1; next }
	on && /^## / { exit }
	on && /^\|/ {
		split($0, f, "|")
		if (trim(f[2]) ~ /^-+$/) next
		what = trim(f[2]); run = trim(f[6]); cond = ""
		while (match(run, /`[^`]*`/)) {
			cond = cond (cond == "" ? "" : ", ") substr(run, RSTART + 1, RLENGTH - 2)
			run = substr(run, RSTART + RLENGTH)
		}
		if (cond != "") what = what " [" cond "]"
		gsub(/`/, "", what)
		if (!rows++) { printf "  %-36s %10s %10s %8s\n", "", trim(f[3]), trim(f[4]), "ratio"; next }
		if (what !~ /^the same/) print ""
		row(what, trim(f[3]), trim(f[4]), trim(f[5]))
	}' "$ROOT/README.md"
}

# The paragraph that names the base.
base_text() {
	fmt -w 72 <<EOF
The $n patches apply to Debian's linux-source-6.12 $KVER_DEB (Linux
$(echo "$KVER_DEB" | cut -d- -f1) as Debian ships it), unpacked and committed unchanged by the
harness (scripts/tree.sh): base-commit below, git tree
$(git -C "$SRC" rev-parse "$base^{tree}").
EOF
}

# The cover letter: our headers and text, then git's shortlog, diffstat and
# base-commit (what follows its "*** BLURB HERE ***").
make_cover() { # GIT-COVER OUT
	prefix=$(sed -n 's/^Subject: \(\[PATCH [0-9]*\/[0-9]*\]\) .*/\1/p' "$1")
	subject=$(grep -v '^#' "$cover_txt" | sed -n 1p)
	headline >"$tmp/headline.txt"
	[ -s "$tmp/headline.txt" ] || log "warning: README.md has no headline table for the cover letter"
	base_text >"$tmp/base.txt"
	grep -v '^#' "$cover_txt" | sed 1,2d | awk -v n="$n" -v hl="$tmp/headline.txt" -v bt="$tmp/base.txt" '
		function cat(f,    l) { while ((getline l <f) > 0) print l; close(f) }
		$0 == "@HEADLINE@" { cat(hl); next }
		$0 == "@BASE@" { cat(bt); next }
		{ gsub(/@N@/, n); print }' >"$tmp/body.txt"
	LC_ALL=C awk 'length > 72 { print "export.sh: warning: cover letter: line " NR " is longer than 72 columns" }' \
		"$tmp/body.txt" >&2
	if grep -n '@[A-Z][A-Z]*@' "$tmp/body.txt" >&2; then
		log "warning: unknown placeholders in $cover_txt (above)"
	fi
	sed '1,/^\*\*\* BLURB HERE \*\*\*$/d' "$1" >>"$tmp/body.txt"
	{
		echo "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001"
		echo "From: $IDENT"
		echo "Date: $(git -C "$SRC" log -1 --format=%aD HEAD)"
		echo "Subject: $prefix $subject"
		if LC_ALL=C grep -q '[^[:print:][:space:]]' "$tmp/body.txt"; then
			echo "MIME-Version: 1.0"
			echo "Content-Type: text/plain; charset=UTF-8"
			echo "Content-Transfer-Encoding: 8bit"
		fi
		echo
		cat "$tmp/body.txt"
	} >"$2"
}

mkdir -p "$PATCHDIR"
rm -f "$PATCHDIR"/*.patch
: >"$PATCHDIR/series"
for f in "$tmp"/*.patch; do
	[ -e "$f" ] || break
	case ${f##*/} in
	0000-cover-letter.patch)
		if [ -f "$cover_txt" ]; then
			make_cover "$f" "$PATCHDIR/0000-cover-letter.patch"
		else
			log "warning: no $cover_txt: no cover letter"
		fi
		continue ;;
	esac
	cp "$f" "$PATCHDIR/"
	basename "$f" >>"$PATCHDIR/series"
done
log "exported $n patch(es) to ${PATCHDIR#"$ROOT"/}/"

# The series' identity: every patch by IDENT, signed off by IDENT.
series_files | while read -r p; do
	info=$(git mailinfo /dev/null /dev/null <"$PATCHDIR/$p")
	from="$(echo "$info" | sed -n 's/^Author: //p') <$(echo "$info" | sed -n 's/^Email: //p')>"
	[ "$from" = "$IDENT" ] || echo "author $p: $from"
	grep -qxF "Signed-off-by: $IDENT" "$PATCHDIR/$p" || echo "signoff $p"
done >"$tmp/ident"
for what in author signoff; do
	bad=$(grep -c "^$what " "$tmp/ident" || true)
	[ "$bad" = 0 ] || log "warning: $bad of $n patches $(
		[ $what = author ] && echo "are not by" || echo "lack the Signed-off-by of")" \
		"IDENT ($IDENT, scripts/lib.sh), first: $(grep -m1 "^$what " "$tmp/ident" | cut -d' ' -f2-)"
done

if [ "${CHECKPATCH:-1}" = 1 ] && [ "$n" -gt 0 ]; then
	(cd "$SRC" && ./scripts/checkpatch.pl -q --no-tree --strict \
		$(series_files | sed "s|^|$PATCHDIR/|")) ||
		log "warning: checkpatch found issues (above)"
fi
