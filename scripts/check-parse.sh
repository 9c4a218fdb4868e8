#!/bin/sh
# Check scripts/parse-results.sh against saved program outputs: for every
# tests/harness/parse/NAME.out (with NAME.rc), the case lines must equal
# NAME.expect. Prints "PASS harness/parse-NAME" or "FAIL ... # diff", one
# line per fixture. Exit status 0 only if all match.
set -eu
. "$(dirname "$0")/lib.sh"

dir=$ROOT/tests/harness/parse
got=$(mktemp)
trap 'rm -f "$got"' EXIT
"$ROOT/scripts/parse-results.sh" "$dir" >"$got"
rc=0
for want in "$dir"/*.expect; do
	name=$(basename "$want" .expect)
	diff=$(grep "^[A-Z]* $name/" "$got" | diff "$want" - | grep '^[<>]' | head -3 | tr '\n' ' ' || true)
	if [ -z "$diff" ]; then
		echo "PASS harness/parse-$name"
	else
		echo "FAIL harness/parse-$name # $diff"
		rc=1
	fi
done
exit $rc
