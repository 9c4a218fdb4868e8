#!/bin/sh
# Check that every prefix of the series builds, so that a bisection never
# lands on a commit that does not compile: for k = FROM..TO, patches 1..k of
# patches/series applied with git am on the pristine base (tag base of
# build/linux), in a scratch worktree build/linux-prefix, and built as the
# ptshare flavour (x86_64, config/guest.config + config/ptshare.config;
# scripts/build-kernel.sh) out of tree in build/out-prefix. One prefix is
# built after the other in the same output directory, so each build after
# the first recompiles what its patch touched (and ccache helps the first).
# Build/linux itself, its branches and build/out-ptshare are not touched.
#
# Prints "PASS prefix/NN <subject> # ..." (its new compiler warnings, and
# whether CONFIG_PTSHARE exists yet) or "FAIL prefix/NN <subject> # <first
# error>" per prefix, then "N passed, N failed"; exit status 1 if any
# failed. The log of prefix NN is build/out-prefix/prefix-NN.log.
# Cost: the first prefix is a whole kernel, each further one what its patch
# makes recompile, which for a patch to a common header (linux/mm.h,
# linux/ptshare.h) is most of it: FROM=32 for patches 32 and 33 took 908 s
# and 760 s on 2 busy cores, so the whole series takes hours.
#
# Usage: scripts/check-prefixes.sh [FROM [TO]]
#        (default: FROM=$FROM, else 1; TO=$TO, else the last patch)
# TREE=DIR, PATCHDIR=DIR: another repository for the base, another series
# (scripts/lib.sh).
set -eu
. "$(dirname "$0")/lib.sh"

[ -f "$PATCHDIR/series" ] || die "no $PATCHDIR/series"
n=$(series_files | grep -c . || true)
from=${1:-${FROM:-1}}
to=${2:-${TO:-$n}}
case $from$to in *[!0-9]*) die "FROM and TO are patch numbers: '$from' '$to'" ;; esac
[ "$from" -ge 1 ] && [ "$to" -le "$n" ] && [ "$from" -le "$to" ] ||
	die "want 1 <= FROM <= TO <= $n, have FROM=$from TO=$to"

[ -d "$SRC/.git" ] || "$ROOT/scripts/tree.sh"
base=$(git -C "$SRC" rev-parse -q --verify "base^{commit}" 2>/dev/null ||
	git -C "$SRC" rev-list --max-parents=0 HEAD | tail -1)

# The scratch worktree, at the base, with nothing left of an earlier run.
wt=$BUILD/linux-prefix
out=$BUILD/out-prefix
git -C "$wt" am --abort >/dev/null 2>&1 || true
scratch_worktree "$wt" "$base"
git -C "$wt" clean -q -f -d -x
mkdir -p "$out"
log "base $(git -C "$wt" log -1 --format='%h %s'); prefixes $from..$to of $n, $JOBS jobs"
# git am commits as the series' identity, without touching any git config.
GIT_COMMITTER_NAME=${IDENT% <*}
GIT_COMMITTER_EMAIL=$(echo "$IDENT" | sed 's/.*<\(.*\)>.*/\1/')
export GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL

pass=0
fail=0
k=0
broken=
for p in $(series_files); do
	k=$((k + 1))
	[ "$k" -le "$to" ] || break
	name=prefix/$(printf '%02d' "$k")
	subject=$(git mailinfo /dev/null /dev/null <"$PATCHDIR/$p" | sed -n 's/^Subject: //p')
	if [ -n "$broken" ]; then
		res="FAIL $name $subject # not applied: patch $broken does not apply"
	elif ! git -C "$wt" am -q --keep-cr "$PATCHDIR/$p" >/dev/null 2>&1; then
		git -C "$wt" am --abort >/dev/null 2>&1 || true
		broken=$k
		res="FAIL $name $subject # $p does not apply"
	elif [ "$k" -lt "$from" ]; then
		continue    # applied, not built
	else
		logf=$out/prefix-$(printf '%02d' "$k").log
		start=$(date +%s)
		if KSRC=$wt KOUT=$out CHECK_CONFIG=0 "$ROOT/scripts/build-kernel.sh" ptshare >"$logf" 2>&1; then
			warn=$(grep -c 'warning:' "$logf" || true)
			cfg="no CONFIG_PTSHARE yet"
			! grep -q '^CONFIG_PTSHARE=y' "$out/.config" || cfg=CONFIG_PTSHARE=y
			res="PASS $name $subject # $warn warning(s), $cfg"
		else
			res="FAIL $name $subject # $(first_error "$logf" "$wt" "$out")"
		fi
		log "$name: ${res%% *} in $(( $(date +%s) - start ))s (log: ${logf#"$ROOT"/})"
	fi
	# Below FROM, only the patch that does not apply has a line.
	[ "$k" -ge "$from" ] || [ "$broken" = "$k" ] || continue
	echo "$res"
	case $res in
	PASS*) pass=$((pass + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
