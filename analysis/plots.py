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

from aggsim_data import Sweep, number, read_run  # noqa: E402

COMPUTE, COMM = "#4c72b0", "#dd8452"


def _save(fig, out):
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def breakdown(source, out):
    """Mean step time split into compute and aggregation, per sweep point (or per step of one run)."""
    if isinstance(source, Sweep):
        pts = source.points.sort_values(["algorithm", "compression", "label"], kind="stable")
        if pts.empty:
            print("breakdown: no finished points; skipping")
            return None
        labels, compute, comm = list(pts["label"]), list(pts["mean_compute_s"]), list(pts["mean_comm_s"])
        title = "Step time breakdown per point (mean over steps; slowest rank)"
    else:
        _, steps = read_run(source)
        labels = [f"step {s}" for s in steps["step"]]
        compute, comm = list(steps["compute_time_s"]), list(steps["comm_time_s"])
        title = f"Step time breakdown: {os.path.basename(os.path.normpath(source))}"
    fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(labels) + 2), 4.8))
    x = range(len(labels))
    ax.bar(x, [c * 1e3 for c in compute], color=COMPUTE, label="compute")
    ax.bar(x, [c * 1e3 for c in comm], bottom=[c * 1e3 for c in compute], color=COMM, label="aggregation")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=60 if len(labels) > 4 else 0, ha="right" if len(labels) > 4 else "center",
                       fontsize=7 if len(labels) > 12 else 9)
    ax.set_ylabel("time per step [ms]")
    ax.set_title(title)
    ax.legend()
    return _save(fig, out)


def versus(sweep, key, out, y="mean_step_time_s"):
    """Mean step time against one numeric swept key (ranks, bandwidth, size), a line per combination of
    the other swept keys, one panel per topology."""
    pts = sweep.points.copy()
    if pts.empty or key not in pts.columns:
        print(f"versus {key}: no finished points; skipping")
        return None
    # Bandwidths read best in Gb/s, as written in scenarios; other units stay SI base units.
    gbps = key.endswith("bandwidth")
    pts["_x"] = [number(v) * (8e-9 if gbps else 1) for v in pts[key]]
    pts["_line"] = [sweep.label(r, skip=(key, "platform.topology")) or "all" for _, r in pts.iterrows()]
    topologies = sorted(pts["topology"].unique())
    fig, axes = plt.subplots(1, len(topologies), figsize=(6.4 * len(topologies), 4.8), squeeze=False)
    for ax, topo in zip(axes[0], topologies):
        groups = list(pts[pts["topology"] == topo].groupby("_line", sort=False))
        others = [k for k in sweep.keys if k not in (key, "platform.topology")]
        # Lines in the natural order of the other keys' values (1MB before 10MB before 100MB).
        groups.sort(key=lambda lg: [(number(lg[1].iloc[0][k]) is None, number(lg[1].iloc[0][k]) or 0,
                                     str(lg[1].iloc[0][k])) for k in others])
        for line, g in groups:
            g = g.sort_values("_x")
            ax.plot(g["_x"], g[y].astype(float) * 1e3, marker="o", label=line)
        ax.set_xscale("log", base=2 if key == "ranks" else 10)
        ax.set_yscale("log")
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel(key + (" [Gb/s]" if gbps else "" if key == "ranks" else " [bytes or s]"))
        ax.set_ylabel("mean step time [ms]")
        ax.set_title(f"{topo}: step time vs {key}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, out)


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
