#!/bin/sh
# A kernel profile listing, like the readprofile tables of the 2002 mails:
# one line per kernel function with its timer ticks and its share of all
# kernel ticks, most ticks first.
#
# Usage: scripts/profile.sh PROFILE SYSTEM_MAP
#   PROFILE     a copy of /proc/profile from a kernel booted with profile=N
#   SYSTEM_MAP  that kernel's System.map
# Output: "ticks share function" lines (share in percent), then
# "total TICKS". Uses readprofile(8) from util-linux.
# Idle time counts too (the profile takes every tick in kernel mode): in
# our x86 guest kernels the address after the hlt of pv_native_safe_halt
# falls in the next symbol, so idle shows as pvclock_clocksource_read_nowd.
set -eu
. "$(dirname "$0")/lib.sh"

prof=${1:?usage: profile.sh PROFILE SYSTEM_MAP}
map=${2:?usage: profile.sh PROFILE SYSTEM_MAP}
[ -s "$prof" ] || die "$prof: missing or empty"
[ -s "$map" ] || die "$map: missing or empty"
command -v readprofile >/dev/null || die "readprofile missing (util-linux)"

# readprofile prints "TICKS FUNCTION LOAD" per function with ticks, and a
# last line "TICKS total LOAD".
readprofile -p "$prof" -m "$map" | awk '
	$2 == "total" { total = $1; next }
	NF >= 2 && $1 > 0 { n++; t[n] = $1; f[n] = $2 }
	END {
		if (total == 0) { print "total 0"; exit }
		for (i = 1; i <= n; i++)
			printf "%d %.2f %s\n", t[i], 100 * t[i] / total, f[i]
		print "total " total
	}' | sort -k1,1nr -k3,3
