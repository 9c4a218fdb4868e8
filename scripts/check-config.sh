#!/bin/sh
# Check that every option requested by the fragments is set in a .config:
# Kconfig silently drops options whose dependencies are missing.
# Usage: scripts/check-config.sh .config FRAGMENT...
set -eu
cfg=$1; shift
bad=0
for frag in "$@"; do
	grep -E '^CONFIG_[A-Za-z0-9_]+=' "$frag" | while IFS='=' read -r opt val; do
		if [ "$val" = n ]; then
			if grep -q "^$opt=" "$cfg"; then
				echo "config: $opt should be off, is $(grep "^$opt=" "$cfg")"; echo x
			fi
		elif ! grep -qx "$opt=$val" "$cfg"; then
			echo "config: $opt=$val requested by ${frag##*/}, got: $(grep "^$opt=\|^# $opt " "$cfg" || echo unset)"; echo x
		fi
	done
done >"$cfg.check"
if grep -qx x "$cfg.check"; then
	grep -v '^x$' "$cfg.check" >&2
	echo "check-config: requested options are missing (see above)" >&2
	exit 1
fi
