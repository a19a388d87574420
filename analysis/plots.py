"""The figures, each from a sweep (aggsim_data.Sweep) or a run folder. Every function returns the
PNG path it wrote, or None with a printed reason when the data cannot give that figure."""
import json
import os

import matplotlib
import matplotlib.patches
import pandas as pd

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib import ticker  # noqa: E402

from aggsim_data import Sweep, mean_and_ci95, number, read_run  # noqa: E402

COMPUTE, COMM, OTHER = "#4c72b0", "#dd8452", "#bbbbbb"


def _save(fig, out, data=None):
    """Writes the PNG and, beside it, the numbers it shows (same name, .csv) so they can be checked."""
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    if data is not None:
        pd.DataFrame(data).to_csv(os.path.splitext(out)[0] + ".csv", index=False)
    return out


def breakdown(source, out):
    """Mean step time split into compute, exposed aggregation (not hidden behind compute) and the
    rest of the step (waiting for other ranks), per sweep point or per step of one run; the part of
    the aggregation that overlapped the compute is hatched inside the compute bar. A bar is the
    step: the slowest rank's compute and exposed aggregation are clipped to it."""
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
        title = "Step time breakdown per point (mean over steps; slowest rank)"
    else:
        _, steps = read_run(source)
        labels = [f"step {s}" for s in steps["step"]]
        step, compute = list(steps["step_time_s"]), list(steps["compute_time_s"])
        comm, exposed = list(steps["comm_time_s"]), list(steps["exposed_comm_time_s"])
        title = f"Step time breakdown: {os.path.basename(os.path.normpath(source))}"
    bars = {"label": labels, "step_s": step, "compute_s": [], "exposed_comm_s": [], "overlap_s": [], "other_s": []}
    for st, c, m, e in zip(step, compute, comm, exposed):
        c_shown = min(c, st)
        e_shown = min(e, st - c_shown)
        bars["compute_s"].append(c_shown)
        bars["exposed_comm_s"].append(e_shown)
        bars["overlap_s"].append(min(max(m - e, 0.0), c_shown))
        bars["other_s"].append(st - c_shown - e_shown)
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(labels) + 2), 4.8))
    x = list(range(len(labels)))

    def ms(key):
        return [v * 1e3 for v in bars[key]]

    ax.bar(x, ms("compute_s"), color=COMPUTE, label="compute")
    ax.bar(x, ms("overlap_s"), bottom=[c - o for c, o in zip(ms("compute_s"), ms("overlap_s"))], color="none",
           edgecolor=COMM, hatch="///", linewidth=0, label="aggregation hidden behind compute")
    ax.bar(x, ms("exposed_comm_s"), bottom=ms("compute_s"), color=COMM, label="exposed aggregation")
    ax.bar(x, ms("other_s"), bottom=[c + e for c, e in zip(ms("compute_s"), ms("exposed_comm_s"))], color=OTHER,
           label="rest of the step")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=60 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center",
                       fontsize=7 if len(labels) > 12 else 9)
    ax.set_ylabel("time per step [ms]")
    ax.set_title(title)
    ax.legend(fontsize=8)
    return _save(fig, out, bars)


def versus(sweep, key, out, y="mean_step_time_s"):
    """Mean step time against one numeric swept key (ranks, bandwidth, size), a line per combination of
    the other swept keys, one panel per topology; with repetitions, the mean and its 95 % interval."""
    pts = sweep.points.copy()
    if pts.empty or key not in pts.columns or not sweep.numeric.get(key):
        print(f"versus {key}: no finished points; skipping")
        return None
    unit = sweep.axis_unit(key)
    # Bandwidths read best in Gb/s, as written in scenarios; other units stay SI base units.
    scale, unit_label = (8e-9, "Gb/s") if unit == "bytes/s" else (1, unit)
    pts["_x"] = [sweep.value(r, key) * scale for _, r in pts.iterrows()]
    pts["_line"] = [sweep.label(r, skip=(key, "platform.topology")) or "all" for _, r in pts.iterrows()]
    others = [k for k in sweep.keys if k not in (key, "platform.topology")]
    data = {"topology": [], "line": [], "x": [], "mean_ms": [], "ci95_ms": [], "runs": []}
    topologies = sorted(pts["topology"].unique())
    fig, axes = plt.subplots(1, len(topologies), figsize=(6.4 * len(topologies), 4.8), squeeze=False)
    for ax, topo in zip(axes[0], topologies):
        groups = list(pts[pts["topology"] == topo].groupby("_line", sort=False))
        # Lines in the natural order of the other keys' values (1MB before 10MB before 100MB).
        groups.sort(key=lambda lg: sweep.sort_key(lg[1].iloc[0], others))
        for line, g in groups:
            xs, means, cis = [], [], []
            for xv, at_x in sorted(g.groupby("_x"), key=lambda t: t[0]):
                m, ci = mean_and_ci95(at_x[y].astype(float) * 1e3)
                xs.append(xv), means.append(m), cis.append(ci)
                for col, v in zip(data, (topo, line, xv, m, ci, len(at_x))):
                    data[col].append(v)
            if any(c > 0 for c in cis):
                ax.errorbar(xs, means, yerr=cis, marker="o", capsize=3, label=line)
            else:
                ax.plot(xs, means, marker="o", label=line)
        ax.set_xscale("log", base=2 if key == "ranks" else 10)
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(key + (f" [{unit_label}]" if unit_label else ""))
        ax.set_ylabel("mean step time [ms]")
        ax.set_title(f"{topo}: step time vs {key}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, out, data)


def loss_vs_time(source, out):
    """Training loss against simulated time (needs a `loss` column in steps.csv)."""
    runs = source.steps.items() if isinstance(source, Sweep) else [(os.path.basename(source), read_run(source)[1])]
    labels = dict(zip(source.points["id"], source.points["label"])) if isinstance(source, Sweep) else {}
    runs = [(labels.get(i, i), s) for i, s in runs if "loss" in s.columns]
    if not runs:
        print("loss vs time: steps.csv has no loss column (no training workload); skipping")
        return None
    fig, ax = plt.subplots(figsize=(7, 4.8))
    for label, s in runs:
        evaluated = s.dropna(subset=["loss"])  # only steps with an evaluation carry a loss
        ax.plot(evaluated["end_time_s"], evaluated["loss"], marker=".", label=label)
    ax.set_xlabel("simulated time [s]")
    ax.set_ylabel("loss")
    ax.set_title("Loss vs simulated time")
    ax.legend(fontsize=7)
    return _save(fig, out)


def bytes_vs_loss(sweep, out):
    """Total bytes sent against final loss, one point per sweep point (needs a `loss` column)."""
    pts = sweep.points
    if pts.empty or pts["final_loss"].isna().all():
        print("bytes vs loss: steps.csv has no loss column (no training workload); skipping")
        return None
    pts = pts[~pts["final_loss"].isna()]
    fig, ax = plt.subplots(figsize=(7, 4.8))
    ax.scatter(pts["bytes_sent"].astype(float), pts["final_loss"].astype(float))
    for _, r in pts.iterrows():
        ax.annotate(r["label"], (float(r["bytes_sent"]), float(r["final_loss"])), fontsize=6)
    ax.set_xscale("log")
    ax.set_xlabel("bytes sent (all ranks, whole run)")
    ax.set_ylabel("final loss")
    ax.set_title("Communication volume vs final loss")
    return _save(fig, out)


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
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(data["label"]) + 1.8))
    y = list(range(len(data["label"])))[::-1]
    reached = [not pd.isna(m) for m in data["mean_s"]]
    ax.barh([yy for yy, r in zip(y, reached) if r], [m for m, r in zip(data["mean_s"], reached) if r],
            xerr=[c for c, r in zip(data["ci95_s"], reached) if r], color=COMPUTE, capsize=3)
    for yy, r in zip(y, reached):
        if not r:
            ax.text(0, yy, "  target not reached", va="center", fontsize=8, color="#c44e52")
    ax.set_yticks(y)
    ax.set_yticklabels([f"{lab} ({n}/{k})" for lab, n, k in zip(data["label"], data["reached"], data["runs"])],
                       fontsize=7)
    ax.set_xlabel("simulated time to target loss [s] (runs that reached it / runs)")
    ax.set_title(f"Time to target loss {pts['target_loss'].iloc[0]:g}" if "target_loss" in pts.columns
                 else "Time to target loss")
    return _save(fig, out, data)


def _traced_file(run_dir, name, figure):
    """A file that only traced runs have, or None after saying so."""
    path = os.path.join(run_dir, name)
    if os.path.isfile(path):
        return path
    print(f"{figure}: no {name} (run with output: {{trace: true}}); skipping")
    return None


def links(run_dir, out, top=20):
    """The busiest links of a traced run (links.csv): utilisation over the run, highest first."""
    path = _traced_file(run_dir, "links.csv", "links")
    if not path:
        return None
    df = pd.read_csv(path)
    df = df[df["bytes"] > 0].sort_values(["utilisation", "link"], ascending=[False, True]).head(top)
    if df.empty:
        print("links: no traffic; skipping")
        return None
    fig, ax = plt.subplots(figsize=(7, 0.3 * len(df) + 1.5))
    ax.barh(list(df["link"])[::-1], list(df["utilisation"] * 100)[::-1], color=COMM)
    ax.set_xlabel("utilisation over the run [% of bandwidth]")
    ax.set_title(f"Busiest links (top {len(df)})")
    ax.tick_params(axis="y", labelsize=7)
    return _save(fig, out)


def timeline(run_dir, out, max_ranks=32):
    """A Gantt chart of a traced run (trace.json): per rank, step phases and transfers."""
    path = _traced_file(run_dir, "trace.json", "timeline")
    if not path:
        return None
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["pid"] < max_ranks]
    if not events:
        print("timeline: empty trace; skipping")
        return None
    ranks = max(e["pid"] for e in events) + 1
    colors = {"compute": COMPUTE, "aggregate": "#cccccc", "send": COMM, "recv": "#55a868"}
    fig, ax = plt.subplots(figsize=(10, 0.35 * ranks + 1.5))
    # Row of a rank (y grows downwards): the step phases fill it, sends on top, receives below;
    # white edges separate back-to-back transfers.
    band = {"compute": (0.0, 0.9), "aggregate": (0.0, 0.9), "send": (0.1, 0.35), "recv": (0.5, 0.35)}
    rows = {}  # (rank, kind) -> [(start, duration)] in ms, one broken_barh call each
    for e in events:
        kind = e["name"] if e["name"] in band else "other"
        rows.setdefault((e["pid"], kind), []).append((e["ts"] / 1e3, e["dur"] / 1e3))
    for (pid, kind), spans in sorted(rows.items()):
        offset, height = band.get(kind, (0.0, 0.9))
        edge = kind in ("send", "recv")
        ax.broken_barh(spans, (pid - 0.45 + offset, height), facecolor=colors.get(kind, "#8172b3"),
                       edgecolor="white" if edge else "none", linewidth=0.4 if edge else 0)
    other = sorted({e["name"] for e in events} - set(band))
    handles = [matplotlib.patches.Patch(color=c, label=n) for n, c in colors.items()]
    if other:
        handles.append(matplotlib.patches.Patch(color="#8172b3", label=", ".join(other)))
    ax.legend(handles=handles, fontsize=7, loc="upper right")
    ax.set_yticks(range(ranks))
    ax.set_yticklabels([f"rank {r}" for r in range(ranks)], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time [ms]")
    ax.set_title("Timeline" + (f" (first {max_ranks} ranks)" if ranks >= max_ranks else ""))
    return _save(fig, out)
