#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# patch-scripts: Andrew Morton's "pushpatch 99 / poppatch 99" test, the
# fork+exec-heavy shell work of a developer. From bash, apply a series of
# real patches one at a time, then remove them one at a time, the way
# Morton's patch-scripts (apatch/rpatch) do: for each patch a dry run, a
# backup of every file it touches, the real run, and the bookkeeping in
# pc/applied-patches, each step a separate program.
#
# Usage: patchscripts.sh [-d DIR] [-w WORKDIR] [-r REPS]
#   DIR      base/ (the files the patches touch), patches/ and series, made on
#            the host by scripts/prep-patch-scripts.sh (default: patch-scripts/
#            beside this script's folder: /ptshare/patch-scripts in the guest,
#            build/native/patch-scripts for scripts/native-bench.sh)
#   WORKDIR  where the tree is copied for each repetition (default /tmp)
#
# Results (bench.h format), per pass (push, pop):
#   <pass>_ms_{min,median,max,mean}  elapsed time of the pass
#   <pass>_forks   new tasks during the pass: "processes" of /proc/stat,
#                  which counts every fork/clone in the system (this
#                  script's subshells included); median over the repetitions
#   <pass>_execs   programs this script started (counted by the script at
#                  each call site, not by the kernel: the guest kernel has
#                  no tracing); the same in every repetition
#   <pass>_pt_{fork_shared,fork_copied,unshare_copy,unshare_reuse}
#                  deltas of ptshare's /proc/vmstat counters (0 on vanilla)
# Time is $EPOCHREALTIME (microseconds; under QEMU icount, virtual time).
set -eu

dir=$(dirname "$0")/../patch-scripts work=/tmp reps=3
while getopts d:w:r: o; do
	case $o in
	d) dir=$OPTARG ;;
	w) work=$OPTARG ;;
	r) reps=$OPTARG ;;
	*) echo "usage: $0 [-d DIR] [-w WORKDIR] [-r REPS]" >&2; exit 2 ;;
	esac
done
dir=$(cd "$dir" && pwd)
P=$dir/patches
mapfile -t series <"$dir/series"
n=${#series[@]}
[ "$n" -gt 0 ] || { echo "patchscripts: empty series in $dir" >&2; exit 1; }
ex=0	# programs started

die() { echo "patchscripts: $*" >&2; exit 1; }
. "$(dirname "$0")/bench-lib.sh"
pt_names="fork_shared fork_copied unshare_copy unshare_reuse"

# Morton's apatch: refuse an applied patch, dry-run it, back up what it
# touches into pc/NAME/, apply it, record it.
apatch() {
	local p=$1 files f
	ex=$((ex + 1)); grep -qx "$p" pc/applied-patches && die "$p is already applied"
	ex=$((ex + 1)); files=$(sed -n 's,^+++ [^/]*/\([^[:space:]]*\).*,\1,p' "$P/$p")
	ex=$((ex + 1)); patch -p1 --dry-run -s -f --no-backup-if-mismatch <"$P/$p" >/dev/null || die "$p does not apply"
	ex=$((ex + 1)); mkdir -p "pc/$p"
	for f in $files; do
		if [ -f "$f" ]; then
			ex=$((ex + 2)); mkdir -p "pc/$p/${f%/*}"; cp "$f" "pc/$p/$f"
		else
			echo "$f" >>"pc/$p/.new"
		fi
	done
	ex=$((ex + 1)); patch -p1 -s -f --no-backup-if-mismatch <"$P/$p" >/dev/null || die "$p failed"
	echo "$p" >>pc/applied-patches
}

# Morton's rpatch: take the topmost patch, dry-run its removal, remove it,
# drop its backups and its line.
rpatch() {
	local p
	ex=$((ex + 1)); p=$(tail -n 1 pc/applied-patches)
	[ -n "$p" ] || die "nothing to pop"
	ex=$((ex + 1)); patch -R -p1 --dry-run -s -f --no-backup-if-mismatch <"$P/$p" >/dev/null || die "$p does not reverse"
	ex=$((ex + 1)); patch -R -p1 -s -f -E --no-backup-if-mismatch <"$P/$p" >/dev/null || die "reversing $p failed"
	ex=$((ex + 1)); rm -rf "pc/$p"
	ex=$((ex + 1)); sed -i '$d' pc/applied-patches
}

pushpatch() { local p; for p in "${series[@]}"; do apatch "$p"; done; }
poppatch() { local i; for ((i = 0; i < n; i++)); do rpatch; done; }

samples=$work/patchscripts.$$
: >"$samples"
tree=$work/patchscripts-tree
for ((r = 1; r <= reps; r++)); do
	rm -rf "$tree"
	cp -a "$dir/base" "$tree"
	cd "$tree"
	mkdir pc
	: >pc/applied-patches
	sync
	for pass in push pop; do
		read_pt
		a0=$pt_fork_shared a1=$pt_fork_copied a2=$pt_unshare_copy a3=$pt_unshare_reuse
		ex=0 f0=$(procs) t0=$(now_us)
		"${pass}patch"
		t1=$(now_us) f1=$(procs)
		read_pt
		echo "$pass $((t1 - t0)) $((f1 - f0)) $ex $((pt_fork_shared - a0))" \
			"$((pt_fork_copied - a1)) $((pt_unshare_copy - a2)) $((pt_unshare_reuse - a3))" >>"$samples"
	done
	# Popping everything must give back the base exactly.
	[ ! -s pc/applied-patches ] || die "patches left applied"
	rm -rf pc
	find . -depth -type d -exec rmdir {} + 2>/dev/null || true
	cd /
	diff -r "$dir/base" "$tree" >&2 || die "push+pop did not restore the tree"
done
rm -rf "$tree"

nfiles=$(find "$dir/base" -type f | wc -l)
awk -v n="$n" -v files="$nfiles" '
function out(m, v, u, r) {
	printf "result bench=patch-scripts param=patches=%d,files=%d metric=%s value=%s unit=%s reps=%d\n",
		n, files, m, v, u, r
}
function med(a, k,   i, j, t) {	# sorts a[1..k]
	for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
}
{ k = ++cnt[$1]; t[$1, k] = $2 / 1000; f[$1, k] = $3; e[$1] = $4
  for (c = 5; c <= 8; c++) pt[$1, c, k] = $c }
END {
	split("push pop", passes, " ")
	split("pt_fork_shared pt_fork_copied pt_unshare_copy pt_unshare_reuse", ptn, " ")
	for (pi = 1; pi <= 2; pi++) {
		p = passes[pi]; k = cnt[p]; sum = 0
		for (i = 1; i <= k; i++) { a[i] = t[p, i]; sum += a[i]; b[i] = f[p, i] }
		m = med(a, k)
		out(p "_ms_min", sprintf("%.3f", a[1]), "ms", k)
		out(p "_ms_median", sprintf("%.3f", m), "ms", k)
		out(p "_ms_max", sprintf("%.3f", a[k]), "ms", k)
		out(p "_ms_mean", sprintf("%.3f", sum / k), "ms", k)
		out(p "_forks", sprintf("%d", med(b, k)), "forks", k)
		out(p "_execs", e[p], "execs", k)
		for (c = 5; c <= 8; c++) {
			for (i = 1; i <= k; i++) b[i] = pt[p, c, i]
			out(p "_" ptn[c - 4], sprintf("%d", med(b, k)), "tables", k)
		}
	}
}' "$samples"
rm -f "$samples"
