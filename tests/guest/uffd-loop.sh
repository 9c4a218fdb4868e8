#!/bin/sh
# Diagnostic loop for the uffd-unit-tests flakes (baseline/README.md): in the
# guest, repeat "uffd-unit-tests" and "uffd-unit-tests -f events" as the
# plan runs them, for SECS seconds, and print each failure and the counts.
# From the host, for one kernel (run vanilla and ptshare side by side):
#   d=build/runs/uffdloop-vanilla; mkdir -p $d/share
#   cp tests/guest/uffd-loop.sh $d/share/
#   scripts/run-guest.sh -k vanilla -o $d -t 1500 -- \
#       "sh /host/uffd-loop.sh 1080 > /host/loop.out 2>&1"
# (add --append sysctl.vm.pt_share=2 for ptshare). Output: $d/share/loop.out
secs=${1:-900}
# Quiet console: the poison tests print a line per page, slow under TCG.
dmesg -n 1
cd /selftests/mm || exit 1
end=$(( $(date +%s) + secs ))
i=0 fails=0 runs=0
while [ "$(date +%s)" -lt "$end" ]; do
	i=$((i + 1))
	for f in full events; do
		echo 3 >/proc/sys/vm/drop_caches
		echo 1 >/proc/sys/vm/compact_memory
		hugepages 128
		if [ $f = full ]; then
			timeout -s KILL 600 ./uffd-unit-tests >/tmp/u.out 2>&1
		else
			timeout -s KILL 300 ./uffd-unit-tests -f $f >/tmp/u.out 2>&1
		fi
		rc=$?
		runs=$((runs + 1))
		if [ $rc != 0 ]; then
			fails=$((fails + 1))
			echo "iter $i $f rc=$rc: $(grep -m1 -B1 'ERROR\|FAIL' /tmp/u.out | tr '\n' ' ')"
		fi
	done
	echo "iter $i done, runs=$runs fails=$fails"
done
echo "uffd-loop: $runs runs, $fails failed"
