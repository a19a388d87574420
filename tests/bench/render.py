#!/usr/bin/env python3
"""Renders measurement CSVs into the Markdown files that show them, so the tables cannot drift
from the data. A table is a block

    <!-- table: tests/bench/results/nccl.csv columns: case,ranks,cpu_s -->
    ...(rendered rows, replaced on every run)...
    <!-- end table -->

(`columns:` is optional: all columns by default; the source line is written under the table).
`latest: case,ranks` keeps, of the rows with equal values in those columns, the last one (results
files append a row per measurement), in the order the first of each appears:

    <!-- table: tests/bench/results/nccl.csv columns: case,ranks,cpu_s latest: case,ranks -->

    tests/bench/render.py FILE.md...          rewrite the blocks in place
    tests/bench/render.py --check FILE.md...  exit 1 naming each file whose blocks are stale
"""
import csv, os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BLOCK = re.compile(r"(<!-- table: (\S+)(?: columns: (\S+))?(?: latest: (\S+))? -->\n)(.*?)(<!-- end table -->)",
                   re.S)


def latest_rows(rows, keys):
    """The last row of each value of `keys`, in the order the values first appear."""
    last = {}
    for r in rows:
        last[tuple(r[k] for k in keys)] = r  # a dict keeps the order keys were first inserted
    return list(last.values())


def render_table(path, columns, latest=None):
    with open(os.path.join(ROOT, path), newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        return f"(no rows in {path})\n"
    cols = columns.split(",") if columns else list(rows[0].keys())
    keys = latest.split(",") if latest else []
    for c in cols + keys:
        if c not in rows[0]:
            raise SystemExit(f"render.py: {path}: no column {c!r} (columns: {', '.join(rows[0])})")
    if keys:
        rows = latest_rows(rows, keys)
    out = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    for r in rows:
        out += "| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |\n"
    return out + f"\nData: [`{path}`](/{path}); rendered by `tests/bench/render.py`.\n"


def render(text):
    return BLOCK.sub(lambda m: m.group(1) + render_table(m.group(2), m.group(3), m.group(4)) + m.group(6), text)


def main(argv):
    check = argv[:1] == ["--check"]
    files = argv[1:] if check else argv
    stale = []
    for name in files:
        with open(name) as f:
            text = f.read()
        new = render(text)
        if new != text:
            if check:
                stale.append(name)
            else:
                with open(name, "w") as f:
                    f.write(new)
    for name in stale:
        print(f"{name}: tables differ from their data; run tests/bench/render.py {name}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
