#!/bin/sh
# Write DIR/manifest.txt: what produced a run, so that runs can be trusted
# and compared later. One "key: value" per line:
#   command, date, harness commit (with "+dirty" if the tree had edits),
#   series (base version, number of patches, a hash of their patch ids
#   alone, so that renamed patches hash the same),
#   one line per patch (its stable patch id and file name), the kernel
#   tree the kernels were built from (build/linux: its HEAD, and whether it
#   holds the same patches as patches/), the config hash of each kernel
#   flavour built, QEMU's version, the host's CPUs and memory, and GUESTS.
# The flavour "native" is the running kernel (scripts/native-bench.sh): its
# release and version, the hash of its config (/boot/config-RELEASE or
# /proc/config.gz), its command line, its ptshare sysctls and THP mode;
# QEMU and GUESTS are then "not used".
# A value that cannot be read is "unknown" ("not built" for a config).
#
# Usage: scripts/manifest.sh DIR FLAVOUR... -- COMMAND...
set -eu
. "$(dirname "$0")/lib.sh"

dir=${1:?usage: manifest.sh DIR FLAVOUR... -- COMMAND...}
shift
flavours=
while [ $# -gt 0 ] && [ "$1" != -- ]; do flavours="$flavours $1"; shift; done
[ "${1:-}" = -- ] && shift

commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
	commit="$commit+dirty"
ids=$(series_patch_ids)

# build/linux: its HEAD, and whether its commits over the base are the
# patches of patches/ (they differ after an edit that was not exported).
tree=unknown
if head=$(git -C "$SRC" rev-parse --short HEAD 2>/dev/null); then
	base=$(git -C "$SRC" rev-list --max-parents=0 HEAD | tail -1)
	have=$(git -C "$SRC" format-patch --stdout "$base..HEAD" | git patch-id --stable | cut -d' ' -f1)
	same="differs from patches/"
	[ "$have" != "$(echo "$ids" | cut -d' ' -f1)" ] || same="the patches of patches/"
	[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
		same="$same, with uncommitted edits"
	tree="build/linux at $head, $(git -C "$SRC" rev-list --count "$base..HEAD") commits on the base: $same"
fi
# The running kernel, for native runs.
native_kernel() {
	rel=$(uname -r)
	kcfg=unknown
	if [ -r "/boot/config-$rel" ]; then
		kcfg=$(sha1sum <"/boot/config-$rel" | cut -c1-12)
	elif [ -r /proc/config.gz ]; then
		kcfg=$(gzip -dc /proc/config.gz | sha1sum | cut -c1-12)
	fi
	echo "config native: $kcfg"
	echo "running kernel: $rel $(uname -v)"
	echo "kernel command line: $(cat /proc/cmdline 2>/dev/null || echo unknown)"
	sysctls=
	for s in /proc/sys/vm/pt_share*; do
		[ ! -r "$s" ] || sysctls="$sysctls vm.${s##*/}=$(cat "$s")"
	done
	echo "ptshare sysctls:${sysctls:- none (not a ptshare kernel)}"
	echo "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo none)"
}
qemu=$(qemu-system-x86_64 --version 2>/dev/null | head -1)
kver=$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || true)

{
	echo "command: $*"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "harness: $commit"
	echo "series: linux-source-6.12 ${kver:-unknown}, $(echo "$ids" | grep -c .) patches, $(echo "$ids" | cut -d' ' -f1 | sha1sum | cut -c1-12)"
	echo "$ids" | awk 'NF { print "patch: " substr($1, 1, 12), $2 }'
	echo "kernel tree: $tree"
	for f in $flavours; do
		cfg=$(flavour_out "$f")/.config
		if [ "$f" = native ]; then
			native_kernel
		elif [ -f "$cfg" ]; then
			echo "config $f: $(sha1sum <"$cfg" | cut -c1-12)"
		else
			echo "config $f: not built"
		fi
	done
	# shellcheck disable=SC2086,SC2116 # the list, without its spaces
	case $(echo $flavours) in
	native) qemu="not used" GUESTS="not used" ;;
	esac
	echo "qemu: ${qemu:-unknown}"
	echo "host cpus: $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "host memory: $(awk '/MemTotal/ {print int($2 / 1024) " MiB"}' /proc/meminfo)"
	echo "guests: ${GUESTS:-unknown}"
} >"$dir/manifest.txt"
