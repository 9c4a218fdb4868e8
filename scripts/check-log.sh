#!/bin/sh
# Scan a guest console log for kernel reports that must fail a run:
# WARN, BUG, oops, panic, KASAN, UBSAN, lockdep, page_table_check, hung tasks,
# soft lockups, and the ptshare safety net. Prints the offending lines.
# Usage: scripts/check-log.sh console.log
set -eu
log=${1:?usage: check-log.sh console.log}
pat='WARNING: |BUG: |BUG at |Oops|general protection fault|Kernel panic|'
pat=$pat'KASAN|UBSAN|possible circular locking|possible recursive locking|'
pat=$pat'inconsistent lock state|suspicious RCU usage|INFO: task .* blocked|'
pat=$pat'soft lockup|hard LOCKUP|page_table_check|Bad page|bad pagetable|'
pat=$pat'Bad rss-counter|ptshare: unsanctioned'
if grep -aE "$pat" "$log" >/dev/null; then
	echo "check-log: kernel problems in $log:" >&2
	grep -anE -A3 "$pat" "$log" | head -60 >&2
	exit 1
fi
