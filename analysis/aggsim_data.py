"""Reading aggsim outputs: a run folder (summary.json, steps.csv) or a sweep's output folder
(results.csv, runs/<id>/). Shared by the plotting scripts; needs pandas and natsort (Debian:
python3-pandas, python3-natsort, python3-scipy).

Units are never parsed here: for a key swept over quantities with units (10Gbps, 64MiB, 2ms),
results.csv carries a second column in SI base units (platform.bandwidth_Bps, model.size_bytes,
platform.latency_s, ..._flops) written by aggsim itself."""
import json
import math
import os

import natsort
import pandas as pd

# Suffixes aggsim gives the SI column of a swept quantity, and how an axis names the unit.
SI_SUFFIXES = {"_Bps": "bytes/s", "_bytes": "bytes", "_s": "s", "_flops": "flop/s"}


def number(value):
    """A plain number (64, '1e-3') as a float; anything else (names, '10Gbps') gives None."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        v = float(str(value).strip())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def short_value(value):
    """A swept value for a label: a mapping `{name: powersgd, rank: 2}` as 'powersgd (rank: 2)',
    `{name: none}` as 'none'; anything else as written."""
    text = str(value).strip()
    if not (text.startswith("{") and text.endswith("}")):
        return text
    items = [i.strip() for i in text[1:-1].split(",") if i.strip()]
    name = [i.split(":", 1)[1].strip() for i in items if i.startswith("name:")]
    rest = [i for i in items if not i.startswith("name:")]
    if not name:
        return text
    return name[0] + (f" ({', '.join(rest)})" if rest else "")


def key_forms(key):
    """The ways a figure may name a swept key, shortest first: a section's choice by its section
    (`algorithm.name` -> `algorithm`: a bare `name=` says nothing), else the key's tails
    (`platform.bandwidth` -> `bandwidth`), the whole path last."""
    parts = key.split(".")
    base = parts[:-1] if len(parts) > 1 and parts[-1] == "name" else parts
    forms = [".".join(base[i:]) for i in range(len(base) - 1, -1, -1)]
    return list(dict.fromkeys(forms + [key]))


def short_key_names(keys):
    """Each key's shortest form that no other key of `keys` shares (`latency` for one latency key;
    `platform.latency` and `algorithm.latency` when both are swept)."""
    level = {k: 0 for k in keys}
    while True:
        chosen = {k: key_forms(k)[level[k]] for k in keys}
        clash = [k for k in keys if sum(1 for v in chosen.values() if v == chosen[k]) > 1
                 and level[k] + 1 < len(key_forms(k))]
        if not clash:
            return chosen
        for k in clash:
            level[k] += 1


class Labels:
    """How a figure names the points it draws: by every swept key whose values vary among them (zip
    and grid alike, in the sweep's key order), each key by its short form (short_key_names); the swept
    keys that do not vary, minus `skip` (keys an axis or a panel already shows), are said once, in the
    title (`common_text`). With nothing varying, a point is named by the common values."""

    def __init__(self, sweep, frame, skip=()):
        self.names = sweep.short_names
        keys = [k for k in sweep.keys if k not in skip]
        self.varying = [k for k in sweep.varying_keys(frame) if k not in skip]
        first = frame.iloc[0] if len(frame) else None
        self.common = [(k, short_value(first[k])) for k in keys if k not in self.varying and first is not None]

    def of(self, row):
        if not self.varying:
            return self.common_text() or "all runs"
        return ", ".join(f"{self.names[k]}={short_value(row[k])}" for k in self.varying)

    def common_text(self):
        """'ranks=16, bandwidth=100Gbps': what every point drawn shares ('' when nothing, or when the
        points are named by it because nothing varies)."""
        return ", ".join(f"{self.names[k]}={v}" for k, v in self.common)

    def title(self, text):
        """`text`, with what the points share after it."""
        common = self.common_text() if self.varying else ""
        return f"{text} ({common})" if common else text


def is_run_folder(path):
    return os.path.isfile(os.path.join(path, "summary.json"))


def read_collectives(run_dir):
    """collectives.csv of a run folder (one row per aggregation call), or None for older outputs."""
    path = os.path.join(run_dir, "collectives.csv")
    return pd.read_csv(path) if os.path.isfile(path) else None


# Numbers for people: SI prefixes, a unit, four significant digits at most.
_PREFIXES = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")]


def si(value, unit, digits=4):
    """12500000000 bytes/s -> '12.5 GB/s' style: the largest decimal prefix that keeps the value >= 1."""
    v = float(value)
    if v == 0 or not math.isfinite(v):
        return f"{v:g} {unit}".strip()
    for scale, prefix in _PREFIXES:
        if abs(v) >= scale:
            return f"{v / scale:.{digits}g} {prefix}{unit}".strip()
    return f"{v:.{digits}g} {unit}".strip()


def duration(seconds, digits=4):
    """0.16338 -> '163.4 ms'; 2.5e-6 -> '2.5 us'; 75 -> '75 s'."""
    v = float(seconds)
    if v == 0 or not math.isfinite(v):
        return f"{v:g} s"
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(v) >= scale:
            return f"{v / scale:.{digits}g} {unit}"
    return f"{v:.{digits}g} s"


def time_unit(max_seconds):
    """(scale, label) for an axis of times up to max_seconds: seconds, ms or us."""
    m = abs(float(max_seconds)) if max_seconds else 0.0
    if m >= 1:
        return 1.0, "s"
    if m >= 1e-3:
        return 1e3, "ms"
    return 1e6, "us"


def show(key, value):
    """A summary.json or results.csv value as a person reads it: JSON spellings (null, true, false),
    units from the key's suffix (_s, _bytes, _GBps, _Bps), numbers rounded to 4 significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip()
    if text in ("True", "False"):
        return text.lower()
    if text in ("None", "nan", ""):
        return "null" if text != "" else ""
    v = number(value)
    if v is None:
        return text
    if key.endswith("_s"):
        return duration(v)
    if key.endswith("_GBps"):
        return f"{v:.4g} GB/s"
    if key.endswith("_Bps"):
        return si(v * 8, "b/s")
    if key.endswith("_bytes") or key in ("bytes_sent", "model_bytes"):
        return si(v, "B")
    if key.endswith("_flops"):
        return si(v, "flop/s")
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}" if abs(v) >= 1e5 else str(int(v))
    return f"{v:.4g}"


def read_run(path):
    """(summary dict, steps DataFrame) of one run folder."""
    with open(os.path.join(path, "summary.json")) as f:
        summary = json.load(f)
    steps = pd.read_csv(os.path.join(path, "steps.csv"))
    # Optional metrics (loss, accuracy, consensus_distance, algbw) are empty cells on steps that
    # were not evaluated and whole empty columns where they do not apply: drop the latter, so "has
    # a loss column" means "has losses".
    steps = steps.dropna(axis="columns", how="all")
    if "exposed_comm_time_s" not in steps.columns:  # outputs of older versions: nothing known hidden
        steps["exposed_comm_time_s"] = steps["comm_time_s"]
    return summary, steps


def hidden_comm(steps):
    """steps.csv's hidden_comm_time_s: per step, the part of the critical rank's aggregation calls
    that ran while it computed. Outputs of aggsim versions before it have no such column: NaN (not
    known), never the old window between the first call and the end of the compute."""
    if "hidden_comm_time_s" in steps.columns:
        return steps["hidden_comm_time_s"].astype(float)
    return pd.Series([float("nan")] * len(steps), index=steps.index)


def topology_of(summary):
    """'cluster', 'fat_tree', ... or a platform file's stem, from summary.json's platform description."""
    what = str(summary.get("platform", "?")).split(" (")[0]
    return os.path.splitext(os.path.basename(what))[0]


def mean_and_ci95(values):
    """Mean and the half-width of its 95 % confidence interval (Student's t; 0 for one value)."""
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return float("nan"), float("nan")
    n = len(vals)
    mean = sum(vals) / n
    if n == 1:
        return mean, 0.0
    sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / (n - 1))
    return mean, student_t_975(n - 1) * sd / math.sqrt(n)


def student_t_975(dof):
    """The 97.5 % quantile of Student's t with `dof` degrees of freedom (two-sided 95 % interval)."""
    from scipy import stats  # Debian: python3-scipy

    return float(stats.t.ppf(0.975, dof))


class Sweep:
    """A sweep's points: results.csv rows joined with each finished run's summary and step means.
    With `repeat:` several rows share a point's swept values; `points` keeps every run."""

    def __init__(self, path):
        self.dir = os.path.dirname(path) if path.endswith(".csv") else path
        # How figures name the sweep: its folder, and its scenario when that is named otherwise.
        self.name = os.path.basename(os.path.normpath(os.path.abspath(self.dir)))
        csv = path if path.endswith(".csv") else os.path.join(path, "results.csv")
        self.results = pd.read_csv(csv, dtype=str, keep_default_na=False)
        manifest = os.path.join(self.dir, "manifest.json")
        if os.path.isfile(manifest):
            with open(manifest) as f:
                self.keys = json.load(f)["keys"]
        else:  # swept keys are the columns between status and the first summary field
            cols = list(self.results.columns)
            first = next((c for c in ("format_version", "aggsim_version") if c in cols), None)
            end = cols.index(first) if first else len(cols)
            si = {k + s for k in cols for s in SI_SUFFIXES}
            self.keys = [c for c in cols[2:end] if c not in {"id", "status", "error", "repeat"} and c not in si]
        # The column holding each key's values as numbers: its SI column, or itself when every
        # value is a plain number; None for names and mappings.
        self.numeric = {}
        for k in self.keys:
            si = [k + s for s in SI_SUFFIXES if k + s in self.results.columns]
            if si:
                self.numeric[k] = si[0]
            elif len(self.results) and all(number(v) is not None for v in self.results[k]):
                self.numeric[k] = k
            else:
                self.numeric[k] = None
        self.short_names = short_key_names(self.keys)
        rows = []
        self.steps = {}
        for _, r in self.results.iterrows():
            run = os.path.join(self.dir, "runs", r["id"])
            if r["status"] != "done" or not is_run_folder(run):
                continue
            summary, steps = read_run(run)
            self.steps[r["id"]] = steps
            row = {"id": r["id"]}
            row.update(summary)
            # results.csv's columns after the summary: a swept key named like a summary field
            # (`compression`, swept over mappings) keeps its swept values.
            row.update({c: r[c] for c in r.index if c not in ("id", "status", "error") and
                        (c not in summary or c in self.keys)})
            row["topology"] = topology_of(summary)
            row["mean_compute_s"] = steps["compute_time_s"].mean()
            row["mean_comm_s"] = steps["comm_time_s"].mean()
            row["mean_exposed_comm_s"] = steps["exposed_comm_time_s"].mean()
            row["mean_hidden_comm_s"] = hidden_comm(steps).mean()
            row["mean_step_s"] = steps["step_time_s"].mean()
            losses = steps["loss"].dropna() if "loss" in steps.columns else pd.Series(dtype=float)
            row["final_loss"] = losses.iloc[-1] if len(losses) else float("nan")
            rows.append(row)
        self.points = pd.DataFrame(rows)
        if not self.points.empty:
            self.points = self.points.iloc[self.natural_order(self.points)].reset_index(drop=True)
            names = self.labels(self.points)
            self.points.insert(1, "label", [names.of(r) for _, r in self.points.iterrows()])
            scenarios = list(dict.fromkeys(str(s) for s in self.points.get("scenario", [])))
            if scenarios and scenarios != [self.name]:
                self.name = f"{self.name} (scenario {', '.join(scenarios)})"

    def value(self, row, key):
        """A swept key's value in a row as a number (SI base units), or None."""
        col = self.numeric.get(key)
        return number(row[col]) if col else None

    def sort_key(self, row, keys=None):
        """Orders rows naturally: numbers by value (25GBps after 100Gbps), text as people sort it."""
        out = []
        for k in keys if keys is not None else self.keys:
            v = self.value(row, k)
            out.append((0, v, "") if v is not None else (1, 0.0, natsort.natsort_key(str(row[k]))))
        return out

    def natural_order(self, frame, keys=None):
        """Row positions of `frame` in natural order of the swept keys (first key outermost)."""
        return sorted(range(len(frame)), key=lambda i: self.sort_key(frame.iloc[i], keys))

    def label(self, row, skip=()):
        """'ranks=8, size=1MB': the point named by the swept keys whose values vary among the finished
        points (see Labels)."""
        return self.labels(self.points_or_results(), skip).of(row)

    def labels(self, frame, skip=()):
        """How a figure drawing the rows of `frame` names them (Labels)."""
        return Labels(self, frame, skip)

    def points_or_results(self):
        return self.points if getattr(self, "points", None) is not None and not self.points.empty else self.results

    def varying_keys(self, frame=None):
        """The swept keys with more than one value among `frame`'s rows (default: every point;
        repetitions do not count)."""
        frame = self.results if frame is None else frame
        return [k for k in self.keys if len(frame) and frame[k].astype(str).nunique() > 1]

    def collectives(self):
        """Every finished point's collectives.csv rows, with the point's id, label and swept values."""
        frames = []
        for _, p in self.points.iterrows():
            calls = read_collectives(os.path.join(self.dir, "runs", p["id"]))
            if calls is None or calls.empty:
                continue
            calls = calls.copy()
            calls["id"], calls["label"] = p["id"], p["label"]
            for k in self.keys:
                calls[k] = p[k]
            frames.append(calls)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    def has_loss(self):
        return any("loss" in s.columns for s in self.steps.values())

    def numeric_keys(self):
        """Swept keys whose values are numbers (plain or with units), with at least two distinct values."""
        out = []
        for k in self.keys:
            col = self.numeric.get(k)
            if col and len({number(v) for v in self.results[col]}) >= 2:
                out.append(k)
        return out

    def axis_unit(self, key):
        """How an axis names a key's SI unit ('' for plain numbers)."""
        col = self.numeric.get(key) or key
        for suffix, unit in SI_SUFFIXES.items():
            if col == key + suffix:
                return unit
        return ""
