#!/bin/sh
# Compare benchmark runs, mmtests compare-kernels style: one column per run
# and kernel, one row per metric, the ratio of every column to the first,
# and the spread of the repetitions. Rows are matched by suite, program,
# parameters and metric; a run that lacks a row shows "-".
#
# Usage: scripts/compare.sh RUN_A RUN_B ...   (results/<run-id> or its id)
#   Columns are RUN/KERNEL for every kernel of each run, in order; the
#   first column (RUN_A's first kernel) is the reference. Lower is better
#   except for rates (ops/s), as the report's headline says.
set -eu
. "$(dirname "$0")/lib.sh"

[ $# -ge 1 ] || die "usage: compare.sh RUN_A RUN_B ..."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
labels=
for r; do
	d=$r
	[ -d "$d" ] || d=$ROOT/results/$r
	[ -d "$d" ] || die "$r: no such run (results/<run-id>)"
	id=$(basename "$(cd "$d" && pwd -P)")
	run_tsv "$d" >"$tmp/run.tsv"
	# The kernels of the run, in the order they appear.
	ks=$(cut -f3 "$tmp/run.tsv" | awk '!seen[$0]++')
	for k in $ks; do labels="$labels $id/$k"; done
	awk -F'\t' -v OFS='\t' -v id="$id" '{ $3 = id "/" $3; print }' \
		"$tmp/run.tsv" >>"$tmp/all.tsv"
done
# Rows whose parameters name the sysfs THP mode or the run's own settings
# still match across runs: report.sh drops those from the key.
"$ROOT/scripts/report.sh" "$tmp/all.tsv" "${labels# }" 0
