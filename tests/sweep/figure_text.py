#!/usr/bin/python3
"""Draws figures of analysis/ from an output folder and checks their text as a reader sees it:

- no two drawn texts overlap (tick labels, point and value labels, legends, titles);
- no text is smaller than layout.MIN_FONT points, and texts placed in the data (a dot's or a bar's
  label) stay inside their axes;
- the figure's CSV has a `label` column whose texts are drawn, naming each point once: per row for
  bars and dots, per line and x for line figures, per lane (and kind or time slice) for timelines.

  figure_text.py FOLDER FIGURE...      # FOLDER: a sweep's output folder or a run folder

Prints one line per figure ("ok breakdown: 40 labels, 312 texts") or per problem, and exits 1 when
any figure has one. tests/sweep/test_figure_text.cpp runs it on sweeps of 1, 9, 40 and 100 points.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "analysis"))

import matplotlib.figure  # noqa: E402
import pandas as pd  # noqa: E402

import layout  # noqa: E402
import plots  # noqa: E402
from aggsim_data import Sweep, is_run_folder  # noqa: E402

# Per figure: how a point is told apart from the others in its CSV (beside its label).
POINT_COLUMNS = {"versus": ("panel", "x"), "loss": ("panel", "end_time_s"), "phases": ("bin_start_s",)}
DRAW = {"breakdown": plots.breakdown, "busbw": plots.busbw, "loss": plots.loss_vs_time,
        "bytes-loss": plots.bytes_vs_loss, "time-to-target": plots.time_to_target, "timeline": plots.timeline,
        "phases": plots.phases, "links": plots.links}


class Seen:
    """What the last figure saved showed: its drawn texts and its problems."""

    def __init__(self):
        self.texts, self.problems = [], []


def check_drawn(fig, seen):
    fig.set_dpi(110)  # as saved
    drawn = layout.drawn_texts(fig)
    seen.texts = [t.get_text() for t, _ in drawn]
    for a, b in layout.overlaps(drawn):
        seen.problems.append(f"texts overlap: {a!r} and {b!r}")
    renderer = fig.canvas.get_renderer()
    for t, box in drawn:
        if t.get_fontsize() < layout.MIN_FONT - 1e-9:
            seen.problems.append(f"text {t.get_text()!r} is {t.get_fontsize():g} pt")
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer).padded(1)
        for t in ax.texts:
            if t.get_visible() and t.get_text().strip() and t.get_transform() != ax.transAxes:
                box = t.get_window_extent(renderer)
                if box.x0 < frame.x0 or box.x1 > frame.x1 or box.y0 < frame.y0 or box.y1 > frame.y1:
                    seen.problems.append(f"label {t.get_text()!r} runs past its axes")


def check_labels(kind, csv, seen):
    if not os.path.isfile(csv):
        return ["no CSV beside the PNG"]
    data = pd.read_csv(csv, dtype=str, keep_default_na=False)
    if "label" not in data.columns:
        return ["the CSV has no label column"]
    problems = []
    if kind == "busbw":
        key = ("panel", "dense_bytes") if data["dense_bytes"].nunique() > 1 else ()
    elif kind == "timeline":
        key = ("kind",) if "kind" in data.columns else ("bin_start_s",)
    else:
        key = POINT_COLUMNS.get(kind, ())
    twice = data.duplicated(subset=["label", *key], keep=False)
    if twice.any():
        problems.append(f"labels name several points: {sorted(set(data['label'][twice]))[:5]}")
    drawn = "\n".join(seen.texts + [" ".join(t.split("\n")) for t in seen.texts])
    labels = list(dict.fromkeys(data["label"]))
    wanted = labels[:1] if kind == "timeline" and "bin_start_s" in data.columns else labels
    missing = [lab for lab in wanted if lab not in drawn and lab != "all runs"]
    if missing:
        problems.append(f"{len(missing)} label(s) not drawn, e.g. {missing[:3]}")
    return problems


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    folder, kinds = sys.argv[1], sys.argv[2:]
    source = folder if is_run_folder(folder) else Sweep(folder)
    out_dir = os.path.join(folder, "figure-text")
    seen = Seen()
    original = matplotlib.figure.Figure.savefig

    def savefig(fig, *args, **kwargs):
        check_drawn(fig, seen)
        return original(fig, *args, **kwargs)

    matplotlib.figure.Figure.savefig = savefig
    failed = False
    for kind in kinds:
        seen.__init__()
        png = os.path.join(out_dir, kind + ".png")
        if kind == "versus":
            keys = [k for k in source.keys if source.numeric.get(k)]  # one value is a line of one dot
            written = [plots.versus(source, k, png) for k in keys[:1]]
            written = written[0] if written else None
        else:
            written = DRAW[kind](source, png)
        if not written:
            print(f"FAIL {kind}: not drawn")
            failed = True
            continue
        problems = seen.problems + check_labels(kind, os.path.splitext(png)[0] + ".csv", seen)
        for p in problems:
            print(f"FAIL {kind}: {p}")
        failed = failed or bool(problems)
        if not problems:
            print(f"ok {kind}: {len(seen.texts)} texts")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
