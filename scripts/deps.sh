#!/bin/sh
# Install what the harness needs from Debian's packages, skipping what is
# already installed. Run as root on Debian 12.
set -eu
. "$(dirname "$0")/lib.sh"

# kernel build, QEMU, the guest's busybox, static libraries for the
# selftests, gnuplot for the benchmark plots
pkgs="linux-source-6.12=$KVER_DEB build-essential flex bison bc libelf-dev
libssl-dev cpio dwarves ccache kmod rsync git xz-utils qemu-system-x86
busybox-static liburing-dev libnuma-dev libcap-dev gnuplot-nox"
# the benchmark's real programs: GNU patch (patch-scripts) and redis-tools,
# which has redis-benchmark and the server binary (redis-server is a link
# to redis-check-rdb; the redis-server package would start a host service)
pkgs="$pkgs patch redis-tools"
pkgs="$pkgs ${EXTRA_PKGS:-}"

# shellcheck disable=SC2086
ensure_pkgs $pkgs

# The patch-scripts workload: glibc-source's patches (apt-get download).
"$ROOT/scripts/prep-patch-scripts.sh"
