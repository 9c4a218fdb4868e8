# SPDX-License-Identifier: GPL-2.0
# Helpers for the bash drivers of the benchmarks (patchscripts.sh,
# redis.sh, bashfork.sh), which source this file from their own folder.
# None of them forks: the drivers count the forks they measure.

# The clock in microseconds: $EPOCHREALTIME without its dot (under QEMU
# icount, virtual time).
now_us() { local t=${EPOCHREALTIME/./}; echo "$t"; }

# ptshare's /proc/vmstat counters named in $pt_names (without the
# "ptshare_" prefix) into variables pt_<name>; 0 where the kernel has
# none (vanilla).
read_pt() {
	local k v
	for k in $pt_names; do eval "pt_$k=0"; done
	while read -r k v; do
		case $k in ptshare_*) eval "pt_${k#ptshare_}=\$v" 2>/dev/null || true ;; esac
	done </proc/vmstat
}

# The number of processes created since boot ("processes" in /proc/stat).
procs() {
	local k v
	while read -r k v; do [ "$k" = processes ] && echo "$v"; done </proc/stat
	return 0
}
