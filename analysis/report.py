#!/usr/bin/python3
"""One-page HTML report of a sweep (or of one run folder): every figure the data allows, and the
results table. Writes DIR/report.html and its PNGs in DIR/figures/.

  report.py SWEEP_OUT_DIR [-o report.html]
"""
import argparse
import contextlib
import html
import io
import os


import plots
from aggsim_data import Sweep, is_run_folder, number, read_run


def figures(source, fig_dir):
    """(title, png path or None, why not) for each figure."""
    out = []

    def add(title, name, draw):
        said = io.StringIO()  # a figure that cannot be drawn prints why
        with contextlib.redirect_stdout(said):
            path = draw(os.path.join(fig_dir, name))
        print(said.getvalue(), end="")
        out.append((title, path, said.getvalue().strip() or "not available for this data"))

    add("Step time breakdown", "breakdown.png", lambda p: plots.breakdown(source, p))
    if isinstance(source, Sweep):
        for key in source.numeric_keys():
            safe = key.replace(".", "_")
            add(f"Mean step time vs {key}", f"versus_{safe}.png", lambda p, k=key: plots.versus(source, k, p))
        add("Loss vs simulated time", "loss.png", lambda p: plots.loss_vs_time(source, p))
        add("Time to target loss", "time_to_target.png", lambda p: plots.time_to_target(source, p))
        add("Bytes sent vs final loss", "bytes_loss.png", lambda p: plots.bytes_vs_loss(source, p))
        traced = [i for i in source.points.get("id", []) if os.path.isfile(os.path.join(source.dir, "runs", i, "trace.json"))]
        if traced:  # the timeline of the first traced point
            run = os.path.join(source.dir, "runs", traced[0])
            add(f"Timeline of point {traced[0]}", "timeline.png", lambda p: plots.timeline(run, p))
            add(f"Busiest links of point {traced[0]}", "links.png", lambda p: plots.links(run, p))
    else:
        add("Loss vs simulated time", "loss.png", lambda p: plots.loss_vs_time(source, p))
        if os.path.isfile(os.path.join(source, "trace.json")):
            add("Timeline", "timeline.png", lambda p: plots.timeline(source, p))
            add("Busiest links", "links.png", lambda p: plots.links(source, p))
    return out


def cell(value):
    """A table cell for people: numbers to 4 significant digits, everything else as written."""
    v = number(value)
    if v is None or str(value).strip() == "":
        return str(value)
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v):,}" if abs(v) >= 1e4 else str(int(v))
    return f"{v:.4g}"


def readable_table(table):
    """(constant columns as 'key = value' pairs, HTML of the varying columns): a results table
    narrow enough to read, the columns every row shares said once above it."""
    table = table.fillna("").astype(str)
    constant = [c for c in table.columns if table[c].nunique() <= 1 and len(table) > 1 and c != "id"]
    shared = [(c, cell(table[c].iloc[0])) for c in constant if table[c].iloc[0] != ""]
    varying = table[[c for c in table.columns if c not in constant]].apply(lambda col: col.map(cell))
    return shared, varying.to_html(index=False, border=0, na_rep="")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", help="a sweep's output folder (with results.csv) or a run folder")
    p.add_argument("-o", "--out", help="HTML file (default: PATH/report.html)")
    a = p.parse_args()
    out = a.out or os.path.join(a.path, "report.html")
    base = os.path.dirname(os.path.abspath(out))
    fig_dir = os.path.join(base, "figures")
    if is_run_folder(a.path):
        source = a.path
        summary, table = read_run(a.path)
        title = f"aggsim run {summary.get('scenario', '')}"
        intro = ", ".join(f"{k}={v}" for k, v in summary.items())
    else:
        source = Sweep(a.path)
        table = source.results.iloc[source.natural_order(source.results)]
        counts = table["status"].value_counts().to_dict()
        title = f"aggsim sweep {os.path.basename(os.path.normpath(source.dir))}"
        intro = f"{len(table)} points ({', '.join(f'{n} {s}' for s, n in counts.items())}); swept: " + \
                ", ".join(source.keys)
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1200px;margin:auto}img{max-width:100%}"
             "table{border-collapse:collapse;font-size:11px}td,th{border:1px solid #ccc;padding:2px 4px;"
             "text-align:right}.scroll{overflow-x:auto}.shared{font-size:12px;line-height:1.8}"
             ".shared span{display:inline-block;margin-right:18px;white-space:nowrap}</style>",
             f"</head><body><h1>{html.escape(title)}</h1><p>{html.escape(intro)}</p>"]
    for fig_title, path, why in figures(source, fig_dir):
        parts.append(f"<h2>{html.escape(fig_title)}</h2>")
        if path:
            rel = os.path.relpath(path, base)
            parts.append(f"<img src='{html.escape(rel)}' alt='{html.escape(fig_title)}'>")
        else:
            parts.append(f"<p><i>{html.escape(why)}</i></p>")
    shared, table_html = readable_table(table)
    parts.append("<h2>Results</h2>")
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
