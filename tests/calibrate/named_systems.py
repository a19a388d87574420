#!/usr/bin/env python3
"""Named systems against published nccl-tests (and RCCL-tests) all-reduce runs, without calibration:
for each run below, `aggsim compare` of `platform: {system: NAME, nodes: N}` with the published log
(tests/data/calibration; sources in tests/data/README.md), every size from 1 GiB. Writes
tests/data/calibration/validation/systems.csv, which platforms/PUBLISHED.md renders
(tests/bench/render.py) and tests/calibrate/test_named_systems_published.cpp recomputes row by row.
NCCL settings on a log's launch line (NCCL_MIN_CTAS, NCCL_ALGO, ...) are followed, as `compare`
follows them. A run's other settings, as its source states them, go in as scenario keys: of
nccl_allreduce (`algorithm`, the `settings` column: the NCCL environment its log does not print)
and of the platform beside `system` (`platform`, the `platform_settings` column: where the machine
differs from the named system's defaults, e.g. Oracle's GB300 trays with 8 x 400 Gb/s RoCE NICs
and racks of 16 trays). Every log is given its shape (`--shape LOG=RANKSxNODES`): logs without rank
lines need it, and so do device lists their posters shortened with "..."; `compare` checks that the
rank lines a log does show agree with it.
Runs not held to that (MISSED below: outside NCCL's defaults) go to validation/systems_missed.csv instead,
with the model under NCCL's own choice and under each algorithm NCCL could have run (rendered in
platforms/PUBLISHED.md; not checked by the test). Both lists are recomputed from the build: when the
model changes, rerun this and move runs between RUNS and MISSED.
    tests/calibrate/named_systems.py [BUILD_DIR]
"""
import csv, os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests/data/calibration")
OUT = os.path.join(DATA, "validation/systems.csv")
GIB = 1 << 30

# Platform keys of runs on machines built otherwise than the named system (tests/data/README.md).
# Oracle's BM.GPU.GB300.4 trays: 8 x 400 Gb/s RoCE NICs (not 4 x 800 Gb/s); the one-rack run used 16
# trays and the two-rack run 32, so a rack of 16 trays is one NVLink domain (smaller runs: one domain).
OCI_GB300 = "nics_per_node: 8, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, fabric: roce, nvlink_domain: {}"
# Oracle's BM.GPU4.8: 8 x A100 40GB and 16 x 100 Gb/s RoCE NICs, two beside each GPU, which NCCL
# drives together; the model joins a GPU to one NIC (GPU g to NIC g mod nics_per_node), so the named
# system's 8 x 200 Gb/s stand for them (the same rate a GPU), over RoCE.
OCI_A100 = "fabric: roce"

# (system, nodes, ranks, log[, settings]): the log is DATA/<log>_all_reduce.log; settings, a dict of
# scenario keys as its source states them: "algorithm", keys of nccl_allreduce (the NCCL environment
# the log does not print; tests/data/README.md: the twenty-rack run's job had NCCL_NVLS_ENABLE=0),
# and "platform", keys beside `system`.
RUNS = [
    ("dgx_h100", 1, 8, "h100_q2ndr_1node"),
    ("dgx_h100", 1, 8, "voltagepark_h100_1node"),
    ("dgx_h100", 2, 16, "xe9680_h100_2node"),
    ("dgx_h100", 2, 16, "h100_ib400_2node"),
    ("dgx_h100", 2, 16, "h100_ib400_ring_ctas24_2node"),
    ("dgx_h100", 4, 32, "xe9680_h100_4node"),
    ("dgx_h100", 4, 32, "h100_ib400_4node"),
    ("dgx_h100", 4, 32, "voltagepark_h100_4node"),
    ("dgx_h100", 8, 64, "h100_ib400_8node"),
    ("dgx_h100", 8, 64, "h100_ib400_ctas24_8node"),
    ("gb200_nvl72", 18, 72, "coreweave_gb200_nvl72_1rack"),
    ("gb200_nvl72", 36, 144, "coreweave_gb200_nvl72_2rack"),
    ("gb200_nvl72", 360, 1440, "coreweave_gb200_nvl72_20rack", {"algorithm": "nvls: off"}),
    ("mi300x", 1, 8, "amd_mi300x_1node"),
    ("mi300x", 2, 16, "amd_mi300x_2node"),
    ("mi325x", 1, 8, "amd_mi325x_1node"),
    ("mi325x", 2, 16, "amd_mi325x_2node"),
    ("mi325x", 4, 32, "amd_mi325x_4node"),
    ("mi325x", 8, 64, "amd_mi325x_8node"),
    ("hgx_h200", 1, 8, "azure_h200_1node", {"algorithm": "min_channels: 32"}),
    ("hgx_h200", 1, 8, "azure_h200_nhc_1node"),
    ("hgx_h200", 2, 16, "h200_roce400_2node", {"platform": "fabric: roce"}),
    ("gb300_nvl72", 1, 4, "oci_gb300_1tray", {"platform": OCI_GB300.format(1)}),
    ("gb300_nvl72", 2, 8, "oci_gb300_2tray", {"platform": OCI_GB300.format(2)}),
    ("gb300_nvl72", 16, 64, "oci_gb300_16tray", {"platform": OCI_GB300.format(16)}),
    ("gb300_nvl72", 32, 128, "oci_gb300_32tray", {"platform": OCI_GB300.format(16)}),
    ("dgx_b200", 1, 8, "gcp_a4_b200_1node"),
    ("dgx_a100", 1, 8, "oci_a100_1node"),
    ("dgx_a100", 2, 16, "oci_a100_2node", {"platform": OCI_A100}),
]


# Runs compared but not held to 15 %, each for a reason platforms/PUBLISHED.md gives: Google Cloud's
# two A4 nodes ran NCCL under Google's tuner plugin, whose configuration is not published (it may set
# the algorithm, protocol and channels), with four times NCCL's NVLS chunk, so they are not NCCL's
# defaults, which the model follows; from 2 GiB they lie within 12 %, at 1 GiB 15.4 % above.
# (system, nodes, ranks, log, algorithms NCCL could have run[, settings as in RUNS]).
MISSED = [
    ("dgx_b200", 2, 16, "gcp_a4_b200_2node", ["nvls_tree", "ring", "tree"]),
]
MISSED_OUT = os.path.join(DATA, "validation/systems_missed.csv")

# Runs of RUNS whose algorithm the model's choice is checked against the others NCCL could have run
# (platforms/PUBLISHED.md: which algorithm the two-rack NVL72 runs ran): the same table as MISSED's.
def runs_of(logs):
    """RUNS' entries of these logs, in RUNS' order, with the settings RUNS gives them."""
    return [run for run in RUNS if run[3] in logs]


TWO_RACKS = ["coreweave_gb200_nvl72_2rack", "oci_gb300_32tray"]
ALTERNATIVES = [(*run[:4], ["nvls_tree", "ring", "tree"], *run[4:]) for run in runs_of(TWO_RACKS)]
ALTERNATIVES_OUT = os.path.join(DATA, "validation/systems_alternatives.csv")

# NVLS runs whose calls are fitted as t = a + S / B (out-of-place rows from 512 MiB), measured and
# simulated: what an NVLS call costs beyond its rate on one node or rack and across two
# (kNvlsHeadCallSeconds, kNvlsTreeAcrossDomainsShare; tests/algorithms/test_nccl_nvls.cpp fits the same).
CALL_FITS = runs_of(["h100_q2ndr_1node", "voltagepark_h100_1node", "xe9680_h100_2node", "h100_ib400_2node",
                     "coreweave_gb200_nvl72_1rack", "oci_gb300_16tray"] + TWO_RACKS)
CALL_FITS_OUT = os.path.join(DATA, "validation/nvls_call_fits.csv")


def busbw(nbytes, seconds, ranks):
    """nccl-tests' all-reduce bus bandwidth, GB/s."""
    return nbytes / seconds / 1e9 * 2 * (ranks - 1) / ranks


def compare(aggsim, system, nodes, ranks, log, algorithm="auto", nvls="on", settings=None, smallest=GIB):
    """`aggsim compare`'s rows from `smallest` bytes; settings: {"algorithm": keys, "platform": keys} (RUNS)."""
    settings = settings or {}
    path = os.path.join(DATA, f"{log}_all_reduce.log")
    platform = settings.get("platform", "")
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "s.yaml"), "w") as f:
            f.write(f"name: {system}\nranks: {ranks}\nsteps: 1\n"
                    f"platform: {{system: {system}, nodes: {nodes}{', ' + platform if platform else ''}}}\n"
                    "model: {size: 1MB, math: off}\n"
                    f"algorithm: {{name: nccl_allreduce, nccl_algorithm: {algorithm}, "
                    f"{settings.get('algorithm') or f'nvls: {nvls}'}}}\n")
        # The shape always: compare checks it against the rank lines the log shows.
        args = [aggsim, "compare", "s.yaml", path, "--csv", "c.csv", "--shape", f"{path}={ranks}x{nodes}"]
        subprocess.run(args, cwd=d, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(d, "c.csv")) as f:
            return [r for r in csv.DictReader(f) if int(r["bytes"]) >= smallest]


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
    aggsim = os.path.abspath(os.path.join(build, "aggsim"))
    rows = []
    for system, nodes, ranks, log, *settings in RUNS:
        settings = settings[0] if settings else {}
        for r in compare(aggsim, system, nodes, ranks, log, settings=settings):
            nbytes = int(r["bytes"])
            measured = busbw(nbytes, float(r["measured_s"]), ranks)
            simulated = busbw(nbytes, float(r["simulated_s"]), ranks)
            rows.append([system, nodes, log, f"{nbytes // (1 << 20)} MiB", f"{measured:.1f}", f"{simulated:.1f}",
                         f"{100 * (simulated / measured - 1):+.1f} %", r["choice"], settings.get("algorithm", ""),
                         ranks, settings.get("platform", "")])
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["system", "nodes", "log", "size", "measured_busbw_gb_s", "simulated_busbw_gb_s", "error", "choice",
                    "settings", "ranks", "platform_settings"])
        w.writerows(rows)
    print(f"wrote {OUT}: {len(rows)} rows")
    write_alternatives(aggsim, MISSED, MISSED_OUT)
    write_alternatives(aggsim, ALTERNATIVES, ALTERNATIVES_OUT)
    write_call_fits(aggsim)


def fit(x, y):
    """Least squares y = a + b x: (a, b)."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    b = sum((u - mx) * (v - my) for u, v in zip(x, y)) / sum((u - mx) ** 2 for u in x)
    return my - b * mx, b


def write_call_fits(aggsim):
    """CALL_FITS' t = a + S / B, a in ms and B as busbw in GB/s, of the log and of the model."""
    rows = []
    for system, nodes, ranks, log, *settings in CALL_FITS:
        settings = settings[0] if settings else {}
        r = compare(aggsim, system, nodes, ranks, log, settings=settings, smallest=512 << 20)
        sizes = [int(x["bytes"]) for x in r]
        row = [system, nodes, log, r[0]["choice"]]
        for column in ["measured_s", "simulated_s"]:
            a, per_byte = fit(sizes, [float(x[column]) for x in r])
            row += [f"{a * 1e3:.3f}", f"{2 * (ranks - 1) / ranks / per_byte / 1e9:.1f}"]
        rows.append(row)
    with open(CALL_FITS_OUT, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["system", "nodes", "log", "choice", "measured_a_ms", "measured_busbw_gb_s", "model_a_ms",
                    "model_busbw_gb_s"])
        w.writerows(rows)
    print(f"wrote {CALL_FITS_OUT}: {len(rows)} rows")


def write_alternatives(aggsim, runs, out):
    """`runs`' measured busbw beside the model's under NCCL's choice, NCCL's choice with NVLS off
    (NCCL_NVLS_ENABLE=0, the example jobs' setting) and each forced algorithm."""
    algorithms = sorted({a for run in runs for a in run[4]})
    rows = []
    for system, nodes, ranks, log, algs, *settings in runs:
        settings = settings[0] if settings else {}
        by_algorithm = {a: compare(aggsim, system, nodes, ranks, log, a, settings=settings) for a in ["auto"] + algs}
        by_algorithm["nvls_off"] = compare(aggsim, system, nodes, ranks, log, nvls="off",
                                           settings={"platform": settings.get("platform", "")})
        for i, r in enumerate(by_algorithm["auto"]):
            nbytes = int(r["bytes"])
            measured = busbw(nbytes, float(r["measured_s"]), ranks)
            row = [system, nodes, log, f"{nbytes // (1 << 20)} MiB", f"{measured:.1f}"]
            for a in ["auto", "nvls_off"] + algorithms:
                if a not in by_algorithm:
                    row.append("")
                    continue
                simulated = busbw(nbytes, float(by_algorithm[a][i]["simulated_s"]), ranks)
                row.append(f"{simulated:.1f} ({100 * (simulated / measured - 1):+.0f} %)")
            row += [r["choice"], by_algorithm["nvls_off"][i]["choice"], settings.get("platform", "")]
            rows.append(row)
    with open(out, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["system", "nodes", "log", "size", "measured_busbw_gb_s", "nccl_choice_gb_s",
                    "nvls_off_gb_s"] + [f"{a}_gb_s" for a in algorithms] + ["choice", "nvls_off_choice",
                                                                             "platform_settings"])
        w.writerows(rows)
    print(f"wrote {out}: {len(rows)} rows")


if __name__ == "__main__":
    main()
