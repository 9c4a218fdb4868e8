#!/bin/sh
# Judge test cases against the vanilla baseline.
#   a case that passes                                   -> PASS
#   a case that passes on vanilla and does not pass here -> FAIL
#   a case that fails on vanilla too                     -> SKIP (baseline failure)
#   a case marked FLAKY in the baseline that fails here  -> SKIP (flaky on vanilla)
#   a case skipped here and not passing on vanilla       -> SKIP
#   a case that passes on vanilla and is missing here    -> FAIL
# Cases without a baseline entry are judged on their own.
# Lines are "RESULT name[ # reason]"; names may contain spaces.
# Usage: scripts/compare-baseline.sh CASES BASELINE
set -eu
cases=${1:?usage: compare-baseline.sh CASES BASELINE}
base=${2:?usage: compare-baseline.sh CASES BASELINE}
[ -f "$base" ] || base=/dev/null
awk '
function name(line,   i) {
	line = substr(line, index(line, " ") + 1)
	i = index(line, " # ")
	return i ? substr(line, 1, i - 1) : line
}
FNR == NR {
	if ($0 ~ /^(PASS|FAIL|SKIP|FLAKY) /) b[name($0)] = $1
	next
}
{
	res = $1; c = name($0); here[c] = 1
	rest = substr($0, length(res) + 2)
	if (res == "PASS") { print; next }
	if (b[c] == "PASS") { print "FAIL " rest " [passes on vanilla]"; next }
	if (b[c] == "FLAKY") { print "SKIP " rest " [flaky on vanilla too]"; next }
	if (res == "FAIL" && b[c] == "FAIL") { print "SKIP " rest " [fails on vanilla too]"; next }
	print
}
END {
	for (c in b)
		if (b[c] == "PASS" && !(c in here))
			print "FAIL " c " # missing: passes on vanilla, did not run here"
}' "$base" "$cases"
