#!/usr/bin/python3
"""Draws one figure from a sweep's output folder (or its results.csv) or from a run folder.

  plot.py breakdown PATH -o breakdown.png     step time split into compute and aggregation
  plot.py versus SWEEP --x ranks -o s.png     mean step time vs a swept key, per topology
  plot.py loss PATH -o loss.png               loss vs simulated time (needs a loss column)
  plot.py bytes-loss SWEEP -o bl.png          bytes sent vs final loss (needs a loss column)
  plot.py timeline RUN -o timeline.png        per-rank Gantt chart (needs trace.json)
  plot.py links RUN -o links.png              busiest links (needs links.csv)
"""
import argparse
import sys

import plots
from aggsim_data import Sweep, is_run_folder


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["breakdown", "versus", "loss", "bytes-loss", "timeline", "links"])
    p.add_argument("path", help="sweep output folder, its results.csv, or a run folder")
    p.add_argument("-o", "--out", required=True, help="PNG to write")
    p.add_argument("--x", default="ranks", help="versus: the swept key on the x axis (default ranks)")
    a = p.parse_args()
    source = a.path if is_run_folder(a.path) else Sweep(a.path)
    if a.kind in ("versus", "bytes-loss") and not isinstance(source, Sweep):
        sys.exit(f"{a.kind} needs a sweep (results.csv), not a run folder")
    if a.kind in ("timeline", "links") and isinstance(source, Sweep):
        sys.exit(f"{a.kind} needs a run folder (run with output: {{trace: true}})")
    if a.kind == "breakdown":
        written = plots.breakdown(source, a.out)
    elif a.kind == "versus":
        written = plots.versus(source, a.x, a.out)
    elif a.kind == "timeline":
        written = plots.timeline(source, a.out)
    elif a.kind == "links":
        written = plots.links(source, a.out)
    elif a.kind == "loss":
        written = plots.loss_vs_time(source, a.out)
    else:
        written = plots.bytes_vs_loss(source, a.out)
    if written:
        print(written)


if __name__ == "__main__":
    main()
