#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Plots of a make bench run, drawn from its results.jsonl with matplotlib.

Called by scripts/plot.sh, which finds a Python 3 that has matplotlib
(Debian's python3-matplotlib). Each plot has one panel per operation or
setup and one line per kernel, in the order of the run (the first is the
reference), with the legend outside the panels:

  fork-latency   forkbench: fork, fork+exit+wait, fork+exec+wait against
                 the private memory written before fork; one row of
                 panels per THP setting the run has
  pt-memory      ptmem: page tables of the children alive; shm-readers:
                 page tables of N readers of one shared region, net of N
                 bare children (inherited, each maps a memfd, each maps
                 an ext4 file)
  cost-shifting  costshift: fork + child writes P% + exit + wait

Usage: plot.py [-o OUTDIR] RUN_DIR [PLOT...]
Writes OUTDIR/PLOT.png (OUTDIR defaults to RUN_DIR) and prints the paths.
Exit status 1 if a plot has no rows in the run (the others are still drawn).
"""
import argparse
import json
import math
import os
import sys

PROG = "plot.sh"


def die(msg):
    print(f"{PROG}: error: {msg}", file=sys.stderr)
    sys.exit(1)


class NoRows(Exception):
    """The run has no rows for a plot."""


try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter
except ImportError:
    die("matplotlib is missing: apt-get install python3-matplotlib "
        "(Debian's package, for /usr/bin/python3)")

# ----------------------------------------------------------------------
# Rows


def parse_param(s):
    """'size_mib=1024,mode=fork' -> {'size_mib': '1024', 'mode': 'fork'}"""
    p = {}
    for kv in s.split(","):
        k, sep, v = kv.partition("=")
        if sep:
            p[k] = v
    return p


def load(run):
    """The rows of RUN as dicts with suite, bench, kernel, mode, param (a
    dict), metric, value (float), unit, reps; rows of another shape (the
    smallproc runs') are left out."""
    rows = []
    jsonl = os.path.join(run, "results.jsonl")
    tsv = os.path.join(run, "results.tsv")
    if os.path.isfile(jsonl):
        with open(jsonl, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except ValueError as e:
                    die(f"{jsonl}:{n}: not a JSON object: {e}")
    elif os.path.isfile(tsv):
        keys = ("suite", "bench", "kernel", "mode", "param", "metric",
                "value", "unit", "reps")
        with open(tsv, encoding="utf-8") as f:
            for line in f:
                cols = line.rstrip("\n").split("\t")
                if len(cols) == len(keys):
                    rows.append(dict(zip(keys, cols)))
    else:
        die(f"{run}: no results.jsonl (not a run of make bench?)")
    out = []
    for r in rows:
        if not all(k in r for k in ("bench", "kernel", "param", "metric",
                                    "value")):
            continue
        try:
            r["value"] = float(r["value"])
        except (TypeError, ValueError):
            continue
        r["param"] = parse_param(str(r["param"]))
        r.setdefault("mode", "default")
        out.append(r)
    return out


def kernels_of(rows):
    """Kernel labels in the order of the run, each with its vm.pt_share
    mode ('default' when booted without one)."""
    seen = {}
    for r in rows:
        seen.setdefault(r["kernel"], str(r.get("mode", "default")))
    return list(seen.items())


def clock(run, kernels):
    """What the times of the run are, as (subtitle words, y-label words).
    Kernel columns named native-* ran on the machine itself (wall-clock
    time, scripts/native-bench.sh); the others in QEMU, under icount
    (virtual time) when the run's report or manifest says so."""
    native = [k for k, _ in kernels if k.rsplit("/", 1)[-1].startswith("native-")]
    icount = False
    for name in ("report.md", "manifest.txt"):
        try:
            with open(os.path.join(run, name), encoding="utf-8") as f:
                icount = icount or "icount" in f.read()
        except OSError:
            pass
    if native and len(native) == len(kernels):
        return "wall-clock time (native)", " (wall clock)"
    if native and icount:
        return "virtual time (QEMU icount), native-*: wall-clock time", ""
    if icount:
        return "virtual time (QEMU icount)", " (virtual)"
    return "time", ""


def reps_note(rows):
    reps = sorted({int(float(r["reps"])) for r in rows if "reps" in r})
    if not reps:
        return "medians"
    if len(reps) == 1:
        return f"median of {reps[0]} repetitions"
    return f"medians of {reps[0]}-{reps[-1]} repetitions"


# ----------------------------------------------------------------------
# Drawing

COLORS = ["#222222", "#1f77b4", "#d62728", "#2ca02c", "#9467bd",
          "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", ">"]
STYLES = ["-", "--", "-.", ":"]


def style(i):
    """Colour, marker and dash pattern of the i-th kernel: different in
    all three, so that lines lying on one another stay visible."""
    return dict(color=COLORS[i % len(COLORS)],
                marker=MARKERS[i % len(MARKERS)],
                linestyle=STYLES[i % len(STYLES)],
                markersize=7 - 1.2 * (i % 3), markerfacecolor="none",
                markeredgewidth=1.4, linewidth=1.6)


def kernel_label(kernel, mode):
    if mode in ("", "default", "-"):
        return kernel
    return f"{kernel} (vm.pt_share={mode})"


def spans_decades(vals, factor=20):
    pos = [v for v in vals if v > 0]
    return bool(pos) and max(pos) / min(pos) >= factor


def num(v, _pos=None):
    """A tick label: plain numbers, no powers of ten."""
    if v >= 1:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def log_y(ax, vals):
    lo, hi = min(vals), max(vals)
    subs = (1.0,) if hi / lo >= 1000 else (1.0, 2.0, 5.0)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
    ax.yaxis.set_major_formatter(FuncFormatter(num))
    ax.yaxis.set_minor_formatter(NullFormatter())


class XAxis:
    """An x axis over the values XS: log when they span decades, with 0
    (which a log axis cannot show) drawn one step left of the smallest
    positive value, labelled 0, with break marks between the two."""

    def __init__(self, xs, label, fmt=num, note=""):
        self.xs = sorted(set(xs))
        self.fmt = fmt
        pos = [x for x in self.xs if x > 0]
        self.log = len(pos) >= 2 and spans_decades(pos, 8)
        self.zero = None
        if self.log and 0 in self.xs:
            step = pos[1] / pos[0] if len(pos) > 1 else 4
            self.zero = pos[0] / max(2.0, min(step, 10.0))
        notes = [n for n in (note, "log scale" if self.log else "") if n]
        sep = "" if label.endswith("\n") else " "
        self.label = (label + (f"{sep}({'; '.join(notes)})" if notes else "")).strip()

    def at(self, x):
        return self.zero if (x == 0 and self.zero) else x

    def apply(self, ax):
        if self.log:
            ax.set_xscale("log")
            ax.minorticks_off()
        ticks = [self.at(x) for x in self.xs]
        ax.set_xticks(ticks)
        ax.set_xticklabels([self.fmt(x) for x in self.xs])
        if self.zero:
            pos = [x for x in self.xs if x > 0]
            brk = math.sqrt(self.zero * pos[0])
            tr = ax.get_xaxis_transform()
            for d in (0.93, 1.07):
                ax.plot([brk * d / 1.04, brk * d * 1.04], [-0.02, 0.02],
                        transform=tr, color="black", linewidth=1,
                        clip_on=False)
        ax.set_xlabel(self.label)


def draw(out, title, subtitle, kernels, panels, ylabel, ncols=3,
         sharey=True):
    """Panels: list of (title, XAxis, {kernel: [(x, y)]}); one line per
    kernel, in the order of KERNELS; the legend to the right of the
    panels. Returns False if no panel has a point."""
    npts = sum(len(pts) for _, _, series in panels for pts in series.values())
    if not npts:
        return False
    ncols = min(ncols, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False,
                             figsize=(4.6 * ncols, 3.7 * nrows + 0.9),
                             sharey=sharey)
    ally = [y for _, _, s in panels for pts in s.values() for _, y in pts]
    handles = {}
    for n, (ptitle, xaxis, series) in enumerate(panels):
        ax = axes[n // ncols][n % ncols]
        ys = [y for pts in series.values() for _, y in pts]
        scale_vals = ally if sharey else ys
        for i, (k, mode) in enumerate(kernels):
            pts = sorted(series.get(k, []))
            if not pts:
                continue
            h, = ax.plot([xaxis.at(x) for x, _ in pts], [y for _, y in pts],
                         label=kernel_label(k, mode), **style(i))
            handles.setdefault(k, h)
        if scale_vals and min(scale_vals) > 0 and spans_decades(scale_vals):
            log_y(ax, scale_vals)
        elif scale_vals and spans_decades(scale_vals):
            # values <= 0 among values over decades: log above the
            # smallest positive power of ten, linear below it
            lt = 10 ** math.floor(math.log10(min(v for v in scale_vals if v > 0)))
            ax.set_yscale("symlog", linthresh=lt, linscale=0.5)
            ax.yaxis.set_major_formatter(FuncFormatter(num))
            ax.yaxis.set_minor_formatter(NullFormatter())
        else:
            ax.yaxis.set_major_formatter(FuncFormatter(num))
            if scale_vals and min(scale_vals) >= 0:
                ax.set_ylim(bottom=0)
        xaxis.apply(ax)
        below = n + ncols
        if below < len(panels) and panels[below][1].label == xaxis.label:
            ax.set_xlabel("")  # the panel below says it
        ax.set_title(ptitle, fontsize=11)
        ax.grid(True, which="major", color="#dddddd", linewidth=0.8)
        ax.set_axisbelow(True)
        if n % ncols == 0 or not sharey:
            ax.set_ylabel(ylabel)
        if sharey:
            ax.tick_params(labelleft=True)
    for n in range(len(panels), nrows * ncols):
        axes[n // ncols][n % ncols].set_visible(False)
    fig.suptitle(f"{title}\n{subtitle}", fontsize=12)
    order = [k for k, _ in kernels if k in handles]
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.legend([handles[k] for k in order],
               [handles[k].get_label() for k in order],
               loc="center left", bbox_to_anchor=(1.0, 0.5),
               title="kernel", frameon=False)
    fig.savefig(out, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return True


def mib_label(m):
    m = int(m)
    if m == 0:
        return "0"
    return f"{m // 1024}G" if m >= 1024 and m % 1024 == 0 else f"{m}M"


def time_unit(vals):
    """Microseconds shown in ms when they reach a millisecond."""
    return ("ms", 1000.0) if vals and max(vals) >= 1000 else ("µs", 1.0)


# ----------------------------------------------------------------------
# The plots

FORK_OPS = [("fork", "fork_us_median", "fork()"),
            ("fork-exit", "fork_exit_us_median", "fork() + child exits + wait"),
            ("fork-exec", "fork_exec_us_median", "fork() + child execs + wait")]
THP = {"never": "THP off", "always": "THP on"}


def plot_fork_latency(run, rows, kernels, out, clk):
    fb = [r for r in rows if r["bench"] == "forkbench"]
    panels, used = [], []
    thps = []
    for r in fb:
        t = r["param"].get("thp", "")
        if t not in thps:
            thps.append(t)
    thps.sort(key=lambda t: (t != "never", t))
    for t in thps:
        for mode, metric, name in FORK_OPS:
            sel = [r for r in fb if r["metric"] == metric
                   and r["param"].get("mode") == mode
                   and r["param"].get("thp", "") == t
                   and "size_mib" in r["param"]]
            if not sel:
                continue
            used += sel
            panels.append((t, name, sel))
    if not panels:
        raise NoRows("no forkbench *_us_median rows (suite fork-latency)")
    unit, div = time_unit([r["value"] for r in used])
    xs = [float(r["param"]["size_mib"]) for r in used]
    drawn = []
    for t, name, sel in panels:
        series = {}
        for r in sel:
            series.setdefault(r["kernel"], []).append(
                (float(r["param"]["size_mib"]), r["value"] / div))
        xaxis = XAxis(xs, "private memory written before fork\n",
                      mib_label, "M = MiB, G = GiB")
        ptitle = f"{name}, {THP.get(t, 'THP ' + t)}" if t else name
        drawn.append((ptitle, xaxis, series))
    return draw(out, f"Fork latency against process size: {os.path.basename(os.path.normpath(run))}",
                f"{reps_note(used)}, {clk[0]}; lower is better",
                kernels, drawn, f"median, {unit}{clk[1]}")


def plot_pt_memory(run, rows, kernels, out, clk):
    panels = []
    pm = [r for r in rows if r["bench"] == "ptmem" and r["metric"] == "pt_delta_kb"]
    for size in sorted({r["param"].get("size_mib", "?") for r in pm},
                       key=lambda s: float(s) if s.replace(".", "").isdigit() else 0):
        sel = [r for r in pm if r["param"].get("size_mib", "?") == size]
        series = {}
        for r in sel:
            series.setdefault(r["kernel"], []).append(
                (float(r["param"]["children"]), r["value"] / 1024))
        xaxis = XAxis([x for s in series.values() for x, _ in s],
                      "children alive at once")
        panels.append((f"fork: children of a {mib_label(size).replace('M', ' MiB').replace('G', ' GiB')}"
                       " process\n(their page tables)", xaxis, series))

    # shm-readers: page tables while N readers are alive, less those of
    # N bare children (the -s 0 rows of the same N and kernel).
    sr = [r for r in rows if r["bench"] == "shmreaders" and r["metric"] == "pt_alive_kb"]
    bare = {(r["kernel"], r["param"].get("children")): r["value"]
            for r in sr if r["param"].get("size_mib") == "0"}
    kinds = [("inherit", "memfd", "N readers inherit one {} memfd"),
             ("own", "memfd", "N readers each map one {} memfd"),
             ("own", "file", "N readers each map one {} ext4 file")]
    for mapping, backing, what in kinds:
        sel = [r for r in sr if r["param"].get("size_mib") != "0"
               and r["param"].get("mapping", "inherit") == mapping
               and r["param"].get("backing", "memfd") == backing]
        for size in sorted({r["param"].get("size_mib") for r in sel},
                           key=float):
            series = {}
            for r in sel:
                key = (r["kernel"], r["param"].get("children"))
                if r["param"].get("size_mib") != size or key not in bare:
                    continue
                series.setdefault(r["kernel"], []).append(
                    (float(key[1]), (r["value"] - bare[key]) / 1024))
            if not series:
                continue
            m = mib_label(size).replace("M", " MiB").replace("G", " GiB")
            xaxis = XAxis([x for s in series.values() for x, _ in s],
                          "readers alive at once")
            panels.append((what.format(m) + "\n(net of N bare children)",
                           xaxis, series))
    if not panels:
        raise NoRows("no ptmem pt_delta_kb rows (suite pt-memory) and no "
                     "shmreaders pt_alive_kb rows (suite shm-readers)")
    ys = [y for _, _, s in panels for pts in s.values() for _, y in pts]
    if min(ys) <= 0:
        print(f"{PROG}: note: pt-memory: some readers' page tables net of "
              "bare children are <= 0 MiB: the y axis is linear below "
              "its smallest positive power of ten", file=sys.stderr)
    return draw(out, f"Page-table memory: {os.path.basename(os.path.normpath(run))}",
                "system-wide nr_page_table_pages while all are alive, less "
                "before; lower is better", kernels, panels,
                "page-table memory, MiB", ncols=2 if len(panels) == 4 else 3)


def plot_cost_shifting(run, rows, kernels, out, clk):
    sel = [r for r in rows if r["bench"] == "costshift"
           and r["metric"] == "total_us_median"
           and r["param"].get("mode") == "child-write" and "pct" in r["param"]]
    if not sel:
        raise NoRows("no costshift child-write total_us_median rows "
                     "(suite cost-shifting)")
    unit, div = time_unit([r["value"] for r in sel])
    series = {}
    for r in sel:
        series.setdefault(r["kernel"], []).append(
            (float(r["param"]["pct"]), r["value"] / div))
    sizes = sorted({r["param"].get("size_mib", "?") for r in sel})
    size = mib_label(sizes[0]).replace("M", " MiB").replace("G", " GiB") \
        if len(sizes) == 1 else "the process's"
    xaxis = XAxis([x for s in series.values() for x, _ in s],
                  "share of the memory the child writes, %")
    return draw(out, f"Cost shifting: {os.path.basename(os.path.normpath(run))}",
                f"{reps_note(sel)}, {clk[0]}; lower is better", kernels,
                [(f"fork of {size}, child writes a share, exits; "
                  "fork to wait", xaxis, series)],
                f"median, {unit}{clk[1]}",
                ncols=1)


PLOTS = {"fork-latency": plot_fork_latency,
         "pt-memory": plot_pt_memory,
         "cost-shifting": plot_cost_shifting}


def main():
    ap = argparse.ArgumentParser(
        prog=PROG, description="PNG plots of a make bench run.",
        epilog="plots: " + ", ".join(PLOTS) + " (default: all)")
    ap.add_argument("-o", dest="outdir", help="write the PNGs here "
                    "(default: the run directory)")
    ap.add_argument("run", nargs="?", metavar="RUN_DIR",
                    help="results/<run-id>")
    ap.add_argument("plots", nargs="*", metavar="PLOT")
    a = ap.parse_args()
    if not a.run:
        ap.print_usage(sys.stderr)
        die("no run directory given (results/<run-id>)")
    for p in a.plots:
        if p not in PLOTS:
            die(f"unknown plot '{p}' (plots: {', '.join(PLOTS)})")
    if not os.path.isdir(a.run):
        die(f"{a.run}: no such run directory")
    rows = load(a.run)
    if not rows:
        die(f"{a.run}: no rows of make bench in results.jsonl "
            "(a smallproc run? its report.md has the tables)")
    outdir = a.outdir or a.run
    os.makedirs(outdir, exist_ok=True)
    kernels = kernels_of(rows)
    clk = clock(a.run, kernels)
    failed = 0
    for name in a.plots or list(PLOTS):
        out = os.path.join(outdir, name + ".png")
        try:
            ok = PLOTS[name](a.run, rows, kernels, out, clk)
        except NoRows as e:
            print(f"{PROG}: error: {a.run}: {name}.png not drawn: {e}",
                  file=sys.stderr)
            failed = 1
            continue
        if not ok:
            print(f"{PROG}: error: {a.run}: {name}.png not drawn: no points",
                  file=sys.stderr)
            failed = 1
            continue
        print(f"wrote {out}")
    sys.exit(failed)


if __name__ == "__main__":
    main()
