#!/bin/sh
# Judge test cases against the vanilla baseline.
#   a case that passes                                   -> PASS
#   a case that passes on vanilla and does not pass here -> FAIL
#   a case that fails on vanilla too                     -> SKIP (baseline failure)
#   a case skipped here and not passing on vanilla       -> SKIP
#   a case that passes on vanilla and is missing here    -> FAIL
# Cases without a baseline entry are judged on their own.
# Usage: scripts/compare-baseline.sh CASES BASELINE
set -eu
cases=${1:?usage: compare-baseline.sh CASES BASELINE}
base=${2:?usage: compare-baseline.sh CASES BASELINE}
[ -f "$base" ] || base=/dev/null
awk '
FNR == NR {
	if ($0 ~ /^(PASS|FAIL|SKIP) /) { b[$2] = $1 }
	next
}
{
	res = $1; c = $2; line = $0; here[c] = 1
	if (res == "PASS") { print line; next }
	if (b[c] == "PASS") {
		sub(/^[A-Z]+ /, "", line)
		print "FAIL " line " [passes on vanilla]"; next
	}
	if (res == "FAIL" && b[c] == "FAIL") {
		sub(/^[A-Z]+ /, "", line)
		print "SKIP " line " [fails on vanilla too]"; next
	}
	print line
}
END {
	for (c in b)
		if (b[c] == "PASS" && !(c in here))
			print "FAIL " c " (missing: passes on vanilla, did not run here)"
}' "$base" "$cases"
