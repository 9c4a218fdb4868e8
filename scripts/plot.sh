#!/bin/sh
# PNG plots of a benchmark run with gnuplot: fork latency against size
# (log-log, one line per kernel and fork mode) and cost shifting (total time
# against the share of memory the child writes).
# Usage: scripts/plot.sh results/<run-id>
set -eu
. "$(dirname "$0")/lib.sh"
res=${1:?usage: plot.sh RESULTS_DIR}
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot missing, no plots" >&2; exit 0; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tsv=$tmp/results.tsv
run_tsv "$res" >"$tsv"
kernels=$(cut -f3 "$tsv" | awk '!seen[$0]++' | tr '\n' ' ')

# fork latency: size_mib -> median, per kernel and mode (THP off only)
plots=
for k in $kernels; do
	for m in fork fork-exit fork-exec; do
		awk -F'\t' -v k="$k" -v m="$m" '$1 == "fork-latency" && $3 == k &&
			$5 ~ ("mode=" m ",") && $5 ~ /thp=never/ && $6 ~ /_us_median$/ {
			split($5, p, ","); sub(/size_mib=/, "", p[1])
			print (p[1] == 0 ? 0.5 : p[1]), $7 }' "$tsv" | sort -n >"$tmp/$k-$m"
		[ -s "$tmp/$k-$m" ] && plots="$plots${plots:+, }'$tmp/$k-$m' using 1:2 with linespoints title '$k $m'"
	done
done
if [ -n "$plots" ]; then
	gnuplot <<EOF2
set terminal pngcairo size 900,600
set output '$res/fork-latency.png'
set title 'fork latency against touched private anonymous memory (THP off, virtual time)'
set xlabel 'MiB touched (0 plotted at 0.5)'
set ylabel 'virtual microseconds (median)'
set logscale xy
set key left top
set grid
plot $plots
EOF2
fi

plots=
for k in $kernels; do
	awk -F'\t' -v k="$k" '$1 == "cost-shifting" && $3 == k &&
		$5 ~ /mode=child-write/ && $6 == "total_us_median" {
		n = split($5, p, ","); for (i = 1; i <= n; i++) if (p[i] ~ /^pct=/) { sub(/pct=/, "", p[i]); print p[i], $7 } }' \
		"$tsv" | sort -n >"$tmp/cs-$k"
	[ -s "$tmp/cs-$k" ] && plots="$plots${plots:+, }'$tmp/cs-$k' using 1:2 with linespoints title '$k'"
done
if [ -n "$plots" ]; then
	gnuplot <<EOF2
set terminal pngcairo size 900,600
set output '$res/cost-shifting.png'
set title 'fork + child writes a share of memory + exit (virtual time)'
set xlabel '% of memory written by the child'
set ylabel 'virtual microseconds, fork to wait (median)'
set key left top
set grid
plot $plots
EOF2
fi
