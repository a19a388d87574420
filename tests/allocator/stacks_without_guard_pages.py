#!/usr/bin/env python3
"""Actor stacks allocated without guard pages (SimGrid's calloc path, which aggsim takes at 8,192
ranks and more) cost the aggsim process no more memory than stacks with guard pages (SimGrid's
posix_memalign path): only the pages an actor touches are resident. Both runs use 4 MiB stacks on
1,024 ranks; had calloc written every byte, the first would hold 4 GiB more.
  stacks_without_guard_pages.py AGGSIM"""
import os
import subprocess
import sys
import tempfile

# 1,024 ranks on a cluster of single-GPU hosts, one step of a tree all-reduce of 4 KiB, math off.
SCENARIO = ("{name: stacks, seed: 1, ranks: 1024, steps: 1, network: alpha_beta,"
            " platform: {topology: cluster, hosts: 1024, bandwidth: 10Gbps, latency: 1us},"
            " model: {size: 4KiB, math: off}, algorithm: {name: tree_allreduce}}\n")


def peak_rss_kib(aggsim, scenario, out, extra):
    process = subprocess.Popen([aggsim, "run", scenario, "--out", out, "-q", "--cfg=contexts/stack-size:4096"] + extra)
    _, status, usage = os.wait4(process.pid, 0)
    if status != 0:
        sys.exit(f"aggsim run {' '.join(extra)} exited with status {status}")
    return usage.ru_maxrss


def main():
    aggsim = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        scenario = os.path.join(work, "s.yaml")
        with open(scenario, "w") as f:
            f.write(SCENARIO)
        guarded = peak_rss_kib(aggsim, scenario, os.path.join(work, "guarded"), [])
        unguarded = peak_rss_kib(aggsim, scenario, os.path.join(work, "unguarded"), ["--cfg=contexts/guard-size:0"])
    print(f"peak RSS: {guarded} KiB with guard pages, {unguarded} KiB without")
    # 1,024 stacks of 4 MiB written whole would add 4,194,304 KiB.
    if unguarded > 1.25 * guarded + 65536:
        sys.exit("FAILED: stacks without guard pages are resident beyond what the actors touch")


if __name__ == "__main__":
    main()
