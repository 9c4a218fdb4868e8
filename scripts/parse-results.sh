#!/bin/sh
# Turn the raw outputs of run-plan.sh (NAME.out, NAME.rc) into one line per
# test case:  "PASS name/case", "FAIL name/case # why", "SKIP name/case # reason".
# Case names may contain spaces; " # " separates the name from the reason.
# Understands kselftest TAP (the case name is the preceding "# [RUN] name"
# line when there is one, else the TAP description) and uffd-unit-tests'
# "Testing X... done" (whose verdict may come on a later line); a
# program that prints neither is one case judged by its exit status
# (0 pass, 4 skip). A program killed by the timeout, or ending with a
# failing status after passing cases, adds a FAIL case of its own.
# Usage: scripts/parse-results.sh RESULTS_DIR [PLAN]   (PLAN gives the order)
set -eu
dir=${1:?usage: parse-results.sh RESULTS_DIR [PLAN]}
plan=${2:-}

if [ -n "$plan" ]; then
	names=$(grep -v '^[[:space:]]*\(#\|$\)' "$plan" | awk '{print $1}')
else
	names=$(cd "$dir" && ls ./*.rc 2>/dev/null | sed 's|^\./||; s|\.rc$||')
fi

for name in $names; do
	if [ ! -f "$dir/$name.rc" ]; then
		echo "FAIL $name/not-run # no result: guest died or ran out of time"
		continue
	fi
	awk -v name="$name" -v rc="$(cat "$dir/$name.rc")" '
	function emit(res, c, why) {
		gsub(/[[:space:]]+$/, "", c); gsub(/^[[:space:]]+/, "", c)
		gsub(/[[:space:]]+$/, "", why)
		if (c == "") c = "case" n
		if (seen[c]++) c = c " #" seen[c]
		printf "%s %s/%s%s\n", res, name, c, (why != "" ? " # " why : "")
		n++; cnt[res]++
	}
	# uffd_verdict CASE TEXT NOISE: emit CASE if TEXT starts with a
	# uffd-unit-tests verdict; NOISE is what came between the two.
	function uffd_verdict(c, st, noise) {
		if (noise != "") noise = "verdict after other output: " substr(noise, 1, 200)
		if (st ~ /^done/) emit("PASS", c, noise)
		else if (st ~ /^skipped/) { sub(/^skipped \[reason: /, "", st); sub(/\]$/, "", st); emit("SKIP", c, st) }
		else if (st ~ /^failed/) emit("FAIL", c, st)
		else return 0
		return 1
	}
	function flush_pending() {
		if (pending != "") emit("FAIL", pending, "no verdict: " substr(noise, 1, 400))
		pending = ""
	}
	# kselftest programs name a case in "# [RUN] name" before its result.
	/^# \[RUN\] / { run = $0; sub(/^# \[RUN\] /, "", run); next }
	/^ok [0-9]+/ || /^not ok [0-9]+/ {
		line = $0
		res = (line ~ /^not ok/) ? "FAIL" : "PASS"
		sub(/^(not )?ok [0-9]+ ?(- )?/, "", line)
		why = ""
		if (match(line, /# *(SKIP|skip)/)) {
			res = "SKIP"
			why = substr(line, RSTART + RLENGTH); line = substr(line, 1, RSTART - 1)
			if (line ~ /^[[:space:]]*$/) { line = why; why = "skipped" }
		} else if (match(line, /# *XFAIL/)) {
			res = "PASS"; line = substr(line, 1, RSTART - 1) substr(line, RSTART + RLENGTH)
		}
		gsub(/^[[:space:]]+|[[:space:]]+$/, "", why)
		# Descriptions that carry run-to-run statistics: keep the
		# name stable for the baseline and move the numbers to the reason.
		if (line ~ /^transact_test /) {
			why = substr(line, 15) (why != "" ? "; " why : ""); line = "transact_test"
		}
		# mrelease_test doubles its child until process_mrelease()
		# catches it alive; the size it needed depends on timing.
		if (line ~ /^Success reaping a child with [0-9]+MB/) {
			why = substr(line, 25) (why != "" ? "; " why : ""); line = "Success reaping a child"
		}
		if (run != "") {
			if (res == "SKIP") { why = line; gsub(/^[[:space:]]+|[[:space:]]+$/, "", why) }
			line = run; run = ""
		}
		emit(res, line, why); next
	}
	/^1\.\.[0-9]+/ { planned = substr($1, 4) + 0; next }
	# uffd-unit-tests: "Testing X... " and its verdict. Diagnostics on
	# stderr (tests/selftests-fixes/) can end that line before the
	# verdict, which then starts a later line: the case stays pending
	# until a verdict, the next case or the end of the output.
	/^Testing .*\.\.\. / {
		flush_pending()
		c = $0; sub(/^Testing /, "", c)
		i = index(c, "... "); st = substr(c, i + 4); c = substr(c, 1, i - 1)
		if (!uffd_verdict(c, st, "")) { pending = c; noise = st }
		next
	}
	pending != "" {
		if (!uffd_verdict(pending, $0, noise)) { noise = noise " " $0; next }
		pending = ""; next
	}
	END {
		flush_pending()
		if (rc == 137) { emit("FAIL", "timeout", "killed after its time limit"); exit }
		if (n == 0) {
			if (rc == 0) emit("PASS", "all", "")
			else if (rc == 4) emit("SKIP", "all", "program reported skip")
			else emit("FAIL", "all", "exit status " rc)
			exit
		}
		if (planned > 0 && n < planned)
			emit("FAIL", "incomplete", (planned - n) " planned cases did not report")
		else if (rc != 0 && rc != 4 && cnt["FAIL"] == 0)
			emit("FAIL", "exit-status", "exit status " rc " with no failing case")
	}' "$dir/$name.out"
done
