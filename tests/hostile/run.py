#!/usr/bin/env python3
"""Feeds every case of a hostile corpus (generate.py) to aggsim.

    run.py CORPUS_DIR --aggsim build/aggsim [--jobs 2] [--timeout 30] [--limit N] [--shuffle SEED]
           [--results FILE]

Each case runs in its own folder; the runner first adds the special files a case may name (a
FIFO, a symlink loop, a folder, an unreadable file, and what its case.json lists). A case without
case.json is one scenario, s.yaml, given to `aggsim validate` and `aggsim run`; a case with one
runs its steps (any aggsim command; `@slurm-scripts DIR` runs the sbatch scripts written there as
Slurm would, with a fake sbatch). For every command it checks:
  - the exit status is one the step allows (0 or 2 unless said otherwise): never a signal, an abort
    (134), exit 1 ("internal error") or a hang (killed after --timeout seconds), except for steps
    the case kills itself (kill -9) or runs under a file-size limit (a full disk);
  - status 2 ends with "aggsim: error: ..." (and its indented context lines and the usage hint;
    SimGrid's warnings or a sweep's progress may come before it) and nothing prints "internal error";
  - no secret of the case (a fragment of a foreign file) appears on stdout or stderr;
and after the case:
  - a `run` that fails leaves nothing behind, one that succeeds a complete output folder
    (summary.json, steps.csv, resolved.yaml) (cases without case.json);
  - every path listed as unchanged is byte for byte as before, every path listed as absent is gone;
  - no temporary aggsim made is left anywhere in the case (a folder holding aggsim's
    .aggsim-temporary marker), and trees listed as the same are byte-identical (a sweep rerun after
    a fault against one that ran uninterrupted);
  - nothing named "pwned" appears (no value is ever executed by a shell).
Prints counts per family and outcome (--verbose: each case as it ends), lists every failure, and
exits 1 if there was one. --results FILE also writes them as JSON with the machine, the date, the
commit, aggsim's version and the commands that made and ran the corpus (tests/hostile/results/).
"""
import argparse
import collections
import concurrent.futures
import fnmatch
import hashlib
import json
import os
import random
import resource
import signal
import socket
import stat
import subprocess
import sys
import time

HOST = socket.gethostname().replace("/", "_").replace("-", "_") or "host"


def prepare(case, spec):
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
    if not spec:
        return
    # Names holding @HOST@ stand for this host (temporaries count on their own host only).
    for root, dirs, files in os.walk(case, topdown=False):
        for name in dirs + files:
            if "@HOST@" in name:
                os.rename(os.path.join(root, name), os.path.join(root, name.replace("@HOST@", HOST)))
    for d in spec.get("dirs", []):
        os.makedirs(os.path.join(case, d), exist_ok=True)
    for link, target in spec.get("links", {}).items():
        quiet(lambda: os.symlink(target, os.path.join(case, link)))
    for fifo in spec.get("fifos", []):
        quiet(lambda: os.mkfifo(os.path.join(case, fifo)))
    for dev in spec.get("devices", []):  # /dev/null's numbers, made here: never a real device
        if os.geteuid() == 0:
            quiet(lambda: os.mknod(os.path.join(case, dev), stat.S_IFCHR | 0o600, os.makedev(1, 3)))


def snapshot(path):
    """Every entry under `path` with its type and content (links as their target)."""
    out = {}
    if not os.path.lexists(path):
        return None
    def one(p, rel):
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            out[rel] = "link:" + os.readlink(p)
        elif stat.S_ISREG(st.st_mode):
            with open(p, "rb") as f:
                out[rel] = hashlib.sha1(f.read()).hexdigest()
        elif stat.S_ISDIR(st.st_mode):
            out[rel] = "dir"
            for name in sorted(os.listdir(p)):
                one(os.path.join(p, name), rel + "/" + name)
        else:
            out[rel] = "special:%o" % stat.S_IFMT(st.st_mode)
    one(path, ".")
    return out


def aggsim_temporaries(case):
    found = []
    for root, dirs, files in os.walk(case):
        if ".aggsim-temporary" in files and os.path.basename(root).startswith("."):
            with open(os.path.join(root, ".aggsim-temporary"), "rb") as f:
                if f.read().startswith(b"aggsim temporary "):
                    found.append(os.path.relpath(root, case))
    return found


def limit_fsize(limit):
    def pre():
        os.setsid()
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return pre


def run_command(aggsim, case, args, timeout, env=None, fsize=None, kill_after=None, sig=9):
    full_env = dict(os.environ)
    for k, v in (env or {}).items():
        full_env[k] = os.path.join(case, v) if k == "TMPDIR" else v
    p = subprocess.Popen([aggsim] + args, cwd=case, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=full_env, preexec_fn=limit_fsize(fsize))
    try:
        if kill_after is not None:
            try:
                out, err = p.communicate(timeout=kill_after)
            except subprocess.TimeoutExpired:
                p.send_signal(sig)
                out, err = p.communicate(timeout=timeout)
        else:
            out, err = p.communicate(timeout=timeout)
        status = p.returncode
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        status = "hang"
    return status, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def run_slurm_scripts(case, folder, timeout):
    """Runs each array script as array task 0 and the merge script, with a fake sbatch on PATH."""
    fake = os.path.join(case, ".fake-bin")
    os.makedirs(fake, exist_ok=True)
    with open(os.path.join(fake, "sbatch"), "w") as f:
        f.write("#!/bin/sh\necho \"$@\" >> \"$(dirname \"$0\")/sbatch.calls\"\necho 42\n")
    os.chmod(os.path.join(fake, "sbatch"), 0o755)
    scripts_dir = os.path.join(case, folder)
    if not os.path.isdir(scripts_dir):
        return 0, "", ""
    env = dict(os.environ, PATH=fake + ":" + os.environ.get("PATH", ""), SLURM_ARRAY_TASK_ID="0",
               SLURM_ARRAY_JOB_ID="42")
    outs, errs, status = "", "", 0
    for name in sorted(os.listdir(scripts_dir)):
        if not (name.endswith(".sbatch") or name == "submit.sh"):
            continue
        try:
            p = subprocess.run(["bash", os.path.join(scripts_dir, name)], cwd=case, env=env, capture_output=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
            status = status or p.returncode
            outs += p.stdout.decode("utf-8", "replace")
            errs += p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            return "hang", outs, errs
    return status, outs, errs


def describe(status, timeout):
    if status == "hang":
        return "hang (> %d s)" % timeout
    if isinstance(status, int) and status < 0:
        return "signal %d" % -status
    return "exit %s" % status


def ends_with_error(text):
    """Whether the output ends with aggsim's error: a line "aggsim: error: ...", then only its
    indented context lines and the usage hint. SimGrid's own warnings or a sweep's progress may come
    before it."""
    lines = [l for l in text.splitlines() if l.strip()]
    while lines and (lines[-1].startswith("  ") or lines[-1].startswith("Run with --help")):
        lines.pop()
    return bool(lines) and lines[-1].startswith("aggsim: error: ")


def check_output(problems, label, status, out, err, ok, secrets):
    if status not in ok:
        problems.append("%s: %s %s" % (label, describe(status, 0), err.strip()[-300:]))
    elif status == 2 and not ends_with_error(err):
        problems.append("%s: exit 2 without 'aggsim: error:' last: %s" % (label, err[-300:]))
    if "internal error" in err:
        problems.append("%s: internal error: %s" % (label, err[-300:]))
    for secret in secrets:
        if secret in err or secret in out:
            problems.append("%s: shows %r from a foreign file: %s" % (label, secret, err[:300]))


def run_legacy(aggsim, case, timeout, problems, outcome):
    before = set(os.listdir(case))
    for verb in ("validate", "run"):
        args = [verb, "s.yaml"] + (["--out", "out", "-q"] if verb == "run" else [])
        status, out, err = run_command(aggsim, case, args, timeout)
        outcome[verb] = status
        check_output(problems, verb, status, out, err, (0, 2), [])
        if verb == "run":
            after = set(os.listdir(case)) - before
            if status == 0:
                for f in ("summary.json", "steps.csv", "resolved.yaml"):
                    if not os.path.isfile(os.path.join(case, "out", f)):
                        problems.append("run: exit 0 but out/%s is missing" % f)
                after.discard("out")
            if after:
                problems.append("run: left %s behind (status %s)" % (sorted(after), status))


def small_enough(validate_out, limits):
    """`validate` printed "FILE: ok: N ranks, M steps, ...": run only mutants that stayed small."""
    words = validate_out.split()
    try:
        i = words.index("ok:")
        return int(words[i + 1]) <= limits["ranks"] and int(words[i + 3].rstrip(",")) <= limits["steps"]
    except (ValueError, IndexError):
        return False


def run_scripted(aggsim, case, spec, timeout, problems, outcome):
    unchanged = {p.replace("@HOST@", HOST): snapshot(os.path.join(case, p.replace("@HOST@", HOST)))
                 for p in spec.get("unchanged", [])}
    secrets = spec.get("secrets", [])
    last_out, last_status = "", None
    for n, step in enumerate(spec["steps"]):
        args = step["args"]
        label = "%s" % " ".join(a if len(a) < 40 else a[:37] + "..." for a in args)
        if "if_small" in step and not (last_status == 0 and small_enough(last_out, step["if_small"])):
            continue
        step_timeout = step.get("timeout", timeout)
        if args[0] == "@slurm-scripts":
            status, out, err = run_slurm_scripts(case, args[1], step_timeout)
            outcome["step%d" % n] = status
            if status == "hang":
                problems.append("%s: hang" % label)
            elif status not in step["ok"]:
                problems.append("%s: exit %s: %s" % (label, status, err.strip()[-300:]))
            for secret in secrets:
                if secret in err or secret in out:
                    problems.append("%s: shows %r" % (label, secret))
            continue
        status, out, err = run_command(aggsim, case, args, step_timeout, step.get("env"), step.get("fsize"),
                                       step.get("kill_after"), step.get("signal", 9))
        outcome["step%d" % n] = status
        ok = list(step["ok"])
        if "kill_after" in step:  # killed by the case itself, or done before
            ok.append(-step.get("signal", 9))
        if "fsize" in step:  # a full disk: input errors and failed points, never a crash
            ok += [1, 2]
        check_output(problems, label, status, out, err, ok, secrets)
        last_out, last_status = out, status
    for path, before in unchanged.items():
        if snapshot(os.path.join(case, path)) != before:
            problems.append("%s was changed or removed" % path)
    for pattern in spec.get("absent", []):
        pattern = pattern.replace("@HOST@", HOST)
        if pattern.endswith("/*"):
            folder = os.path.join(case, pattern[:-2])
            if os.path.isdir(folder) and os.listdir(folder):
                problems.append("%s is not empty: %s" % (pattern[:-2], sorted(os.listdir(folder))[:5]))
        elif os.path.lexists(os.path.join(case, pattern)):
            problems.append("%s is still there" % pattern)
    for a, b in spec.get("same", []):
        sa, sb = snapshot(os.path.join(case, a)), snapshot(os.path.join(case, b))
        if sa != sb:
            differ = sorted(k for k in set(sa or {}) | set(sb or {}) if (sa or {}).get(k) != (sb or {}).get(k))
            problems.append("%s differs from %s: %s" % (a, b, differ[:5]))


def run_case(aggsim, case, timeout):
    spec_path = os.path.join(case, "case.json")
    spec = None
    if os.path.exists(spec_path):
        with open(spec_path) as f:
            spec = json.load(f)
    prepare(case, spec)
    problems = []
    outcome = {}
    if spec is None:
        run_legacy(aggsim, case, timeout, problems, outcome)
    else:
        run_scripted(aggsim, case, spec, timeout, problems, outcome)
    for left in aggsim_temporaries(case):
        if spec is None or not any(left.startswith(u.replace("@HOST@", HOST)) for u in spec.get("unchanged", [])):
            problems.append("temporary left behind: %s" % left)
    for root, dirs, files in os.walk(case):
        if "pwned" in files or "pwned" in dirs:
            problems.append("a value was executed: %s/pwned exists" % root)
    return os.path.basename(case), outcome, problems


def machine():
    """Host, CPU, cores and memory of this machine."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    return {"host": socket.gethostname(), "cpu": cpu, "cores": os.cpu_count(),
            "memory_GiB": round(memory / 2**30, 1), "os": " ".join(os.uname()[0:3])}


def output_of(command, cwd):
    try:
        return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def write_results(args, aggsim, corpus, cases, counts, failures, wall):
    here = os.path.dirname(os.path.abspath(__file__))
    made = {}
    if os.path.exists(os.path.join(corpus, "corpus.json")):
        with open(os.path.join(corpus, "corpus.json")) as f:
            made = json.load(f)
    families = collections.defaultdict(lambda: {"cases": 0, "exit_status": collections.Counter()})
    for case in cases:
        families[os.path.basename(case).split("-")[0]]["cases"] += 1
    for (family, verb, status), n in counts.items():
        families[family]["exit_status"]["%s %s" % (verb, status)] += n
    results = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": output_of(["git", "rev-parse", "HEAD"], here),
        "uncommitted_changes": bool(output_of(["git", "status", "--porcelain", "--untracked-files=no"], here)),
        "aggsim_version": output_of([aggsim, "--version"], here).splitlines()[:1],
        "machine": machine(),
        "generate_command": made.get("command", ""),
        "run_command": " ".join(["tests/hostile/run.py"] + sys.argv[1:]),
        "niceness": os.nice(0),
        "cases": len(cases),
        "aggsim_invocations": sum(counts.values()),
        "wall_s": round(wall),
        "failing_cases": len(failures),
        "families": {f: {"cases": v["cases"], "exit_status": dict(sorted(v["exit_status"].items()))}
                     for f, v in sorted(families.items())},
        "failures": {name: problems for name, problems in failures},
    }
    with open(args.results, "w") as f:
        json.dump(results, f, indent=1, sort_keys=False)
        f.write("\n")


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
    ap.add_argument("--results", metavar="FILE", help="also write the counts and failures as JSON")
    args = ap.parse_args()
    aggsim = os.path.abspath(args.aggsim)
    corpus = os.path.abspath(args.corpus)  # scripts run in a case find the fake sbatch by absolute path
    cases = sorted(os.path.join(corpus, c) for c in os.listdir(corpus) if os.path.isdir(os.path.join(corpus, c)))
    if args.shuffle is not None:
        random.Random(args.shuffle).shuffle(cases)
    if args.limit:
        cases = cases[: args.limit]
    counts = collections.Counter()
    failures = []
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for name, outcome, problems in pool.map(lambda c: run_case(aggsim, c, args.timeout), cases):
            if args.verbose:
                print("case %s %s %s" % (name, " ".join("%s=%s" % kv for kv in outcome.items()),
                                         "FAIL" if problems else "ok"), flush=True)
            family = name.split("-")[0]
            for verb, status in outcome.items():
                counts[(family, verb if not verb.startswith("step") else "step", status)] += 1
            if problems:
                failures.append((name, problems))
    invocations = sum(counts.values())
    wall = time.monotonic() - start
    print("%d cases, %d aggsim invocations, %.0f s" % (len(cases), invocations, wall))
    if args.results:
        write_results(args, aggsim, corpus, cases, counts, failures, wall)
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
