"""Figures of a traced run (output: {trace: true}): the timeline, the ranks per phase over time, and
the busiest links. Each returns the PNG it wrote, or None after printing why the data cannot give it.

Past TIMELINE_RANK_LANES ranks the timeline finds the culprit instead of drawing every rank: a lane
per node (per group of nodes past TIMELINE_NODE_LANES), shaded by the share of its ranks that were
busy at each moment, with the busiest hosts (a slow NIC's, a straggler's) and the most loaded links
named beside it."""
import collections
import json
import math
import os

import matplotlib.colors
import matplotlib.patches
import matplotlib.pyplot as plt
import natsort
import numpy as np
import pandas as pd
from matplotlib import ticker

import layout
from aggsim_data import read_run, si, time_unit
from drawing import COMM, COMPUTE, legend_below, run_name, save

# Up to this many ranks the timeline draws a lane per rank.
TIMELINE_RANK_LANES = 32
# Up to this many nodes, a lane per node; beyond, a lane per group of consecutive nodes.
TIMELINE_NODE_LANES = 256
# How many of the busiest hosts and most loaded links the node timeline names.
NAMED = 5

# Colours of the timeline's span kinds; host work an algorithm labels (reduce, compress, ...) gets its
# own, other labels share the last.
SPAN_COLOURS = collections.OrderedDict([
    ("compute", COMPUTE), ("aggregate", "#d9d9d9"), ("send", COMM), ("recv", "#55a868"),
    ("reduce", "#c44e52"), ("compress", "#8172b3"), ("decompress", "#937860"), ("other work", "#da8bc3")])
# A flow-level stream is a transfer too.
_TRANSFER_NAMES = {"send": "send", "recv": "recv", "stream out": "send", "stream in": "recv"}


def _traced_file(run_dir, name, figure):
    """A file that only traced runs have, or None after saying so."""
    path = os.path.join(run_dir, name)
    if os.path.isfile(path):
        return path
    print(f"{figure}: no {name} (run with output: {{trace: true}}); skipping")
    return None


def _span_kind(name):
    name = _TRANSFER_NAMES.get(name, name)
    return name if name in SPAN_COLOURS else "other work"


Trace = collections.namedtuple("Trace", "events ranks hosts nodes end")


def read_trace(run_dir, figure):
    """The rank spans of trace.json with each rank's host and node (from its process_labels; older
    traces have none: every rank is its own host and node), or None after saying why."""
    path = _traced_file(run_dir, "trace.json", figure)
    if not path:
        return None
    with open(path) as f:
        trace = json.load(f)["traceEvents"]
    names, hosts, nodes = {}, {}, {}
    for e in trace:
        if e.get("ph") != "M":
            continue
        if e.get("name") == "process_name":
            names[e["pid"]] = str(e["args"]["name"])
        elif e.get("name") == "process_labels":
            hosts[e["pid"]] = e["args"].get("host", "")
            nodes[e["pid"]] = e["args"].get("node", "")
    events = [e for e in trace if e.get("ph") == "X" and names.get(e["pid"], "").startswith("rank ")]
    if not events:
        print(f"{figure}: empty trace; skipping")
        return None
    end = max((e["ts"] + e["dur"]) for e in events) / 1e6
    if not any(e["dur"] > 0 for e in events):
        print(f"{figure}: nothing in the trace took time (no compute, no transfer); skipping")
        return None
    ranks = max(e["pid"] for e in events) + 1
    host = [hosts.get(r) or f"rank {r}" for r in range(ranks)]
    node = [nodes.get(r) or host[r] for r in range(ranks)]
    return Trace(events, ranks, host, node, end)


def _step_ends(run_dir):
    """When each step ended (steps.csv end_time_s), for the timeline's step marks."""
    try:
        return list(read_run(run_dir)[1]["end_time_s"])
    except (OSError, KeyError, ValueError):
        return []


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


# ---------------------------------------------------------------------------------------------------
# The timeline


def timeline(run_dir, out, max_lanes=TIMELINE_RANK_LANES):
    """A traced run over time (trace.json). Up to max_lanes ranks: a lane per rank (step phases in
    the back, sends above, receives below, host work such as reductions in the middle); more ranks: a
    lane per node (per group of nodes past TIMELINE_NODE_LANES) shaded by how busy its ranks were,
    the busiest hosts and most loaded links named beside it."""
    trace = read_trace(run_dir, "timeline")
    if not trace:
        return None
    if trace.ranks <= max_lanes:
        return _timeline_by_rank(trace, out, run_dir)
    return _timeline_by_node(trace, out, run_dir)


def _darker(colour, factor=0.78):
    r, g, b = matplotlib.colors.to_rgb(colour)
    return (r * factor, g * factor, b * factor)


def _rank_spans(trace, scale):
    """(rank, kind) -> [(start, duration)] in axis units; kinds other than transfers merged."""
    spans = collections.defaultdict(list)
    for e in trace.events:
        if e["dur"] > 0:
            spans[(e["pid"], _span_kind(e["name"]))].append((e["ts"] * 1e-6 * scale, e["dur"] * 1e-6 * scale))
    for key in spans:
        if key[1] not in ("send", "recv"):
            spans[key] = [(a, b - a) for a, b in _merged([(s, s + d) for s, d in spans[key]])]
    return spans


def _timeline_by_rank(trace, out, run_dir):
    # A rank's row (y grows downwards), one strip per kind so none hides another (DDP's aggregation
    # overlaps the backward pass): compute, sends, host work (reductions, encoding), receives, and the
    # aggregation phase. Back-to-back transfers alternate between two tones of their colour, so each
    # shows without edges that would wash the colours out; the other kinds are drawn as the union of
    # their spans (a step's compute phase holds its labelled compute work).
    scale, unit = time_unit(trace.end)
    band = {"compute": (0.0, 0.2), "send": (0.22, 0.2), "recv": (0.58, 0.2), "aggregate": (0.8, 0.1)}
    spans = _rank_spans(trace, scale)
    end = max(s + d for v in spans.values() for s, d in v) if spans else trace.end * scale
    min_width = end / 1500  # a span shorter than a pixel still shows
    ranks = trace.ranks
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
    for t in _step_ends(run_dir):
        ax.axvline(t * scale, color="black", linewidth=0.6, linestyle=":")
    present = [k for k in order if any(kind == k for _, kind in spans)]
    handles = [matplotlib.patches.Patch(color=SPAN_COLOURS[k], label=k) for k in present]
    labels = [f"rank {r}" + (f" ({trace.hosts[r]})" if not trace.hosts[r].startswith("rank ") else "")
              for r in range(ranks)]
    layout.name_ticks(ax.yaxis, range(ranks), labels, 8 if ranks <= 16 else layout.MIN_FONT)
    ax.set_ylim(ranks - 0.5, -0.5)
    ax.set_xlim(0, end * 1.01)
    ax.set_title(f"Timeline of {ranks} rank{'s' if ranks != 1 else ''}: {run_name(run_dir)} (dotted: step ends)",
                 fontsize=11)
    ax.set_xlabel(f"simulated time [{unit}]")
    legend_below(fig, ax, handles, [h.get_label() for h in handles], ncol=len(handles))
    busy = collections.defaultdict(float)
    count = collections.defaultdict(int)
    for e in trace.events:
        busy[(e["pid"], _span_kind(e["name"]))] += e["dur"] * 1e-6
        count[(e["pid"], _span_kind(e["name"]))] += 1
    keys = sorted(busy)
    data = {"label": [labels[k[0]] for k in keys], "rank": [k[0] for k in keys], "kind": [k[1] for k in keys],
            "spans": [count[k] for k in keys], "busy_s": [busy[k] for k in keys]}
    return save(fig, out, data)


# What a rank can be busy with at once: its processor (compute and host work such as reductions),
# its sends and its receives.
CHANNELS = ("processor", "send", "recv")


def busy_intervals(trace):
    """Per rank and channel, when it was in use: the union of its spans (the `aggregate` phase, which
    also covers waiting, is none of them). A rank's busy share over a time is the mean over its three
    channels of the share of that time each was in use: a slow NIC keeps both its sends and receives
    busy, its ring neighbours one of them, a straggler its processor."""
    per = [{c: [] for c in CHANNELS} for _ in range(trace.ranks)]
    for e in trace.events:
        if e["dur"] > 0 and e["name"] != "aggregate":
            kind = _span_kind(e["name"])
            channel = kind if kind in ("send", "recv") else "processor"
            per[e["pid"]][channel].append((e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    return [{c: [tuple(i) for i in _merged(v)] for c, v in rank.items()} for rank in per]


def busy_share(busy, ranks, edges):
    """Mean busy share of `ranks` in each bin of `edges` (busy_intervals)."""
    spans = [i for r in ranks for c in CHANNELS for i in busy[r][c]]
    return occupancy(spans, edges) / (len(CHANNELS) * len(ranks))


Lane = collections.namedtuple("Lane", "label ranks nodes")  # nodes: the ranks of each of its nodes


def node_lanes(trace, max_lanes=TIMELINE_NODE_LANES):
    """([Lane], nodes per lane): a lane per node in rank order, or per group of consecutive nodes
    when there are more than max_lanes (labelled 'node-0 ... node-3')."""
    nodes = list(dict.fromkeys(trace.nodes))
    ranks_of = collections.defaultdict(list)
    for r, n in enumerate(trace.nodes):
        ranks_of[n].append(r)
    per = math.ceil(len(nodes) / max_lanes)
    lanes = []
    for i in range(0, len(nodes), per):
        group = nodes[i:i + per]
        label = group[0] if len(group) == 1 else f"{group[0]} ... {group[-1]}"
        lanes.append(Lane(label, [r for n in group for r in ranks_of[n]], [ranks_of[n] for n in group]))
    return lanes, per


def lane_share(busy, lane, edges):
    """A lane's busy share in each bin: its node's (the mean over the node's ranks), or for a group of
    nodes the busiest node's, so that one slow node is not averaged away."""
    return np.max([busy_share(busy, ranks, edges) for ranks in lane.nodes], axis=0)


def loaded_links(run_dir, top=NAMED):
    """The `top` links of links.csv by utilisation, as (label, utilisation), or [] without links.csv."""
    path = os.path.join(run_dir, "links.csv")
    if not os.path.isfile(path):
        return []
    df = _busiest_links(pd.read_csv(path, dtype={"end_a": str, "end_b": str, "tier": str}), top)
    return list(zip(unique_link_labels(df), df["utilisation"]))


def _named_lanes(lanes, host_rank, height_in):
    """Lanes whose names fit on the y axis: those of the named hosts first, then every k-th, none
    closer than a label's height to another."""
    step = max(1, math.ceil(0.15 / max(height_in, 1e-9)))
    lane_of = {r: i for i, lane in enumerate(lanes) for r in lane.ranks}
    wanted = [lane_of[r] for r in host_rank] + list(range(0, len(lanes), step))
    kept = []
    for i in wanted:
        if all(abs(i - j) >= step for j in kept):
            kept.append(i)
    return sorted(kept)


def _timeline_by_node(trace, out, run_dir, bins=400):
    scale, unit = time_unit(trace.end)
    busy = busy_intervals(trace)
    lanes, per = node_lanes(trace)
    edges = np.linspace(0.0, trace.end, bins + 1)
    share = np.array([lane_share(busy, lane, edges) for lane in lanes])
    host_share = [sum(b - a for c in CHANNELS for a, b in busy[r][c]) / (len(CHANNELS) * trace.end)
                  for r in range(trace.ranks)]
    hottest = sorted(range(trace.ranks), key=lambda r: (-host_share[r], r))[:NAMED]
    lane_h = min(0.16, max(0.035, 9.0 / len(lanes)))
    # The lanes, their colour scale, then the names of the culprits under them (the figure keeps the
    # page's width, so its text stays legible there).
    fig, (ax, cax, tax) = plt.subplots(3, 1, figsize=(12, lane_h * len(lanes) + 3.9),
                                       gridspec_kw={"height_ratios": [lane_h * len(lanes), 0.12, 1.25],
                                                    "hspace": 0.9 / (lane_h * len(lanes) + 3.9) * 3})
    # The colours span 0 to the busiest lane's share: one slow node stands out however idle the run.
    image = ax.imshow(share, aspect="auto", interpolation="nearest", cmap="YlOrRd", vmin=0,
                      vmax=max(float(share.max()), 1e-9), extent=(0, trace.end * scale, len(lanes) - 0.5, -0.5))
    for t in _step_ends(run_dir):
        ax.axvline(t * scale, color="#2a9df4", linewidth=0.8, linestyle=":")
    lane_of = {r: i for i, lane in enumerate(lanes) for r in lane.ranks}
    ax.plot([trace.end * scale] * len(hottest), [lane_of[r] for r in hottest], marker="<", linestyle="none",
            color="#2a9df4", markersize=6, clip_on=False)
    shown = _named_lanes(lanes, hottest, lane_h)
    layout.name_ticks(ax.yaxis, shown, [lanes[i].label for i in shown], layout.MIN_FONT)
    ax.set_xlabel(f"simulated time [{unit}] (dotted: step ends)")
    what = ("a lane per node shaded by how busy its ranks'" if per == 1 else
            f"a lane per {per} nodes shaded by how busy its busiest node's ranks'")
    ax.set_title(f"Timeline of {trace.ranks} ranks: {run_name(run_dir)}\n({what} processors, sends and receives "
                 f"were)", fontsize=10)
    bar = fig.colorbar(image, cax=cax, orientation="horizontal")
    bar.set_label("busy share of the lane's ranks (mean of processor, sends, receives in use)", fontsize=8)
    bar.ax.xaxis.set_major_formatter(ticker.PercentFormatter(1.0))
    _name_culprits(tax, trace, hottest, host_share, loaded_links(run_dir))
    return save(fig, out, _node_lane_data(lanes, share, host_share, trace, edges))


def _name_culprits(ax, trace, hottest, host_share, links):
    """The slowest hosts and the most loaded links, side by side in `ax` (a text panel)."""
    ax.axis("off")
    hosts = ["slowest hosts (share of the run their processor,", "sends and receives were in use; \u25c0 on their lane):"]
    hosts += [f"  {trace.hosts[r]} (rank {r}): {host_share[r]:.1%}" for r in hottest]
    ax.text(0.0, 1.0, "\n".join(hosts), transform=ax.transAxes, va="top", ha="left", fontsize=8, family="monospace")
    if links:
        loaded = ["most loaded links (utilisation over the run,", "links.csv):"]
        loaded += [f"  {label}: {u:.1%}" for label, u in links]
        ax.text(0.5, 1.0, "\n".join(loaded), transform=ax.transAxes, va="top", ha="left", fontsize=8,
                family="monospace")


def _node_lane_data(lanes, share, host_share, trace, edges):
    """The figure's numbers, its busiest lane first: per lane and time slice the busy share, with the
    lane's share over the run and its busiest host."""
    overall = share.mean(axis=1) if share.size else []
    order = sorted(range(len(lanes)), key=lambda i: (-overall[i], i))
    data = collections.defaultdict(list)
    for i in order:
        label, ranks, _ = lanes[i]
        top = max(ranks, key=lambda r: (host_share[r], -r))
        for b in range(len(edges) - 1):
            for col, v in (("label", label), ("ranks", f"{ranks[0]}-{ranks[-1]}"), ("lane_busy_share", overall[i]),
                           ("busiest_host", trace.hosts[top]), ("busiest_host_share", host_share[top]),
                           ("bin_start_s", edges[b]), ("bin_end_s", edges[b + 1]), ("busy_share", share[i][b])):
                data[col].append(v)
    return data


# ---------------------------------------------------------------------------------------------------
# Ranks per phase


def phases(run_dir, out, bins=600):
    """Per phase (compute, sends, receives, reductions, ...), the mean number of ranks in it (of
    transfers in flight) over each 1/bins of the run: what the ranks did, at any rank count."""
    trace = read_trace(run_dir, "phases")
    if not trace:
        return None
    scale, unit = time_unit(trace.end)
    per_rank = collections.defaultdict(list)
    for e in trace.events:
        if e["dur"] > 0:
            per_rank[(_span_kind(e["name"]), e["pid"])].append((e["ts"] * 1e-6, (e["ts"] + e["dur"]) * 1e-6))
    intervals = collections.defaultdict(list)
    for (kind, _), v in per_rank.items():
        intervals[kind] += v if kind in ("send", "recv") else [tuple(i) for i in _merged(v)]
    kinds = [k for k in SPAN_COLOURS if k in intervals]
    end = max(b for v in intervals.values() for _, b in v)
    edges = np.linspace(0.0, end, bins + 1)
    fig, axes = plt.subplots(len(kinds), 1, figsize=(12, 1.15 * len(kinds) + 1.6), sharex=True, squeeze=False)
    data = {"label": [], "kind": [], "bin_start_s": [], "bin_end_s": [], "mean_count": []}
    for ax, kind in zip(axes[:, 0], kinds):
        mean = occupancy(intervals[kind], edges)
        ax.fill_between(edges[:-1] * scale, mean, step="post", color=SPAN_COLOURS[kind], linewidth=0)
        ax.set_ylim(0, max(float(mean.max()), 1e-9) * 1.15)
        what = "transfers in flight" if kind in ("send", "recv") else "ranks"
        label = f"{kind}\n(mean {what})"
        ax.set_ylabel(label, fontsize=8, rotation=0, ha="right", va="center")
        ax.yaxis.set_major_locator(ticker.MaxNLocator(3))
        ax.tick_params(axis="y", labelsize=layout.MIN_FONT)
        ax.grid(True, axis="x", alpha=0.3)
        for i, m in enumerate(mean):
            data["label"].append(label.replace("\n", " ")), data["kind"].append(kind)
            data["bin_start_s"].append(edges[i]), data["bin_end_s"].append(edges[i + 1])
            data["mean_count"].append(float(m))
    for t in _step_ends(run_dir):
        for ax in axes[:, 0]:
            ax.axvline(t * scale, color="black", linewidth=0.6, linestyle=":")
    axes[-1, 0].set_xlim(0, end * scale * 1.01)
    axes[-1, 0].set_xlabel(f"simulated time [{unit}] (dotted: step ends)")
    axes[0, 0].set_title(f"Ranks per phase, {trace.ranks} ranks: {run_name(run_dir)}\n(the mean count over "
                         f"each 1/{bins} of the run)", fontsize=10)
    return save(fig, out, data)


# ---------------------------------------------------------------------------------------------------
# Busiest links


def link_label(row):
    """'host-3 -> cluster-switch (edge)': what a link joins, else SimGrid's name for it."""
    a, b = str(row.get("end_a", "") or ""), str(row.get("end_b", "") or "")
    a, b = ("" if a == "nan" else a), ("" if b == "nan" else b)
    tier = str(row.get("tier", "") or "")
    tier = "" if tier == "nan" else tier
    ends = f"{a} -> {b}" if a and b else (a or b or str(row["link"]))
    return f"{ends} ({tier})" if tier else ends


def unique_link_labels(df):
    """link_label of each row; two links joining the same ends (parallel links) add their names."""
    labels = [link_label(r) for _, r in df.iterrows()]
    twice = {lab for lab in labels if labels.count(lab) > 1}
    return [f"{lab} [{name}]" if lab in twice else lab for lab, name in zip(labels, df["link"])]


def _busiest_links(df, top):
    """Links that carried traffic, busiest first; equal ones in natural order of their names."""
    df = df[df["bytes"] > 0]
    order = sorted(range(len(df)), key=lambda i: (-df["utilisation"].iloc[i], natsort.natsort_key(str(df["link"].iloc[i]))))
    return df.iloc[order].head(top)


def links(run_dir, out, top=20):
    """The busiest links of a traced run (links.csv): utilisation over the run, highest first,
    each labelled by what it joins and its tier."""
    path = _traced_file(run_dir, "links.csv", "links")
    if not path:
        return None
    df = _busiest_links(pd.read_csv(path, dtype={"end_a": str, "end_b": str, "tier": str}), top)
    if df.empty:
        print("links: no traffic; skipping")
        return None
    labels = unique_link_labels(df)
    n = len(df)
    fig, ax = plt.subplots(figsize=(9, 0.3 * n + 1.8))
    ax.barh(range(n)[::-1], list(df["utilisation"] * 100), color=COMM)
    for y, (_, r) in zip(range(n)[::-1], df.iterrows()):
        ax.text(r["utilisation"] * 100, y, f" {si(r['bytes'], 'B', 3)}", va="center", fontsize=8)
    layout.name_ticks(ax.yaxis, range(n)[::-1], labels, 8)
    ax.set_xlabel("utilisation over the run [% of bandwidth] (label: bytes carried)")
    ax.set_title(f"Busiest links (top {n}): {run_name(run_dir)}", fontsize=11)
    ax.set_xlim(0, max(df["utilisation"] * 100) * 1.2)
    layout.fit_texts_in_axes(fig, ax)
    data = {"label": labels, "link": list(df["link"]), "tier": list(df.get("tier", [""] * n)),
            "bytes": list(df["bytes"]), "utilisation": list(df["utilisation"])}
    return save(fig, out, data)
