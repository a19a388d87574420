#!/usr/bin/python3
"""Checks that no #include runs from a lower layer to a higher one.

Layers, bottom first; a file may include files of its own layer and of the layers below it. The
same list is drawn in README.md (Layout).
  check_layers.py [ROOT]     exit 1 and print every upward include found under ROOT/sim, ROOT/algorithms
  check_layers.py --self-test  checks that an upward include in a scratch tree is reported
"""
import pathlib
import re
import sys
import tempfile

import checker

LAYERS = [
    ("core", "sim/core/"),            # errors, params, units, random streams, string helpers
    ("metrics", "sim/metrics/"),      # step log, trace recorder, link usage
    ("comm", "sim/comm/"),            # the only code touching mailboxes
    ("api", "sim/api/"),              # what algorithms see: RankContext, RankLayout, Aggregator, ReduceOp
    ("platform", "sim/platform/"),    # XML checks, generators, rank -> host mapping
    ("workload", "sim/workload/"),    # training problems, compute-time model
    ("algorithms", "algorithms/"),    # every algorithm, compressor, transport; registry (the tables)
    ("scenario", "sim/scenario/"),    # YAML -> checked, resolved scenario
    ("engine", "sim/engine/"),        # prepare stage, one actor per rank, the simulation
    ("output", "sim/output/"),        # run folder files (report), atomic writes
    ("sweep", "sim/sweep/"),          # sweep expansion, local and Slurm runners
    ("calibrate", "sim/calibrate/"),  # measurement readers, factor fitting, calibrate and compare
    ("cli", "sim/cli/"),              # aggsim's verbs
]

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def layer_of(path):
    for index, (name, prefix) in enumerate(LAYERS):
        if path.startswith(prefix):
            return index, name
    return None, None


def sources(root):
    """Every C++ file under ROOT/sim and ROOT/algorithms: (its path relative to ROOT, its text)."""
    root = pathlib.Path(root)
    for folder in ("sim", "algorithms"):
        for source in sorted((root / folder).rglob("*")):
            if source.suffix in (".hpp", ".cpp", ".h"):
                yield source.relative_to(root).as_posix(), source.read_text(encoding="utf-8")


def upward_includes(root):
    found = []
    for relative, text in sources(root):
        here, here_name = layer_of(relative)
        if here is None:
            found.append(f"{relative}: in no layer (add its folder to LAYERS)")
            continue
        for match in INCLUDE.finditer(text):
            target, target_name = layer_of(match.group(1))
            if target is not None and target > here:
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{relative}:{line}: layer {here_name} includes {match.group(1)} "
                             f"(layer {target_name}, above it)")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        (root / "sim/core").mkdir(parents=True)
        (root / "sim/engine").mkdir(parents=True)
        (root / "sim/engine/run.hpp").write_text('#include "sim/core/ok.hpp"\n')
        (root / "sim/core/ok.hpp").write_text("#pragma once\n")
        if upward_includes(root):
            print("self-test: a downward include was reported")
            return 1
        (root / "sim/core/bad.hpp").write_text('#pragma once\n#include "sim/engine/run.hpp"\n')
        found = upward_includes(root)
    return checker.self_test_result(
        found, ["sim/core/bad.hpp:2: layer core includes sim/engine/run.hpp (layer engine, above it)"],
        "the upward include")


if __name__ == "__main__":
    sys.exit(checker.run(sys.argv, upward_includes, self_test,
                         lambda n: f"{n} include(s) against the layer order" if n
                         else "layers: no include runs upward"))
