#!/bin/sh
# In-guest driver of the whole test suite: the mm selftests, then the
# project's own tests. Results go to /host/results/<plan>/.
# Usage: suite.sh [PLAN...]    (default: selftests ptshare)
plans=${*:-selftests ptshare}
for p in $plans; do
	case "$p" in
	selftests) dir=/selftests/mm ;;
	*) dir=/ptshare ;;
	esac
	echo "=== plan $p"
	run-plan.sh "/ptshare/plans/$p.plan" "$dir" "/host/results/$p"
done
exit 0
