#!/bin/sh
# Diagnostic loop for the uffd-unit-tests flakes (baseline/README.md): in the
# guest, repeat uffd-unit-tests for SECS seconds, once per FILTER in each
# round ("all" runs the whole program, anything else is passed to -f), and
# print each failure, the counts and the ptshare counters that moved.
# The output of each failed run is kept as fail-ITER-FILTER.out, and the
# kernel log as fail-ITER-FILTER.dmesg, in the directory the script was
# started from.  UFFD_BIN names another build of
# the test program to run (default ./uffd-unit-tests of /selftests/mm).
# UFFD_TEST_MEM=anon (or shmem, shmem-private, hugetlb, hugetlb-private)
# runs one memory type only (tests/selftests-fixes/3-*).
# From the host, for one kernel (run vanilla and ptshare side by side):
#   d=build/runs/uffdloop-vanilla; mkdir -p $d/share
#   cp tests/guest/uffd-loop.sh $d/share/
#   scripts/run-guest.sh -k vanilla -o $d -t 1500 -- \
#       "sh /host/uffd-loop.sh 1080 events-wp > /host/loop.out 2>&1"
# (add --append sysctl.vm.pt_share=2 for ptshare). Output: $d/share/loop.out
# The shmem events hang (baseline/README.md) needs slow vCPUs: run both
# run-guest.sh under "taskset -c 0" and use debug kernels.
secs=${1:-900}
shift || true
filters=${*:-all events}
# Quiet console: the poison tests print a line per page, slow under TCG.
dmesg -n 1
here=$(pwd)
cd /selftests/mm || exit 1
grep ptshare /proc/vmstat >/tmp/vmstat.0
# Run ./uffd-unit-tests ARGS with a limit of LIMIT seconds; rc is its exit
# status, 137 if it was killed.  A run that printed ERROR and is still
# there 30 s later hangs: show where its tasks are (State, wchan and, in
# the kernel log, sysrq-t stacks) before killing it.
run_test() {  # LIMIT ARGS...
	limit=$1
	shift
	: >/tmp/u.out
	${UFFD_BIN:-./uffd-unit-tests} "$@" >>/tmp/u.out 2>&1 &
	pid=$! t=0 hung=0
	while kill -0 $pid 2>/dev/null; do
		grep -q ERROR /tmp/u.out && hung=$((hung + 1))
		if [ $t -ge "$limit" ] || [ $hung -ge 30 ]; then
			dmesg -c >/dev/null
			for p in $(pidof uffd-unit-tests); do
				for task in /proc/$p/task/*; do
					echo "--- task ${task##*/} of $p: $(grep State $task/status) wchan $(cat $task/wchan)"
				done
			done >>/tmp/u.out 2>&1
			echo t >/proc/sysrq-trigger
			# sysrq-l: where the tasks on a CPU run now (RIP; the guest's
			# guess unwinder gives no call trace of a running task)
			echo l >/proc/sysrq-trigger
			sleep 2
			dmesg | grep -A40 'task:uffd-unit-test\|NMI backtrace' >>/tmp/u.out
			kill -9 $(pidof uffd-unit-tests) 2>/dev/null
			break
		fi
		sleep 1
		t=$((t + 1))
	done
	wait $pid
	rc=$?
}

end=$(( $(date +%s) + secs ))
i=0 fails=0 runs=0
# at least one round, however short SECS is
while [ "$i" = 0 ] || [ "$(date +%s)" -lt "$end" ]; do
	i=$((i + 1))
	for f in $filters; do
		echo 3 >/proc/sys/vm/drop_caches
		echo 1 >/proc/sys/vm/compact_memory
		hugepages 128
		t0=$(date +%s)
		if [ "$f" = all ]; then
			run_test 600
		else
			run_test 300 -f "$f"
		fi
		runs=$((runs + 1))
		# What ran: a run whose cases were all skipped is no evidence.
		echo "iter $i $f rc=$rc $(($(date +%s) - t0))s:" \
			"$(grep -c 'done$' /tmp/u.out) done," \
			"$(grep -c 'skipped \[reason' /tmp/u.out) skipped," \
			"$(grep -c 'failed \[reason' /tmp/u.out) failed"
		if [ $rc != 0 ]; then
			fails=$((fails + 1))
			echo "iter $i $f rc=$rc: $(grep -m1 -B1 'ERROR\|FAIL' /tmp/u.out | tr '\n' ' ')"
			cp /tmp/u.out "$here/fail-$i-$f.out" 2>/dev/null
			dmesg >"$here/fail-$i-$f.dmesg" 2>/dev/null
		fi
	done
	echo "iter $i done, runs=$runs fails=$fails"
done
grep ptshare /proc/vmstat | paste /tmp/vmstat.0 - |
	awk '$4 != $2 { print "counter " $1 " +" $4 - $2 }'
echo "uffd-loop: $runs runs, $fails failed"
