#!/usr/bin/env python3
"""Flow-level against chunk-level movement of nccl_allreduce, case by case.

Three sets of cases, each a one-step all-reduce run at both movements:
  fixed      the named cases of tests/algorithms/test_nccl_movement.cpp;
  ll128_2x8  NCCL's ring with LL128 on 2 nodes of 8 H100s (the h100_ib400 calibration scenario's
             shape), 4-16 channels forced, 1-64 MiB;
  generated  seeded random platforms (cluster, fat tree, torus, dragonfly, a shipped XML file; 1, 2,
             4 or 8 NICs a node; 0-2 slow NICs or links; 2-32 nodes of 1-8 GPUs), NCCL's ring and
             tree with LL, LL128 and Simple, sizes 8 B - 256 MiB (log-uniform), NCCL's channels, on
             each GPU generation in turn (ampere, hopper, blackwell: algorithm.gpu, whose channel counts,
             network rate a channel and NVLink credit NCCL's model follows).
For each case: both step times, their relative difference, whether the math plane's results
(summary.json's agg_error and rank_spread, a small uneven proxy) are identical, and the CPU seconds
of each run. A case whose chunk-level run would move more than --budget messages is drawn again
(the reference sends every piece: O(channels x ranks^2) messages).

    tests/bench/nccl_movement.py fixed [--build DIR]
    tests/bench/nccl_movement.py ll128_2x8 [--build DIR]
    tests/bench/nccl_movement.py generated [--seed S] [--cases N] [--budget M] [--build DIR]
                                 [--out CSV] [--bound B] [--tree-bound B] [--only 3,17]
    tests/bench/nccl_movement.py summary      (re-derive the summaries from the generated CSV)

Writes tests/bench/results/nccl_movement.csv (fixed), nccl_movement_ll128_2x8.csv (ll128_2x8) or nccl_movement_generated.csv (generated;
--out elsewhere), replacing the file, with machine, date, commit and command on every row. With
--bound, exits 1 when a case differs by more than B or its math differs (ctest runs a few cheap
cases so).
"""
import argparse, csv, datetime, json, math, os, platform, random, re, resource, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "tests", "bench", "results")

# The fixed cases (tests/algorithms/test_nccl_movement.cpp).
CLUSTER = "{topology: cluster, nodes: 8, bandwidth: 100Gbps, latency: 1us}"
RAILS = ("{topology: cluster, nodes: 2, gpus_per_node: 4, nics_per_node: 4, nic_bandwidth: 100Gbps, "
         "bandwidth: 100Gbps}")
FAT_TREE = "{topology: fat_tree, nodes: 8, gpus_per_node: 2, bandwidth: 50Gbps}"
TORUS = "{topology: torus, nodes: 8, bandwidth: 50Gbps}"
SLOW_NIC = ("{topology: cluster, nodes: 4, gpus_per_node: 2, bandwidth: 100Gbps, "
            "overrides: [{nodes: 2, nic_bandwidth: 10Gbps}]}")


def fixed_cases():
    cases = []
    for size in ("64KiB", "4MiB", "64MiB"):
        for proto in ("ll", "ll128", "simple"):
            cases.append(("cluster 8x1", CLUSTER, 8, size, f"nccl_algorithm: ring, protocol: {proto}"))
    for size in ("64KiB", "16MiB"):
        cases.append(("cluster 8x1", CLUSTER, 8, size, "nccl_algorithm: tree, protocol: simple"))
    for size in ("256KiB", "32MiB"):
        for alg in ("ring", "tree"):
            for proto in ("ll128", "simple"):
                cases.append(("rails 2x4", RAILS, 8, size, f"nccl_algorithm: {alg}, protocol: {proto}"))
    cases += [
        ("fat tree 8x2", FAT_TREE, 16, "16MiB", "nccl_algorithm: ring, protocol: simple"),
        ("fat tree 8x2", FAT_TREE, 16, "16MiB", "nccl_algorithm: tree, protocol: simple"),
        ("torus 8", TORUS, 8, "8MiB", "nccl_algorithm: ring, protocol: simple"),
        ("cluster 8x1", CLUSTER, 8, "10000019B", "nccl_algorithm: ring, protocol: simple, channels: 3"),
        ("slow NIC 4x2", SLOW_NIC, 8, "16MiB", "nccl_algorithm: ring, protocol: simple"),
    ]
    return cases


# Shipped XML platforms: (file, hosts, GPUs per node).
XML_FILES = [("platforms/cluster_16.xml", 16, 1), ("platforms/cluster_64.xml", 64, 1),
             ("platforms/dgx_4x8.xml", 32, 8), ("platforms/fat_tree_128.xml", 128, 1),
             ("platforms/torus_64.xml", 64, 1), ("platforms/dragonfly_72.xml", 72, 1)]
BANDWIDTHS = [25, 100, 200, 400]  # Gb/s, a NIC or fabric link
PROTOCOLS = ["ll", "ll128", "simple"]
CHOICES = [(a, p) for a in ("ring", "tree") for p in PROTOCOLS]
# The GPU generations a case runs on, in turn after every algorithm x protocol pair. Hopper is what
# a platform declaring none runs; Ampere has no network rate a channel, Blackwell other channel counts.
GPUS = ["ampere", "hopper", "blackwell"]


def gpu_of(index, choices):
    """The GPU of the index-th case (0-based), in turn, shifted by one each time every choice has run:
    every len(GPUS) cases hold every generation, every len(choices) x len(GPUS) cases every (choice, GPU)
    pair. A turn, not a draw, so the platforms' draws are those of a run without GPUs."""
    return GPUS[(index + index // len(choices)) % len(GPUS)]


def gbps(v):
    return f"{v:g}Gbps"


def draw_case(rng, index, work, choice):
    """One random case: a dict with the scenario's platform (YAML), ranks and NCCL settings; `choice`
    (algorithm, protocol) cycles, so every pair runs. PAT's cases have one GPU a node (where NCCL runs
    it)."""
    one_gpu = choice[0] == "pat"
    topology = rng.choice(["cluster", "fat_tree", "torus", "dragonfly", "xml"])
    case = {"case": index, "topology": topology, "algorithm": choice[0], "protocol": choice[1]}
    # 8 B - 256 MiB, log-uniform, whole floats.
    case["bytes"] = max(4, int(2 ** rng.uniform(3, 28)) // 4 * 4)
    slow = rng.choice([0, 0, 1, 2])
    if topology == "xml":
        name, hosts, gpus = rng.choice([x for x in XML_FILES if x[2] == 1 or not one_gpu])
        ranks = rng.randint(2, min(hosts, 64)) if gpus == 1 else gpus * rng.randint(2, hosts // gpus)
        text = open(os.path.join(ROOT, name)).read()
        links = [m.start() for m in re.finditer(r'<link id="[^"]*" bandwidth="', text)]
        chosen = sorted(rng.sample(links, min(slow, len(links))), reverse=True)
        for at in chosen:  # a link four to ten times slower
            end = text.index('"', text.index('bandwidth="', at) + 11)
            start = text.index('bandwidth="', at) + 11
            value = text[start:end]
            number = float(re.match(r"[0-9.]+", value).group(0))
            unit = value[len(re.match(r"[0-9.]+", value).group(0)):]
            text = text[:start] + f"{number / rng.choice([4, 10]):g}{unit}" + text[end:]
        path = os.path.join(work, f"case{index}.xml")
        with open(path, "w") as f:
            f.write(text)
        case.update(platform=f"{{file: {path}}}", ranks=ranks, nodes=ranks // gpus, gpus=gpus, nics=1,
                    slow=f"{len(chosen)} link(s)" if chosen else "", label=f"{os.path.basename(name)}")
        return case
    nodes = rng.randint(2, 32)
    gpus = 1 if one_gpu else rng.randint(1, 8)
    nics = rng.choice([n for n in (1, 2, 4, 8) if n <= max(1, gpus)])
    bw = rng.choice(BANDWIDTHS)
    keys = [f"topology: {topology}", f"nodes: {nodes}", f"bandwidth: {gbps(bw)}",
            f"latency: {rng.choice(['1us', '2us', '5us'])}"]
    if gpus > 1:
        keys += [f"gpus_per_node: {gpus}", f"intra_bandwidth: {rng.choice(['100GBps', '300GBps', '450GBps'])}"]
    if nics > 1:
        keys.append(f"nics_per_node: {nics}")
    overrides, slow_text = [], []
    for node in rng.sample(range(nodes), slow):
        # A slow NIC (a node of several GPUs has one) or a slow link of the node into the fabric.
        key = "nic_bandwidth" if gpus > 1 and rng.random() < 0.5 else "bandwidth"
        overrides.append(f"{{nodes: {node}, {key}: {gbps(bw / rng.choice([4, 10]))}}}")
        slow_text.append(f"node {node} {key}")
    if overrides:
        keys.append("overrides: [" + ", ".join(overrides) + "]")
    case.update(platform="{" + ", ".join(keys) + "}", ranks=nodes * gpus, nodes=nodes, gpus=gpus, nics=nics,
                slow="; ".join(slow_text), label=f"{topology} {nodes}x{gpus}, {nics} NIC(s)")
    return case


def scenario_text(platform_yaml, ranks, size, algorithm, movement, math_on):
    model = f"{{size: {size}, math: on, proxy_dim: 257}}" if math_on else f"{{size: {size}, math: off}}"
    return (f"name: movement\nranks: {ranks}\nsteps: 1\nplatform: {platform_yaml}\nmodel: {model}\n"
            f"algorithm: {{name: nccl_allreduce, {algorithm}, movement: {movement}}}\n")


def run(aggsim, work, text, tag):
    path = os.path.join(work, f"{tag}.yaml")
    with open(path, "w") as f:
        f.write(text)
    out = os.path.join(work, tag)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([aggsim, "run", path, "--out", out, "-q", "--force"], cwd=ROOT, capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"aggsim run {path} failed ({done.returncode}):\n{text}{done.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(out, "collectives.csv")) as f:
        call = next(csv.DictReader(f))
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return summary, call, cpu


def chunk_messages(case, channels):
    """Messages the chunk-level run sends (NCCL 2.21.5's chunk sizes, algorithms/nccl/nccl_tuning.cpp)."""
    p, data = case["ranks"], case["bytes"]
    if case["algorithm"] == "pat":  # every rank sends p - 1 pieces a loop, chunks of at least 64 KiB
        return channels * p * (p - 1) * max(1, math.ceil(data / (channels * p * 65536)))
    step = {"ll": 65536, "ll128": 614400, "simple": 524288}[case["protocol"]]
    if case["algorithm"] == "ring":
        chunk = {"ll": step / 2, "ll128": step // 16 * 15, "simple": 4 * step}[case["protocol"]]
        slices = 2 if case["protocol"] == "simple" else 1
        loops = max(1, math.ceil(data / (channels * p * chunk)))
        steps = 2 * (p - 1) if case.get("collective", "all_reduce") == "all_reduce" else p - 1
        return channels * p * steps * slices * loops
    chunk = {"ll": step / 2, "ll128": step // 16 * 15, "simple": step}[case["protocol"]]
    return channels * 2 * (p - 1) * max(1, math.ceil(data / channels / chunk))


def context():
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    return f"{os.cpu_count()} x {platform.processor() or platform.machine()}", datetime.date.today().isoformat(), commit


def run_generated(args, aggsim):
    rng = random.Random(args.seed)
    machine, date, commit = context()
    # Reduce-scatter and all-gather run NCCL's ring; nccl_allreduce gives them no training math
    # (model.math: off), so their cases compare times only (fsdp's tests compare their vectors).
    gathering = args.collective != "all_reduce"
    choices = [("ring", p) for p in PROTOCOLS] if gathering else CHOICES
    if args.algorithm == "pat":
        if not gathering:
            sys.exit("--algorithm pat: NCCL runs PAT for reduce_scatter and all_gather only")
        choices = [("pat", "simple")]
    command = "tests/bench/nccl_movement.py " + " ".join(sys.argv[1:])
    rows, failures, index, drawn = [], [], 0, 0
    with tempfile.TemporaryDirectory() as work:
        while index < args.cases:
            drawn += 1
            case = draw_case(rng, drawn, work, choices[index % len(choices)])
            case["collective"] = args.collective
            case["gpu"] = gpu_of(index, choices)
            algorithm = f"gpu: {case['gpu']}, nccl_algorithm: {case['algorithm']}, protocol: {case['protocol']}"
            if gathering:
                algorithm += f", collective: {args.collective}"
            if case["algorithm"] == "pat":  # NCCL's PAT reduce-scatter runs no avg (its PreMulSum)
                algorithm += ", op: sum"
            size = f"{case['bytes']}B"
            flow, call, flow_cpu = run(aggsim, work,
                                       scenario_text(case["platform"], case["ranks"], size, algorithm, "flow",
                                                     not gathering), "flow")
            channels = int(call["channels"])
            if chunk_messages(case, channels) > args.budget:
                continue
            if args.only and index + 1 not in args.only:  # drawn as in the full run, not compared
                index += 1
                continue
            chunk, _, chunk_cpu = run(aggsim, work,
                                      scenario_text(case["platform"], case["ranks"], size, algorithm, "chunk",
                                                    not gathering), "chunk")
            index += 1
            f, c = flow["sim_time_s"], chunk["sim_time_s"]
            rel = (f - c) / c
            math_same = gathering or all(flow[k] == chunk[k] for k in ("agg_error", "rank_spread"))
            # How the flow level moved the call: piece by piece as the chunk level (few_pieces: chunk,
            # the same messages) or by its streams (the flow model).
            moved = "pieces" if flow["messages"] == chunk["messages"] else "streams"
            row = [index, args.seed, args.collective, case["label"], case["platform"].replace(work, "<tmp>"), case["ranks"],
                   case["nodes"], case["gpus"], case["nics"], case["slow"], case["gpu"], case["algorithm"],
                   case["protocol"], channels, case["bytes"], f"{f:.9g}", f"{c:.9g}", f"{rel:+.4f}", "" if gathering else int(math_same), moved,
                   f"{flow_cpu:.2f}", f"{chunk_cpu:.2f}", machine, date, commit, command]
            rows.append(row)
            print(*row[:20], flush=True)
            bound = args.tree_bound if case["algorithm"] == "tree" and args.tree_bound is not None else args.bound
            if bound is not None and (abs(rel) > bound or not math_same):
                failures.append(row)
    suffix = ("" if args.collective == "all_reduce" else "_" + args.collective) + \
        ("_pat" if args.algorithm == "pat" else "")
    out = args.out or os.path.join(RESULTS, f"nccl_movement_generated{suffix}.csv")
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["case", "seed", "collective", "platform", "platform_yaml", "ranks", "nodes", "gpus_per_node", "nics",
                    "slow", "gpu", "algorithm", "protocol", "channels", "bytes", "flow_s", "chunk_s", "rel_diff",
                    "math_identical", "flow_moved", "flow_cpu_s", "chunk_cpu_s", "machine", "date", "commit", "command"])
        w.writerows(rows)
    if not args.out:
        summarize(out, os.path.join(RESULTS, f"nccl_movement_generated{suffix}_summary.csv"))
    for row in failures:
        print("OUT OF BOUND:", *row[:20], file=sys.stderr)
    return 1 if failures else 0


def math_verdict(rows):
    """yes / NO when the cases compared their vectors; n/a for reduce-scatter and all-gather cases."""
    if all(r["math_identical"] == "" for r in rows):
        return "n/a"
    return "yes" if all(r["math_identical"] == "1" for r in rows) else "NO"


def summarize(path, out, top=10):
    """Per algorithm, protocol and GPU generation: cases, those within 5 %, the worst difference and its
    case, whether every case's math was identical; and the `top` worst cases. Two CSVs beside `out`."""
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    context_cols = ["machine", "date", "commit", "command"]
    groups = {}
    gpu_order = {g: i for i, g in enumerate(GPUS)}
    for r in rows:
        groups.setdefault((r["algorithm"], r["protocol"], r.get("gpu", "")), []).append(r)
    with open(out, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["algorithm", "protocol", "gpu", "cases", "within_5pct", "worst_rel_diff", "worst_case",
                    "math_identical", "moved_by_pieces"] + context_cols)
        for (alg, proto, gpu), rs in sorted(groups.items(), key=lambda g: (g[0][:2], gpu_order.get(g[0][2], -1))):
            worst = max(rs, key=lambda r: abs(float(r["rel_diff"])))
            w.writerow([alg, proto, gpu, len(rs), sum(abs(float(r["rel_diff"])) <= 0.05 for r in rs),
                        worst["rel_diff"], worst["case"], math_verdict(rs),
                        sum(r.get("flow_moved") == "pieces" for r in rs)] + [rows[0][c] for c in context_cols])
    worst_out = out.replace("_summary.csv", "_worst.csv")
    with open(worst_out, "w", newline="") as fh:
        w = csv.writer(fh)
        cols = ["case", "platform", "ranks", "nics", "slow", "gpu", "algorithm", "protocol", "channels", "bytes",
                "flow_s", "chunk_s", "rel_diff", "flow_moved"]
        w.writerow(cols + context_cols)
        for r in sorted(rows, key=lambda r: -abs(float(r["rel_diff"])))[:top]:
            w.writerow([r.get(c, "") for c in cols] + [r[c] for c in context_cols])


def run_fixed(args, aggsim):
    machine, date, commit = context()
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, platform_yaml, ranks, size, algorithm in fixed_cases():
            flow, _, _ = run(aggsim, work, scenario_text(platform_yaml, ranks, size, algorithm, "flow", False), "f")
            chunk, _, _ = run(aggsim, work, scenario_text(platform_yaml, ranks, size, algorithm, "chunk", False), "c")
            f, c = flow["sim_time_s"], chunk["sim_time_s"]
            rows.append([name, ranks, size, algorithm.replace(",", ";"), f"{f:.9g}", f"{c:.9g}", f"{(f - c) / c:+.4f}",
                         machine, date, commit, "tests/bench/nccl_movement.py fixed"])
            print(*rows[-1][:7], flush=True)
    with open(os.path.join(RESULTS, "nccl_movement.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["platform", "ranks", "size", "algorithm", "flow_s", "chunk_s", "rel_diff", "machine", "date",
                    "commit", "command"])
        w.writerows(rows)
    return 0


# Two HGX H100 nodes (tests/data/calibration/nccl/h100_ib400.yaml's platform).
H100_2X8 = ("{topology: cluster, nodes: 2, gpus_per_node: 8, intra_bandwidth: 450GBps, intra_latency: 0.5us, "
            "nvswitch: true, nics_per_node: 8, nic_bandwidth: 400Gbps, bandwidth: 400Gbps, latency: 1us, "
            "fabric: infiniband}")


def run_ll128_2x8(args, aggsim):
    """Ring LL128 on two 8-GPU H100 nodes, by channels and size: where a ring's steps are held up by
    its GPU links' sharing among channels (algorithms/nccl/FLOW_MISSES.md)."""
    machine, date, commit = context()
    rows = []
    command = "tests/bench/nccl_movement.py ll128_2x8"
    with tempfile.TemporaryDirectory() as work:
        for channels in (4, 6, 8, 12, 16):
            for size in ("1MiB", "4MiB", "8MiB", "16MiB", "64MiB"):
                algorithm = f"gpu: hopper, nccl_algorithm: ring, protocol: ll128, channels: {channels}"
                flow, _, _ = run(aggsim, work, scenario_text(H100_2X8, 16, size, algorithm, "flow", False), "f")
                chunk, _, _ = run(aggsim, work, scenario_text(H100_2X8, 16, size, algorithm, "chunk", False), "c")
                f, c = flow["sim_time_s"], chunk["sim_time_s"]
                rows.append([channels, size, f"{f:.9g}", f"{c:.9g}", f"{(f - c) / c:+.4f}", machine, date, commit,
                             command])
                print(*rows[-1][:5], flush=True)
    with open(os.path.join(RESULTS, "nccl_movement_ll128_2x8.csv"), "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["channels", "size", "flow_s", "chunk_s", "rel_diff", "machine", "date", "commit", "command"])
        w.writerows(rows)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("set", choices=["fixed", "generated", "summary", "ll128_2x8"])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--budget", type=int, default=3_000_000, help="most chunk-level messages a case may send")
    parser.add_argument("--out", help="CSV to write (generated; default tests/bench/results/nccl_movement_generated.csv)")
    parser.add_argument("--bound", type=float, help="exit 1 if a case differs by more than this (0.05: 5 %%)")
    parser.add_argument("--collective", default="all_reduce", choices=["all_reduce", "reduce_scatter", "all_gather"],
                        help="the collective of the generated cases (reduce_scatter, all_gather: NCCL's ring)")
    parser.add_argument("--algorithm", default="ring", choices=["ring", "pat"],
                        help="reduce_scatter and all_gather: NCCL's ring (every protocol in turn) or PAT (one "
                             "GPU a node)")
    parser.add_argument("--only", type=lambda v: {int(x) for x in v.split(",")},
                        help="compare only these cases (comma-separated numbers) of the seeded run; the others "
                             "are drawn (and run at flow level) as in the full run but not compared")
    parser.add_argument("--tree-bound", type=float, help="the bound for tree cases (default: --bound)")
    args = parser.parse_args()
    aggsim = os.path.abspath(os.path.join(args.build, "aggsim"))
    if args.set == "summary":
        summarize(os.path.join(RESULTS, "nccl_movement_generated.csv"),
                  os.path.join(RESULTS, "nccl_movement_generated_summary.csv"))
        sys.exit(0)
    if args.set == "ll128_2x8":
        sys.exit(run_ll128_2x8(args, aggsim))
    sys.exit(run_generated(args, aggsim) if args.set == "generated" else run_fixed(args, aggsim))


if __name__ == "__main__":
    main()
