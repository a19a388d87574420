"""Reading aggsim outputs: a run folder (summary.json, steps.csv) or a sweep's output folder
(results.csv, runs/<id>/). Shared by the plotting scripts; needs pandas (Debian: python3-pandas)."""
import json
import os
import re

import pandas as pd

_UNITS = {
    "": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12, "kib": 2**10, "mib": 2**20, "gib": 2**30,
    "bps": 1 / 8, "kbps": 1e3 / 8, "mbps": 1e6 / 8, "gbps": 1e9 / 8, "tbps": 1e12 / 8,
    "s": 1, "ms": 1e-3, "us": 1e-6, "ns": 1e-9,
}


def number(value):
    """A swept value as a number: 64 -> 64, '10Gbps' -> bytes/s, '1MB' -> bytes, '2ms' -> s; else None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = re.fullmatch(r"\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        return None
    return float(m.group(1)) * _UNITS[m.group(2).lower()]


def is_run_folder(path):
    return os.path.isfile(os.path.join(path, "summary.json"))


def read_run(path):
    """(summary dict, steps DataFrame) of one run folder."""
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    steps = pd.read_csv(os.path.join(path, "steps.csv"))
    # Optional metrics (loss, accuracy, consensus_distance) are empty cells on steps that were not
    # evaluated and whole empty columns without a training workload: drop the latter, so "has a
    # loss column" means "has losses".
    return summary, steps.dropna(axis="columns", how="all")


def topology_of(summary):
    """'cluster', 'fat_tree', ... or a platform file's stem, from summary.json's platform description."""
    what = str(summary.get("platform", "?")).split(" (")[0]
    return os.path.splitext(os.path.basename(what))[0]


class Sweep:
    """A sweep's points: results.csv rows joined with each finished run's summary and step means."""

    def __init__(self, path):
        self.dir = os.path.dirname(path) if path.endswith(".csv") else path
        csv = path if path.endswith(".csv") else os.path.join(path, "results.csv")
        self.results = pd.read_csv(csv, dtype=str, keep_default_na=False)
        fixed = {"id", "status", "error"}
        manifest = os.path.join(self.dir, "manifest.json")
        if os.path.isfile(manifest):
            with open(manifest) as f:
                self.keys = json.load(f)["keys"]
        else:  # swept keys are the columns between status and the first summary field
            cols = list(self.results.columns)
            end = cols.index("aggsim_version") if "aggsim_version" in cols else len(cols)
            self.keys = [c for c in cols[2:end] if c not in fixed]
        rows = []
        self.steps = {}
        for _, r in self.results.iterrows():
            run = os.path.join(self.dir, "runs", r["id"])
            if r["status"] != "done" or not is_run_folder(run):
                continue
            summary, steps = read_run(run)
            self.steps[r["id"]] = steps
            row = {"id": r["id"], "label": self.label(r)}
            row.update({k: r[k] for k in self.keys})
            row.update({k: v for k, v in summary.items() if k not in self.keys})
            row["topology"] = topology_of(summary)
            row["mean_compute_s"] = steps["compute_time_s"].mean()
            row["mean_comm_s"] = steps["comm_time_s"].mean()
            row["mean_step_s"] = steps["step_time_s"].mean()
            losses = steps["loss"].dropna() if "loss" in steps.columns else pd.Series(dtype=float)
            row["final_loss"] = losses.iloc[-1] if len(losses) else float("nan")
            rows.append(row)
        self.points = pd.DataFrame(rows)

    def label(self, row, skip=()):
        """'ranks=8, size=1MB': a key's last part, or the whole path when two keys share it."""
        last = [k.split(".")[-1] for k in self.keys]
        short = {k: (s if last.count(s) == 1 else k) for k, s in zip(self.keys, last)}
        return ", ".join(f"{short[k]}={row[k]}" for k in self.keys if k not in skip)

    def has_loss(self):
        return any("loss" in s.columns for s in self.steps.values())

    def numeric_keys(self):
        """Swept keys whose values are all numbers (with units), with at least two distinct values."""
        out = []
        for k in self.keys:
            values = [number(v) for v in self.results[k]]
            if all(v is not None for v in values) and len(set(values)) >= 2:
                out.append(k)
        return out
