#!/bin/sh
# Write DIR/manifest.txt: what produced a run, so that runs can be trusted
# and compared later. One "key: value" per line:
#   command, date, harness commit (with "+dirty" if the tree had edits),
#   series (base version, number of patches, a hash of their patch ids),
#   one line per patch (its stable patch id and file name), the config
#   hash of each kernel flavour built, QEMU's version, the host's CPUs
#   and memory, and GUESTS.
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
ids=$(while read -r p; do
	[ -n "$p" ] || continue
	printf '%s %s\n' "$(git patch-id --stable <"$ROOT/patches/$p" | cut -c1-12)" "$p"
done <"$ROOT/patches/series")

{
	echo "command: $*"
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "harness: $commit"
	echo "series: linux-source-6.12 $(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null || echo '?'), $(echo "$ids" | grep -c .) patches, $(echo "$ids" | sha1sum | cut -c1-12)"
	echo "$ids" | sed 's/^/patch: /'
	for f in $flavours; do
		cfg=$(flavour_out "$f")/.config
		if [ -f "$cfg" ]; then
			echo "config $f: $(sha1sum <"$cfg" | cut -c1-12)"
		else
			echo "config $f: not built"
		fi
	done
	echo "qemu: $(qemu-system-x86_64 --version 2>/dev/null | head -1 || echo none)"
	echo "host cpus: $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"
	echo "host memory: $(awk '/MemTotal/ {print int($2 / 1024) " MiB"}' /proc/meminfo)"
	echo "guests: ${GUESTS:-default}"
} >"$dir/manifest.txt"
