# Common settings for the ptshare harness. Sourced by every script.
# POSIX sh; no machine-specific paths: everything is relative to the repository.

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
# The pinned kernel source: Debian's linux-source-6.12 at this exact version.
KVER_DEB=6.12.118-1~deb12u1
KSRC_TAR=/usr/src/linux-source-6.12.tar.xz
SRC=$BUILD/linux            # git tree: pristine base commit + one commit per patch
VANILLA_SRC=$BUILD/linux-vanilla   # worktree of the base commit
JOBS=${JOBS:-$(nproc)}

log() { printf '%s: %s\n' "${0##*/}" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# Source tree of a flavour.
flavour_src() {
	case "$1" in
	vanilla) echo "$VANILLA_SRC" ;;
	ptshare|debug|nodbg|planted|planted-debug) echo "$SRC" ;;
	*) die "unknown flavour '$1' (vanilla, ptshare, debug)" ;;
	esac
}
flavour_out() { echo "$BUILD/out-$1"; }
