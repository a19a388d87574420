"""The figures, each from a sweep (aggsim_data.Sweep) or a run folder. Every function returns the
PNG path it wrote, or None with a printed reason when the data cannot give that figure; beside each
PNG it writes a CSV of the same name holding the numbers the figure shows.

FIGURES lists them (name, source, what it shows): plot.py's choices and the figure table of
analysis/README.md are generated from it."""
import collections
import json
import math
import os

import matplotlib
import matplotlib.colors
import matplotlib.lines
import matplotlib.patches
import natsort
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from aggsim_data import (Sweep, mean_and_ci95, read_collectives, read_run, si,  # noqa: E402
                         time_unit)

COMPUTE, COMM, OTHER = "#4c72b0", "#dd8452", "#bbbbbb"
# Above this many ranks the timeline shows phases, not ranks: one lane per rank stops being legible.
TIMELINE_RANK_LANES = 32


class PlotError(Exception):
    """A figure asked for what the data does not have (plot.py exits non-zero with the message)."""


def _save(fig, out, data=None):
    """Writes the PNG and, beside it, the numbers it shows (same name, .csv) so they can be checked."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110, bbox_inches="tight")
    plt.close(fig)
    if data is not None:
        pd.DataFrame(data).to_csv(os.path.splitext(out)[0] + ".csv", index=False)
    return out


def run_name(run_dir):
    """How a run is named on a page and in its figures' titles: its folder and its scenario."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        scenario = json.load(f).get("scenario", "")
    folder = os.path.basename(os.path.normpath(run_dir))
    return folder if scenario in ("", folder) else f"{folder} (scenario {scenario})"


def _legend_below(fig, ax, handles=None, labels=None, ncol=4):
    """A legend under the axes and their x label, outside the data, in as many columns as fit."""
    if handles is None:
        handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return
    below = 0.62 / (fig.get_size_inches()[1] * ax.get_position().height)  # 0.62 inch under the axes
    ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -below), ncol=min(ncol, len(handles)),
              fontsize=8, frameon=False)


def _line_styles(n):
    """Distinct (colour, line style, marker) for n lines: past ten colours the style changes too."""
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    styles, markers = ["-", "--", ":", "-."], ["o", "s", "^", "D"]
    return [(colours[i % len(colours)], styles[i // len(colours) % 4], markers[i // len(colours) % 4])
            for i in range(n)]


def _legend_beside(ax, ncol=1):
    """A legend to the right of the axes (many lines: they would cover the data)."""
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False, ncol=ncol)


def _readable_log_axis(axis, values, base=10, formatter=None):
    """A log axis that always carries at least three labelled ticks: over less than two decades the
    ticks at 1, 2 and 5 of each decade are labelled too (else a short range shows one or two)."""
    vals = [v for v in values if v and v > 0 and math.isfinite(v)]
    fmt = formatter or (lambda v, _: f"{v:g}")
    if base == 2:
        axis.set_major_locator(ticker.LogLocator(base=2))
    elif vals and max(vals) / min(vals) < 3:
        # Less than a factor of 3: even 1, 2, 5 per decade could leave one label; linear steps do not.
        ticks = [t for t in ticker.MaxNLocator(6).tick_values(min(vals), max(vals)) if t > 0]
        axis.set_major_locator(ticker.FixedLocator(ticks))
    elif vals and max(vals) / min(vals) < 100:
        axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(fmt))
    axis.set_minor_formatter(ticker.NullFormatter())


def _si_formatter(unit):
    return ticker.FuncFormatter(lambda v, _: si(v, unit, digits=3) if v > 0 else "0")


# ---------------------------------------------------------------------------------------------------
# Step time breakdown


def breakdown(source, out, max_bars=40):
    """Mean step time split into compute, exposed aggregation (not hidden behind compute) and the
    rest of the step (waiting for other ranks), per sweep point or per step of one run (runs with
    more steps than max_bars: per group of consecutive steps); the part of the aggregation that
    overlapped the compute is hatched inside the compute bar. A bar is the step: the slowest rank's
    compute and exposed aggregation are clipped to it. Horizontal bars, labelled by the swept keys
    that vary, so 1 to 100+ points stay readable."""
    if isinstance(source, Sweep):
        pts = source.points
        if pts.empty:
            print("breakdown: no finished points; skipping")
            return None
        groups = list(pts.groupby("label", sort=False))  # repetitions of a point: one bar, their mean
        labels = [g for g, _ in groups]
        step = [f["mean_step_s"].astype(float).mean() for _, f in groups]
        compute = [f["mean_compute_s"].astype(float).mean() for _, f in groups]
        comm = [f["mean_comm_s"].astype(float).mean() for _, f in groups]
        exposed = [f["mean_exposed_comm_s"].astype(float).mean() for _, f in groups]
        runs = [len(f) for _, f in groups]
        title = f"Step time breakdown, {len(labels)} point{'s' if len(labels) != 1 else ''} (mean over steps)"
    else:
        _, steps = read_run(source)
        size = max(1, math.ceil(len(steps) / max_bars))
        labels, step, compute, comm, exposed, runs = [], [], [], [], [], []
        for first in range(0, len(steps), size):
            part = steps.iloc[first:first + size]
            s0, s1 = int(part["step"].iloc[0]), int(part["step"].iloc[-1])
            labels.append(f"step {s0}" if s0 == s1 else f"steps {s0}-{s1}")
            step.append(part["step_time_s"].mean())
            compute.append(part["compute_time_s"].mean())
            comm.append(part["comm_time_s"].mean())
            exposed.append(part["exposed_comm_time_s"].mean())
            runs.append(len(part))
        title = f"Step time breakdown: {run_name(source)}" + (f" (means over {size} steps)" if size > 1 else "")
    bars = {"label": labels, "step_s": step, "compute_s": [], "exposed_comm_s": [], "overlap_s": [], "other_s": [],
            "runs": runs}
    for st, c, m, e in zip(step, compute, comm, exposed):
        c_shown = min(c, st)
        e_shown = min(e, st - c_shown)
        bars["compute_s"].append(c_shown)
        bars["exposed_comm_s"].append(e_shown)
        bars["overlap_s"].append(min(max(m - e, 0.0), c_shown))
        bars["other_s"].append(st - c_shown - e_shown)
    scale, unit = time_unit(max(step) if step else 0)
    n = len(labels)
    fig, ax = plt.subplots(figsize=(10, 0.3 * n + 2.2))
    y = list(range(n))[::-1]  # first point on top

    def scaled(key):
        return [v * scale for v in bars[key]]

    # Only the parts some bar has get a legend entry.
    if any(bars["compute_s"]):
        ax.barh(y, scaled("compute_s"), color=COMPUTE, label="compute", height=0.7)
    if any(bars["overlap_s"]):
        ax.barh(y, scaled("overlap_s"), left=[c - o for c, o in zip(scaled("compute_s"), scaled("overlap_s"))],
                color="none", edgecolor=COMM, hatch="///", linewidth=0, height=0.7,
                label="aggregation hidden behind compute")
    ax.barh(y, scaled("exposed_comm_s"), left=scaled("compute_s"), color=COMM, label="exposed aggregation",
            height=0.7)
    if any(v > 1e-12 * max(step) for v in bars["other_s"]):
        ax.barh(y, scaled("other_s"), left=[c + e for c, e in zip(scaled("compute_s"), scaled("exposed_comm_s"))],
                color=OTHER, label="rest of the step (waiting for other ranks)", height=0.7)
    if n <= 120:  # each bar's length, written at its end
        for yy, st in zip(y, step):
            ax.text(st * scale, yy, f" {st * scale:.3g}", va="center", fontsize=8 if n <= 30 else 6)
    positive = [v for v in step if v > 0]
    one_part = not any(bars["compute_s"]) and not any(v > 1e-12 * max(step) for v in bars["other_s"])
    if one_part and positive and max(positive) / min(positive) > 100:
        # Steps spanning decades, all aggregation: a log axis keeps the short bars visible.
        ax.set_xscale("log")
        ax.set_xlim(min(positive) * scale / 2, max(positive) * scale * 3)
        _readable_log_axis(ax.xaxis, [v * scale for v in positive])
    else:
        ax.set_xlim(0, max(step) * scale * 1.1 if positive else 1)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=9 if n <= 30 else 7)
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(f"time per step [{unit}]")
    ax.set_title(title, fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    _legend_below(fig, ax, ncol=2)
    return _save(fig, out, bars)


# ---------------------------------------------------------------------------------------------------
# Scaling curves


def check_axis_key(sweep, key):
    """Raises PlotError naming the swept keys unless `key` is a swept key with numeric values."""
    numeric = [k for k in sweep.keys if sweep.numeric.get(k)]
    if key not in sweep.keys:
        raise PlotError(f"--x {key}: not a swept key of this sweep; swept: {', '.join(sweep.keys) or 'none'}"
                        f" (numeric, for --x: {', '.join(numeric) or 'none'})")
    if not sweep.numeric.get(key):
        raise PlotError(f"--x {key}: its values are not numbers; numeric swept keys: {', '.join(numeric) or 'none'}")


def _x_axis_format(sweep, key):
    """(scale, axis label, tick formatter, log base) for a swept key's values in SI base units."""
    unit = sweep.axis_unit(key)
    if unit == "bytes/s":  # bandwidths read best in Gb/s, as written in scenarios
        return 8e-9, f"{key} [Gb/s]", None, 10
    if unit == "bytes":
        return 1.0, f"{key} [bytes]", _si_formatter("B"), 10
    if unit == "s":
        return 1.0, f"{key}", ticker.FuncFormatter(lambda v, _: si(v, "s", 3) if v >= 1 else
                                                   (f"{v * 1e3:g} ms" if v >= 1e-3 else f"{v * 1e6:g} us")), 10
    if unit == "flop/s":
        return 1.0, f"{key}", _si_formatter("flop/s"), 10
    return 1.0, key, None, 2 if key == "ranks" else 10


def _panel_key(sweep, frame, lines_skip):
    """With more than 8 lines, the swept key whose values get a panel each (small multiples): a
    bandwidth if one varies, else the first varying key; None when the lines fit one panel."""
    others = [k for k in sweep.varying_keys() if k not in lines_skip]
    if len(others) < 2 or frame.empty:
        return None
    if len({sweep.label(r, skip=lines_skip) for _, r in frame.iterrows()}) <= 8:
        return None
    bandwidths = [k for k in others if sweep.axis_unit(k) == "bytes/s"]
    return (bandwidths or others)[0]


def _panel_grid(n):
    cols = 2 if n in (2, 4) else min(n, 3)
    rows = math.ceil(n / cols)
    return rows, cols


def versus(sweep, key, out, y="mean_step_time_s"):
    """Mean step time against one numeric swept key (ranks, bandwidth, size), a line per combination of
    the other swept keys, one panel per topology (and, beyond 8 lines, per value of one more key);
    with repetitions, the mean and its 95 % interval."""
    check_axis_key(sweep, key)
    pts = sweep.points.copy()
    if pts.empty:
        print(f"versus {key}: no finished points; skipping")
        return None
    scale, xlabel, xfmt, base = _x_axis_format(sweep, key)
    skip = (key, "platform.topology")
    panel_key = _panel_key(sweep, pts, skip)
    line_skip = skip + ((panel_key,) if panel_key else ())
    pts["_x"] = [sweep.value(r, key) * scale for _, r in pts.iterrows()]
    pts["_line"] = [sweep.label(r, skip=line_skip) for _, r in pts.iterrows()]
    pts["_panel"] = [r["topology"] + (f", {panel_key.split('.')[-1]}={r[panel_key]}" if panel_key else "")
                     for _, r in pts.iterrows()]
    others = [k for k in sweep.keys if k not in line_skip]
    tscale, tunit = time_unit(pts[y].astype(float).max())
    data = {"topology": [], "panel": [], "line": [], "x": [], "mean_ms": [], "ci95_ms": [], "runs": []}
    panels = sorted(pts["_panel"].unique(),
                    key=lambda p: sweep.sort_key(pts[pts["_panel"] == p].iloc[0], [panel_key] if panel_key else []))
    lines = pts["_line"].nunique()
    rows, cols = _panel_grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols + (2.8 if lines > 6 else 0), 4.4 * rows),
                             squeeze=False, sharey=True)
    styles = dict(zip(sorted(pts["_line"].unique(), key=lambda l: sweep.sort_key(pts[pts["_line"] == l].iloc[0],
                                                                                  others)),
                      _line_styles(lines)))
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sub = pts[pts["_panel"] == panel]
        groups = list(sub.groupby("_line", sort=False))
        # Lines in the natural order of the other keys' values (1MB before 10MB before 100MB).
        groups.sort(key=lambda lg: sweep.sort_key(lg[1].iloc[0], others))
        xs_all, ys_all = [], []
        for line, g in groups:
            colour, style, marker = styles[line]
            xs, means, cis = [], [], []
            for xv, at_x in sorted(g.groupby("_x"), key=lambda t: t[0]):
                m, ci = mean_and_ci95(at_x[y].astype(float))
                xs.append(xv), means.append(m * tscale), cis.append(ci * tscale)
                for col, v in zip(data, (g["topology"].iloc[0], panel, line, xv, m * 1e3, ci * 1e3, len(at_x))):
                    data[col].append(v)
            xs_all += xs
            ys_all += means
            if any(c > 0 for c in cis):
                ax.errorbar(xs, means, yerr=cis, marker=marker, linestyle=style, color=colour, capsize=3, label=line)
            else:
                ax.plot(xs, means, marker=marker, linestyle=style, color=colour, label=line)
        ax.set_xscale("log", base=base)
        ax.set_yscale("log")
        _readable_log_axis(ax.xaxis, xs_all, base=base)
        if len(set(xs_all)) <= 10:  # few swept values: a tick at each, and only there
            ax.xaxis.set_major_locator(ticker.FixedLocator(sorted(set(xs_all))))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        if xfmt is not None:
            ax.xaxis.set_major_formatter(xfmt)
        _readable_log_axis(ax.yaxis, pts[y].astype(float) * tscale)
        ax.set_xlabel(xlabel)
        if i % cols == 0:
            ax.set_ylabel(f"mean step time [{tunit}]")
        ax.set_title(f"{panel}: step time vs {key}" if len(panels) == 1 else panel, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if len(panels) > 1:
        fig.suptitle(f"Mean step time vs {key}, a panel per " +
                     ("topology and " + panel_key if panel_key else "topology"), fontsize=11)
    last = axes[0][min(cols, len(panels)) - 1]
    if lines > 6 or len(panels) > 1:
        seen = {}  # every line once, in the order of the styles (the natural order of its values)
        for ax in axes.flat:
            for h, label in zip(*ax.get_legend_handles_labels()):
                seen.setdefault(label, h)
        labels = [label for label in styles if label in seen]
        last.legend([seen[label] for label in labels], labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                    fontsize=7, frameon=False)
    elif lines > 1:
        last.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Bus bandwidth against message size (nccl-tests' figure)


def _size_keys(sweep):
    return [k for k in sweep.keys if sweep.axis_unit(k) == "bytes"]


def busbw(source, out):
    """busbw (collectives.csv: wire bytes x bus factor / transfer time) against the calls' dense size,
    as nccl-tests plots it: for a sweep a line per combination of the swept keys other than sizes
    (beyond 8 lines a panel per bandwidth), for a run one point per call size; each point the mean over
    the calls of that size."""
    panel_key = None
    if isinstance(source, Sweep):
        calls = source.collectives()
        skip = tuple(_size_keys(source)) + ("platform.topology",)
        panel_key = _panel_key(source, source.points, skip)
        line_skip = skip + ((panel_key,) if panel_key else ())
        if not calls.empty:
            calls["line"] = [source.label(r, skip=line_skip) for _, r in calls.iterrows()]
            calls["panel"] = [f"{panel_key.split('.')[-1]}={r[panel_key]}" if panel_key else "" for _, r in
                              calls.iterrows()]
        title = "Bus bandwidth vs call size"
    else:
        calls = read_collectives(source)
        if calls is not None:
            calls = calls.copy()
            calls["line"], calls["panel"] = calls["algorithm"], ""
        title = f"Bus bandwidth vs call size: {run_name(source)}"
    if calls is None or calls.empty or calls["busbw_GBps"].dropna().empty:
        print("busbw: no call with a bus bandwidth (collectives.csv; parameter servers and decentralized "
              "schemes have none); skipping")
        return None
    calls = calls.dropna(subset=["busbw_GBps"])
    data = {"panel": [], "line": [], "dense_bytes": [], "busbw_GBps": [], "algbw_GBps": [], "calls": []}
    panels = list(dict.fromkeys(calls["panel"]))
    lines = list(dict.fromkeys(calls["line"]))
    for panel in panels:
        for line in lines:
            sel = calls[(calls["panel"] == panel) & (calls["line"] == line)]
            for size, g in sel.groupby("dense_bytes", sort=True):
                for col, v in zip(data, (panel, line, int(size), g["busbw_GBps"].astype(float).mean(),
                                         g["algbw_GBps"].astype(float).mean(), len(g))):
                    data[col].append(v)
    if len(set(data["dense_bytes"])) == 1:  # one size: a bar per line says more than a column of dots
        return _busbw_bars(data, title, out)
    rows, cols = _panel_grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols + (2.8 if len(lines) > 6 else 0), 4.4 * rows),
                             squeeze=False)
    styles = dict(zip(lines, _line_styles(len(lines))))
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sizes = []
        for line in lines:
            pts = [(x, y) for p, l, x, y in zip(data["panel"], data["line"], data["dense_bytes"], data["busbw_GBps"])
                   if p == panel and l == line]
            if not pts:
                continue
            colour, style, marker = styles[line]
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, linestyle=style, color=colour, label=line)
            sizes += [x for x, _ in pts]
        ax.set_xscale("log")
        _readable_log_axis(ax.xaxis, sizes)
        if len(set(sizes)) <= 10:
            ax.xaxis.set_major_locator(ticker.FixedLocator(sorted(set(sizes))))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.xaxis.set_major_formatter(_si_formatter("B"))
        ax.set_ylim(bottom=0)
        ax.set_xlabel("call size (dense gradient bytes)")
        if i % cols == 0:
            ax.set_ylabel("busbw [GB/s]\n(wire bytes x bus factor / time)")
        ax.set_title(panel if len(panels) > 1 else title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if len(panels) > 1:
        fig.suptitle(f"{title}, a panel per {panel_key}", fontsize=11)
    last = axes[0][min(cols, len(panels)) - 1]
    if len(lines) > 6 or len(panels) > 1:
        last.legend([matplotlib.lines.Line2D([], [], color=c, linestyle=st, marker=m) for c, st, m in styles.values()],
                    list(styles), loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize=7, frameon=False)
    elif len(lines) > 1:
        last.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, out, data)


def _busbw_bars(data, title, out):
    n = len(data["line"])
    fig, ax = plt.subplots(figsize=(10, 0.3 * n + 2))
    y = list(range(n))[::-1]
    ax.barh(y, data["busbw_GBps"], color=COMM, height=0.7)
    for yy, v in zip(y, data["busbw_GBps"]):
        ax.text(v, yy, f" {v:.3g}", va="center", fontsize=8)
    ax.set_yticks(y)
    ax.set_yticklabels(data["line"], fontsize=9 if n <= 30 else 7)
    ax.set_xlim(0, max(data["busbw_GBps"]) * 1.15)
    ax.set_xlabel("busbw [GB/s] (wire bytes x bus factor / transfer time)")
    ax.set_title(f"{title}: every call {si(data['dense_bytes'][0], 'B')}", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    return _save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Training


def loss_vs_time(source, out):
    """Training loss against simulated time (needs a `loss` column in steps.csv)."""
    runs = source.steps.items() if isinstance(source, Sweep) else [(run_name(source), read_run(source)[1])]
    labels = dict(zip(source.points["id"], source.points["label"])) if isinstance(source, Sweep) else {}
    runs = [(labels.get(i, i), s) for i, s in runs if "loss" in s.columns]
    if not runs:
        print("loss vs time: steps.csv has no loss column (no training workload); skipping")
        return None
    data = {"line": [], "end_time_s": [], "loss": []}
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for label, s in runs:
        evaluated = s.dropna(subset=["loss"])  # only steps with an evaluation carry a loss
        ax.plot(evaluated["end_time_s"], evaluated["loss"], marker=".", label=label)
        for t, v in zip(evaluated["end_time_s"], evaluated["loss"]):
            data["line"].append(label), data["end_time_s"].append(t), data["loss"].append(v)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("held-out loss")
    ax.set_title("Loss vs simulated time", fontsize=11)
    ax.grid(True, alpha=0.3)
    if len(runs) > 6:
        _legend_beside(ax)
    else:
        ax.legend(fontsize=8)
    return _save(fig, out, data)


def bytes_vs_loss(sweep, out):
    """Total bytes sent against final loss, one point per sweep point (needs a `loss` column)."""
    pts = sweep.points
    if pts.empty or pts["final_loss"].isna().all():
        print("bytes vs loss: steps.csv has no loss column (no training workload); skipping")
        return None
    pts = pts[~pts["final_loss"].isna()]
    fig, ax = plt.subplots(figsize=(8, 4.8))
    ax.scatter(pts["bytes_sent"].astype(float), pts["final_loss"].astype(float))
    for _, r in pts.iterrows():
        ax.annotate(r["label"], (float(r["bytes_sent"]), float(r["final_loss"])), fontsize=6)
    ax.set_xscale("log")
    _readable_log_axis(ax.xaxis, pts["bytes_sent"].astype(float))
    ax.xaxis.set_major_formatter(_si_formatter("B"))
    ax.set_xlabel("bytes sent (all ranks, whole run)")
    ax.set_ylabel("final loss")
    ax.set_title("Communication volume vs final loss", fontsize=11)
    ax.grid(True, alpha=0.3)
    data = {"label": list(pts["label"]), "bytes_sent": list(pts["bytes_sent"]), "final_loss": list(pts["final_loss"])}
    return _save(fig, out, data)


def time_to_target(sweep, out):
    """Simulated time until the held-out loss first reached the scenario's target_loss, per point
    (mean and 95 % interval over repetitions); points that never reached it are listed as such."""
    pts = sweep.points
    if pts.empty or "time_to_target_s" not in pts.columns:
        print("time to target: no target_loss in the scenarios (workload.target_loss); skipping")
        return None
    data = {"label": [], "mean_s": [], "ci95_s": [], "reached": [], "runs": []}
    for label, g in pts.groupby("label", sort=False):
        times = [float(t) for t in g["time_to_target_s"] if t is not None and not pd.isna(t)]
        m, ci = mean_and_ci95(times) if times else (float("nan"), float("nan"))
        for col, v in zip(data, (label, m, ci, len(times), len(g))):
            data[col].append(v)
    fig, ax = plt.subplots(figsize=(8, 0.32 * len(data["label"]) + 2))
    y = list(range(len(data["label"])))[::-1]
    reached = [not pd.isna(m) for m in data["mean_s"]]
    ax.barh([yy for yy, r in zip(y, reached) if r], [m for m, r in zip(data["mean_s"], reached) if r],
            xerr=[c for c, r in zip(data["ci95_s"], reached) if r], color=COMPUTE, capsize=3)
    for yy, r in zip(y, reached):
        if not r:
            ax.text(0, yy, "  target not reached", va="center", fontsize=8, color="#c44e52")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{lab} ({n}/{k})" for lab, n, k in zip(data["label"], data["reached"], data["runs"])],
                       fontsize=8)
    ax.set_xlabel("simulated time to target loss [s] (runs that reached it / runs)")
    ax.set_title(f"Time to target loss {float(pts['target_loss'].iloc[0]):g}" if "target_loss" in pts.columns
                 else "Time to target loss", fontsize=11)
    return _save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Traced runs


def _traced_file(run_dir, name, figure):
    """A file that only traced runs have, or None after saying so."""
    path = os.path.join(run_dir, name)
    if os.path.isfile(path):
        return path
    print(f"{figure}: no {name} (run with output: {{trace: true}}); skipping")
    return None


def link_label(row):
    """'host-3 -> cluster-switch (edge)': what a link joins, else SimGrid's name for it."""
    a, b = str(row.get("end_a", "") or ""), str(row.get("end_b", "") or "")
    a, b = ("" if a == "nan" else a), ("" if b == "nan" else b)
    tier = str(row.get("tier", "") or "")
    tier = "" if tier == "nan" else tier
    ends = f"{a} -> {b}" if a and b else (a or b or str(row["link"]))
    return f"{ends} ({tier})" if tier else ends


def links(run_dir, out, top=20):
    """The busiest links of a traced run (links.csv): utilisation over the run, highest first,
    each labelled by what it joins and its tier."""
    path = _traced_file(run_dir, "links.csv", "links")
    if not path:
        return None
    df = pd.read_csv(path, dtype={"end_a": str, "end_b": str, "tier": str})
    df = df[df["bytes"] > 0]
    # Busiest first; equal ones in natural order of their names (host-2 before host-10).
    df = df.iloc[sorted(range(len(df)), key=lambda i: (-df["utilisation"].iloc[i],
                                                       natsort.natsort_key(str(df["link"].iloc[i]))))].head(top)
    if df.empty:
        print("links: no traffic; skipping")
        return None
    labels = [link_label(r) for _, r in df.iterrows()]
    fig, ax = plt.subplots(figsize=(9, 0.3 * len(df) + 1.8))
    ax.barh(labels[::-1], list(df["utilisation"] * 100)[::-1], color=COMM)
    for y, (_, r) in enumerate(list(df.iterrows())[::-1]):
        ax.text(r["utilisation"] * 100, y, f" {si(r['bytes'], 'B', 3)}", va="center", fontsize=7)
    ax.set_xlabel("utilisation over the run [% of bandwidth] (label: bytes carried)")
    ax.set_title(f"Busiest links (top {len(df)}): {run_name(run_dir)}", fontsize=11)
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlim(0, max(df["utilisation"] * 100) * 1.2)
    data = {"label": labels, "link": list(df["link"]), "tier": list(df.get("tier", [""] * len(df))),
            "bytes": list(df["bytes"]), "utilisation": list(df["utilisation"])}
    return _save(fig, out, data)


# Colours of the timeline's span kinds; host work an algorithm labels (reduce, compress, ...) gets its
# own, other labels share the last.
SPAN_COLOURS = collections.OrderedDict([
    ("compute", COMPUTE), ("aggregate", "#d9d9d9"), ("send", COMM), ("recv", "#55a868"),
    ("reduce", "#c44e52"), ("compress", "#8172b3"), ("decompress", "#937860"), ("other work", "#da8bc3")])


def _span_kind(name):
    return name if name in SPAN_COLOURS else "other work"


def timeline(run_dir, out, max_lanes=TIMELINE_RANK_LANES):
    """A traced run over time (trace.json). Up to max_lanes ranks: a lane per rank (step phases in
    the back, sends above, receives below, host work such as reductions in the middle); more ranks:
    a lane per phase counting the ranks (or transfers) in it at each moment, which stays legible at
    thousands of ranks."""
    path = _traced_file(run_dir, "trace.json", "timeline")
    if not path:
        return None
    with open(path) as f:
        trace = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in trace if e.get("ph") == "M" and e.get("name") == "process_name"}
    events = [e for e in trace if e.get("ph") == "X" and str(names.get(e["pid"], "")).startswith("rank ")]
    if not events:
        print("timeline: empty trace; skipping")
        return None
    ranks = max(e["pid"] for e in events) + 1
    end = max((e["ts"] + e["dur"]) for e in events) / 1e6
    scale, unit = time_unit(end)
    if ranks <= max_lanes:
        return _timeline_by_rank(events, ranks, scale, unit, out, run_dir)
    return _timeline_by_phase(events, ranks, scale, unit, out, run_dir)


def _darker(colour, factor=0.78):
    r, g, b = matplotlib.colors.to_rgb(colour)
    return (r * factor, g * factor, b * factor)


def _step_ends(run_dir):
    """When each step ended (steps.csv end_time_s), for the timeline's step marks."""
    try:
        return list(read_run(run_dir)[1]["end_time_s"])
    except (OSError, KeyError, ValueError):
        return []


def _timeline_by_rank(events, ranks, scale, unit, out, run_dir):
    # A rank's row (y grows downwards), one strip per kind so none hides another (DDP's aggregation
    # overlaps the backward pass): compute, sends, host work (reductions, encoding), receives, and the
    # aggregation phase. Back-to-back transfers alternate between two tones of their colour, so each
    # shows without edges that would wash the colours out; the other kinds are drawn as the union of
    # their spans (a step's compute phase holds its labelled compute work).
    band = {"compute": (0.0, 0.2), "send": (0.22, 0.2), "recv": (0.58, 0.2), "aggregate": (0.8, 0.1)}
    spans = collections.defaultdict(list)  # (rank, kind) -> [(start, duration)]
    for e in events:
        if e["dur"] > 0:
            spans[(e["pid"], _span_kind(e["name"]))].append((e["ts"] * 1e-6 * scale, e["dur"] * 1e-6 * scale))
    for key in spans:
        if key[1] not in ("send", "recv"):
            spans[key] = [(a, b - a) for a, b in _merged([(s, s + d) for s, d in spans[key]])]
    end = max(s + d for v in spans.values() for s, d in v)
    min_width = end / 1500  # a span shorter than a pixel still shows
    fig, ax = plt.subplots(figsize=(12, 0.32 * ranks + 2.2))
    order = list(SPAN_COLOURS)
    for (pid, kind), v in sorted(spans.items(), key=lambda kv: (kv[0][0], order.index(kv[0][1]))):
        offset, height = band.get(kind, (0.44, 0.12))
        v = sorted(v)
        alternate = kind in ("send", "recv")
        for tone, part in ((SPAN_COLOURS[kind], v[0::2] if alternate else v),
                           (_darker(SPAN_COLOURS[kind]), v[1::2] if alternate else [])):
            if part:
                ax.broken_barh([(s, max(d, min_width)) for s, d in part], (pid - 0.45 + offset, height),
                               facecolor=tone, edgecolor="none", linewidth=0)
    for i, t in enumerate(_step_ends(run_dir)):
        ax.axvline(t * scale, color="black", linewidth=0.6, linestyle=":")
        ax.text(t * scale, -0.55, f"step {i} ends", fontsize=7, ha="right", va="bottom")
    present = [k for k in order if any(kind == k for _, kind in spans)]
    handles = [matplotlib.patches.Patch(color=SPAN_COLOURS[k], label=k) for k in present]
    ax.set_yticks(range(ranks))
    ax.set_yticklabels([f"rank {r}" for r in range(ranks)], fontsize=8 if ranks <= 16 else 6)
    ax.set_ylim(ranks - 0.5, -0.5)
    ax.set_xlim(0, end * 1.01)
    ax.set_title(f"Timeline of {ranks} ranks: {run_name(run_dir)}", fontsize=11, pad=14)
    ax.set_xlabel(f"simulated time [{unit}]")
    _legend_below(fig, ax, handles, [h.get_label() for h in handles], ncol=len(handles))
    busy = collections.defaultdict(float)
    count = collections.defaultdict(int)
    for e in events:
        busy[(e["pid"], _span_kind(e["name"]))] += e["dur"] * 1e-6
        count[(e["pid"], _span_kind(e["name"]))] += 1
    keys = sorted(busy)
    data = {"rank": [k[0] for k in keys], "kind": [k[1] for k in keys], "spans": [count[k] for k in keys],
            "busy_s": [busy[k] for k in keys]}
    return _save(fig, out, data)


def _merged(intervals):
    """The union of (start, end) intervals, as disjoint sorted intervals."""
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def occupancy(intervals, edges):
    """Mean number of the intervals covering each bin [edges[i], edges[i+1]): the integral of their
    count over the bin divided by its width, exactly (the count is constant between changes)."""
    import numpy as np

    if not intervals:
        return np.zeros(len(edges) - 1)
    t = np.array([a for a, _ in intervals] + [b for _, b in intervals])
    d = np.array([1] * len(intervals) + [-1] * len(intervals))
    order = np.argsort(t, kind="stable")
    t, d = t[order], d[order]
    count = np.cumsum(d)  # after each change
    area = np.concatenate(([0.0], np.cumsum(count[:-1] * np.diff(t))))  # integral up to each change
    at_edges = np.interp(edges, t, area, left=0.0, right=area[-1])
    return np.diff(at_edges) / np.diff(edges)


def _timeline_by_phase(events, ranks, scale, unit, out, run_dir, bins=600):
    # Per kind, the mean number of ranks in that phase in each of `bins` slices of the run (a rank's
    # own overlapping spans of one kind count once); for sends and receives, of transfers in flight.
    import numpy as np

    per_rank = collections.defaultdict(list)
    for e in events:
        if e["dur"] > 0:
            per_rank[(_span_kind(e["name"]), e["pid"])].append((e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    intervals = collections.defaultdict(list)
    for (kind, _), v in per_rank.items():
        intervals[kind] += v if kind in ("send", "recv") else [tuple(i) for i in _merged(v)]
    kinds = [k for k in SPAN_COLOURS if k in intervals]
    end = max(b for v in intervals.values() for _, b in v)
    edges = np.linspace(0.0, end, bins + 1)
    fig, axes = plt.subplots(len(kinds), 1, figsize=(12, 1.15 * len(kinds) + 1.6), sharex=True, squeeze=False)
    data = {"kind": [], "bin_start_s": [], "bin_end_s": [], "mean_count": []}
    for ax, kind in zip(axes[:, 0], kinds):
        mean = occupancy(intervals[kind], edges)
        ax.fill_between(edges[:-1] * scale, mean, step="post", color=SPAN_COLOURS[kind], linewidth=0)
        ax.set_ylim(0, max(float(mean.max()), 1e-9) * 1.15)
        what = "transfers in flight" if kind in ("send", "recv") else "ranks"
        ax.set_ylabel(f"{kind}\n(mean {what})", fontsize=8, rotation=0, ha="right", va="center")
        ax.yaxis.set_major_locator(ticker.MaxNLocator(3))
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(True, axis="x", alpha=0.3)
        for i, m in enumerate(mean):
            data["kind"].append(kind), data["bin_start_s"].append(edges[i])
            data["bin_end_s"].append(edges[i + 1]), data["mean_count"].append(float(m))
    for t in _step_ends(run_dir):
        for ax in axes[:, 0]:
            ax.axvline(t * scale, color="black", linewidth=0.6, linestyle=":")
    axes[-1, 0].set_xlim(0, end * scale * 1.01)
    axes[-1, 0].set_xlabel(f"simulated time [{unit}] (dotted: step ends)")
    axes[0, 0].set_title(f"Timeline of {ranks} ranks by phase: {run_name(run_dir)}\n(more than "
                         f"{TIMELINE_RANK_LANES} ranks: a lane per phase, the mean count over each 1/{bins} of the run)",
                         fontsize=10)
    return _save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# The figures, for plot.py and for the figure table of analysis/README.md

Figure = collections.namedtuple("Figure", "name source needs shows")

FIGURES = [
    Figure("breakdown", "sweep / run", "",
           "horizontal bars, one per point (repetitions averaged; labelled by the swept keys that vary) or per "
           "step of a run (per group of steps beyond 40): compute, the aggregation exposed after it, and the rest "
           "of the step (waiting for other ranks); the aggregation hidden behind the compute is hatched inside "
           "the compute bar, so a bar is never longer than the step"),
    Figure("versus", "sweep", "`--x KEY`, a numeric swept key",
           "mean step time vs the key (ranks on a log2 axis; sizes in SI bytes, bandwidths in Gb/s), a line per "
           "combination of the other swept keys, a panel per topology, 95 % intervals with repetitions; a key "
           "that was not swept is an error naming the swept ones"),
    Figure("busbw", "sweep / run", "collectives.csv",
           "busbw (wire bytes x bus factor / transfer time) vs the call's dense size, as nccl-tests plots it: a "
           "line per combination of the swept keys other than sizes, each point the mean over the calls of "
           "that size"),
    Figure("loss", "sweep / run", "a `loss` column (training workload)", "held-out loss vs simulated time"),
    Figure("bytes-loss", "sweep", "a `loss` column", "total bytes sent vs final loss, one dot per point"),
    Figure("time-to-target", "sweep", "`workload.target_loss`",
           "simulated time until the held-out loss first reached the target, per point (mean and 95 % interval "
           "over repetitions; how many runs reached it)"),
    Figure("timeline", "traced run", "trace.json",
           f"up to {TIMELINE_RANK_LANES} ranks: a lane per rank (step phases, sends, receives, reductions and "
           f"other host work in their own colours); more: a lane per phase counting the ranks (or transfers) "
           f"in it over time"),
    Figure("links", "traced run", "links.csv",
           "the 20 busiest links by utilisation, labelled by their ends and tier, with the bytes each carried"),
]


def figure_table_markdown():
    """The figure table of analysis/README.md."""
    rows = ["| figure | from | needs | shows |", "| --- | --- | --- | --- |"]
    for f in FIGURES:
        rows.append(f"| `{f.name}` | {f.source} | {f.needs or '-'} | {f.shows} |")
    return "\n".join(rows) + "\n"
