#!/bin/sh
# Build the kernel with the whole series for other architectures, to catch
# code that only compiles on x86_64 with ptshare: headers that only x86
# includes, calls without a !CONFIG_PTSHARE stub, 32-bit, 2-level and
# THP-less paths. Compile and link vmlinux only (nothing boots); each arch
# out of tree in build/out-cross-<arch>, from tinyconfig plus
# config/cross.config plus the arch's own options:
#   i386    ARCH=i386, host gcc; PAE, highmem PTE tables (ptshare compiles
#           out: ARCH_HAS_PTSHARE is x86_64 only)
#   m68k    gcc-m68k-linux-gnu; the virt machine (68040): generic set_ptes()
#   sh      gcc-sh4-linux-gnu; SH7751R: generic set_ptes(), hugetlbfs
#           without THP. Not by default: m68k catches the same
#   x86_64  host gcc, CONFIG_PTSHARE=n, with soft-dirty, uffd-wp, HMM
# Cost from a cold ccache, in CPU seconds: i386 440, m68k 300, sh 300,
# x86_64 430, so about 10 minutes for the default three on 2 idle cores.
# The source is build/linux at its HEAD, checked out in a worktree,
# build/linux-cross, so that edits in progress in build/linux do not change
# a build midway; SRC=DIR builds DIR as it is instead.
# Prints "PASS cross/<arch>" or "FAIL cross/<arch> # <first error line>"
# per arch (the logs are build/out-cross-<arch>/config.log and build.log),
# then "N passed, N failed"; exit status 1 if any failed.
#
# Usage: scripts/cross-build.sh [ARCH...]
#        (default: $CROSS_ARCHS, else i386 m68k x86_64)
set -eu
src=${SRC:-}
. "$(dirname "$0")/lib.sh"

archs=${*:-${CROSS_ARCHS:-i386 m68k x86_64}}

# The cross compilers, from Debian's packages.
pkgs=
for a in $archs; do
	case $a in
	i386|x86_64) ;;
	m68k) pkgs="$pkgs gcc-m68k-linux-gnu" ;;
	sh) pkgs="$pkgs gcc-sh4-linux-gnu" ;;
	*) die "unknown arch '$a' (i386, m68k, sh, x86_64)" ;;
	esac
done
# shellcheck disable=SC2086
ensure_pkgs $pkgs

if [ -z "$src" ]; then
	[ -d "$SRC/.git" ] || "$ROOT/scripts/tree.sh"
	rev=$(git -C "$SRC" rev-parse HEAD)
	src=$BUILD/linux-cross
	scratch_worktree "$src" "$rev"
	log "source: ${SRC#"$ROOT"/} at $(git -C "$src" log -1 --format='%h %s')"
else
	src=$(cd "$src" && pwd)
	log "source: $src (as it is)"
fi
[ -f "$src/Makefile" ] || die "no kernel source in $src"

cc=gcc
ccache=
if command -v ccache >/dev/null; then
	ccache="ccache "
	# Paths relative to the repository, so a fresh clone hits the cache.
	export CCACHE_BASEDIR="$ROOT" CCACHE_NOHASHDIR=true
fi

# The arch's make variables and config options, on top of cross.config.
arch_setup() { # ARCH
	arch=$1
	cross=
	case $arch in
	i386) opts="CONFIG_HIGHMEM64G=y CONFIG_HIGHPTE=y" ;;
	m68k)
		# tinyconfig has MMU=n, so ColdFire: switch to the classic CPUs
		cross=m68k-linux-gnu-
		opts="CONFIG_M68KCLASSIC=y CONFIG_COLDFIRE=n CONFIG_VIRT=y" ;;
	sh) cross=sh4-linux-gnu- opts="CONFIG_CPU_SUBTYPE_SH7751R=y" ;;
	x86_64)
		# TEST_HMM for mmu_notifier.c and migrate_device.c
		opts="CONFIG_PTSHARE=n CONFIG_NUMA=y CONFIG_MEMORY_HOTPLUG=y
		CONFIG_MEMORY_HOTREMOVE=y CONFIG_SPARSEMEM_VMEMMAP=y CONFIG_ZONE_DEVICE=y
		CONFIG_DEVICE_PRIVATE=y CONFIG_TEST_HMM=y" ;;
	esac
}

mk() {
	make -s -C "$src" O="$out" ARCH="$arch" CROSS_COMPILE="$cross" \
		CC="$ccache$cross$cc" HOSTCC="$ccache$cc" "$@"
}

# Configure, when a fragment or the tree changed; output in $out/config.log.
configure() {
	# shellcheck disable=SC2086 # a list of options
	stamp=$(printf '%s\n' $opts | cat "$ROOT/config/cross.config" - | sha1sum | cut -c1-12)
	stamp=$stamp-$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo none)
	[ "$(cat "$out/.config-stamp" 2>/dev/null)" != "$stamp" ] || return 0
	# shellcheck disable=SC2086
	printf '%s\n' $opts >"$out/arch.config"
	{
		mk tinyconfig &&
		"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
			"$ROOT/config/cross.config" "$out/arch.config" &&
		mk olddefconfig
	} >"$out/config.log" 2>&1 || return 1
	echo "$stamp" >"$out/.config-stamp"
}

# cpu: CPU seconds (user + system) used by the children of this shell so
# far, to tell a build's own cost from waiting for a busy machine. Not in a
# subshell: there, times would count the subshell's children only.
cpu_mark() {
	times >"$BUILD/.cross-times"
	cpu=$(tail -n1 "$BUILD/.cross-times" | tr 'ms' '  ' |
		awk '{ printf "%.0f\n", $1 * 60 + $2 + $3 * 60 + $4 }')
	rm -f "$BUILD/.cross-times"
}

pass=0
fail=0
for a in $archs; do
	arch_setup "$a"
	out=$BUILD/out-cross-$a
	mkdir -p "$out"
	log "building $a ($JOBS jobs)"
	start=$(date +%s)
	cpu_mark
	cpu0=$cpu
	if ! configure; then
		res="FAIL cross/$a # configuration failed: $(first_error "$out/config.log" "$src" "$out")"
	elif mk -j"$JOBS" vmlinux >"$out/build.log" 2>&1; then
		res="PASS cross/$a"
	else
		res="FAIL cross/$a # $(first_error "$out/build.log" "$src" "$out")"
	fi
	echo "$res"
	case $res in
	PASS*) pass=$((pass + 1)) ;;
	*) fail=$((fail + 1)) ;;
	esac
	cpu_mark
	log "$a: ${res%% *} in $(( $(date +%s) - start ))s, CPU $((cpu - cpu0))s (logs in $out)"
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
