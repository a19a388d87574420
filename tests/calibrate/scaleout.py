#!/usr/bin/env python3
"""Scale-out validation of the nccl_allreduce calibration on public nccl-tests logs: for each pair,
`aggsim calibrate` on the k-node log(s) and `aggsim compare` on the log(s) of >= 2k nodes of the
same cluster, every size the logs hold. Writes each compare CSV to
tests/data/calibration/nccl/results/PAIR.csv, the calibration beside it (PAIR.calibration.yaml and
its report, the fit's error on its own points) and one summary row per pair (held-out
geometric-mean error above and below 1 MiB, against the targets 10 % and 25 %, and the fit's own)
with machine, date, commit and command to tests/bench/results/nccl_scaleout.csv, which
sim/calibrate/VALIDATION.md renders (tests/bench/render.py). CHECKS compare one log with the model
uncalibrated, a setting forced (what NCCL must have run there), into
tests/bench/results/nccl_model_checks.csv. Not run by ctest (too long); tests/calibrate/test_nccl_calibration.cpp checks the same
scale-out on a synthetic machine whose costs are known.
    tests/calibrate/scaleout.py [BUILD_DIR] [PAIR...]
"""
import csv, datetime, math, os, platform, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = "tests/data/calibration"
SCEN = f"{DATA}/nccl"
RESULTS = f"{SCEN}/results"
SUMMARY = "tests/bench/results/nccl_scaleout.csv"

# name: (cluster scenario, fabric, calibration logs, held-out logs)
PAIRS = {
    "h100_ib400_2to4": ("h100_ib400", "InfiniBand", ["h100_ib400_2node_all_reduce.log"], ["h100_ib400_4node_all_reduce.log"]),
    "h100_ib400_4to8": ("h100_ib400", "InfiniBand", ["h100_ib400_4node_all_reduce.log"], ["h100_ib400_8node_all_reduce.log"]),
    "h100_ib400_2to8": ("h100_ib400", "InfiniBand", ["h100_ib400_2node_all_reduce.log"], ["h100_ib400_8node_all_reduce.log"]),
    # Both public two-node runs of that cluster: NCCL's own choice, and NCCL_ALGO=Ring with
    # NCCL_MIN_CTAS=24 (followed from the log's launch line); the last pair predicts the eight-node
    # run with NCCL_MIN_CTAS=24.
    "h100_ib400_2to4_with_ring": ("h100_ib400", "InfiniBand", ["h100_ib400_2node_all_reduce.log", "h100_ib400_ring_ctas24_2node_all_reduce.log"], ["h100_ib400_4node_all_reduce.log"]),
    "h100_ib400_2to8_with_ring": ("h100_ib400", "InfiniBand", ["h100_ib400_2node_all_reduce.log", "h100_ib400_ring_ctas24_2node_all_reduce.log"], ["h100_ib400_8node_all_reduce.log"]),
    "h100_ib400_2to8ctas24_with_ring": ("h100_ib400", "InfiniBand", ["h100_ib400_2node_all_reduce.log", "h100_ib400_ring_ctas24_2node_all_reduce.log"], ["h100_ib400_ctas24_8node_all_reduce.log"]),
    "xe9680_h100_2to4": ("xe9680_h100", "InfiniBand", ["xe9680_h100_2node_all_reduce.log"], ["xe9680_h100_4node_all_reduce.log"]),
    "abci_a100_2to4": ("abci_a100", "InfiniBand", ["abci_a100_2node_all_reduce.log"], ["abci_a100_4node_all_reduce.log"]),
    "abci_a100_4to8": ("abci_a100", "InfiniBand", ["abci_a100_4node_all_reduce.log"], ["abci_a100_8node_all_reduce.log"]),
    "abci_a100_8to16": ("abci_a100", "InfiniBand", ["abci_a100_8node_all_reduce.log"], ["abci_a100_16node_all_reduce.log"]),
    "polaris_a100_2to8": ("polaris_a100", "Slingshot 11 (RDMA)", ["polaris_a100_2node_all_reduce.log"], ["polaris_a100_8node_all_reduce.log"]),
    "polaris_a100_tcp_2to8": ("polaris_a100_tcp", "Slingshot 11 over TCP", ["polaris_a100_tcp_2node_all_reduce.log"], ["polaris_a100_tcp_8node_all_reduce.log"]),
    "alps_gh200_1to2": ("alps_gh200", "Slingshot 11 (RDMA)", ["alps_gh200_1node_all_reduce.log"], ["alps_gh200_2node_all_reduce.log"]),
    "alps_gh200_2to4": ("alps_gh200", "Slingshot 11 (RDMA)", ["alps_gh200_2node_all_reduce.log"], ["alps_gh200_4node_all_reduce.log"]),
    "alps_gh200_4to8": ("alps_gh200", "Slingshot 11 (RDMA)", ["alps_gh200_4node_all_reduce.log"], ["alps_gh200_8node_all_reduce.log"]),
}
MiB = 1 << 20

# The model without a calibration on one log, a setting forced: what NCCL must have run there.
# name: (cluster scenario, log, --set, sizes from which the error is summed up)
CHECKS = {
    "alps_gh200_2node_model_choice": ("alps_gh200", "alps_gh200_2node_all_reduce.log", None, 256 * MiB),
    "alps_gh200_2node_tree": ("alps_gh200", "alps_gh200_2node_all_reduce.log", "algorithm.nccl_algorithm=tree",
                              256 * MiB),
}
CHECKS_SUMMARY = "tests/bench/results/nccl_model_checks.csv"
CHECK_FIELDS = ["check", "log", "set", "from_bytes", "points", "max_abs_err_pct", "choices", "machine", "date",
                "commit", "command"]


def gmean(errors):
    if not errors:
        return ""
    return f"{100 * math.exp(sum(math.log(max(1e-4, abs(e))) for e in errors) / len(errors)):.1f}"


FIELDS = ["pair", "fabric", "calibrated_on", "predicted", "points_ge_1MiB", "gmean_err_ge_1MiB_pct",
          "points_lt_1MiB", "gmean_err_lt_1MiB_pct", "targets_met", "fit_gmean_err_pct", "machine", "date",
          "commit", "command"]


def write_summary(path, rows, fields=FIELDS, order=PAIRS):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for name in order:
            if name in rows:
                w.writerow(rows[name])


def read_summary(path, key):
    if not os.path.exists(path):
        return {}
    with open(path, newline="") as f:
        return {r[key]: r for r in csv.DictReader(f)}


def run(args):
    r = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)} failed:\n{r.stderr}")
    return r.stdout


def main():
    named = set(PAIRS) | set(CHECKS)
    build = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1] in named else "build"
    chosen = [a for a in sys.argv[1:] if a in named] or list(PAIRS) + list(CHECKS)
    aggsim = os.path.abspath(os.path.join(ROOT, build, "aggsim"))
    os.makedirs(os.path.join(ROOT, RESULTS), exist_ok=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    machine = f"{os.cpu_count()} x {platform.machine()}"
    date = datetime.date.today().isoformat()
    summary_path = os.path.join(ROOT, SUMMARY)
    rows = read_summary(summary_path, "pair")
    checks_path = os.path.join(ROOT, CHECKS_SUMMARY)
    checks = read_summary(checks_path, "check")
    for name in chosen:
        if name in CHECKS:
            cluster, log, setting, from_bytes = CHECKS[name]
            out_csv = f"{RESULTS}/{name}.csv"
            run([aggsim, "compare", f"{SCEN}/{cluster}.yaml", f"{DATA}/{log}", *(["--set", setting] if setting else []),
                 "--csv", out_csv])
            with open(os.path.join(ROOT, out_csv), newline="") as f:
                points = [p for p in csv.DictReader(f) if int(p["bytes"]) >= from_bytes]
            checks[name] = {
                "check": name, "log": log, "set": setting or "", "from_bytes": from_bytes, "points": len(points),
                "max_abs_err_pct": f"{100 * max(abs(float(p['rel_error'])) for p in points):.1f}",
                "choices": " ".join(sorted({p["choice"] for p in points})), "machine": machine, "date": date,
                "commit": commit, "command": f"tests/calibrate/scaleout.py {name}",
            }
            print(name, checks[name]["max_abs_err_pct"], checks[name]["choices"])
            write_summary(checks_path, checks, CHECK_FIELDS, CHECKS)
            continue
        cluster, fabric, train, held = PAIRS[name]
        scenario = f"{SCEN}/{cluster}.yaml"
        # The calibration stays beside the points, with its report (the fit's own error per point).
        cal = f"{RESULTS}/{name}.calibration.yaml"
        run([aggsim, "calibrate", scenario, *[f"{DATA}/{t}" for t in train], "--out", cal])
        with open(os.path.join(ROOT, f"{RESULTS}/{name}.calibration.report.txt")) as f:
            fit = [l for l in f if l.startswith("# geometric-mean error:")][-1].split()[3]
        out_csv = f"{RESULTS}/{name}.csv"
        run([aggsim, "compare", scenario, *[f"{DATA}/{h}" for h in held], "--set", f"calibration={cal}",
             "--csv", out_csv])
        with open(os.path.join(ROOT, out_csv), newline="") as f:
            points = list(csv.DictReader(f))
        large = [float(p["rel_error"]) for p in points if int(p["bytes"]) >= MiB]
        small = [float(p["rel_error"]) for p in points if int(p["bytes"]) < MiB]
        g_large, g_small = gmean(large), gmean(small)
        met = (not large or float(g_large) <= 10) and (not small or float(g_small) <= 25)
        nodes = lambda logs: "+".join(sorted({l.split("_")[-3] for l in logs}))
        rows[name] = {
            "pair": name, "fabric": fabric, "calibrated_on": nodes(train), "predicted": nodes(held),
            "points_ge_1MiB": len(large), "gmean_err_ge_1MiB_pct": g_large,
            "points_lt_1MiB": len(small), "gmean_err_lt_1MiB_pct": g_small,
            "targets_met": "yes" if met else "no", "fit_gmean_err_pct": fit, "machine": machine, "date": date, "commit": commit,
            "command": f"tests/calibrate/scaleout.py {name}",
        }
        print(name, rows[name]["gmean_err_ge_1MiB_pct"], rows[name]["gmean_err_lt_1MiB_pct"], rows[name]["targets_met"])
        write_summary(summary_path, rows)  # after every pair: an interrupted run keeps what it did


if __name__ == "__main__":
    main()
