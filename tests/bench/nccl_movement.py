#!/usr/bin/env python3
"""Flow-level against chunk-level movement of nccl_allreduce, case by case: the step time of each
(the cases of tests/algorithms/test_nccl_movement.cpp, which checks the bound) and their relative
difference, written as CSV rows with machine, date, commit and command to
tests/bench/results/nccl_movement.csv (replacing the file). Not run by ctest.
    tests/bench/nccl_movement.py [BUILD_DIR]
"""
import csv, datetime, json, os, platform, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AGGSIM = os.path.abspath(os.path.join(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"), "aggsim"))
OUT = os.path.join(ROOT, "tests", "bench", "results", "nccl_movement.csv")

CLUSTER = "{topology: cluster, nodes: 8, bandwidth: 100Gbps, latency: 1us}"
RAILS = ("{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 4, nic_bandwidth: 100Gbps, "
         "bandwidth: 100Gbps}")
FAT_TREE = "{topology: fat_tree, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps}"
TORUS = "{topology: torus, nodes: 8, bandwidth: 50Gbps}"
SLOW_NIC = ("{topology: cluster, nodes: 4, gpus_per_node: 2, bandwidth: 100Gbps, "
            "overrides: [{nodes: 2, nic_bandwidth: 10Gbps}]}")

CASES = []
for size in ("64KiB", "4MiB", "64MiB"):
    for proto in ("ll", "ll128", "simple"):
        CASES.append(("cluster 8x1", CLUSTER, 8, size, f"nccl_algorithm: ring, protocol: {proto}"))
for size in ("64KiB", "16MiB"):
    CASES.append(("cluster 8x1", CLUSTER, 8, size, "nccl_algorithm: tree, protocol: simple"))
for size in ("256KiB", "32MiB"):
    for alg in ("ring", "tree"):
        for proto in ("ll128", "simple"):
            CASES.append(("rails 2x4", RAILS, 8, size, f"nccl_algorithm: {alg}, protocol: {proto}"))
CASES += [
    ("fat tree 8x2", FAT_TREE, 16, "16MiB", "nccl_algorithm: ring, protocol: simple"),
    ("fat tree 8x2", FAT_TREE, 16, "16MiB", "nccl_algorithm: tree, protocol: simple"),
    ("torus 8", TORUS, 8, "8MiB", "nccl_algorithm: ring, protocol: simple"),
    ("cluster 8x1", CLUSTER, 8, "10000019B", "nccl_algorithm: ring, protocol: simple, channels: 3"),
    ("slow NIC 4x2", SLOW_NIC, 8, "16MiB", "nccl_algorithm: ring, protocol: simple"),
]


def step_time(work, platform_yaml, ranks, size, algorithm, movement):
    scenario = os.path.join(work, "s.yaml")
    with open(scenario, "w") as f:
        f.write(f"name: movement\nranks: {ranks}\nsteps: 1\nplatform: {platform_yaml}\n"
                f"model: {{size: {size}, math: off}}\n"
                f"algorithm: {{name: nccl_allreduce, {algorithm}, movement: {movement}}}\n")
    out = os.path.join(work, movement)
    subprocess.run([AGGSIM, "run", scenario, "--out", out, "-q", "--force"], check=True, cwd=ROOT)
    with open(os.path.join(out, "summary.json")) as f:
        return json.load(f)["sim_time_s"]


def main():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    machine = f"{os.cpu_count()} x {platform.processor() or platform.machine()}"
    date = datetime.date.today().isoformat()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, platform_yaml, ranks, size, algorithm in CASES:
            flow = step_time(work, platform_yaml, ranks, size, algorithm, "flow")
            chunk = step_time(work, platform_yaml, ranks, size, algorithm, "chunk")
            rows.append([name, ranks, size, algorithm.replace(",", ";"), f"{flow:.9g}", f"{chunk:.9g}",
                         f"{(flow - chunk) / chunk:+.4f}", machine, date, commit,
                         "tests/bench/nccl_movement.py"])
            print(*rows[-1][:7])
    with open(OUT, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["platform", "ranks", "size", "algorithm", "flow_s", "chunk_s", "rel_diff", "machine", "date",
                    "commit", "command"])
        w.writerows(rows)


if __name__ == "__main__":
    main()
