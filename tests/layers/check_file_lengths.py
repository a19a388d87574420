#!/usr/bin/python3
"""Checks that no file of a folder that grows by adding files outgrows its limit.

The NCCL model adds an algorithm as a file of its own (algorithms/nccl/README.md, "Adding an NCCL
algorithm"); a file that keeps growing instead is where the next seam belongs. Every file under
each folder of LIMITS, recursively, counts.
  check_file_lengths.py [ROOT]       exit 1 and list every file over its folder's limit
  check_file_lengths.py --self-test  checks that a long file in a scratch tree is reported
"""
import pathlib
import sys
import tempfile

import checker

# (folder, most lines a file under it may have)
LIMITS = [("algorithms/nccl", 500)]


def long_files(root, limits=LIMITS):
    root = pathlib.Path(root)
    found = []
    for folder, limit in limits:
        if not (root / folder).is_dir():
            found.append(f"{folder}: no such folder (update LIMITS in {pathlib.Path(__file__).name})")
            continue
        for path in sorted((root / folder).rglob("*")):
            if not path.is_file():
                continue
            with open(path, "rb") as f:
                lines = sum(1 for _ in f)
            if lines > limit:
                found.append(f"{path.relative_to(root).as_posix()}: {lines} lines, more than {limit}; "
                             "split it at a seam (one algorithm or one engine per file)")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        (root / "algorithms/nccl/calibration").mkdir(parents=True)
        (root / "algorithms/nccl/short.cpp").write_text("x\n" * 500)
        if long_files(root):
            print("self-test: a file of 500 lines was reported")
            return 1
        (root / "algorithms/nccl/calibration/long.cpp").write_text("x\n" * 501)
        found = long_files(root)
        expected = ["algorithms/nccl/calibration/long.cpp: 501 lines, more than 500; "
                    "split it at a seam (one algorithm or one engine per file)"]
    return checker.self_test_result(found, expected, "the long file")


if __name__ == "__main__":
    sys.exit(checker.run(sys.argv, long_files, self_test))
