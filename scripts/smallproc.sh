#!/bin/sh
# Small processes, several boots: does ptshare in auto mode cost a small
# process anything at fork? Boots each kernel BOOTS times under icount,
# the kernels interleaved (vanilla, ptshare, vanilla, ...), with address
# randomization off (norandmaps nokaslr) so that every boot lays out the
# same processes the same way. Each boot runs bench/bashfork.sh (bash
# fork+exit and fork+exec) and aim9 fork_test and exec_test (a static
# process) for a fixed number of operations. Prints a table: per metric,
# each boot's median, the mean over boots per kernel, the ratio to the
# first kernel and the spread of the boots ((max-min)/mean).
#
# Usage: scripts/smallproc.sh [-b BOOTS] [-n ITERATIONS] [-r REPS]
#   KERNELS="vanilla ptshare" (FLAVOUR[:MODE] as in scripts/bench.sh)
#   BUILD_KERNEL=0 uses the kernels already in build/out-*.
# Writes results/<date>-smallproc/: report.md, results.jsonl (one line per
# boot and metric; results.tsv holds the same rows), manifest.txt and the
# console logs.
set -eu
. "$(dirname "$0")/lib.sh"

boots=3 n=2000 reps=5
while getopts b:n:r: o; do
	case $o in
	b) boots=$OPTARG ;;
	n) n=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) die "usage: smallproc.sh [-b BOOTS] [-n ITERATIONS] [-r REPS]" ;;
	esac
done
case "$boots$n$reps" in *[!0-9]*) die "-b, -n and -r take numbers" ;; esac
kernels=${KERNELS:-vanilla ptshare}

"$ROOT/scripts/deps.sh"
# shellcheck disable=SC2046 # a list of flavours
kernels_ready $(for spec in $kernels; do echo "${spec%%:*}"; done | sort -u)
make -s -C "$ROOT/bench" OUT="$BUILD/bench"
"$ROOT/scripts/mkrootfs.sh"

id=$(date +%Y%m%d-%H%M%S)-smallproc
res=$ROOT/results/$id
mkdir -p "$res" "$BUILD/runs"
: >"$res/results.tsv"
# The boots run one after another.
GUESTS=1
export GUESTS
# shellcheck disable=SC2046 # a list of flavours
"$ROOT/scripts/manifest.sh" "$res" $(for spec in $kernels; do echo "${spec%%:*}"; done | sort -u) -- \
	"KERNELS=\"$kernels\" BUILD_KERNEL=${BUILD_KERNEL:-1} scripts/smallproc.sh -b $boots -n $n -r $reps"
cmd="bash /ptshare/bench/bashfork.sh -n $n -r $reps &&
	/ptshare/bench/aim9 -m fork -n $n && /ptshare/bench/aim9 -m exec -n $n"
b=1
while [ "$b" -le "$boots" ]; do
	for spec in $kernels; do
		flavour=${spec%%:*} append="norandmaps nokaslr"
		case $spec in *:*) append="$append sysctl.vm.pt_share=${spec#*:}" ;; esac
		k=$(echo "$spec" | tr : -)
		run=$BUILD/runs/$id-$k-$b
		start=$(date +%s)
		"$ROOT/scripts/run-guest.sh" -k "$flavour" --icount -m 2048 -t 3600 \
			-o "$run" --append "$append" -- "($cmd) >/host/out.txt" >"$run.out" 2>&1 ||
			die "$k boot $b failed: $(tail -1 "$run.out") (log: $run/console.log)"
		log "$k boot $b: $(( $(date +%s) - start )) s wall"
		cp "$run/console.log" "$res/console-$k-$b.log"
		# keep the medians: bashfork's *_median, aim9's *_us (one value
		# per boot, the mean time of n operations)
		awk -v k="$k" -v b="$b" '/^result / {
			for (i = 2; i <= NF; i++) { j = index($i, "="); f[substr($i, 1, j - 1)] = substr($i, j + 1) }
			if (f["metric"] ~ /_median$|_test_us$/)
				printf "%s\t%s\t%s\t%s\n", k, b, f["metric"], f["value"]
		}' "$run/share/out.txt" >>"$res/results.tsv"
	done
	b=$((b + 1))
done

awk -F'\t' '{
	printf "{\"suite\":\"smallproc\",\"kernel\":\"%s\",\"boot\":%s,\"metric\":\"%s\",\"value\":%s,\"unit\":\"us\"}\n",
		$1, $2, $3, $4
}' "$res/results.tsv" >"$res/results.jsonl"

labels=$(echo "$kernels" | tr : -)
{
	echo "# Small processes: $labels, $boots boots each"
	echo
	echo "Virtual time (icount), microseconds per operation; each cell is one"
	echo "boot's value (bashfork: median of $reps repetitions of $n operations;"
	echo "aim9: $n operations), then the mean over boots. Boots ran with"
	echo "norandmaps nokaslr. ratio = mean / mean of $(echo "$labels" | cut -d' ' -f1);"
	echo "spread = (max-min)/mean over the boots of that kernel."
	echo
	awk -F'\t' -v labels="$labels" '
	{ v[$3, $1] = v[$3, $1] " " $4; s[$3, $1] += $4; c[$3, $1]++
	  if (!($3 in seen)) { seen[$3] = 1; m[++nm] = $3 }
	  lo = ($3, $1) in min ? min[$3, $1] : $4; min[$3, $1] = $4 < lo ? $4 : lo
	  hi = ($3, $1) in max ? max[$3, $1] : $4; max[$3, $1] = $4 > hi ? $4 : hi }
	END {
		nk = split(labels, k, " ")
		printf "| metric |"; for (j = 1; j <= nk; j++) printf " %s |", k[j]
		for (j = 2; j <= nk; j++) printf " ratio %s |", k[j]
		printf " spread |\n|---|"
		for (j = 1; j <= 2 * nk; j++) printf "---|"
		print ""
		for (i = 1; i <= nm; i++) {
			printf "| %s |", m[i]
			for (j = 1; j <= nk; j++)
				printf "%s = **%.2f** |", v[m[i], k[j]], s[m[i], k[j]] / c[m[i], k[j]]
			ref = s[m[i], k[1]] / c[m[i], k[1]]
			for (j = 2; j <= nk; j++)
				printf " %.4f |", s[m[i], k[j]] / c[m[i], k[j]] / ref
			sp = ""
			for (j = 1; j <= nk; j++)
				sp = sp sprintf("%s%.2f%%", j > 1 ? " / " : "", 100 * (max[m[i], k[j]] - min[m[i], k[j]]) / (s[m[i], k[j]] / c[m[i], k[j]]))
			printf " %s |\n", sp
		}
	}' "$res/results.tsv"
} >"$res/report.md"
cat "$res/report.md"
log "results in $res"
