#!/usr/bin/env python3
"""Checks the documentation's shape and its data.

    check_docs.py lengths ROOT   every README.md at most 400 lines, the top-level one at most 250
    check_docs.py tables ROOT    every Markdown table block rendered from a CSV file
                                 (`<!-- table: ... -->`) equals what tests/bench/render.py makes of
                                 its data today
    check_docs.py --self-test    both checks report a long README and a stale table, and a table of
                                 the latest rows per key is not stale
"""
import os, shutil, subprocess, sys, tempfile

TOP_LIMIT, LIMIT = 250, 400
SKIP_DIRS = {".git", "out"}


def markdown_files(root):
    for folder, dirs, files in os.walk(root):
        # build trees (build/, build-asan/, ...), hidden and output folders hold no docs of ours
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith((".", "build")))
        for name in sorted(files):
            if name.endswith(".md"):
                yield os.path.join(folder, name)


def long_readmes(root):
    problems = []
    for path in markdown_files(root):
        if os.path.basename(path) != "README.md":
            continue
        with open(path, encoding="utf-8") as f:
            lines = sum(1 for _ in f)
        top = os.path.dirname(os.path.abspath(path)) == os.path.abspath(root)
        limit = TOP_LIMIT if top else LIMIT
        if lines > limit:
            problems.append(f"{os.path.relpath(path, root)}: {lines} lines, more than {limit}; "
                            "move reference text or measurements into a file beside it")
    return problems


def stale_tables(root):
    files = []
    for path in markdown_files(root):
        with open(path, encoding="utf-8") as f:
            if "<!-- table: " in f.read():
                files.append(path)
    if not files:
        return [f"{root}: no rendered table found (the check would check nothing)"]
    render = os.path.join(root, "tests", "bench", "render.py")
    r = subprocess.run([sys.executable, render, "--check", *files], capture_output=True, text=True)
    return [] if r.returncode == 0 else (r.stdout + r.stderr).strip().splitlines()


def self_test():
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "tests", "bench", "results"))
        os.makedirs(os.path.join(root, "sub"))
        shutil.copy(os.path.join(here, "tests", "bench", "render.py"), os.path.join(root, "tests", "bench"))
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("x\n" * 251)
        with open(os.path.join(root, "sub", "README.md"), "w") as f:
            f.write("x\n" * 400)
        with open(os.path.join(root, "tests", "bench", "results", "t.csv"), "w") as f:
            f.write("a,b\n1,2\n")
        with open(os.path.join(root, "sub", "T.md"), "w") as f:
            f.write("<!-- table: tests/bench/results/t.csv -->\n| a | b |\n|---|---|\n| 1 | 3 |\n<!-- end table -->\n")
        # Results files append a row per measurement: `latest:` shows the last of each key, in first order.
        with open(os.path.join(root, "tests", "bench", "results", "log.csv"), "w") as f:
            f.write("case,cpu_s\nstep,5\nstudy,90\nstep,4\n")
        with open(os.path.join(root, "sub", "L.md"), "w") as f:
            f.write("<!-- table: tests/bench/results/log.csv latest: case -->\n| case | cpu_s |\n|---|---|\n"
                    "| step | 4 |\n| study | 90 |\n\nData: [`tests/bench/results/log.csv`](/tests/bench/results/log.csv); "
                    "rendered by `tests/bench/render.py`.\n<!-- end table -->\n")
        long = long_readmes(root)
        stale = stale_tables(root)
        ok = (len(long) == 1 and long[0].startswith("README.md: 251 lines") and len(stale) == 1 and
              "T.md" in stale[0])
        print("\n".join(long + stale))
        return 0 if ok else 1


def main(argv):
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 2 or argv[0] not in ("lengths", "tables"):
        print(__doc__, file=sys.stderr)
        return 2
    problems = long_readmes(argv[1]) if argv[0] == "lengths" else stale_tables(argv[1])
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
