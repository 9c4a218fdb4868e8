#!/bin/sh
# In-guest driver of the whole test suite: the few tests that need a
# fresh guest (early), the mm selftests, then the project's own tests.
# Results go to /host/results/<plan>/.
# Usage: suite.sh [PLAN...]    (default: early selftests ptshare)
plans=${*:-early selftests ptshare}
for p in $plans; do
	case "$p" in
	selftests) dir=/selftests/mm ;;
	*) dir=/ptshare ;;
	esac
	echo "=== plan $p"
	run-plan.sh "/ptshare/plans/$p.plan" "$dir" "/host/results/$p"
done
exit 0
