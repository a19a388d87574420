#!/usr/bin/python3
"""Draws one figure from a sweep's output folder (or its results.csv) or from a run folder, and
beside the PNG a CSV of the numbers it shows.

  plot.py breakdown PATH -o breakdown.png     step time split into compute and aggregation
  plot.py versus SWEEP --x ranks -o s.png     mean step time vs a swept key, per topology
  plot.py busbw PATH -o busbw.png             bus bandwidth vs call size (collectives.csv)
  plot.py loss PATH -o loss.png               loss vs simulated time (needs a loss column)
  plot.py bytes-loss SWEEP -o bl.png          bytes sent vs final loss (needs a loss column)
  plot.py time-to-target SWEEP -o t.png       time to the target loss (needs workload.target_loss)
  plot.py timeline RUN -o timeline.png        per-rank (or per-node) timeline (needs trace.json)
  plot.py phases RUN -o phases.png            ranks per phase over time (needs trace.json)
  plot.py links RUN -o links.png              busiest links (needs links.csv)
  plot.py --list [--markdown]                 the figures (the table of analysis/README.md)

Exits 2 with a message when the figure cannot be drawn from PATH (e.g. --x names a key that was not
swept), 0 when it was drawn or the data has nothing for it (a note says why).
"""
import argparse
import os
import sys

import plots
from aggsim_data import Sweep, is_run_folder

SWEEP_ONLY = {"versus", "bytes-loss", "time-to-target"}
RUN_ONLY = {"timeline", "phases", "links"}


def draw(kind, source, out, x):
    if kind == "breakdown":
        return plots.breakdown(source, out)
    if kind == "versus":
        return plots.versus(source, x, out)
    if kind == "busbw":
        return plots.busbw(source, out)
    if kind == "loss":
        return plots.loss_vs_time(source, out)
    if kind == "bytes-loss":
        return plots.bytes_vs_loss(source, out)
    if kind == "time-to-target":
        return plots.time_to_target(source, out)
    if kind == "timeline":
        return plots.timeline(source, out)
    if kind == "phases":
        return plots.phases(source, out)
    return plots.links(source, out)


def main():
    names = [f.name for f in plots.FIGURES]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", nargs="?", choices=names)
    p.add_argument("path", nargs="?", help="sweep output folder, its results.csv, or a run folder")
    p.add_argument("-o", "--out", help="PNG to write")
    p.add_argument("--x", default="ranks", help="versus: the swept key on the x axis (default ranks)")
    p.add_argument("--list", action="store_true", help="list the figures and exit")
    p.add_argument("--markdown", action="store_true", help="with --list: as analysis/README.md's table")
    a = p.parse_args()
    if a.list:
        if a.markdown:
            sys.stdout.write(plots.figure_table_markdown())
        else:
            for f in plots.FIGURES:
                print(f"{f.name:<15} {f.source:<12} {f.shows}")
        return 0
    if not a.kind or not a.path or not a.out:
        p.error("give a figure, a PATH and -o OUT.png (or --list)")
    if not os.path.exists(a.path):
        p.exit(2, f"plot.py: error: {a.path}: no such run or sweep folder\n")
    if not is_run_folder(a.path) and not os.path.isfile(
            a.path if a.path.endswith(".csv") else os.path.join(a.path, "results.csv")):
        p.exit(2, f"plot.py: error: {a.path}: neither a run folder (summary.json) nor a sweep folder (results.csv)\n")
    source = a.path if is_run_folder(a.path) else Sweep(a.path)
    if a.kind in SWEEP_ONLY and not isinstance(source, Sweep):
        p.exit(2, f"plot.py: error: {a.kind} needs a sweep (results.csv), not a run folder\n")
    if a.kind in RUN_ONLY and isinstance(source, Sweep):
        p.exit(2, f"plot.py: error: {a.kind} needs a run folder (run with output: {{trace: true}})\n")
    try:
        written = draw(a.kind, source, a.out, a.x)
    except plots.PlotError as e:
        p.exit(2, f"plot.py: error: {e}\n")
    if written:
        print(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
