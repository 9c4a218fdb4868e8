#!/bin/sh
# Build one kernel flavour out of tree.
#   vanilla  build/linux-vanilla (base commit), config/guest.config
#   ptshare  build/linux (all patches),         config/guest.config (+ptshare.config)
#   debug    build/linux (all patches),         ... + config/debug.config
#   planted, planted-debug: as ptshare and debug, built by scripts/planted.sh
#            while a planted bug is applied
# Output: build/out-<flavour>/arch/x86/boot/bzImage and System.map.
# KSRC=DIR KOUT=DIR build the source DIR into KOUT with the flavour's
# config instead, and CHECK_CONFIG=0 accepts a config that lacks options
# of the fragments (scripts/check-prefixes.sh: a prefix of the series may
# not have them yet).
#
# Usage: scripts/build-kernel.sh FLAVOUR [--config-only]
set -eu
. "$(dirname "$0")/lib.sh"

flavour=${1:?usage: build-kernel.sh vanilla|ptshare|debug}
src=${KSRC:-$(flavour_src "$flavour")}
out=${KOUT:-$(flavour_out "$flavour")}
[ -f "$src/Makefile" ] || "$ROOT/scripts/tree.sh"

frags="$ROOT/config/guest.config"
case "$flavour" in
vanilla) ;;
ptshare|planted) [ -f "$ROOT/config/ptshare.config" ] && frags="$frags $ROOT/config/ptshare.config" ;;
debug|planted-debug)
	[ -f "$ROOT/config/ptshare.config" ] && frags="$frags $ROOT/config/ptshare.config"
	frags="$frags $ROOT/config/debug.config" ;;
esac

cc="gcc"
if command -v ccache >/dev/null; then
	cc="ccache gcc"
	# Paths relative to the repository, so a fresh clone hits the cache.
	export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
fi
mk() { make -s -C "$src" O="$out" CC="$cc" HOSTCC="$cc" "$@"; }

mkdir -p "$out"
# Regenerate the config when a fragment or the tree changed.
stamp=$(cat $frags | sha1sum | cut -c1-12)-$(git -C "$src" rev-parse --short HEAD)
if [ "$(cat "$out/.config-stamp" 2>/dev/null)" != "$stamp" ]; then
	log "configuring $flavour"
	mk tinyconfig >/dev/null
	# shellcheck disable=SC2086
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" $frags >/dev/null
	mk olddefconfig >/dev/null
	[ "${CHECK_CONFIG:-1}" = 0 ] || "$ROOT/scripts/check-config.sh" "$out/.config" $frags
	echo "$stamp" >"$out/.config-stamp"
fi

[ "${2:-}" = --config-only ] && exit 0
log "building $flavour ($JOBS jobs)"
start=$(date +%s)
mk -j"$JOBS" bzImage
log "built $flavour in $(( $(date +%s) - start ))s: $out/arch/x86/boot/bzImage"
