#!/bin/sh
# Build the guest's root filesystem as an uncompressed initramfs
# (build/rootfs.cpio) from Debian's packages: busybox-static for the base
# system, bash with its shared libraries, the static mm selftests, and the
# project's own tests and guest scripts.
# Usage: scripts/mkrootfs.sh [EXTRA_PROGRAM...]   (programs copied with their libs)
set -eu
. "$(dirname "$0")/lib.sh"

stage=$BUILD/rootfs
rm -rf "$stage"
mkdir -p "$stage"/bin "$stage"/sbin "$stage"/usr/bin "$stage"/usr/sbin \
	"$stage"/usr/local/bin "$stage"/etc "$stage"/root "$stage"/proc "$stage"/sys \
	"$stage"/dev "$stage"/tmp "$stage"/host "$stage"/selftests "$stage"/ptshare

# A program and the shared libraries it needs, at the same paths.
copy_prog() {
	p=$(command -v "$1") || die "program $1 not found on the host"
	mkdir -p "$stage$(dirname "$p")"
	cp -L "$p" "$stage$p"
	copy_libs "$p"
}
# The shared libraries that FILE (a program or a library) needs.
copy_libs() {
	ldd "$1" 2>/dev/null | awk '/=> \// {print $3} /^[[:space:]]*\/lib/ {print $1}' |
	while read -r lib; do
		mkdir -p "$stage$(dirname "$lib")"
		cp -Ln "$lib" "$stage$lib"
	done
}

# busybox-static installs a static /bin/busybox; ldd fails on static binaries.
bb=/bin/busybox
if [ ! -x "$bb" ] || ldd "$bb" >/dev/null 2>&1; then
	die "$bb is missing or not static (apt-get install busybox-static)"
fi
cp "$bb" "$stage/bin/busybox"
for applet in $("$bb" --list-full); do
	[ -e "$stage/$applet" ] || ln -s /bin/busybox "$stage/$applet"
done

copy_prog bash
for p in "$@"; do copy_prog "$p"; done
# The benchmark's real programs (scripts/deps.sh installs them): GNU patch
# for patch-scripts; redis, whose server is redis-check-rdb under the name
# redis-server (the link Debian's redis-server package makes).
# rm first: busybox's patch applet is a link to /bin/busybox, and cp would
# write through it into the host's busybox.
for p in patch redis-check-rdb redis-benchmark redis-cli; do
	q=$(command -v "$p") || continue
	rm -f "$stage$q"
	copy_prog "$p"
done
# coreutils' timeout for run-plan.sh: busybox's leaves a watcher process
# behind that exits up to a second after the test did.
q=$(command -v timeout) || die "timeout (coreutils) not found on the host"
rm -f "$stage$q"
copy_prog timeout
[ -e "$stage/usr/bin/redis-check-rdb" ] && ln -s redis-check-rdb "$stage/usr/bin/redis-server"

# PostgreSQL 15 for the pgbench suite (bench/pgbench.sh), if the host has
# Debian's postgresql-15: the programs, the share directory without the
# manual pages, the loadable modules without the JIT (llvmjit needs LLVM),
# and the time zones the guest can name. The postgres user is added below.
# Only with WITH_PGSQL=1 (scripts/bench.sh): it doubles the rootfs.
pg=/usr/lib/postgresql/15
if [ "${WITH_PGSQL:-0}" = 1 ] && [ -x $pg/bin/postgres ]; then
	for p in postgres initdb pg_ctl pgbench psql; do copy_prog $pg/bin/$p; done
	mkdir -p "$stage$pg/lib" "$stage/usr/share/postgresql" "$stage/usr/share/zoneinfo/Etc"
	for f in $pg/lib/*.so; do
		case $f in */llvmjit*) continue ;; esac
		cp "$f" "$stage$f"
		copy_libs "$f"
	done
	cp -r /usr/share/postgresql/15 "$stage/usr/share/postgresql/"
	rm -rf "$stage/usr/share/postgresql/15/man"
	for z in UTC GMT Etc/UTC Etc/GMT; do cp -L "/usr/share/zoneinfo/$z" "$stage/usr/share/zoneinfo/$z"; done
fi

# The zygote suite (bench/zygote, which dlopen()s the libraries of
# bench/zygote-libs.txt): the libraries, each with what it needs, at the
# paths where the host's loader finds them, so that the guest's ld.so
# finds them by name (it has no ld.so.cache, and searches the multiarch
# directory first) and never loads one twice from two paths; and the libs
# of the dynamic bench/zygote itself. scripts/deps.sh installs the
# packages. Only with WITH_ZYGOTE=1 (scripts/bench.sh): ~200 MiB more.
if [ "${WITH_ZYGOTE:-0}" = 1 ]; then
	[ -x "$BUILD/bench/zygote" ] || die "no $BUILD/bench/zygote: make -C bench OUT=$BUILD/bench"
	copy_libs "$BUILD/bench/zygote"
	# shellcheck disable=SC2013 # one name a line
	for so in $(awk '!/^#/ && NF { print $2 }' "$ROOT/bench/zygote-libs.txt"); do
		lib=
		for d in /lib/x86_64-linux-gnu /usr/lib/x86_64-linux-gnu; do
			[ -e "$d/$so" ] && lib=$d/$so && break
		done
		[ -n "$lib" ] || die "$so (bench/zygote-libs.txt) not found: run WITH_ZYGOTE=1 scripts/deps.sh"
		mkdir -p "$stage${lib%/*}"
		cp -Ln "$lib" "$stage$lib"
		copy_libs "$lib"
	done
fi

cp "$ROOT/tests/guest/init" "$stage/init"
cp "$ROOT/tests/guest/run-plan.sh" "$ROOT/tests/guest/suite.sh" \
	"$ROOT/tests/guest/run-bench.sh" "$ROOT/tests/guest/hugepages" "$stage/usr/local/bin/"
chmod +x "$stage/init" "$stage"/usr/local/bin/*

printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$stage/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$stage/etc/group"
# The server refuses to run as root; pgbench.sh makes the directories it needs.
if [ -x "$stage$pg/bin/postgres" ]; then
	echo 'postgres:x:70:70:PostgreSQL:/var/lib/postgresql:/bin/sh' >>"$stage/etc/passwd"
	echo 'postgres:x:70:' >>"$stage/etc/group"
fi
printf '127.0.0.1 localhost\n::1 localhost\n' >"$stage/etc/hosts"

[ -d "$BUILD/selftests/mm" ] && cp -r "$BUILD/selftests/mm" "$stage/selftests/"
[ -d "$BUILD/ptshare-tests" ] && cp -r "$BUILD/ptshare-tests/." "$stage/ptshare/"
[ -d "$BUILD/bench" ] && cp -r "$BUILD/bench" "$stage/ptshare/bench"
[ -d "$BUILD/patch-scripts" ] && cp -r "$BUILD/patch-scripts" "$stage/ptshare/patch-scripts"
cp -r "$ROOT/tests/plans" "$stage/ptshare/plans"
# What tests/ptshare/observe compares its readings with (scripts/baseline.sh).
[ -f "$ROOT/baseline/observe-vanilla.txt" ] &&
	cp "$ROOT/baseline/observe-vanilla.txt" "$stage/ptshare/"
cp "$ROOT/baseline/observe-known.txt" "$ROOT/baseline/observe-known-shared.txt" \
	"$stage/ptshare/"

(cd "$stage" && find . | cpio -o -H newc --quiet) >"$BUILD/rootfs.cpio.tmp"
mv "$BUILD/rootfs.cpio.tmp" "$BUILD/rootfs.cpio"
log "rootfs: $(du -m "$BUILD/rootfs.cpio" | cut -f1) MiB in $BUILD/rootfs.cpio"
