#!/usr/bin/python3
"""One-page HTML report of a sweep (or of one run folder): every figure the data allows, and the
results table. Writes DIR/report.html and its PNGs (each with the CSV of its numbers) in DIR/figures/.

  report.py SWEEP_OUT_DIR [-o report.html]
  report.py RUN_DIR [-o report.html]
"""
import argparse
import contextlib
import html
import io
import json
import math
import os


import plots
from aggsim_data import Sweep, is_run_folder, number, read_run, show

# Results table: the columns a reader looks for first, after the point's id, status and swept keys.
FIRST_COLUMNS = ["mean_step_time_s", "busbw_GBps", "algbw_GBps", "collective_time_s", "exposed_comm_time_s",
                 "bytes_sent", "messages", "agg_error", "compress_error", "final_loss", "time_to_target_s"]


def figures(source, fig_dir, name):
    """(title, png path or None, why not) for each figure."""
    out = []

    def add(title, file, draw):
        said = io.StringIO()  # a figure that cannot be drawn prints why
        with contextlib.redirect_stdout(said):
            path = draw(os.path.join(fig_dir, file))
        print(said.getvalue(), end="")
        out.append((title, path, said.getvalue().strip() or "not available for this data"))

    if isinstance(source, Sweep):
        add("Step time breakdown", "breakdown.png", lambda p: plots.breakdown(source, p))
        for key in source.numeric_keys():
            safe = key.replace(".", "_")
            add(f"Mean step time vs {key}", f"versus_{safe}.png", lambda p, k=key: plots.versus(source, k, p))
        add("Bus bandwidth vs call size", "busbw.png", lambda p: plots.busbw(source, p))
        add("Loss vs simulated time", "loss.png", lambda p: plots.loss_vs_time(source, p))
        add("Time to target loss", "time_to_target.png", lambda p: plots.time_to_target(source, p))
        add("Bytes sent vs final loss", "bytes_loss.png", lambda p: plots.bytes_vs_loss(source, p))
        traced = [i for i in source.points.get("id", []) if os.path.isfile(os.path.join(source.dir, "runs", i,
                                                                                         "trace.json"))]
        if traced:  # the timeline of the first traced point
            run = os.path.join(source.dir, "runs", traced[0])
            label = source.points.set_index("id").loc[traced[0], "label"]
            add(f"Timeline of point {traced[0]} ({label})", "timeline.png", lambda p: plots.timeline(run, p))
            add(f"Ranks per phase of point {traced[0]} ({label})", "phases.png", lambda p: plots.phases(run, p))
            add(f"Busiest links of point {traced[0]} ({label})", "links.png", lambda p: plots.links(run, p))
    else:
        add(f"Step time breakdown: {name}", "breakdown.png", lambda p: plots.breakdown(source, p))
        add(f"Bus bandwidth vs call size: {name}", "busbw.png", lambda p: plots.busbw(source, p))
        add(f"Loss vs simulated time: {name}", "loss.png", lambda p: plots.loss_vs_time(source, p))
        if os.path.isfile(os.path.join(source, "trace.json")):
            add(f"Timeline: {name}", "timeline.png", lambda p: plots.timeline(source, p))
            add(f"Ranks per phase: {name}", "phases.png", lambda p: plots.phases(source, p))
            add(f"Busiest links: {name}", "links.png", lambda p: plots.links(source, p))
    return out


# ---------------------------------------------------------------------------------------------------
# What to expect from a compressor on a synthetic gradient


def compression_of(run_dir):
    """The `compression:` and `model:` mappings of a run's resolved.yaml (block style, as aggsim
    writes it) as two dicts of text values."""
    sections, current = {"compression": {}, "model": {}}, None
    path = os.path.join(run_dir, "resolved.yaml")
    if not os.path.isfile(path):
        return sections["compression"], sections["model"]
    with open(path) as f:
        for line in f:
            if not line.startswith(" "):
                key = line.split(":")[0].strip()
                current = key if key in sections else None
            elif current and line.startswith("  ") and not line.startswith("   ") and ":" in line:
                k, v = line.strip().split(":", 1)
                sections[current][k.strip()] = v.strip()
    return sections["compression"], sections["model"]


def synthetic_expectation(compression, model):
    """(expected compress_error or None, a sentence) for a compressor on i.i.d. standard normal values."""
    from scipy import stats  # Debian: python3-scipy

    name = compression.get("name", "none")
    n = number(model.get("proxy_dim")) or 0
    ratio = number(compression.get("ratio")) or 0.0
    k = number(compression.get("k")) or 0.0
    if k > 0 and n > 0:
        ratio = min(1.0, k / n)
    memory = compression.get("memory", "none") != "none" or compression.get("error_feedback") == "true"
    caveat = " Error feedback adds the residual before encoding, which moves this." if memory else ""
    if name == "topk" and 0 < ratio < 1:
        t = stats.norm.ppf(1 - ratio / 2)
        kept = ratio + 2 * t * stats.norm.pdf(t)  # share of the energy in the largest ratio of |values|
        e = math.sqrt(max(0.0, 1 - kept))
        return e, (f"top-k keeps the {ratio:g} largest magnitudes; of standard normal values they hold "
                   f"{kept:.3g} of the energy, so expect compress_error = sqrt(1 - {kept:.3g}) = {e:.3f}. Real "
                   f"gradients concentrate their energy in few coordinates and lose far less.{caveat}")
    if name == "randomk" and 0 < ratio < 1:
        e = math.sqrt(1 / ratio - 1)
        return e, (f"random-k keeps {ratio:g} of the values scaled by 1/{ratio:g} (unbiased): compress_error = "
                   f"sqrt(1/{ratio:g} - 1) = {e:.3g} on any gradient, structured or not.{caveat}")
    if name == "sign":
        e = math.sqrt(1 - 2 / math.pi)
        return e, (f"sign keeps each value's sign and one scale (the mean magnitude): on standard normal values "
                   f"compress_error = sqrt(1 - 2/pi) = {e:.3f}.{caveat}")
    if name in ("powersgd", "atomo"):
        return None, ("a random matrix spreads its energy over all its singular directions: a rank-r (or "
                      "budget-r) approximation of an m x n one keeps about r (sqrt(m) + sqrt(n))^2 / (m n) of it, so "
                      "expect compress_error close to 1 and agg_error close to 1. Real gradients are close to "
                      f"low-rank (Vogels et al., 2019), and there PowerSGD rank 2 loses little.{caveat}")
    if name in ("qsgd", "terngrad"):
        return None, ("unbiased stochastic quantization: its noise grows with the number of values per scale and "
                      f"shrinks with the levels, on random and real gradients alike.{caveat}")
    if name in ("fp16", "uint8"):
        return None, "rounding to fewer bits: a small error that does not depend on the gradient's structure."
    if name == "threshold":
        return None, "keeps values above a fixed threshold: how many depends on the values' scale."
    return None, ""


def _range(values):
    """'0.877' or '0.85-0.88' (4 significant digits) of the numbers among `values`."""
    vals = sorted(v for v in (number(x) for x in values) if v is not None)
    if not vals:
        return "null"
    lo, hi = f"{vals[0]:.4g}", f"{vals[-1]:.4g}"
    return lo if lo == hi else f"{lo}-{hi}"


def _compressor_name(compression):
    """'topk (ratio: 0.05)': a compressor and its options that are set (resolved.yaml also lists those
    off or unset: false, 0, none)."""
    rest = [f"{k}: {v}" for k, v in compression.items() if k != "name" and v not in ("false", "0", "none", "")]
    return compression.get("name", "none") + (f" ({', '.join(rest)})" if rest else "")


def math_note(runs):
    """HTML saying what the math figures of `runs` ([(summary, run folder)]: one run, or a sweep's
    points) were measured on, and what to expect there from each compressor they used."""
    synthetic = [(s, d) for s, d in runs if s.get("gradient") == "synthetic" and s.get("compression", "none") != "none"]
    if not synthetic:
        return ""
    groups = {}  # one entry per compressor configuration (and proxy size, which top-k's k depends on)
    for summary, run_dir in synthetic:
        compression, model = compression_of(run_dir)
        key = (_compressor_name(compression), model.get("proxy_dim"))
        groups.setdefault(key, (compression, model, []))[2].append(summary)
    items = []
    for (name, _), (compression, model, summaries) in groups.items():
        expected, sentence = synthetic_expectation(compression, model)
        measured = (f"agg_error {_range(s.get('agg_error') for s in summaries)}, compress_error "
                    f"{_range(s.get('compress_error') for s in summaries)}")
        where = "" if len(runs) == 1 else f" ({len(summaries)} point{'s' if len(summaries) != 1 else ''})"
        item = f"For {html.escape(name)}{where}: {html.escape(sentence)} Measured: {html.escape(measured)}."
        if expected is not None:
            item += f" Expected compress_error: <b>{expected:.3f}</b>."
        items.append(item)
    who = "This run has" if len(runs) == 1 else f"{len(synthetic)} of the {len(runs)} points have"
    text = (f"<b>Math figures on a synthetic gradient.</b> {who} no training workload: the ranks aggregate "
            f"standard normal numbers, a new draw per rank and step, which have no low-rank or sparse structure, "
            f"so agg_error and compress_error show each compressor's worst case.")
    body = " ".join(items) if len(items) == 1 else "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"
    return (f"<div class='note'><p>{text} {body if len(items) == 1 else ''}</p>{body if len(items) > 1 else ''}"
            f"<p>Add a <code>workload:</code> to measure them on real gradients.</p></div>")


# ---------------------------------------------------------------------------------------------------
# Tables


def summary_table(summary):
    """A run's summary.json as a key/value table (JSON spellings, units, 4 significant digits)."""
    items = [(k, show(k, v)) for k, v in summary.items()]
    half = (len(items) + 1) // 2
    rows = []
    for i in range(half):
        cells = []
        for k, v in (items[i], items[i + half] if i + half < len(items) else ("", "")):
            cells.append(f"<th>{html.escape(k)}</th><td>{html.escape(v)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return "<table class='kv'>" + "".join(rows) + "</table>"


def results_columns(table, sweep):
    """The results table's columns: id, status, swept keys (as written), the figures readers look for
    first, then the rest; SI copies of swept values and summary fields that repeat a swept key's
    values in every row are left out."""
    si_copies = {sweep.numeric[k] for k in sweep.keys if sweep.numeric.get(k) not in (None, k)}
    repeats = set()
    for c in table.columns:
        if c in sweep.keys or c in si_copies:
            continue
        for k in sweep.keys:
            if k.split(".")[0] == c or k.split(".")[-1] == c:
                if (table[c].astype(str) == table[k].astype(str)).all():
                    repeats.add(c)
    ordered = [c for c in ["id", "status"] + sweep.keys + (["repeat"] if "repeat" in table.columns else [])]
    ordered += [c for c in FIRST_COLUMNS if c in table.columns]
    ordered += [c for c in table.columns if c not in ordered and c not in si_copies and c not in repeats]
    return ordered


def readable_table(table, keep=("id",)):
    """(columns every row shares as (key, shown value) pairs, HTML of the others): a table narrow
    enough to read, the shared columns said once above it, every cell in its unit."""
    table = table.fillna("").astype(str)
    constant = [c for c in table.columns if table[c].nunique() <= 1 and len(table) > 1 and c not in keep]
    shared = [(c, show(c, table[c].iloc[0])) for c in constant if table[c].iloc[0] != ""]
    varying = [c for c in table.columns if c not in constant]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in varying)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(show(c, row[c]))}</td>" for c in varying) + "</tr>"
                   for _, row in table.iterrows())
    return shared, f"<table class='results'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


STYLE = ("body{font-family:sans-serif;max-width:1200px;margin:auto;padding:0 12px}img{max-width:100%}"
         "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px}"
         "table.results td{text-align:right}table.kv th{text-align:left;background:#f4f4f4;font-weight:normal}"
         "table.kv td{min-width:12em}.scroll{overflow-x:auto}.shared{font-size:12px;line-height:1.8}"
         ".shared span{display:inline-block;margin-right:18px;white-space:nowrap}"
         ".note{background:#fff8e1;border-left:4px solid #f0b400;padding:6px 10px}")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="a sweep's output folder (with results.csv) or a run folder")
    p.add_argument("-o", "--out", help="HTML file (default: PATH/report.html)")
    a = p.parse_args()
    if not is_run_folder(a.path) and not os.path.isfile(os.path.join(a.path, "results.csv")):
        p.exit(2, f"report.py: error: {a.path}: neither a run folder (summary.json) nor a sweep folder "
                  f"(results.csv)\n")
    out = a.out or os.path.join(a.path, "report.html")
    base = os.path.dirname(os.path.abspath(out))
    fig_dir = os.path.join(base, "figures")
    parts = []
    if is_run_folder(a.path):
        source = a.path
        summary, steps = read_run(a.path)
        name = plots.run_name(a.path)
        title = f"aggsim run {name}"
        intro = summary_table(summary) + math_note([(summary, a.path)])
        shared, table_html = readable_table(steps, keep=("step",))
        table_title = "Steps (steps.csv)"
    else:
        source = Sweep(a.path)
        name = os.path.basename(os.path.normpath(source.dir))
        table = source.results.iloc[source.natural_order(source.results)]
        counts = table["status"].value_counts().to_dict()
        title = f"aggsim sweep {name}"
        swept = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(', '.join(dict.fromkeys(table[k])))}</td></tr>"
                        for k in source.keys)
        intro = (f"<p>{len(table)} points ({', '.join(f'{n} {s}' for s, n in counts.items())}).</p>"
                 f"<table class='kv'><tr><th colspan=2>swept keys and their values</th></tr>{swept}</table>")
        runs = []
        for i in source.points.get("id", []):
            with open(os.path.join(source.dir, "runs", i, "summary.json")) as f:
                runs.append((json.load(f), os.path.join(source.dir, "runs", i)))
        intro += math_note(runs)
        shared, table_html = readable_table(table[results_columns(table, source)])
        table_title = "Results (results.csv)"
    parts += [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
              f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>", intro]
    for fig_title, path, why in figures(source, fig_dir, name):
        parts.append(f"<h2>{html.escape(fig_title)}</h2>")
        if path:
            rel = os.path.relpath(path, base)
            parts.append(f"<img src='{html.escape(rel)}' alt='{html.escape(fig_title)}'>")
        else:
            parts.append(f"<p><i>{html.escape(why)}</i></p>")
    parts.append(f"<h2>{table_title}</h2>")
    if shared:
        parts.append("<p class='shared'>Common to every row: " + "".join(
            f"<span><b>{html.escape(k)}</b> {html.escape(v)}</span>" for k, v in shared) + "</p>")
    parts.append(f"<div class='scroll'>{table_html}</div>")
    parts.append("</body></html>\n")
    with open(out, "w") as f:
        f.write("\n".join(parts))
    print(out)


if __name__ == "__main__":
    main()
