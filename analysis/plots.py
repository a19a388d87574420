"""The figures, each from a sweep (aggsim_data.Sweep) or a run folder. Every function returns the
PNG path it wrote, or None with a printed reason when the data cannot give that figure; beside each
PNG it writes a CSV of the same name holding the numbers the figure shows, with a `label` column
holding exactly the text that names each point on the figure.

Points are named by the swept keys that vary among the points a figure draws (aggsim_data.Labels),
what they share is said in the title, and no two texts overlap (layout.py).

FIGURES lists them (name, source, what it shows): plot.py's choices and the figure table of
analysis/README.md are generated from it. The traced run's figures are in timelines.py."""
import collections
import math
import os

import matplotlib.lines
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib import ticker

import layout
from aggsim_data import Sweep, hidden_comm, mean_and_ci95, read_collectives, read_run, si, time_unit
from drawing import (COMM, COMPUTE, GATHER, OTHER, PlotError, bar_font, legend_below, legend_beside,  # noqa: F401
                     line_styles, readable_log_axis, run_name, save, si_formatter, stacked_sizes)
from timelines import TIMELINE_NODE_LANES, TIMELINE_RANK_LANES, links, phases, timeline  # noqa: F401


# ---------------------------------------------------------------------------------------------------
# Step time breakdown

Bars = collections.namedtuple("Bars", "labels step compute exposed hidden runs title gather",
                              defaults=(None,))


def _breakdown_of_sweep(sweep):
    pts = sweep.points
    names = sweep.labels(pts)
    groups = list(pts.groupby("label", sort=False))  # repetitions of a point: one bar, their mean

    def mean(col):
        return [f[col].astype(float).mean() for _, f in groups]

    n = len(groups)
    title = names.title(f"Step time breakdown of {sweep.name}, {n} point{'s' if n != 1 else ''} (mean over steps)")
    return Bars([g for g, _ in groups], mean("mean_step_s"), mean("mean_compute_s"), mean("mean_exposed_comm_s"),
                mean("mean_hidden_comm_s"), [len(f) for _, f in groups], title)


def _breakdown_of_run(run_dir, max_bars):
    _, steps = read_run(run_dir)
    steps = steps.assign(hidden=hidden_comm(steps))
    size = max(1, math.ceil(len(steps) / max_bars))
    # Sharded data parallelism: its exposed parameter gathers lie inside the compute window.
    gathers = "exposed_gather_time_s" in steps.columns and steps["exposed_gather_time_s"].notna().any()
    bars = Bars([], [], [], [], [], [], f"Step time breakdown: {run_name(run_dir)}" +
                (f" (means over {size} steps)" if size > 1 else ""), [] if gathers else None)
    for first in range(0, len(steps), size):
        part = steps.iloc[first:first + size]
        s0, s1 = int(part["step"].iloc[0]), int(part["step"].iloc[-1])
        bars.labels.append(f"step {s0}" if s0 == s1 else f"steps {s0}-{s1}")
        for values, col in ((bars.step, "step_time_s"), (bars.compute, "compute_time_s"),
                            (bars.exposed, "exposed_comm_time_s"), (bars.hidden, "hidden")):
            values.append(part[col].mean())
        if gathers:
            bars.gather.append(part["exposed_gather_time_s"].astype(float).mean())
        bars.runs.append(len(part))
    return bars


def _stacked(bars):
    """The drawn parts of each bar: the compute and the exposed aggregation are clipped to the step,
    the rest of the step is what is left; the hidden aggregation lies inside the compute."""
    parts = {"label": bars.labels, "step_s": bars.step, "compute_s": [], "exposed_comm_s": [], "overlap_s": [],
             "other_s": [], "calls_s": [], "runs": bars.runs, "gather_s": []}
    gathers = bars.gather if bars.gather is not None else [0.0] * len(bars.step)
    for st, c, e, h, g in zip(bars.step, bars.compute, bars.exposed, bars.hidden, gathers):
        g_shown = min(g, c, st)  # exposed gathers lie inside the compute window: drawn apart from it
        c_shown = min(c, st) - g_shown
        e_shown = min(e, st - c_shown - g_shown)
        parts["gather_s"].append(g_shown)
        c_shown += g_shown  # the compute bar's right end stays where the window ends
        parts["compute_s"].append(c_shown)
        parts["exposed_comm_s"].append(e_shown)
        parts["overlap_s"].append(min(h, c_shown) if not math.isnan(h) else float("nan"))
        parts["other_s"].append(st - c_shown - e_shown)
        parts["calls_s"].append(e + h + g)
    return parts


def breakdown(source, out, max_bars=40):
    """Mean step time split into compute, exposed aggregation (not hidden behind compute) and the
    rest of the step (waiting for other ranks), per sweep point or per step of one run (runs with
    more steps than max_bars: per group of consecutive steps). Hatched inside the compute bar: the
    aggregation calls' own time that ran while the rank computed (steps.csv hidden_comm_time_s), so
    exposed + hidden is the time the critical rank spent in calls. A bar is the step."""
    if isinstance(source, Sweep) and source.points.empty:
        print("breakdown: no finished points; skipping")
        return None
    bars = _breakdown_of_sweep(source) if isinstance(source, Sweep) else _breakdown_of_run(source, max_bars)
    parts = _stacked(bars)
    if any(math.isnan(h) for h in parts["overlap_s"]):
        print("breakdown: steps.csv has no hidden_comm_time_s (written by an older aggsim): the aggregation "
              "hidden behind compute is not shown")
    step = bars.step
    scale, unit = time_unit(max(step) if step else 0)
    n = len(bars.labels)
    fig, ax = plt.subplots(figsize=(10, 0.3 * n + 2.2))
    y = list(range(n))[::-1]  # first point on top

    def scaled(key):
        return [0.0 if math.isnan(v) else v * scale for v in parts[key]]

    # Only the parts some bar has get a legend entry.
    if any(parts["compute_s"]):
        ax.barh(y, scaled("compute_s"), color=COMPUTE, label="compute", height=0.7)
    if any(scaled("overlap_s")):
        ax.barh(y, scaled("overlap_s"),
                left=[c - g - o for c, g, o in zip(scaled("compute_s"), scaled("gather_s"), scaled("overlap_s"))],
                color="none", edgecolor=COMM, hatch="///", linewidth=0, height=0.7,
                label="aggregation calls that ran during the compute (hidden)")
    if any(scaled("gather_s")):  # drawn over the end of the compute window, where sharded runs wait for them
        ax.barh(y, scaled("gather_s"), left=[c - g for c, g in zip(scaled("compute_s"), scaled("gather_s"))],
                color=GATHER, label="exposed parameter gathers (forward and backward passes)", height=0.7)
    ax.barh(y, scaled("exposed_comm_s"), left=scaled("compute_s"), color=COMM,
            label="exposed reduce-scatters (and gathers after the step)" if any(scaled("gather_s"))
            else "exposed aggregation", height=0.7)
    if any(v > 1e-12 * max(step) for v in parts["other_s"]):
        ax.barh(y, scaled("other_s"), left=[c + e for c, e in zip(scaled("compute_s"), scaled("exposed_comm_s"))],
                color=OTHER, label="rest of the step (waiting for other ranks)", height=0.7)
    for yy, st in zip(y, step):  # each bar's length, written at its end
        ax.text(st * scale, yy, f" {st * scale:.3g}", va="center", fontsize=bar_font(n))
    positive = [v for v in step if v > 0]
    one_part = not any(parts["compute_s"]) and not any(v > 1e-12 * max(step) for v in parts["other_s"])
    if one_part and positive and max(positive) / min(positive) > 100:
        # Steps spanning decades, all aggregation: a log axis keeps the short bars visible.
        ax.set_xscale("log")
        ax.set_xlim(min(positive) * scale / 2, max(positive) * scale * 3)
        readable_log_axis(ax.xaxis, [v * scale for v in positive])
    else:
        ax.set_xlim(0, max(step) * scale * 1.1 if positive else 1)
    layout.name_ticks(ax.yaxis, y, bars.labels, bar_font(n))
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlabel(f"time per step [{unit}]")
    ax.set_title(bars.title, fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    legend_below(fig, ax, ncol=2)
    layout.fit_texts_in_axes(fig, ax)
    return save(fig, out, parts)


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
        return 1.0, f"{key} [bytes]", si_formatter("B"), 10
    if unit == "s":
        return 1.0, f"{key}", ticker.FuncFormatter(lambda v, _: si(v, "s", 3) if v >= 1 else
                                                   (f"{v * 1e3:g} ms" if v >= 1e-3 else f"{v * 1e6:g} us")), 10
    if unit == "flop/s":
        return 1.0, f"{key}", si_formatter("flop/s"), 10
    return 1.0, key, None, 2 if key == "ranks" else 10


def _panel_key(sweep, frame, lines_skip):
    """With more than 8 lines, the swept key whose values get a panel each (small multiples): a
    bandwidth if one varies, else the first varying key; None when the lines fit one panel."""
    others = [k for k in sweep.varying_keys(frame) if k not in lines_skip]
    if len(others) < 2 or frame.empty:
        return None
    names = sweep.labels(frame, skip=lines_skip)
    if len({names.of(r) for _, r in frame.iterrows()}) <= 8:
        return None
    bandwidths = [k for k in others if sweep.axis_unit(k) == "bytes/s"]
    return (bandwidths or others)[0]


def _panel_grid(n):
    cols = 2 if n in (2, 4) else min(n, 3)
    rows = math.ceil(n / cols)
    return rows, cols


def _panel_name(sweep, row, panel_key, with_topology=True):
    """A panel's title: the topology and the panel key's value."""
    parts = [row["topology"]] if with_topology else []
    if panel_key:
        parts.append(f"{sweep.short_names[panel_key]}={row[panel_key]}")
    return ", ".join(parts)


def _legend_of_lines(axes, styles, lines, panels):
    """Every line once, in the order of the styles (the natural order of its values): beside the
    first row's last panel with many lines or panels, else inside the single panel."""
    cols = axes.shape[1]
    last = axes[0][min(cols, panels) - 1]
    seen = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            seen.setdefault(label, h)
    labels = [label for label in styles if label in seen]
    if lines > 6 or panels > 1:
        legend_beside(last, [seen[label] for label in labels], labels)
    elif lines > 1:
        legend_below(last.figure, last, [seen[label] for label in labels], labels, ncol=1)


def _versus_points(sweep, key, scale):
    """The points with their x value, line and panel, and how lines are named."""
    pts = sweep.points.copy()
    skip = (key, "platform.topology")
    panel_key = _panel_key(sweep, pts, skip)
    line_skip = skip + ((panel_key,) if panel_key else ())
    names = sweep.labels(pts, skip=line_skip)
    pts["_x"] = [sweep.value(r, key) * scale for _, r in pts.iterrows()]
    pts["_line"] = [names.of(r) if names.varying else "" for _, r in pts.iterrows()]
    pts["_panel"] = [_panel_name(sweep, r, panel_key) for _, r in pts.iterrows()]
    return pts, panel_key, names, [k for k in sweep.keys if k not in line_skip]


def _draw_lines(ax, groups, styles, y, tscale, data, panel):
    """One panel's lines (mean per x, 95 % interval with repetitions), their numbers into `data`."""
    xs_all = []
    order = list(styles)
    for line, g in groups:
        colour, style, marker = styles[line]
        size, width = stacked_sizes(order.index(line), len(order))
        xs, means, cis = [], [], []
        for xv, at_x in sorted(g.groupby("_x"), key=lambda t: t[0]):
            m, ci = mean_and_ci95(at_x[y].astype(float))
            xs.append(xv), means.append(m * tscale), cis.append(ci * tscale)
            for col, v in zip(data, (line, g["topology"].iloc[0], panel, line, xv, m * 1e3, ci * 1e3, len(at_x))):
                data[col].append(v)
        xs_all += xs
        kwargs = dict(marker=marker, linestyle=style, color=colour, label=line or None, markersize=size,
                      linewidth=width)
        if any(c > 0 for c in cis):
            ax.errorbar(xs, means, yerr=cis, capsize=3, **kwargs)
        else:
            ax.plot(xs, means, **kwargs)
    return xs_all


def versus(sweep, key, out, y="mean_step_time_s"):
    """Mean step time against one numeric swept key (ranks, bandwidth, size), a line per combination of
    the other swept keys, one panel per topology (and, beyond 8 lines, per value of one more key);
    with repetitions, the mean and its 95 % interval."""
    check_axis_key(sweep, key)
    if sweep.points.empty:
        print(f"versus {key}: no finished points; skipping")
        return None
    scale, xlabel, xfmt, base = _x_axis_format(sweep, key)
    pts, panel_key, names, others = _versus_points(sweep, key, scale)
    tscale, tunit = time_unit(pts[y].astype(float).max())
    data = {"label": [], "topology": [], "panel": [], "line": [], "x": [], "mean_ms": [], "ci95_ms": [], "runs": []}
    panels = sorted(pts["_panel"].unique(),
                    key=lambda p: sweep.sort_key(pts[pts["_panel"] == p].iloc[0], [panel_key] if panel_key else []))
    lines = pts["_line"].nunique()
    rows, cols = _panel_grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols + (2.8 if lines > 6 else 0), 4.4 * rows),
                             squeeze=False, sharey=True)
    order = sorted(pts["_line"].unique(), key=lambda l: sweep.sort_key(pts[pts["_line"] == l].iloc[0], others))
    styles = dict(zip(order, line_styles(lines)))
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        groups = list(pts[pts["_panel"] == panel].groupby("_line", sort=False))
        # Lines in the natural order of the other keys' values (1MB before 10MB before 100MB).
        groups.sort(key=lambda lg: sweep.sort_key(lg[1].iloc[0], others))
        xs_all = _draw_lines(ax, groups, styles, y, tscale, data, panel)
        ax.set_xscale("log", base=base)
        ax.set_yscale("log")
        readable_log_axis(ax.xaxis, xs_all, base=base)
        if len(set(xs_all)) <= 10:  # few swept values: a tick at each, and only there
            ax.xaxis.set_major_locator(ticker.FixedLocator(sorted(set(xs_all))))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        if xfmt is not None:
            ax.xaxis.set_major_formatter(xfmt)
        readable_log_axis(ax.yaxis, pts[y].astype(float) * tscale)
        ax.set_xlabel(xlabel)
        if i % cols == 0:
            ax.set_ylabel(f"mean step time [{tunit}]")
        ax.set_title(names.title(f"{panel}: step time vs {key}") if len(panels) == 1 else panel, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if len(panels) > 1:
        fig.suptitle(names.title(f"Mean step time vs {key}, a panel per topology" +
                                 (f" and value of {panel_key}" if panel_key else "")), fontsize=11)
    _legend_of_lines(axes, styles, lines, len(panels))
    if lines == 1:  # no legend: the one line is named in the title, by what all its points share
        data["label"] = [names.common_text() or "all runs"] * len(data["label"])
    fig.tight_layout()
    return save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Bus bandwidth against message size (nccl-tests' figure)


def _size_keys(sweep):
    return [k for k in sweep.keys if sweep.axis_unit(k) == "bytes"]


def _sweep_calls(sweep):
    """(calls with their line and panel, panel key, how lines are named, title) of a sweep: with one
    call size a bar per point (named by every varying key but sizes); with several, a line per
    combination of the keys other than sizes, beyond 8 lines a panel per bandwidth."""
    calls = sweep.collectives()
    skip = tuple(_size_keys(sweep))
    several = not calls.empty and calls["dense_bytes"].nunique() > 1
    panel_key = _panel_key(sweep, sweep.points, skip) if several else None
    names = sweep.labels(sweep.points, skip=skip + ((panel_key,) if panel_key else ()))
    if not calls.empty:
        calls["line"] = [names.of(r) for _, r in calls.iterrows()]
        calls["panel"] = [_panel_name(sweep, r, panel_key, with_topology=False) for _, r in calls.iterrows()]
    return calls, panel_key, names, names.title(f"Bus bandwidth vs call size: {sweep.name}")


def _busbw_points(calls):
    data = {"label": [], "panel": [], "line": [], "dense_bytes": [], "busbw_GBps": [], "algbw_GBps": [], "calls": []}
    for panel in dict.fromkeys(calls["panel"]):
        for line in dict.fromkeys(calls["line"]):
            sel = calls[(calls["panel"] == panel) & (calls["line"] == line)]
            for size, g in sel.groupby("dense_bytes", sort=True):
                for col, v in zip(data, (line, panel, line, int(size), g["busbw_GBps"].astype(float).mean(),
                                         g["algbw_GBps"].astype(float).mean(), len(g))):
                    data[col].append(v)
    return data


def busbw(source, out):
    """busbw (collectives.csv: wire bytes x bus factor / transfer time) against the calls' dense size,
    as nccl-tests plots it: for a sweep a line per combination of the swept keys other than sizes
    (beyond 8 lines a panel per bandwidth), for a run one point per call size; each point the mean over
    the calls of that size. With one call size, a bar per point."""
    panel_key = None
    if isinstance(source, Sweep):
        calls, panel_key, _, title = _sweep_calls(source)
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
    data = _busbw_points(calls.dropna(subset=["busbw_GBps"]))
    if len(set(data["dense_bytes"])) == 1:  # one size: a bar per line says more than a column of dots
        return _busbw_bars(data, title, out)
    return _busbw_lines(data, title, panel_key, out)


def _busbw_lines(data, title, panel_key, out):
    panels = list(dict.fromkeys(data["panel"]))
    lines = list(dict.fromkeys(data["line"]))
    rows, cols = _panel_grid(len(panels))
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols + (2.8 if len(lines) > 6 else 0), 4.4 * rows),
                             squeeze=False)
    styles = dict(zip(lines, line_styles(len(lines))))
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        sizes = []
        for i, line in enumerate(lines):
            pts = [(x, y) for p, l, x, y in zip(data["panel"], data["line"], data["dense_bytes"], data["busbw_GBps"])
                   if p == panel and l == line]
            if pts:
                colour, style, marker = styles[line]
                size, width = stacked_sizes(i, len(lines))
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker=marker, linestyle=style, color=colour,
                        label=line, markersize=size, linewidth=width)
                sizes += [x for x, _ in pts]
        ax.set_xscale("log")
        readable_log_axis(ax.xaxis, sizes)
        if len(set(sizes)) <= 10:
            ax.xaxis.set_major_locator(ticker.FixedLocator(sorted(set(sizes))))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
        ax.xaxis.set_major_formatter(si_formatter("B"))
        ax.set_ylim(bottom=0)
        ax.set_xlabel("call size (dense gradient bytes)")
        if i % cols == 0:
            ax.set_ylabel("busbw [GB/s]\n(wire bytes x bus factor / time)")
        ax.set_title(panel if len(panels) > 1 else title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    if len(panels) > 1:
        fig.suptitle(f"{title}, a panel per value of {panel_key}", fontsize=11)
    last = axes[0][min(cols, len(panels)) - 1]
    if len(lines) > 6 or len(panels) > 1:
        legend_beside(last, [matplotlib.lines.Line2D([], [], color=c, linestyle=st, marker=m)
                             for c, st, m in styles.values()], list(styles))
    elif len(lines) > 1:
        legend_below(fig, last, ncol=1)
    fig.tight_layout()
    return save(fig, out, data)


def _busbw_bars(data, title, out):
    n = len(data["line"])
    fig, ax = plt.subplots(figsize=(10, 0.3 * n + 2))
    y = list(range(n))[::-1]
    ax.barh(y, data["busbw_GBps"], color=COMM, height=0.7)
    for yy, v in zip(y, data["busbw_GBps"]):
        ax.text(v, yy, f" {v:.3g}", va="center", fontsize=bar_font(n))
    layout.name_ticks(ax.yaxis, y, data["label"], bar_font(n))
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, max(data["busbw_GBps"]) * 1.15)
    ax.set_xlabel("busbw [GB/s] (wire bytes x bus factor / transfer time)")
    ax.set_title(f"{title}\nevery call {si(data['dense_bytes'][0], 'B')}", fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    layout.fit_texts_in_axes(fig, ax)
    return save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Training


# At most this many lines share a panel of the loss figure; more runs get a panel per value of the
# keys that do not fit in the lines (small multiples with one legend).
LOSS_LINES = 10


def _split_keys(sweep, frame, max_lines=LOSS_LINES):
    """(keys naming a panel's lines, keys naming the panels): the varying keys with the fewest values
    name the lines while their combinations number at most max_lines (keys zipped together count
    once), the others name the panels."""
    varying = sweep.varying_keys(frame)
    count = {k: frame[k].astype(str).nunique() for k in varying}
    lines = []
    for k in sorted(varying, key=lambda k: (count[k], varying.index(k))):
        if len(frame[lines + [k]].astype(str).drop_duplicates()) <= max_lines:
            lines.append(k)
    return [k for k in varying if k in lines], [k for k in varying if k not in lines]


def _loss_runs(sweep):
    """[(panel, line, steps)] of the runs with a loss, and the panel keys."""
    pts = sweep.points[[("loss" in sweep.steps[i].columns) for i in sweep.points["id"]]]
    line_keys, panel_keys = _split_keys(sweep, pts)
    panel_names, line_names = sweep.labels(pts, skip=line_keys), sweep.labels(pts, skip=panel_keys)
    repeated = "repeat" in pts.columns and pts["repeat"].astype(str).nunique() > 1
    runs = []
    for _, r in pts.iterrows():
        line = line_names.of(r) if line_names.varying else (line_names.common_text() or "all runs")
        line += f", repeat {r['repeat']}" if repeated else ""
        runs.append((panel_names.of(r) if panel_keys else "", line, sweep.steps[r["id"]]))
    return runs, panel_keys


def loss_vs_time(source, out):
    """Training loss against simulated time (needs a `loss` column in steps.csv): a line per run; past
    LOSS_LINES runs, a panel per value of the keys the lines cannot name, one legend for all."""
    if isinstance(source, Sweep):
        runs, panel_keys = _loss_runs(source) if not source.points.empty else ([], [])
        title = source.labels(source.points).title(f"Loss vs simulated time: {source.name}")
    else:
        steps = read_run(source)[1]
        runs, panel_keys = ([("", run_name(source), steps)] if "loss" in steps.columns else []), []
        title = "Loss vs simulated time"
    if not runs:
        print("loss vs time: steps.csv has no loss column (no training workload); skipping")
        return None
    panels = list(dict.fromkeys(p for p, _, _ in runs))
    lines = list(dict.fromkeys(line for _, line, _ in runs))
    cols = min(len(panels), 5)
    rows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(8, 4.8) if len(panels) == 1 else (3.3 * cols, 2.5 * rows + 0.6),
                             squeeze=False, sharey=True)
    styles = dict(zip(lines, line_styles(len(lines))))
    data = {"label": [], "panel": [], "line": [], "end_time_s": [], "loss": []}
    for i, panel in enumerate(panels):
        ax = axes[i // cols][i % cols]
        for p, line, steps in runs:
            if p != panel:
                continue
            evaluated = steps.dropna(subset=["loss"])  # only steps with an evaluation carry a loss
            colour, style, marker = styles[line]
            ax.plot(evaluated["end_time_s"], evaluated["loss"], marker=".", color=colour, linestyle=style, label=line)
            for t, v in zip(evaluated["end_time_s"], evaluated["loss"]):
                for col, value in zip(data, (line, panel, line, t, v)):
                    data[col].append(value)
        ax.set_xlabel("simulated time [s]", fontsize=8 if len(panels) > 1 else 10)
        ax.tick_params(labelsize=layout.MIN_FONT if len(panels) > 1 else 10)
        ax.xaxis.set_major_locator(ticker.MaxNLocator(4))
        if i % cols == 0:
            ax.set_ylabel("held-out loss")
        if panel:
            ax.set_title(panel, fontsize=8)
        ax.grid(True, alpha=0.3)
    for j in range(len(panels), rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    handles = [matplotlib.lines.Line2D([], [], color=c, linestyle=st, marker=".") for c, st, _ in styles.values()]
    if len(panels) > 1:
        fig.suptitle(f"{title}, a panel per value of {', '.join(panel_keys)}", fontsize=11)
        legend_beside(axes[0][cols - 1], handles, lines)
        fig.tight_layout()
    elif len(lines) > 6:
        axes[0][0].set_title(title, fontsize=11)
        legend_beside(axes[0][0], handles, lines)
    else:
        axes[0][0].set_title(title, fontsize=11)
        legend_below(fig, axes[0][0], handles, lines, ncol=1)
    return save(fig, out, data)


# Up to this many points bytes-loss is a scatter with each dot named beside it; beyond, names would
# crowd the dots, and a row per point with its bytes and its loss side by side reads better.
SCATTER_POINTS = 12


def bytes_vs_loss(sweep, out):
    """Total bytes sent against final loss, one point per sweep point (repetitions averaged): up to
    SCATTER_POINTS a scatter, each dot named beside it where there is room (else numbered, with a key);
    beyond, a row per point with its bytes and its final loss in two panels (needs a `loss` column)."""
    pts = sweep.points
    if pts.empty or pts["final_loss"].isna().all():
        print("bytes vs loss: steps.csv has no loss column (no training workload); skipping")
        return None
    names = sweep.labels(pts)
    pts = pts[~pts["final_loss"].isna()]
    groups = list(pts.groupby("label", sort=False))
    data = {"label": [g for g, _ in groups], "bytes_sent": [f["bytes_sent"].astype(float).mean() for _, f in groups],
            "final_loss": [f["final_loss"].astype(float).mean() for _, f in groups], "runs": [len(f) for _, f in groups]}
    title = names.title(f"Communication volume vs final loss: {sweep.name}")
    if len(groups) > SCATTER_POINTS:
        return _bytes_loss_rows(data, title, out)
    fig, ax = plt.subplots(figsize=(9, 5.6))
    ax.scatter(data["bytes_sent"], data["final_loss"], s=18, zorder=3)
    ax.set_xscale("log")
    readable_log_axis(ax.xaxis, data["bytes_sent"])
    ax.xaxis.set_major_formatter(si_formatter("B"))
    _widen(ax, data["bytes_sent"], data["final_loss"])
    ax.set_xlabel("bytes sent (all ranks, whole run)")
    ax.set_ylabel("final loss")
    ax.set_title(title, fontsize=11)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    key = layout.label_dots(fig, ax, data["bytes_sent"], data["final_loss"], data["label"])
    if key:
        ax.text(1.02, 1.0, "numbered dots:\n" + "\n".join(key), transform=ax.transAxes, va="top", ha="left",
                fontsize=8)
    return save(fig, out, data)


def _bytes_loss_rows(data, title, out):
    """A row per point: its bytes sent (log axis) and its final loss, side by side."""
    n = len(data["label"])
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 0.3 * n + 2.2), sharey=True)
    y = list(range(n))[::-1]
    left.scatter(data["bytes_sent"], y, s=16, color=COMM, zorder=3)
    right.scatter(data["final_loss"], y, s=16, color=COMPUTE, zorder=3)
    left.set_xscale("log")
    readable_log_axis(left.xaxis, data["bytes_sent"])
    left.xaxis.set_major_formatter(si_formatter("B"))
    layout.name_ticks(left.yaxis, y, data["label"], bar_font(n))
    left.set_ylim(-0.6, n - 0.4)
    left.set_xlabel("bytes sent (all ranks, whole run)")
    right.set_xlabel("final loss")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    height = fig.get_size_inches()[1]
    fig.subplots_adjust(wspace=0.08, top=1 - 0.55 / height)  # room for the title above the first row
    fig.suptitle(title, fontsize=11, y=1 - 0.12 / height, va="top")
    return save(fig, out, data)


def _widen(ax, xs, ys):
    """Room around the dots for their labels: a quarter of the range on each side (log x)."""
    lo, hi = min(xs), max(xs)
    span = math.log10(hi / lo) if hi > lo else 1.0
    ax.set_xlim(lo / 10 ** (0.3 * span + 0.15), hi * 10 ** (0.3 * span + 0.15))
    # Losses a millionth apart are one loss (float rounding between schedules): at least 1 % of span.
    lo, hi = min(ys), max(ys)
    middle, span = (lo + hi) / 2, max(hi - lo, abs(hi) * 0.01, 1e-6)
    ax.set_ylim(middle - 0.75 * span, middle + 0.75 * span)
    ax.yaxis.get_major_formatter().set_useOffset(False)


def time_to_target(sweep, out):
    """Simulated time until the held-out loss first reached the scenario's target_loss, per point
    (mean and 95 % interval over repetitions); points that never reached it are listed as such."""
    pts = sweep.points
    if pts.empty or "time_to_target_s" not in pts.columns:
        print("time to target: no target_loss in the scenarios (workload.target_loss); skipping")
        return None
    names = sweep.labels(pts)
    data = {"label": [], "mean_s": [], "ci95_s": [], "reached": [], "runs": []}
    for label, g in pts.groupby("label", sort=False):
        times = [float(t) for t in g["time_to_target_s"] if t is not None and not pd.isna(t)]
        m, ci = mean_and_ci95(times) if times else (float("nan"), float("nan"))
        for col, v in zip(data, (label, m, ci, len(times), len(g))):
            data[col].append(v)
    n = len(data["label"])
    fig, ax = plt.subplots(figsize=(9, 0.3 * n + 2))
    y = list(range(n))[::-1]
    reached = [not pd.isna(m) for m in data["mean_s"]]
    top = max([m + c for m, c, r in zip(data["mean_s"], data["ci95_s"], reached) if r] + [0.0])
    scale, unit = time_unit(top)
    ci = [c * scale for c, r in zip(data["ci95_s"], reached) if r]
    ax.barh([yy for yy, r in zip(y, reached) if r], [m * scale for m, r in zip(data["mean_s"], reached) if r],
            xerr=ci if any(c > 0 for c in ci) else None, color=COMPUTE, capsize=3, height=0.7)
    for yy, r, m, c, k, runs in zip(y, reached, data["mean_s"], data["ci95_s"], data["reached"], data["runs"]):
        what = f" {k}/{runs} reached" if r else "  target not reached"
        ax.text((m + c) * scale if r else 0, yy, what, va="center", fontsize=bar_font(n),
                color="black" if r else "#c44e52")
    layout.name_ticks(ax.yaxis, y, data["label"], bar_font(n))
    ax.set_ylim(-0.6, n - 0.4)
    ax.set_xlim(0, top * scale * 1.15 if top > 0 else 1)
    ax.set_xlabel(f"simulated time to target loss [{unit}] (runs that reached it / runs)")
    target = f" {float(pts['target_loss'].iloc[0]):g}" if "target_loss" in pts.columns else ""
    ax.set_title(names.title(f"Time to target loss{target}: {sweep.name}"), fontsize=11)
    layout.fit_texts_in_axes(fig, ax)
    return save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# The figures, for plot.py and for the figure table of analysis/README.md

Figure = collections.namedtuple("Figure", "name source needs shows")

FIGURES = [
    Figure("breakdown", "sweep / run", "",
           "horizontal bars, one per point (repetitions averaged) or per step of a run (per group of steps "
           "beyond 40): compute, the aggregation exposed after it, and the rest of the step (waiting for other "
           "ranks); hatched inside the compute bar, the aggregation calls' own time that ran while the rank "
           "computed (`hidden_comm_time_s`), so a bar is never longer than the step"),
    Figure("versus", "sweep", "`--x KEY`, a numeric swept key",
           "mean step time vs the key (ranks on a log2 axis; sizes in SI bytes, bandwidths in Gb/s), a line per "
           "combination of the other swept keys, a panel per topology, 95 % intervals with repetitions; a key "
           "that was not swept is an error naming the swept ones"),
    Figure("busbw", "sweep / run", "collectives.csv",
           "busbw (wire bytes x bus factor / transfer time) vs the call's dense size, as nccl-tests plots it: a "
           "line per combination of the swept keys other than sizes, each point the mean over the calls of "
           "that size; with one call size, a bar per point"),
    Figure("loss", "sweep / run", "a `loss` column (training workload)", "held-out loss vs simulated time"),
    Figure("bytes-loss", "sweep", "a `loss` column",
           "total bytes sent vs final loss, one dot per point, named beside it (or numbered, with a key, where "
           "names would collide)"),
    Figure("time-to-target", "sweep", "`workload.target_loss`",
           "simulated time until the held-out loss first reached the target, per point (mean and 95 % interval "
           "over repetitions; how many runs reached it)"),
    Figure("timeline", "traced run", "trace.json",
           f"up to {TIMELINE_RANK_LANES} ranks: a lane per rank (step phases, sends, receives, reductions and "
           f"other host work in their own colours); more: a lane per node (per group of nodes beyond "
           f"{TIMELINE_NODE_LANES}) shaded by the share of its ranks busy, the busiest hosts and most loaded "
           f"links named beside it"),
    Figure("phases", "traced run", "trace.json",
           "a lane per phase (compute, sends, receives, reductions, ...) counting the ranks (or transfers) in it "
           "over time"),
    Figure("links", "traced run", "links.csv",
           "the 20 busiest links by utilisation, labelled by their ends and tier, with the bytes each carried"),
]


def figure_table_markdown():
    """The figure table of analysis/README.md."""
    rows = ["| figure | from | needs | shows |", "| --- | --- | --- | --- |"]
    for f in FIGURES:
        rows.append(f"| `{f.name}` | {f.source} | {f.needs or '-'} | {f.shows} |")
    return "\n".join(rows) + "\n"
