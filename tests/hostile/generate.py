#!/usr/bin/env python3
"""Writes a corpus of hostile aggsim inputs: one folder per case, holding s.yaml and whatever files
it names (p.xml, layers.yaml, symlink loops, FIFOs are made by the runner from `make:` lines).

    generate.py OUT_DIR [--count 3000] [--seed 1]
    generate.py OUT_DIR --per-family 3 [--seed 1]    (N cases of every family: the suite's sample)

The same seed gives the same corpus. Families (each case's family is the first part of its name):
  value    one scalar of a small valid scenario replaced by a hostile value (huge, negative, NaN,
           infinite, empty, wrong type, weird or unknown unit, long, control characters, non-UTF-8)
  keys     unknown, misspelt, duplicated, deleted or retyped keys
  nesting  deep flow or block nesting in the scenario or in --set-like values
  junk     binary junk, truncation, BOMs, NUL bytes, non-UTF-8 bytes, random YAML tokens
  path     platform / layer-table paths that are devices, folders, FIFOs, symlink loops, over-long
           names, parents, absolute system files, shell metacharacters
  xml      platform XML: zero/negative/NaN bandwidths, duplicate routes and ids, missing routes,
           deep zones, huge radicals, unknown elements, truncation, entities, junk
  layers   layer tables with absurd shapes, counts and FLOPs
and the scripted families of scripted.py, each case with a case.json of commands and checks
(run.py): mutants of the shipped scenarios, sweeps, platforms and measurement logs (shipped,
sweep, platform, log), output targets (outputs), foreign files such as /etc/shadow's format at
every file slot (secrets), look-alike temporaries (temps), Slurm scripts run with a fake sbatch
(slurm), command-line paths (args), and kill -9 or a full disk, then the same command (faults).
"""
import argparse
import json
import os
import random
import sys

import scripted

BASES = {
    "ring": """seed: 3
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 1MB, proxy_dim: 64}
algorithm: {name: ring_allreduce, op: avg}
""",
    "topk": """name: topk
ranks: 4
steps: 1
platform:
  topology: cluster
  nodes: 2
  gpus_per_node: 2
model:
  size: 256kB
  proxy_dim: 128
algorithm:
  name: allgather
compression:
  name: topk
  ratio: 0.1
  error_feedback: true
""",
    "ps": """ranks: 4
steps: 1
platform: {topology: fat_tree, nodes: 4}
model: {size: 64kB, proxy_dim: 32, math: on}
algorithm: {name: parameter_server, servers: 2}
""",
    "gossip": """ranks: 8
steps: 2
seed: 11
platform: {topology: torus, nodes: 8}
model: {size: 64kB, proxy_dim: 32}
algorithm: {name: neighbor_averaging, graph: {kind: ring}}
""",
    "train": """ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4}
model: {size: 64kB}
workload: {problem: least_squares, dim: 8, batch: 4}
algorithm: {name: ring_allreduce}
compute: {speed_factors: [1, 1, 0.5, 1], straggler: {distribution: lognormal, sigma: 0.1, probability: 0.5}}
""",
    "xml": """ranks: 2
steps: 1
platform: {file: p.xml}
model: {size: 64kB, proxy_dim: 16}
algorithm: {name: ring_allreduce}
""",
    "layers": """ranks: 2
steps: 1
platform: {topology: cluster, hosts: 2}
model: {layers: layers.yaml, batch: 2, proxy_dim: 16}
algorithm: {name: ring_allreduce, granularity: layer, bucket: 1kB}
""",
    "hetero": """ranks: 4
steps: 1
platform:
  topology: cluster
  nodes: 2
  gpus_per_node: 2
  overrides:
    - {hosts: "node-1-gpu-[0-1]", speed: 50Gf}
    - hosts: [node-0-gpu-1]
      intra_bandwidth: 100GBps
    - {nodes: "0-1", nic_bandwidth: 1Gbps, latency: 5us}
model: {size: 64kB, proxy_dim: 16}
algorithm: {name: ring_allreduce}
""",
}

PLATFORM = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <zone id="z" routing="Full">
    <host id="a" speed="1Gf"/>
    <host id="b" speed="1Gf"/>
    <link id="l" bandwidth="1Gbps" latency="1us"/>
    <route src="a" dst="b"><link_ctn id="l"/></route>
  </zone>
</platform>
"""

CLUSTER = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<platform version="4.1">
  <cluster id="c" prefix="h-" radical="0-3" suffix="" speed="1Gf" bw="10Gbps" lat="1us" bb_bw="40Gbps" bb_lat="1us"/>
</platform>
"""

LAYERS = """name: tiny
layers:
  - {name: conv, shape: [16, 8], params: 144, forward_flops: 1000}
  - {name: fc, shape: [8, 4], forward_flops: 64, backward_flops: 128}
"""

HOSTILE_VALUES = [
    "-1", "0", "-0", "1e308", "1e309", "-1e309", ".nan", ".inf", "-.inf", "NaN", "nan", "inf", "Infinity",
    "9223372036854775807", "9223372036854775808", "18446744073709551615", "18446744073709551616",
    "-9223372036854775809", "1e18", "4e18B", "1e19B", "8EiB", "16EiB", "0x10", "0o17", "1_000", "~", "null", "''",
    '""', "[]", "{}", "[1, 2]", "{a: 1}", "1.5", "-5MB", "5 MB", "5XB", "5Mb", "5mB", "5MiBps", "1e-320",
    "2.2250738585072014e-308", "true", "yes", "no", "on", "'1'", "1Gbps", "1us", "-1us", "1Gf", "0Gf", "0Gbps",
    "-10Gbps", "1e400Gbps", "NaNGbps", "infGbps", "1.7976931348623157e308Bps", "1e-400s", "a" * 5000,
    "'\\t'", "\"\\0\"", "\"\\x00\"", "\"\\u202e\"", "\"\\ud800\"", "|\n  multi\n  line", "&a 1", "*a", "!!binary aGk=",
    "!!float 1", "!!int 1e3", "!!str 3", "? complex", "2147483648", "4294967296", "-2147483649", "65536", "1e9",
    "1000000000", "1e12", "0.0000001", "1/3", "1,5", "%d%s%n", "$(touch pwned)", "`touch pwned`", "../../etc",
    "/dev/zero", "\xff\xfe", "caf\xe9", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
]

KEYS = ["seed", "ranks", "steps", "name", "description", "network", "platform.topology", "platform.hosts",
        "platform.nodes", "platform.bandwidth", "platform.latency", "platform.gpus_per_node", "platform.file",
        "platform.overrides",
        "model.size", "model.proxy_dim", "model.math", "model.layers", "model.batch", "algorithm.name",
        "algorithm.op", "algorithm.denominator", "algorithm.granularity", "algorithm.bucket", "algorithm.apply_to",
        "algorithm.chunks", "algorithm.servers", "algorithm.aggregate", "algorithm.staleness", "algorithm.graph.kind",
        "algorithm.graph.degree", "compression.name", "compression.ratio", "compression.levels",
        "compression.rank", "compression.error_feedback", "workload.problem", "workload.dim", "workload.batch",
        "workload.lr", "compute.speed_factors", "compute.straggler.sigma", "compute.straggler.probability"]


def set_key(text, key, value):
    """Appends a top-level override of `key` as a nested block (duplicates the key when it exists)."""
    parts = key.split(".")
    out = ""
    for depth, part in enumerate(parts[:-1]):
        out += "  " * depth + part + ":\n"
    out += "  " * (len(parts) - 1) + parts[-1] + ": " + value + "\n"
    return text + out


def replace_scalar(rng, text, value):
    """Replaces the value of one `key: value` pair found in the text (flow or block)."""
    import re
    spots = [m for m in re.finditer(r"(\b[a-z_]+): ([^,{}\[\]\n]+)", text)]
    if not spots:
        return text + value + "\n"
    m = rng.choice(spots)
    return text[: m.start(2)] + value + text[m.end(2):]


def case_value(rng):
    base = rng.choice(list(BASES))
    text = BASES[base]
    value = rng.choice(HOSTILE_VALUES)
    if rng.random() < 0.5:
        text = replace_scalar(rng, text, value)
    else:
        text = set_key(text, rng.choice(KEYS), value)
    return base, text


def case_keys(rng):
    base = rng.choice(list(BASES))
    lines = BASES[base].splitlines(keepends=True)
    kind = rng.randrange(6)
    if kind == 0:  # unknown or misspelt key
        key = rng.choice(KEYS).split(".")[-1]
        key = key[:-1] if rng.random() < 0.5 else key + rng.choice(["s", "_", "x", "\u00e9"])
        lines.insert(rng.randrange(len(lines) + 1), key + ": 1\n")
    elif kind == 1:  # duplicated line
        i = rng.randrange(len(lines))
        lines.insert(i, lines[i])
    elif kind == 2:  # deleted line
        del lines[rng.randrange(len(lines))]
    elif kind == 3:  # a key retyped as a mapping or list
        i = rng.randrange(len(lines))
        if ":" in lines[i]:
            k = lines[i].split(":")[0]
            lines[i] = k + rng.choice([": {x: 1}\n", ": [1, 2]\n", ":\n", ": !!map {}\n"])
    elif kind == 4:  # keys that are not strings
        lines.insert(0, rng.choice(["? [1, 2]\n: 3\n", "1: 2\n", "null: 1\n", "~: 1\n", "? {a: 1}\n: 2\n"]))
    else:  # anchors and merges
        lines.append(rng.choice(["x: &a {ranks: 2}\n<<: *a\n", "<<: {ranks: 1}\n", "a: &a [*a]\n"]))
    return base, "".join(lines)


def case_nesting(rng):
    base = rng.choice(list(BASES))
    depth = rng.choice([65, 100, 1000, 10000, 100000])
    kind = rng.randrange(4)
    if kind == 0:
        nest = "[" * depth + "]" * depth
    elif kind == 1:
        nest = "{a: " * depth + "1" + "}" * depth
    elif kind == 2:
        nest = "[" * depth  # never closed
    else:
        depth = min(depth, 2000)
        nest = "\n" + "".join("  " * (d + 1) + "k%d:\n" % d for d in range(depth)) + "  " * (depth + 1) + "v: 1"
    return base, set_key(BASES[base], rng.choice(KEYS), nest)


def case_junk(rng):
    base = rng.choice(list(BASES))
    text = BASES[base]
    kind = rng.randrange(7)
    if kind == 0:
        return base, bytes(rng.randrange(256) for _ in range(rng.choice([1, 16, 512, 4096])))
    if kind == 1:
        return base, text[: rng.randrange(len(text))]
    if kind == 2:
        return base, rng.choice([b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"]) + text.encode()
    if kind == 3:
        b = bytearray(text.encode())
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return base, bytes(b)
    if kind == 4:
        i = rng.randrange(len(text))
        return base, text[:i] + rng.choice(["\x00", "\x1b[31m", "\r", "\t", "\x7f", "\u2028", "\ufeff"]) + text[i:]
    if kind == 5:
        tokens = ["- ", ": ", "{", "}", "[", "]", "&a ", "*a ", "!!str ", "? ", "|", ">", "'", '"', "#", "\n", "  ",
                  "%YAML 1.2\n", "---\n", "...\n", "ranks", "1", "platform"]
        return base, "".join(rng.choice(tokens) for _ in range(rng.randrange(1, 200)))
    return base, text + "---\n" + text  # two documents


def case_path(rng):
    base = rng.choice(["xml", "layers"])
    target = rng.choice(["/dev/zero", "/dev/null", "/dev/urandom", "/dev/stdin", "/proc/self/mem", "/proc/self/environ",
                         "/", ".", "..", "", "fifo", "loop1", "dir", "x" * 300, ("d/" * 200) + "p.xml",
                         "/etc/passwd", "../../../../../../etc/shadow", "p.xml/", "p.xml\x00.xml", "~/p.xml",
                         "$(touch pwned)", "p.xml;touch pwned", "*", "?", "p.\u00e9xml", "noperm", "self"])
    key = "platform.file" if base == "xml" else "model.layers"
    text = BASES[base]
    quoted = '"' + target.replace("\\", "\\\\").replace('"', '\\"').replace("\x00", "\\0") + '"'
    if key == "platform.file":
        text = text.replace("{file: p.xml}", "{file: %s}" % quoted)
    else:
        text = text.replace("layers: layers.yaml", "layers: %s" % quoted)
    return base, text


def mutate_xml(rng):
    xml = rng.choice([PLATFORM, CLUSTER])
    kind = rng.randrange(12)
    if kind == 0:
        attr = rng.choice(["bandwidth", "latency", "speed", "bw", "lat", "bb_bw"])
        value = rng.choice(["0", "-1", "NaN", "nan", "inf", "-inf", "1e400", "0Gbps", "-5Gbps", "", "1e-400",
                            "1Gbps,0", "abc", "1GGbps", "9" * 400])
        import re
        return re.sub(r'%s="[^"]*"' % attr, '%s="%s"' % (attr, value), xml, count=1)
    if kind == 1:
        return xml.replace("</zone>", '    <route src="a" dst="b"><link_ctn id="l"/></route>\n  </zone>')
    if kind == 2:
        return xml.replace("</zone>", '    <route src="b" dst="a"><link_ctn id="l"/></route>\n  </zone>')
    if kind == 3:
        return xml.replace('    <route src="a" dst="b"><link_ctn id="l"/></route>\n', "")
    if kind == 4:
        depth = rng.choice([33, 65, 500, 5000])
        zones = "".join('<zone id="n%d" routing="Full">' % d for d in range(depth))
        return xml.replace("<platform version=\"4.1\">", "<platform version=\"4.1\">" + zones + "</zone>" * depth)
    if kind == 5:
        return xml.replace('radical="0-3"', 'radical="%s"' % rng.choice(
            ["0-99999999", "0-3,0-3", "3-0", "-1", "0-" + "9" * 40, ",", "0-16777215,0-16777215", "a-b"]))
    if kind == 6:
        return xml.replace("<host ", "<hots ", 1)
    if kind == 7:
        return xml[: rng.randrange(len(xml))]
    if kind == 8:
        return xml.replace("<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">",
                           '<!DOCTYPE platform [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
                           ).replace('id="a"', 'id="&b;"')
    if kind == 9:
        return xml.replace('topology', 'x') .replace('bb_bw="40Gbps"', 'topology="%s" topo_parameters="%s"' % (
            rng.choice(["TORUS", "FAT_TREE", "DRAGONFLY", "RING"]),
            rng.choice(["2,2", "0,4", "999999999,999999999,999999999", "2;2,2;1,2;1,1", "1;;;", "a", ""])))
    if kind == 10:
        b = bytearray(xml.encode())
        for _ in range(rng.randrange(1, 6)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    return xml.replace('id="b"', 'id="a"')


def case_xml(rng):
    return "xml", BASES["xml"], mutate_xml(rng)


def case_layers(rng):
    big = rng.choice(["1000000000000", "-1", "0", "1e12", "99999999999999999999", "1.5", "nan", "[]", "x"])
    kind = rng.randrange(5)
    if kind == 0:
        layers = LAYERS.replace("[16, 8]", "[%s, %s]" % (big, rng.choice([big, "1", "1000000000000"])))
    elif kind == 1:
        layers = LAYERS.replace("params: 144", "params: %s" % big)
    elif kind == 2:
        layers = LAYERS.replace("forward_flops: 1000", "forward_flops: %s" % rng.choice(
            ["-1", "1e400", ".nan", ".inf", "1e18", "1e19"]))
    elif kind == 3:
        layers = "name: many\nlayers:\n" + "".join(
            "  - {name: l%d, shape: [1000000000, %s], forward_flops: 1}\n" % (i, rng.choice(["1000000000", "3"]))
            for i in range(rng.randrange(1, 6)))
    else:
        layers = LAYERS.replace("shape: [16, 8]", "shape: %s" % rng.choice(["[]", "[1, 2, 3]", "16", "{a: 1}", "[[1]]"]))
    return "layers", BASES["layers"], layers


# Scenario families (s.yaml, validated and run) and the scripted ones (scripted.py, a case.json
# each); the weights sum to 1.
FAMILIES = [("value", case_value, 0.20), ("keys", case_keys, 0.10), ("nesting", case_nesting, 0.04),
            ("junk", case_junk, 0.08), ("path", case_path, 0.05), ("xml", case_xml, 0.14), ("layers", case_layers, 0.05)]
SCRIPTED = {name for name, _, _ in scripted.FAMILIES}
FAMILIES += scripted.FAMILIES


def write(path, content):
    with open(path, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode("utf-8", "surrogateescape"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--per-family", type=int, default=0, metavar="N",
                    help="N cases of each family instead of --count drawn by weight")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    weights = [w for _, _, w in FAMILIES]
    total = args.per_family * len(FAMILIES) if args.per_family else args.count
    for n in range(total):
        # Drawn as each case is made, so that a seed gives the same corpus as before --per-family.
        name, make, _ = FAMILIES[n // args.per_family] if args.per_family else rng.choices(FAMILIES, weights)[0]
        case = os.path.join(args.out, "%s-%04d" % (name, n))
        os.makedirs(case, exist_ok=True)
        if name in SCRIPTED:
            scripted.write_case(case, make(rng), write)
            continue
        result = make(rng)
        base, scenario = result[0], result[1]
        # Hostile values are kept as bytes: non-UTF-8 must reach aggsim as it is.
        write(os.path.join(case, "s.yaml"), scenario.encode("latin-1", "ignore") if isinstance(scenario, str) and
              any(0x80 <= ord(c) <= 0xff for c in scenario) and rng.random() < 0.5 else scenario)
        if base == "xml":
            write(os.path.join(case, "p.xml"), result[2] if len(result) > 2 else PLATFORM)
        if base == "layers":
            write(os.path.join(case, "layers.yaml"), result[2] if len(result) > 2 else LAYERS)
    # What made the corpus, for run.py's results file (not a case: run.py takes folders only).
    with open(os.path.join(args.out, "corpus.json"), "w") as f:
        json.dump({"command": " ".join(["tests/hostile/generate.py"] + sys.argv[1:]), "cases": total,
                   "seed": args.seed, "per_family": args.per_family}, f, indent=1)
    print("wrote %d cases to %s" % (total, args.out))


if __name__ == "__main__":
    main()
