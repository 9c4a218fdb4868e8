#!/bin/sh
# PNG plots of a make bench run, from its results.jsonl, with matplotlib
# (scripts/plot.py; Debian's python3-matplotlib):
#   fork-latency.png   one panel per operation (fork, fork+exit+wait,
#                      fork+exec+wait) and THP setting, one line per
#                      kernel, against the memory written before fork
#   pt-memory.png      page-table memory of the children alive (pt-memory)
#                      and of N readers of one shared region (shm-readers)
#   cost-shifting.png  fork + child writes a share of memory + exit + wait
# Times are labelled virtual (icount) time when the run's report says
# so, wall-clock time for kernel columns named native-*.
#
# Usage: scripts/plot.sh [-o OUTDIR] results/<run-id> [PLOT...]
#        PLOT: fork-latency, pt-memory, cost-shifting (default: all);
#        the PNGs go to the run directory unless -o says where.
# Prints the path of each PNG it wrote. Exits 1 if a plot has no rows in
# the run (it still draws the others) or matplotlib is missing.
set -eu
. "$(dirname "$0")/lib.sh"

# The first Python 3 that has matplotlib: $PYTHON, python3 on PATH (which
# may be a pyenv or venv one without it), Debian's.
py=
for p in ${PYTHON:-} python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then
		py=$p
		break
	fi
done
[ -n "$py" ] || die "matplotlib is missing: apt-get install python3-matplotlib (Debian's package; plots use /usr/bin/python3)"
exec "$py" "$ROOT/scripts/plot.py" "$@"
