#!/usr/bin/python3
"""Checks that the NCCL model's communicator and movement engines name no NCCL algorithm.

An algorithm is one file and one row of algorithms/nccl/nccl_algorithms.cpp (algorithms/nccl/
README.md, "Adding an NCCL algorithm"): the communicator's plan, the flow and chunk engines and the
shards' result reach it only through its row and its model (nccl_algorithm.hpp). A file of SEAMS
that names one (NcclAlgorithm::pat, an identifier with a part such as ring_ or Tree, an include of
ring_shards.hpp) decides something per algorithm that belongs behind that interface. The names are
read from the enum NcclAlgorithm in algorithms/nccl/protocol.hpp, so a new algorithm is covered.
  check_nccl_seams.py [ROOT]       exit 1 and list every algorithm named in a file of SEAMS
  check_nccl_seams.py --self-test  checks that an algorithm named in a scratch tree is reported
"""
import pathlib
import re
import sys
import tempfile

import checker

ENUM_FILE = "algorithms/nccl/protocol.hpp"
SEAMS = [
    "algorithms/nccl/nccl_communicator.cpp",
    "algorithms/nccl/nccl_flow_engine.cpp",
    "algorithms/nccl/nccl_chunk_engine.cpp",
    "algorithms/nccl/nccl_chunk_call.hpp",
    "algorithms/nccl/nccl_shards.hpp",
    "algorithms/nccl/nccl_shards.cpp",
]

ENUM = re.compile(r"enum\s+class\s+NcclAlgorithm\s*\{([^}]*)\}")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
COMMENT_OR_STRING = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', re.DOTALL)
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def algorithm_names(root):
    match = ENUM.search((pathlib.Path(root) / ENUM_FILE).read_text(encoding="utf-8"))
    if not match:
        raise SystemExit(f"{ENUM_FILE}: no enum class NcclAlgorithm (update {pathlib.Path(__file__).name})")
    return [name.strip() for name in match.group(1).split(",") if name.strip()]


def parts(identifier):
    """An identifier's words: snake_case and CamelCase split, lower case (start_ring_channel ->
    start, ring, channel; NvlsTreeAlgorithm -> nvls, tree, algorithm)."""
    words = []
    for piece in identifier.split("_"):
        words += re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+", piece)
    return [w.lower() for w in words]


def named(identifier, names):
    """The algorithm `identifier` names, or None: a name's words appearing in a row among its words."""
    words = parts(identifier)
    for name in sorted(names, key=len, reverse=True):
        want = name.split("_")
        if any(words[i:i + len(want)] == want for i in range(len(words))):
            return name
    return None


def blank(match):
    """A comment or string literal replaced by spaces, its newlines kept (line numbers hold)."""
    return re.sub(r"[^\n]", " ", match.group(0))


def namings(root):
    root = pathlib.Path(root)
    names = algorithm_names(root)
    found = []
    for relative in SEAMS:
        path = root / relative
        if not path.is_file():
            found.append(f"{relative}: no such file (update SEAMS in {pathlib.Path(__file__).name})")
            continue
        text = path.read_text(encoding="utf-8")
        for match in INCLUDE.finditer(text):
            stem = pathlib.PurePosixPath(match.group(1)).stem
            if (name := named(stem, names)):
                line = text.count("\n", 0, match.start()) + 1
                found.append(f"{relative}:{line}: includes {match.group(1)}, which names NCCL's {name}")
        code = COMMENT_OR_STRING.sub(blank, INCLUDE.sub(lambda m: " " * len(m.group(0)), text))
        for match in IDENTIFIER.finditer(code):
            if (name := named(match.group(0), names)):
                line = code.count("\n", 0, match.start()) + 1
                found.append(f"{relative}:{line}: {match.group(0)} names NCCL's {name}")
    return found


def self_test():
    with tempfile.TemporaryDirectory() as scratch:
        root = pathlib.Path(scratch)
        (root / "algorithms/nccl").mkdir(parents=True)
        (root / ENUM_FILE).write_text("enum class NcclAlgorithm { tree, ring, nvls_tree, pat };\n")
        clean = ('#include "algorithms/nccl/nccl_algorithm.hpp"\n'
                 "// a ring's loops, by PAT's rule\n"
                 'std::string s = "ring"; int loops = model.loops(plan);\n')
        for relative in SEAMS:
            (root / relative).write_text(clean)
        if namings(root):
            print(f"self-test: a file naming no algorithm was reported: {namings(root)}")
            return 1
        engine = root / "algorithms/nccl/nccl_chunk_engine.cpp"
        engine.write_text(clean + '#include "algorithms/nccl/ring_shards.hpp"\n'
                          "if (a == NcclAlgorithm::pat) start_ring_channel(run); NvlsTreeModel m; nvls x;\n")
        expected = [
            "algorithms/nccl/nccl_chunk_engine.cpp:4: includes algorithms/nccl/ring_shards.hpp, which names "
            "NCCL's ring",
            "algorithms/nccl/nccl_chunk_engine.cpp:5: pat names NCCL's pat",
            "algorithms/nccl/nccl_chunk_engine.cpp:5: start_ring_channel names NCCL's ring",
            "algorithms/nccl/nccl_chunk_engine.cpp:5: NvlsTreeModel names NCCL's nvls_tree",
        ]
        return checker.self_test_result(namings(root), expected, "the names")


if __name__ == "__main__":
    sys.exit(checker.run(sys.argv, namings, self_test,
                         lambda n: f"{n} algorithm name(s) outside their files" if n
                         else "NCCL seams: the communicator and engines name no algorithm"))
