# Common settings for the ptshare harness. Sourced by every script.
# POSIX sh; no machine-specific paths: everything is relative to the repository.

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# The pinned kernel source: Debian's linux-source-6.12 at this exact version.
KVER_DEB=6.12.118-1~deb12u1
KSRC_TAR=/usr/src/linux-source-6.12.tar.xz
# The kernel tree: the pristine base commit (tag base) + one commit per
# patch. TREE=DIR and PATCHDIR=DIR point the scripts at another tree and
# another series directory (a clone, a scratch export).
SRC=${TREE:-$BUILD/linux}
PATCHDIR=${PATCHDIR:-$ROOT/patches}  # the series: NNNN-*.patch and series
VANILLA_SRC=$BUILD/linux-vanilla   # worktree of the base commit
JOBS=${JOBS:-$(nproc)}
# The one identity of the series: the author and Signed-off-by its patches
# must carry (scripts/export.sh warns about any other), the sender of its
# cover letter, and the committer of build/linux (scripts/tree.sh).
IDENT="ptshare harness <harness@ptshare.invalid>"

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Install the Debian packages PKG (or PKG=VERSION, an exact version) that
# are missing, with apt-get; needs root only when something is missing.
ensure_pkgs() { # PKG...
	missing=
	for p; do
		name=${p%%=*}
		want=${p#*=}
		have=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null || true)
		case "$have" in
		"install ok installed "*)
			[ "$name" = "$p" ] || [ "${have##* }" = "$want" ] || missing="$missing $p" ;;
		*) missing="$missing $p" ;;
		esac
	done
	[ -n "$missing" ] || return 0
	[ "$(id -u)" = 0 ] || die "need root to install:$missing"
	log "installing:$missing"
	DEBIAN_FRONTEND=noninteractive
	export DEBIAN_FRONTEND
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Source tree of a flavour.
flavour_src() {
	case "$1" in
	vanilla) echo "$VANILLA_SRC" ;;
	ptshare|debug|nodbg|planted|planted-debug) echo "$SRC" ;;
	*) die "unknown flavour '$1' (vanilla, ptshare, debug)" ;;
	esac
}
flavour_out() { echo "$BUILD/out-$1"; }

# The patches of patches/series in order, one "PATCH-ID FILE" line each
# (git patch-id --stable: the same for the same change, whatever its line
# numbers or commit message).
series_patch_ids() {
	[ -f "$PATCHDIR/series" ] || return 0
	series_files | while read -r p; do
		echo "$(git patch-id --stable <"$PATCHDIR/$p" | cut -d' ' -f1) $p"
	done
}

# The "result suite=S bench=B param=P metric=M value=V unit=U reps=R" lines
# of FILE (what tests/guest/run-bench.sh prints) as rows of results.tsv
# (below) for the kernel column KERNEL, run in MODE.
result_rows() { # KERNEL MODE FILE
	awk -v k="$1" -v mode="$2" '/^result / {
		split("", f)
		for (i = 2; i <= NF; i++) { j = index($i, "="); f[substr($i, 1, j - 1)] = substr($i, j + 1) }
		printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", f["suite"], f["bench"], k, mode,
			f["param"], f["metric"], f["value"], f["unit"], f["reps"]
	}' "$3"
}

# The rows of results.tsv FILE as results.jsonl, one JSON object a line
# (run_tsv reads them back).
tsv_jsonl() { # FILE
	awk -F'\t' '{
		printf "{\"suite\":\"%s\",\"bench\":\"%s\",\"kernel\":\"%s\",\"mode\":\"%s\",\"param\":\"%s\",\"metric\":\"%s\",\"value\":%s,\"unit\":\"%s\",\"reps\":%s}\n",
			$1, $2, $3, $4, $5, $6, $7, $8, $9
	}' "$1"
}

# The file names of patches/series in order, without comments and blanks.
series_files() {
	grep -v '^[[:space:]]*\(#\|$\)' "$PATCHDIR/series"
}

# The compiler's or linker's first complaint in the build log LOG, with the
# paths of the source tree SRCDIR and of the output tree OUTDIR cut off.
first_error() { # LOG SRCDIR OUTDIR
	{
		grep -m1 -E 'error:|undefined reference' "$1" ||
			grep -m1 -E 'Error|\*\*\*' "$1" ||
			tail -n1 "$1"
	} | sed "s|$2/||g; s|\.\./${2##*/}/||g; s|$3/||g"
}

# The rows of the make bench run in DIR as tab-separated values (suite,
# bench, kernel, mode, param, metric, value, unit, reps): its results.tsv,
# or, in the tree, which keeps only results.jsonl, the same rows read back
# from the lines scripts/bench.sh wrote there.
run_tsv() { # DIR
	if [ -f "$1/results.tsv" ]; then
		cat "$1/results.tsv"
		return
	fi
	[ -f "$1/results.jsonl" ] || die "$1: no results.jsonl (not a run of make bench?)"
	t=$(printf '\t') q='"\(.*\)"'
	sed -n "s/^{\"suite\":$q,\"bench\":$q,\"kernel\":$q,\"mode\":$q,\"param\":$q,\"metric\":$q,\"value\":\(.*\),\"unit\":$q,\"reps\":\(.*\)}\$/\1$t\2$t\3$t\4$t\5$t\6$t\7$t\8$t\9/p" \
		"$1/results.jsonl"
}

# Build the kernels of FLAVOURs from patches/ (incremental), or, with
# BUILD_KERNEL=0, only check that they have been built.
kernels_ready() { # FLAVOUR...
	if [ "${BUILD_KERNEL:-1}" = 0 ]; then
		for f; do
			[ -f "$(flavour_out "$f")/arch/x86/boot/bzImage" ] ||
				die "BUILD_KERNEL=0 but no $f kernel"
		done
		return 0
	fi
	"$ROOT/scripts/tree.sh"
	for f; do "$ROOT/scripts/build-kernel.sh" "$f"; done
}

# Boot $flavour in RUN for at most TMO seconds with MIB of memory and
# kernel parameters APPEND, and run the guest command CMD there with its
# output in tmpfs (writes to the 9p share pin pages), copied to
# RUN/share/NAME when CMD ends; the file is empty if the guest died first.
# Sets grc to run-guest.sh's exit status (see guest_verdict).
guest_run_captured() { # RUN TMO MIB APPEND NAME CMD
	set +e
	"$ROOT/scripts/run-guest.sh" -k "$flavour" -o "$1" -t "$2" -m "$3" \
		${4:+--append "$4"} -- \
		"$6 >/tmp/$5 2>&1; rc=\$?; cp /tmp/$5 /host/$5; exit \$rc" \
		>"$1/console.out" 2>&1
	grc=$?
	set -e
	[ -f "$1/share/$5" ] || : >"$1/share/$5"
}

# The last line of a test run: "N passed, N failed, N skipped", counted
# from the PASS/FAIL/SKIP lines of FILE. Exit status 0 only if none failed.
summarize() { # FILE
	pass=$(grep -c '^PASS ' "$1" || true)
	fail=$(grep -c '^FAIL ' "$1" || true)
	skip=$(grep -c '^SKIP ' "$1" || true)
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
}

# The verdict line for run-guest.sh's exit status RC, in a run with a
# timeout of TMO seconds whose guest command is called WHAT. Nothing for
# 0 and 1: the guest command's own output says what passed and failed.
guest_verdict() { # RC TMO WHAT
	case $1 in
	0|1) ;;
	124) echo "FAIL kernel/guest # hung: killed after ${2}s" ;;
	125) echo "FAIL kernel/guest # crashed: no exit status" ;;
	126) echo "FAIL kernel/log # WARN/BUG/oops in console.log" ;;
	*) echo "FAIL $3 # exit status $1" ;;
	esac
}

# A scratch worktree DIR of the kernel tree $SRC, checked out at REV: made
# anew if missing or left over from a tree that tree.sh --reset replaced,
# else reused (force-checked out; the caller cleans what it must).
scratch_worktree() { # DIR REV
	_common=$(git -C "$SRC" rev-parse --path-format=absolute --git-common-dir)
	if [ "$(git -C "$1" rev-parse --path-format=absolute --git-common-dir 2>/dev/null)" != "$_common" ]; then
		rm -rf "$1"
		git -C "$SRC" worktree prune
		git -C "$SRC" worktree add -q --detach "$1" "$2"
	else
		git -C "$1" checkout -q -f --detach "$2"
	fi
}
