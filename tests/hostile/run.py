#!/usr/bin/env python3
"""Feeds every case of a hostile corpus (generate.py) to `aggsim validate` and `aggsim run`.

    run.py CORPUS_DIR --aggsim build/aggsim [--jobs 2] [--timeout 30] [--limit N]

Each case runs in its own folder; the runner first adds the special files a case may name (a
FIFO, a symlink loop, a folder, an unreadable file). It checks, for both verbs:
  - exit status 0 or 2 only: never a signal, an abort (134), exit 1 ("internal error"), a hang
    (killed after --timeout seconds);
  - status 2 prints "aggsim: error: ..." and nothing saying "internal error";
  - `run` that fails leaves nothing behind (no output folder, no hidden temporary folder); `run`
    that succeeds leaves a complete output folder (summary.json, steps.csv, resolved.yaml);
  - nothing named "pwned" appears (no value is ever executed by a shell).
Prints counts per family and outcome (--verbose: each case as it ends), lists every failure, and
exits 1 if there was one.
"""
import argparse
import collections
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys


def prepare(case):
    def quiet(f):
        try:
            f()
        except OSError:
            pass
    quiet(lambda: os.mkfifo(os.path.join(case, "fifo")))
    quiet(lambda: os.symlink("loop2", os.path.join(case, "loop1")))
    quiet(lambda: os.symlink("loop1", os.path.join(case, "loop2")))
    quiet(lambda: os.symlink("self", os.path.join(case, "self")))
    quiet(lambda: os.mkdir(os.path.join(case, "dir")))
    path = os.path.join(case, "noperm")
    if not os.path.exists(path):
        with open(path, "w") as f:
            f.write("ranks: 2\n")
        os.chmod(path, 0)


def run_case(aggsim, case, timeout):
    prepare(case)
    before = set(os.listdir(case))
    problems = []
    outcome = {}
    for verb in ("validate", "run"):
        args = [aggsim, verb, "s.yaml"] + (["--out", "out", "-q"] if verb == "run" else [])
        try:
            p = subprocess.run(args, cwd=case, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
            status, err = p.returncode, p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            status, err = "hang", ""
        outcome[verb] = status
        if status not in (0, 2):
            problems.append("%s: %s %s" % (verb, "hang (> %d s)" % timeout if status == "hang" else
                                           "signal %d" % -status if isinstance(status, int) and status < 0 else
                                           "exit %s" % status, err.strip()[-300:]))
        elif status == 2 and not err.startswith("aggsim: error: "):
            problems.append("%s: exit 2 without 'aggsim: error:': %s" % (verb, err[:300]))
        if "internal error" in err:
            problems.append("%s: internal error: %s" % (verb, err[-300:]))
        if verb == "run":
            after = set(os.listdir(case)) - before
            if status == 0:
                for f in ("summary.json", "steps.csv", "resolved.yaml"):
                    if not os.path.isfile(os.path.join(case, "out", f)):
                        problems.append("run: exit 0 but out/%s is missing" % f)
                after.discard("out")
            if after:
                problems.append("run: left %s behind (status %s)" % (sorted(after), status))
    for root, dirs, files in os.walk(case):
        if "pwned" in files or "pwned" in dirs:
            problems.append("a value was executed: %s/pwned exists" % root)
    return os.path.basename(case), outcome, problems


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("--aggsim", required=True)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=30)
    ap.add_argument("--limit", type=int, default=0)
    ap.add_argument("--verbose", action="store_true", help="print each case's outcome as it ends")
    ap.add_argument("--shuffle", type=int, default=None, metavar="SEED",
                    help="run the cases in a seeded random order (a partial run then samples every family)")
    args = ap.parse_args()
    aggsim = os.path.abspath(args.aggsim)
    cases = sorted(os.path.join(args.corpus, c) for c in os.listdir(args.corpus))
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(cases)
    if args.limit:
        cases = cases[: args.limit]
    counts = collections.Counter()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, outcome, problems in pool.map(lambda c: run_case(aggsim, c, args.timeout), cases):
            if args.verbose:
                print("case %s validate=%s run=%s %s" % (name, outcome.get("validate"), outcome.get("run"),
                                                         "FAIL" if problems else "ok"), flush=True)
            family = name.split("-")[0]
            for verb, status in outcome.items():
                counts[(family, verb, status)] += 1
            if problems:
                failures.append((name, problems))
    print("%d cases, %d aggsim invocations" % (len(cases), 2 * len(cases)))
    families = sorted({f for f, _, _ in counts})
    for family in families:
        row = ", ".join("%s %s: %d" % (verb, status, n) for (f, verb, status), n in sorted(
            counts.items(), key=lambda kv: (kv[0][1], str(kv[0][2]))) if f == family)
        print("  %-8s %s" % (family, row))
    print("%d failing cases" % len(failures))
    for name, problems in failures:
        for p in problems:
            print("FAIL %s: %s" % (name, p))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
