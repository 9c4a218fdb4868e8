#!/bin/sh
# Install what the harness needs from Debian's packages, skipping what is
# already installed. Run as root on Debian 12.
set -eu
. "$(dirname "$0")/lib.sh"

# kernel build, QEMU, the guest's busybox, static libraries for the
# selftests
pkgs="linux-source-6.12=$KVER_DEB build-essential flex bison bc libelf-dev
libssl-dev cpio dwarves ccache kmod rsync git xz-utils qemu-system-x86
busybox-static liburing-dev libnuma-dev libcap-dev"
# the benchmark's real programs: GNU patch (patch-scripts) and redis-tools,
# which has redis-benchmark and the server binary (redis-server is a link
# to redis-check-rdb; the redis-server package would start a host service)
pkgs="$pkgs patch redis-tools"
# matplotlib for the benchmark's plots (scripts/plot.py), only for the
# benchmark (WITH_PLOTS=1, which scripts/bench.sh sets)
[ "${WITH_PLOTS:-0}" != 1 ] || pkgs="$pkgs python3-matplotlib"
# the shared libraries that the zygote suite preloads (the first column
# of bench/zygote-libs.txt), only for the benchmark (WITH_ZYGOTE=1, which
# scripts/bench.sh sets); mkrootfs.sh copies them into the guest
[ "${WITH_ZYGOTE:-0}" != 1 ] ||
	pkgs="$pkgs $(awk '!/^#/ && NF { print $1 }' "$ROOT/bench/zygote-libs.txt" | sort -u)"
pkgs="$pkgs ${EXTRA_PKGS:-}"

# shellcheck disable=SC2086
ensure_pkgs $pkgs

# PostgreSQL 15 for the pgbench suite, which mkrootfs.sh copies into the
# guest. Installed on its own: the package would create and start a host
# cluster. While it installs, postgresql-common is told not to create one
# and invoke-rc.d not to start services; what was made for that is removed
# after (the package's own createcluster.conf replaces ours).
# Only for the benchmark (WITH_PGSQL=1, which scripts/bench.sh sets).
if [ "${WITH_PGSQL:-0}" = 1 ] &&
	! dpkg-query -W -f='${Status}' postgresql-15 2>/dev/null | grep -q 'ok installed$'; then
	[ "$(id -u)" = 0 ] || die "need root to install: postgresql-15"
	cc=/etc/postgresql-common/createcluster.conf rc=/usr/sbin/policy-rc.d
	made_cc='' made_rc='' ok=1
	if [ ! -e $cc ]; then
		mkdir -p "${cc%/*}"
		echo 'create_main_cluster = false' >$cc
		made_cc=1
	fi
	if [ ! -e $rc ]; then
		printf '#!/bin/sh\nexit 101\n' >$rc
		chmod 755 $rc
		made_rc=1
	fi
	log "installing: postgresql-15"
	DEBIAN_FRONTEND=noninteractive
	export DEBIAN_FRONTEND
	apt-get update -qq && apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		postgresql-15 >/dev/null || ok=
	[ -z "$made_rc" ] || rm -f $rc
	if [ -n "$made_cc" ]; then
		if [ -f $cc.dpkg-dist ]; then mv $cc.dpkg-dist $cc; else rm -f $cc; fi
	fi
	[ -n "$ok" ] || die "installing postgresql-15 failed"
fi

# The patch-scripts workload: glibc-source's patches (apt-get download).
"$ROOT/scripts/prep-patch-scripts.sh"
