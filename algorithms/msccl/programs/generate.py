#!/usr/bin/python3
"""Writes MSCCL algorithm files (MSCCL-IR XML, the step-based format msccl-tools writes) for aggsim.

  generate.py --shipped                  (re)writes the shipped programs next to this script
  generate.py ring_allreduce --gpus 8 [--channels 2] [--first 1] [--cnt 2] [--proto LL128]
  generate.py allpairs_allreduce --gpus 8
  generate.py hierarchical_allreduce --nodes 2 --gpus-per-node 4
  generate.py ring_allgather --gpus 8
  generate.py broken_allpairs_allreduce --gpus 8
The program goes to standard output (or --out FILE). Needs nothing but python3.

Each threadblock is written as msccl-tools writes it: <tb id send recv chan> with its <step s type
srcbuf srcoff dstbuf dstoff cnt depid deps hasdep> in order; a step waiting for several others gets
one nop per extra dependency before it; hasdep="1" marks every step another one waits for.
"""
import argparse
import pathlib
import sys
from xml.sax.saxutils import quoteattr


class Threadblock:
    def __init__(self, gpu, send, recv, chan):
        self.gpu, self.send, self.recv, self.chan = gpu, send, recv, chan
        self.id = len(gpu.tbs)
        self.steps = []  # dicts

    def step(self, kind, src=None, dst=None, cnt=1, deps=()):
        """Appends a step; src/dst are (buffer, offset) with buffer 'i', 'o' or 's'; deps are
        (threadblock, step index) pairs. Returns (threadblock, index) for later deps."""
        deps = list(deps)
        for extra in deps[1:]:
            self.steps.append(dict(type="nop", src=None, dst=None, cnt=0, dep=extra))
        self.steps.append(dict(type=kind, src=src, dst=dst, cnt=cnt, dep=deps[0] if deps else None))
        for side in (src, dst):
            if side is not None:
                self.gpu.use(side[0], side[1] + cnt)
        return (self, len(self.steps) - 1)


class Gpu:
    def __init__(self, rank):
        self.rank = rank
        self.tbs = []
        self.chunks = {"i": 0, "o": 0, "s": 0}

    def use(self, buffer, end):
        self.chunks[buffer] = max(self.chunks[buffer], end)

    def tb(self, send=-1, recv=-1, chan=0):
        t = Threadblock(self, send, recv, chan)
        self.tbs.append(t)
        return t


class Program:
    def __init__(self, name, coll, gpus, chunks_per_loop, proto="Simple", inplace=True):
        self.name, self.coll, self.chunks_per_loop = name, coll, chunks_per_loop
        self.proto, self.inplace = proto, inplace
        self.gpus = [Gpu(r) for r in range(gpus)]

    def xml(self):
        waited = set()
        for g in self.gpus:
            for t in g.tbs:
                for s in t.steps:
                    if s["dep"]:
                        waited.add((g.rank, s["dep"][0].id, s["dep"][1]))
        channels = max((t.chan + 1 for g in self.gpus for t in g.tbs), default=1)
        out = [f'<algo name={quoteattr(self.name)} proto="{self.proto}" nchannels="{channels}" '
               f'nchunksperloop="{self.chunks_per_loop}" ngpus="{len(self.gpus)}" coll="{self.coll}" '
               f'inplace="{1 if self.inplace else 0}">']
        for g in self.gpus:
            out.append(f'  <gpu id="{g.rank}" i_chunks="{g.chunks["i"]}" o_chunks="{g.chunks["o"]}" '
                       f's_chunks="{g.chunks["s"]}">')
            for t in g.tbs:
                out.append(f'    <tb id="{t.id}" send="{t.send}" recv="{t.recv}" chan="{t.chan}">')
                for k, s in enumerate(t.steps):
                    src = s["src"] or ("i", -1)
                    dst = s["dst"] or ("o", -1)
                    dep = s["dep"]
                    depid, deps = (dep[0].id, dep[1]) if dep else (-1, -1)
                    hasdep = 1 if (g.rank, t.id, k) in waited else 0
                    out.append(f'      <step s="{k}" type="{s["type"]}" srcbuf="{src[0]}" srcoff="{src[1]}" '
                               f'dstbuf="{dst[0]}" dstoff="{dst[1]}" cnt="{s["cnt"]}" depid="{depid}" '
                               f'deps="{deps}" hasdep="{hasdep}"/>')
                out.append("    </tb>")
            out.append("  </gpu>")
        out.append("</algo>")
        return "\n".join(out) + "\n"


def ring_steps(tb, ranks, me, chunk_of, first=0, cnt=1, start_deps=(), gather_deps=()):
    """A ring all-reduce over `ranks` (this threadblock sends to the next, receives from the one
    before) of len(ranks) chunks, chunk_of(i) the buffer offset of chunk i. Chunk i's reduction
    starts at position i + first; position q owns chunk q - first + 1 after the reduce-scatter.
    Returns the (threadblock, step) that finishes the reduce-scatter and the last step."""
    p = len(ranks)
    q = ranks.index(me)

    def chunk(i):
        return ("i", chunk_of(i % p))

    tb.step("s", src=chunk(q - first), cnt=cnt, deps=start_deps)
    for s in range(1, p - 1):
        tb.step("rrs", src=chunk(q - first - s), cnt=cnt)
    owned = q - first + 1
    reduced = tb.step("rrcs" if not gather_deps else "rrc", src=chunk(owned), dst=chunk(owned), cnt=cnt)
    if gather_deps:  # the all-gather waits for other work first (a hierarchical program)
        tb.step("s", src=chunk(owned), cnt=cnt, deps=gather_deps)
    for t in range(1, p - 1):
        tb.step("rcs", dst=chunk(owned - t), cnt=cnt)
    last = tb.step("r", dst=chunk(owned - (p - 1)), cnt=cnt)
    return reduced, last


def ring_allreduce(gpus, channels=1, first=0, proto="Simple", cnt=1):
    """Ring all-reduce, in place: `channels` rings each reducing `gpus` pieces of `cnt` chunks. With
    first=0 piece i's reduction starts at rank i (msccl-tools' allreduce_a100_ring, aggsim's
    ring_allreduce); with first=1 at rank i + 1 (NCCL's ring)."""
    name = f"ring_allreduce_{gpus}gpus_{channels}ch" + (f"_first{first}" if first else "") + \
        (f"_cnt{cnt}" if cnt > 1 else "")
    prog = Program(name, "allreduce", gpus, gpus * channels * cnt, proto)
    ranks = list(range(gpus))
    for c in range(channels):
        for r in ranks:
            tb = prog.gpus[r].tb(send=(r + 1) % gpus, recv=(r - 1) % gpus, chan=c)
            ring_steps(tb, ranks, r, lambda i, c=c: (c * gpus + i) * cnt, first, cnt=cnt)
    return prog


def allpairs_allreduce(gpus, proto="Simple", broken=False):
    """All-pairs all-reduce, in place: rank r owns chunk r; every rank sends its chunk r to rank r,
    which reduces them (its own first, then the others' in rank order) and sends the result to all.
    One threadblock per peer and one that reduces. `broken`: rank 5 adds rank 2's chunk again
    instead of rank 6's (a wrong scratch offset), which the verdict must catch."""
    name = f"allpairs_allreduce_{gpus}gpus" + ("_broken" if broken else "")
    prog = Program(name, "allreduce", gpus, gpus, proto)
    for r in range(gpus):
        g = prog.gpus[r]
        peers = [q for q in range(gpus) if q != r]
        slot = {q: k for k, q in enumerate(peers)}
        tbs = {q: g.tb(send=q, recv=q, chan=0) for q in peers}
        received = {}
        for q in peers:
            tbs[q].step("s", src=("i", q))
            received[q] = tbs[q].step("r", dst=("s", slot[q]))
        reducer = g.tb()
        last = None
        for q in peers:
            src = slot[q]
            if broken and r == 5 and q == 6:
                src = slot[2]
            last = reducer.step("re", src=("s", src), dst=("i", r), deps=[received[q]])
        for q in peers:
            tbs[q].step("s", src=("i", r), deps=[last])
            tbs[q].step("r", dst=("i", q))
    return prog


def hierarchical_allreduce(nodes, per_node, proto="Simple"):
    """Hierarchical all-reduce, in place, for nodes of `per_node` GPUs (rank = node * per_node +
    local). The vector is `per_node` parts of `nodes` chunks. Inside each node, `nodes` rings (one
    per chunk of a part, each on its own channel) reduce-scatter the parts so that local rank l
    holds part l; the ranks of local index l then all-reduce part l across the nodes with a ring;
    the rings inside the node then all-gather the parts. (One ring moving whole parts, `cnt` =
    nodes, would deadlock at sizes where the runtime cuts each step into calls of one chunk: its
    first send fills the connection's slots.)"""
    gpus = nodes * per_node
    prog = Program(f"hierarchical_allreduce_{nodes}x{per_node}", "allreduce", gpus, gpus, proto)
    for r in range(gpus):
        n, l = divmod(r, per_node)
        g = prog.gpus[r]
        local = [n * per_node + k for k in range(per_node)]
        across = [m * per_node + l for m in range(nodes)]

        def part(i, k):  # chunk k of part i
            return (i % per_node) * nodes + k

        intra = [g.tb(send=local[(l + 1) % per_node], recv=local[(l - 1) % per_node], chan=k)
                 for k in range(nodes)] if per_node > 1 else []
        inter = g.tb(send=across[(n + 1) % nodes], recv=across[(n - 1) % nodes], chan=0) if nodes > 1 else None
        owned = []
        for k, tb in enumerate(intra):
            # Ring k reduce-scatters chunk k of every part; local rank l ends with chunk k of part l.
            tb.step("s", src=("i", part(l - 1, k)))
            for s in range(1, per_node - 1):
                tb.step("rrs", src=("i", part(l - 1 - s, k)))
            owned.append(tb.step("rrc", src=("i", part(l, k)), dst=("i", part(l, k))))
        if inter:
            _, inter_last = ring_steps(inter, across, r, lambda i: part(l, i), 0, start_deps=owned)
        for k, tb in enumerate(intra):
            tb.step("s", src=("i", part(l, k)), deps=[inter_last] if inter else ())
            for t in range(1, per_node - 1):
                tb.step("rcs", dst=("i", part(l - t, k)))
            tb.step("r", dst=("i", part(l + 1, k)))
    return prog


def ring_allgather(gpus, proto="Simple"):
    """Ring all-gather, out of place: each rank copies its input to its output chunk, then the
    chunks travel around the ring."""
    prog = Program(f"ring_allgather_{gpus}gpus", "allgather", gpus, gpus, proto, inplace=False)
    for r in range(gpus):
        tb = prog.gpus[r].tb(send=(r + 1) % gpus, recv=(r - 1) % gpus)
        tb.step("cpy", src=("i", 0), dst=("o", r))
        tb.step("s", src=("o", r))
        for t in range(1, gpus - 1):
            tb.step("rcs", dst=("o", (r - t) % gpus))
        tb.step("r", dst=("o", (r + 1) % gpus))
    return prog


SHIPPED = {
    "ring_allreduce_8.xml": lambda: ring_allreduce(8),
    "allpairs_allreduce_8.xml": lambda: allpairs_allreduce(8),
    "hierarchical_allreduce_2x4.xml": lambda: hierarchical_allreduce(2, 4),
    "ring_allgather_8.xml": lambda: ring_allgather(8),
    "broken_allpairs_allreduce_8.xml": lambda: allpairs_allreduce(8, broken=True),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", nargs="?", choices=["ring_allreduce", "allpairs_allreduce", "hierarchical_allreduce",
                                                    "ring_allgather", "broken_allpairs_allreduce"])
    parser.add_argument("--shipped", action="store_true", help="rewrite the shipped programs")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--channels", type=int, default=1)
    parser.add_argument("--first", type=int, default=0, help="ring: the rank chunk 0's reduction starts at")
    parser.add_argument("--cnt", type=int, default=1, help="ring: chunks each step moves")
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--gpus-per-node", type=int, default=4)
    parser.add_argument("--proto", default="Simple", choices=["Simple", "LL128", "LL"])
    parser.add_argument("--out", help="file to write (default: standard output)")
    args = parser.parse_args()
    if args.shipped:
        here = pathlib.Path(__file__).resolve().parent
        for name, make in SHIPPED.items():
            (here / name).write_text(make().xml())
        return 0
    if not args.kind:
        parser.error("name a program kind or give --shipped")
    prog = {
        "ring_allreduce": lambda: ring_allreduce(args.gpus, args.channels, args.first, args.proto, args.cnt),
        "allpairs_allreduce": lambda: allpairs_allreduce(args.gpus, args.proto),
        "hierarchical_allreduce": lambda: hierarchical_allreduce(args.nodes, args.gpus_per_node, args.proto),
        "ring_allgather": lambda: ring_allgather(args.gpus, args.proto),
        "broken_allpairs_allreduce": lambda: allpairs_allreduce(args.gpus, args.proto, broken=True),
    }[args.kind]()
    text = prog.xml()
    if args.out:
        pathlib.Path(args.out).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
