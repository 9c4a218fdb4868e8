#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# pgbench: many PostgreSQL backends reading one big shared buffer pool.
# Debian's PostgreSQL 15 runs in the guest with a database about the size
# of shared_buffers, loaded by pgbench -i and pg_prewarm, then
#   mode=select   pgbench -S -c CLIENTS -j 1 -t TX: all clients connect
#                 first, then each runs TX read-only transactions
#   mode=connect  the same with -C -t CONN: a new connection (a new backend,
#                 forked by the postmaster) for every transaction
# Run as root; the server runs as the user postgres.
#
# Usage: pgbench.sh [-b MIB] [-s SCALE] [-c CLIENTS] [-t TX] [-r CONN]
#                   [-H off|on] [-k] [-d DIR] [-i SECONDS]
#   MIB      shared_buffers (default 1024)
#   SCALE    pgbench -i -s (default MIB/16: a database of about MIB)
#   CLIENTS  connections (default 200)
#   TX       transactions per client in mode=select (default 200)
#   CONN     transactions, so connections, per client in mode=connect
#            (default 5)
#   -H on    shared memory in 2 MiB hugetlb pages (huge_pages=on; the
#            script reserves them); off (default): 4 KiB pages
#   -k       keep the session that ran pg_prewarm connected, idle, during
#            the runs: its page tables map the whole buffer pool, and on
#            ptshare (vm.pt_share_shared=2) the backends may attach them
#            (param gets keep=1)
#   DIR      where the cluster lives (default /scratch if mounted, else /tmp)
#   SECONDS  how often the backends are sampled during a run (default 0.5)
#
# Results (bench.h format, one run each, param ...,pages=4k|huge,
# clients=N[,keep=1],mode=select|connect):
#   tps, latency_ms     pgbench's figures: select without the initial
#                       connections, connect including the reconnections
#   connect_all_ms      select: pgbench's "initial connection time", all
#                       clients connected one after the other
#   connect_avg_ms      connect: pgbench's "average connection time"
#   backend_pte_kb      select: the sum over the client backends (not the
#                       checkpointer etc., nor the session of -k) of the
#                       largest VmPTE sampled of each, the last sample
#                       taken as pgbench ends
#   pte_alive_kb        the largest sum of the VmPTE of the client backends
#                       alive at one sample (connect: backends live for a
#                       transaction, most are never sampled)
#   backends_alive      how many client backends that sample saw
#   backend_minflt      minor faults of the run's backends: the postmaster's
#                       cminflt over the run (its children once reaped)
#   minflt_per_backend  the same per connection
#   pagetables_kb       /proc/meminfo PageTables: sampled peak less before
#   pgfault             /proc/vmstat pgfault over the run (whole system)
#   pt_*                ptshare's /proc/vmstat counters over the run
#   run_s               how long pgbench ran
# and once (mode=setup) db_mib, prewarm_mib, init_s and, with -H on,
# hugepages. Times come from the guest clock: virtual time under icount.
set -eu

pgbin=/usr/lib/postgresql/15/bin
mib=1024 scale='' clients=200 tx=200 conn=5 huge=off keep='' dir='' every=0.5
while getopts b:s:c:t:r:H:kd:i: o; do
	case $o in
	b) mib=$OPTARG ;;
	s) scale=$OPTARG ;;
	c) clients=$OPTARG ;;
	t) tx=$OPTARG ;;
	r) conn=$OPTARG ;;
	H) huge=$OPTARG ;;
	k) keep=1 ;;
	d) dir=$OPTARG ;;
	i) every=$OPTARG ;;
	*) echo "usage: $0 [-b MIB] [-s SCALE] [-c CLIENTS] [-t TX] [-r CONN] [-H off|on] [-k] [-d DIR] [-i SECONDS]" >&2
	   exit 2 ;;
	esac
done
: "${scale:=$((mib / 16))}"
case $huge in off) pages=4k ;; on) pages=huge ;; *) echo "pgbench: -H off or on" >&2; exit 2 ;; esac
if [ -z "$dir" ]; then
	dir=/tmp
	grep -q ' /scratch ' /proc/mounts && dir=/scratch
fi
top=$dir/pgbench
data=$top/data
param=sb_mib=$mib,scale=$scale,pages=$pages,clients=$clients${keep:+,keep=1}

started='' hp_old='' spid='' hold=''
cleanup() {
	[ -z "$spid" ] || kill "$spid" 2>/dev/null || true
	[ -z "$hold" ] || { exec 3>&-; wait "$hold" || true; }
	[ -z "$started" ] || as_pg "$pgbin/pg_ctl -D $data -m fast -w -t 300 stop" >/dev/null 2>&1 || true
	[ -z "$hp_old" ] || echo "$hp_old" >/proc/sys/vm/nr_hugepages
	rm -rf "$top"
}
die() {
	echo "pgbench: $*" >&2
	[ ! -f "$top/log" ] || tail -5 "$top/log" >&2
	exit 1
}
trap cleanup EXIT
trap 'exit 1' INT TERM

as_pg() { su postgres -s /bin/sh -c "$1"; }
sql() { "$pgbin/psql" -X -q -At -h "$top" -U postgres -d postgres -v ON_ERROR_STOP=1 -c "$1"; }
res() { # MODE METRIC VALUE UNIT
	echo "result bench=pgbench param=$param,mode=$1 metric=$2 value=$3 unit=$4 reps=1"
}
uptime_cs() { tr -d . </proc/uptime | cut -d' ' -f1; }

for p in postgres initdb pg_ctl pgbench psql; do
	[ -x "$pgbin/$p" ] || die "$pgbin/$p missing (postgresql-15 not in the rootfs?)"
done
grep -q '^postgres:' /etc/passwd || die "no user postgres in /etc/passwd"
[ "$(id -u)" = 0 ] || die "run as root"

rm -rf "$top"
mkdir -p "$top"
chown postgres:postgres "$top"
export TZ=UTC
as_pg "$pgbin/initdb -D $data -U postgres --auth=trust --no-locale -E UTF8 --no-sync" \
	>"$top/initdb.log" 2>&1 || { cat "$top/initdb.log" >&2; die "initdb failed"; }
# A server for one benchmark: no durability, no autovacuum or checkpoints
# during the runs, no JIT, only a unix socket.
cat >>"$data/postgresql.conf" <<EOF
listen_addresses = ''
unix_socket_directories = '$top'
max_connections = $((clients + 10))
shared_buffers = ${mib}MB
huge_pages = $huge
fsync = off
synchronous_commit = off
full_page_writes = off
wal_level = minimal
max_wal_senders = 0
max_wal_size = 4GB
checkpoint_timeout = 1d
autovacuum = off
jit = off
EOF

# hugetlb pages for the whole shared memory, as many as the server says.
if [ "$huge" = on ]; then
	hp=/proc/sys/vm/nr_hugepages
	[ -w $hp ] || die "no $hp: kernel without hugetlb?"
	need=$(as_pg "$pgbin/postgres -D $data -C shared_memory_size_in_huge_pages")
	free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
	hp_old=$(cat $hp)
	[ "$free" -ge "$need" ] || echo $((hp_old + need - free)) >$hp
	free=$(awk '/^HugePages_Free:/ {print $2}' /proc/meminfo)
	[ "$free" -ge "$need" ] ||
		die "huge_pages=on needs $need free 2 MiB pages, could reserve only $free (memory too small or fragmented)"
	res setup hugepages "$need" pages
fi

as_pg "$pgbin/pg_ctl -D $data -l $top/log -w -t 300 start" >/dev/null 2>&1 ||
	die "the server did not start"
started=1
pm=$(head -1 "$data/postmaster.pid")

t0=$(uptime_cs)
"$pgbin/pgbench" -i -q -s "$scale" -h "$top" -U postgres postgres >"$top/init.log" 2>&1 ||
	{ tail -5 "$top/init.log" >&2; die "pgbench -i failed"; }
res setup init_s "$((($(uptime_cs) - t0) / 100))" s
sql "CREATE EXTENSION IF NOT EXISTS pg_prewarm" || die "no pg_prewarm"
rels="'pgbench_accounts', 'pgbench_accounts_pkey', 'pgbench_branches',
	'pgbench_branches_pkey', 'pgbench_tellers', 'pgbench_tellers_pkey', 'pgbench_history'"
prewarm="SELECT sum(pg_prewarm(c::regclass)) FROM unnest(array[$rels]) c"
keep_pid=0
if [ -z "$keep" ]; then
	sql "$prewarm" >/dev/null || die "pg_prewarm failed"
else
	# psql reads its commands from a FIFO that stays open until the end;
	# it names itself prewarmed once pg_prewarm has returned.
	mkfifo "$top/hold"
	PGAPPNAME=prewarm "$pgbin/psql" -X -q -At -h "$top" -U postgres -d postgres \
		<"$top/hold" >"$top/hold.out" 2>&1 &
	hold=$!
	exec 3>"$top/hold"
	echo "$prewarm; SET application_name = prewarmed;" >&3
	i=0
	while [ -z "$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'prewarmed' AND state = 'idle'")" ]; do
		kill -0 "$hold" 2>/dev/null || { cat "$top/hold.out" >&2; die "pg_prewarm failed"; }
		i=$((i + 1))
		[ $i -lt 1800 ] || die "pg_prewarm did not end within 30 minutes"
		sleep 1
	done
	keep_pid=$(sql "SELECT pid FROM pg_stat_activity WHERE application_name = 'prewarmed'")
fi
warm=$(sql "SELECT (sum(pg_relation_size(c::regclass)) / 1048576)::int FROM unnest(array[$rels]) c")
db=$(sql "SELECT pg_database_size('postgres') / 1048576")
res setup db_mib "$db" MiB
res setup prewarm_mib "$warm" MiB
[ "$warm" -lt "$mib" ] ||
	echo "pgbench: the tables ($warm MiB) do not fit in shared_buffers ($mib MiB)" >&2

# A sample: "PID VmPTE" (kB) for each client backend (in its cmdline
# "postgres: USER DB [local] ...", but the session of -k), then "total
# CHILDREN CLIENTS VMPTE-SUM PAGETABLES EXITING" (kB, PageTables of
# /proc/meminfo; EXITING: children with an empty cmdline, zombies).
sample() {
	awk -v pm="$pm" -v keep="$keep_pid" 'function get(f, key,   l, a) {
		while ((getline l <f) > 0) if (index(l, key) == 1) { split(l, a, " "); close(f); return a[2] }
		close(f); return 0
	}
	BEGIN {
		f = "/proc/" pm "/task/" pm "/children"
		getline kids <f; close(f)
		n = split(kids, K, " ")
		for (i = 1; i <= n; i++) {
			f = "/proc/" K[i] "/cmdline"
			l = ""; getline l <f; close(f)
			if (l == "") z++
			if (index(l, "[local]") == 0 || K[i] == keep) continue
			c++
			v = get("/proc/" K[i] "/status", "VmPTE:")
			print K[i], v
			pte += v
		}
		print "total", n, c + 0, pte + 0, get("/proc/meminfo", "PageTables:"), z + 0
	}'
}
# Wait until the postmaster has reaped all client backends: their faults
# count in its cminflt only then.
no_clients() {
	i=0
	while [ "$(sample | awk '$1 == "total" { print $3 + $6 }')" -gt 0 ]; do
		i=$((i + 1))
		[ $i -lt 600 ] || die "client backends still alive 60 s after pgbench"
		sleep 0.1
	done
}
# cminflt of the postmaster: the minor faults of its reaped children
pm_cminflt() { awk '{print $11}' "/proc/$pm/stat"; }
vmstat() { awk '$1 == "pgfault" || $1 ~ /^ptshare_/' /proc/vmstat; }

# bench MODE CONNECTIONS PGBENCH-OPTION...
bench() {
	mode=$1 nconn=$2; shift 2
	no_clients
	pt0=$(sample | awk '$1 == "total" { print $5 }')
	c0=$(pm_cminflt)
	vmstat >"$top/vmstat.0"
	: >"$top/samples"
	rm -f "$top/stop"
	(while [ ! -e "$top/stop" ]; do sample >>"$top/samples"; sleep "$every"; done) &
	spid=$!
	t0=$(uptime_cs)
	"$pgbin/pgbench" -n -S -c "$clients" -j 1 "$@" -h "$top" -U postgres postgres \
		>"$top/$mode.out" 2>&1 || { tail -5 "$top/$mode.out" >&2; die "pgbench -S $* failed"; }
	t1=$(uptime_cs)
	sample >>"$top/samples"
	touch "$top/stop"
	wait "$spid" || true
	spid=
	no_clients
	c1=$(pm_cminflt)
	vmstat >"$top/vmstat.1"
	out=$top/$mode.out
	res "$mode" tps "$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out")" tps
	res "$mode" latency_ms "$(sed -n 's/^latency average = \([0-9.]*\) ms.*/\1/p' "$out")" ms
	if [ "$mode" = select ]; then
		res "$mode" connect_all_ms "$(sed -n 's/^initial connection time = \([0-9.]*\) ms/\1/p' "$out")" ms
	else
		res "$mode" connect_avg_ms "$(sed -n 's/^average connection time = \([0-9.]*\) ms/\1/p' "$out")" ms
	fi
	# The last sample, after pgbench, reads some backends as they exit.
	awk -v pt0="$pt0" '$1 == "total" {
			if ($4 >= alive) { alive = $4; n = $3 }
			if ($5 > pt) pt = $5
			next
		}
		$2 > max[$1] { max[$1] = $2 }
		END { for (p in max) sum += max[p]; print sum + 0, alive + 0, n + 0, pt - pt0 }' \
		"$top/samples" | {
		read -r sum alive n pt
		[ "$mode" = connect ] || res "$mode" backend_pte_kb "$sum" kB
		res "$mode" pte_alive_kb "$alive" kB
		res "$mode" backends_alive "$n" count
		res "$mode" pagetables_kb "$pt" kB
	}
	res "$mode" backend_minflt $((c1 - c0)) count
	res "$mode" minflt_per_backend $(((c1 - c0) / nconn)) count
	awk 'FNR == NR { a[$1] = $2; next }
		{ n = $1; sub(/^ptshare_/, "pt_", n); print n, $2 - a[$1] }' \
		"$top/vmstat.0" "$top/vmstat.1" | while read -r n v; do res "$mode" "$n" "$v" count; done
	res "$mode" run_s "$(printf '%d.%02d' $(((t1 - t0) / 100)) $(((t1 - t0) % 100)))" s
	echo "pgbench: $pages $mode: $(grep -E '^(tps|initial|average)' "$out" | tr '\n' ' ')" >&2
}

bench select "$clients" -t "$tx"
bench connect $((clients * conn)) -C -t "$conn"

if [ -n "$hold" ]; then
	exec 3>&-
	wait "$hold" || die "the psql of pg_prewarm failed: $(tail -3 "$top/hold.out")"
	hold=
fi
as_pg "$pgbin/pg_ctl -D $data -m fast -w -t 300 stop" >/dev/null 2>&1 || die "the server did not stop"
started=
echo "pgbench: shared_buffers $mib MiB ($pages pages), scale $scale ($db MiB), $clients clients${keep:+, prewarmed session kept}, in $dir" >&2
