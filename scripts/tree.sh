#!/bin/sh
# Create build/linux: the pinned linux-source-6.12 as a git repository whose
# first commit is the pristine base, with patches/series applied as commits,
# plus build/linux-vanilla, a worktree of the base commit. The base commit
# is the same on every machine (fixed author, committer and dates), so the
# base-commit line of the cover letter names it for anyone who runs this.
#
# Usage: scripts/tree.sh          create the tree if missing, else check it
#        scripts/tree.sh --reset  throw away build/linux and recreate it
# TREE=DIR, PATCHDIR=DIR, BUILD=DIR: another tree, series, build directory
# (scripts/lib.sh).
set -eu
. "$(dirname "$0")/lib.sh"

series=$PATCHDIR/series

if [ "${1:-}" = --reset ]; then
	if [ -d "$SRC/.git" ] && [ -n "$(git -C "$SRC" status --porcelain --untracked-files=no)" ]; then
		die "$SRC has uncommitted edits; commit and export them first"
	fi
	rm -rf "$SRC" "$VANILLA_SRC"
fi

if [ -d "$SRC/.git" ]; then
	# Existing tree: it must hold exactly the series, or we refuse to guess.
	base=$(git -C "$SRC" rev-list --max-parents=0 HEAD | tail -1)
	have=$(git -C "$SRC" format-patch --stdout "$base..HEAD" | git patch-id --stable | cut -d' ' -f1)
	want=$(series_patch_ids | cut -d' ' -f1)
	if [ "$have" != "$want" ]; then
		log "warning: $SRC differs from patches/ (export with scripts/export.sh, or --reset)"
	fi
	[ -d "$VANILLA_SRC" ] || git -C "$SRC" worktree add --detach "$VANILLA_SRC" "$base" >/dev/null
	exit 0
fi

[ -f "$KSRC_TAR" ] || die "$KSRC_TAR missing: run scripts/deps.sh"
have_ver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)
[ "$have_ver" = "$KVER_DEB" ] || die "linux-source-6.12 is '$have_ver', want $KVER_DEB: run scripts/deps.sh"

mkdir -p "$BUILD" "$(dirname "$SRC")"
rm -rf "$SRC.tmp" && mkdir "$SRC.tmp"
log "extracting $KSRC_TAR"
tar -xJf "$KSRC_TAR" -C "$SRC.tmp" --strip-components=1
cd "$SRC.tmp"
git init -q -b ptshare
# The committer of the patches' commits: the series' identity (lib.sh).
git config user.name "${IDENT% <*}"
git config user.email "$(echo "$IDENT" | sed 's/.*<\(.*\)>.*/\1/')"
git config gc.auto 0
# Debian's top-level .gitignore ignores everything ("/*"): force the add.
# New files in the tree need "git add -f" for the same reason.
git add -A -f >/dev/null
# The same commit everywhere: the package's name and the date of its
# top-level Makefile, not whoever runs this when.
date="@$(stat -c %Y Makefile) +0000"
GIT_AUTHOR_NAME=linux-source-6.12 GIT_AUTHOR_EMAIL=linux-source-6.12@ptshare.invalid \
GIT_COMMITTER_NAME=linux-source-6.12 GIT_COMMITTER_EMAIL=linux-source-6.12@ptshare.invalid \
GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date \
	git commit -q -m "linux-source-6.12 $KVER_DEB (pristine)"
cd "$ROOT"
mv "$SRC.tmp" "$SRC"
git -C "$SRC" tag -f base >/dev/null

if [ -f "$series" ]; then
	series_files | while read -r p; do
		[ -f "$PATCHDIR/$p" ] || die "series names $p, which is missing"
		git -C "$SRC" am -q --keep-cr "$PATCHDIR/$p" || {
			git -C "$SRC" am --abort
			die "patch $p does not apply"
		}
	done
fi
git -C "$SRC" worktree add --detach "$VANILLA_SRC" base >/dev/null 2>&1
log "tree ready: $(git -C "$SRC" rev-list --count base..HEAD) patch(es) on base"
