#!/bin/sh
# The soak, in the guest (installed as /ptshare/soak-run): for MINUTES,
# soak-load (a fork/exec storm and memory workers that fork over more
# memory than RAM and check every page, so the guest swaps) runs beside the
# differential fuzzer, one seed after another from SEED0.
# Usage: soak-run [-F PCT] [-M MIB] MINUTES [SEED0]
#   -F PCT  PCT% of the unshare allocations fail (fuzz-run -F)
#   -M MIB  memory of each of the 2 memory workers (default 512)
# One line per fuzz seed that failed, then the counts, and as the last line
#   soak: M minutes, S seeds, O ops, P processes, F forks, E execs,
#         C pages checked, W pages swapped out, V violations
# (on one line). Exit status 0 only if V is 0.
failpct= mib=512
while getopts F:M: o; do
	case $o in
	F) failpct=$OPTARG ;;
	M) mib=$OPTARG ;;
	*) echo "usage: soak-run [-F PCT] [-M MIB] MINUTES [SEED0]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
minutes=${1:-}
seed=${2:-1000}
case "$minutes$seed$mib$failpct" in
''|*[!0-9]*) echo "usage: soak-run [-F PCT] [-M MIB] MINUTES [SEED0]" >&2; exit 2 ;;
esac
dir=$(dirname "$0")
secs=$((minutes * 60))
end=$(($(date +%s) + secs))

vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
# Page-table pages with the page cache dropped and nothing else running.
ptpages() { echo 3 >/proc/sys/vm/drop_caches; vmstat nr_page_table_pages; }
swp0=$(vmstat pswpout)
shared0=$(vmstat ptshare_fork_shared)
sleep 2	# let what ran before settle
pt0=$(ptpages)
fi=/sys/kernel/debug/fail_ptshare
if [ -n "$failpct" ]; then
	fail0=$(vmstat ptshare_unshare_fail)
	{ echo "$failpct" >$fi/probability && echo 1 >$fi/interval &&
		echo -1 >$fi/times && echo 0 >$fi/verbose; } 2>/dev/null ||
		{ echo "soak-run: cannot set up $fi" >&2; exit 2; }
fi

"$dir/soak-load" -s 2 -m 2 -M "$mib" "$secs" >/tmp/soak-load.out 2>&1 &
load=$!

seeds=0 ops=0 procs=0 viol=0
while [ "$(date +%s)" -lt "$end" ]; do
	"$dir/fuzz-run" -n 100 "$seed" 1 >/tmp/soak-fuzz.out 2>&1
	rc=$?
	last=$(tail -n 1 /tmp/soak-fuzz.out)
	case "$last" in
	"fuzz: 1 seeds, "*)
		set -- $last
		ops=$((ops + $4)) procs=$((procs + $6)) v=$8 ;;
	*)	v=1 ;;
	esac
	[ "$rc" = 0 ] || [ "$v" != 0 ] || v=1
	if [ "$v" != 0 ]; then
		echo "# fuzz seed $seed failed (rc $rc):"
		sed 's/^/#   /' /tmp/soak-fuzz.out | head -60
	fi
	viol=$((viol + v)) seeds=$((seeds + 1)) seed=$((seed + 1))
done
wait $load
lrc=$?
if [ -n "$failpct" ]; then
	echo 0 >$fi/probability
	echo "# fault injection: $failpct% of unshare allocations," \
		"$(($(vmstat ptshare_unshare_fail) - fail0)) failed"
fi
# Nothing leaked once every process of the soak has exited; orphans of
# the last fuzz seed may still be on their way out: give them 30 s. Quiet
# readings differ by up to ~6 pages (see fuzz-run): allow 16.
tries=0
while pt1=$(ptpages) && [ "$pt1" -gt $((pt0 + 16)) ] && [ "$tries" -lt 30 ]; do
	tries=$((tries + 1))
	sleep 1
done
echo "# page-table pages: $pt0 before, $pt1 after (read after ${tries}s)"
if [ "$pt1" -gt $((pt0 + 16)) ]; then
	echo "# page-table pages leaked; processes left:"
	ps 2>/dev/null | sed 's/^/# /'
	viol=$((viol + 1))
fi
cat /tmp/soak-load.out
line=$(grep '^soak-load: ' /tmp/soak-load.out)
val() { echo "$line" | sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
forks=$(val forks) execs=$(val execs) checked=$(val pages_checked)
bad=$(($(val mismatches) + $(val workers_died)))
[ -n "$line" ] && [ "$lrc" != 0 ] && [ "$bad" = 0 ] && bad=1
[ -n "$line" ] || { forks=0 execs=0 checked=0 bad=1; }
viol=$((viol + bad))
[ -z "$shared0" ] || echo "# PTE tables shared at fork: $(($(vmstat ptshare_fork_shared) - shared0))"
echo "soak: $minutes minutes, $seeds seeds, $ops ops, $procs processes, $forks forks," \
	"$execs execs, $checked pages checked, $(($(vmstat pswpout) - swp0)) pages swapped out," \
	"$viol violations"
[ "$viol" = 0 ]
