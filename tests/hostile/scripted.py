"""Hostile cases that need more than `validate` and `run` on one scenario: mutants of the shipped
scenarios, sweeps, platforms and measurement logs, output targets, foreign files at every file
slot, look-alike temporaries, Slurm scripts, command-line paths, and faults (kill -9, a full disk).

Each family returns a Case: the files to write and a case.json that tells run.py what to run and
what must hold afterwards (see run.py). Everything is derived from the shipped files and the rng,
so the same seed gives the same corpus.
"""
import json
import os
import random
import re

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

TINY = """name: tiny
seed: 3
ranks: 4
steps: 2
platform: {topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us}
network: alpha_beta
model: {size: 256kB, proxy_dim: 16}
algorithm: {name: ring_allreduce}
"""

# A value for any key: what a careless or hostile edit writes.
VALUES = ["-1", "0", "1e308", "1e-300", ".nan", ".inf", "-.inf", "1e-300Bps", "1e-300f", "0Bps", "1e400s",
          "99999999999", "9223372036854775808", "[]", "{}", "~", "''", "'\\t'", "\"\\0\"", "\"\\e[31m\"",
          "\"\\u202e\"", "a" * 3000, "$(touch pwned)", "`touch pwned`", "../../../etc/passwd", "/dev/zero",
          "1/3", "1,5", "yes", "!!binary aGk=", "&a 1", "*a", "? x", "|\n  a\n  b", "4 # comment", "0x10"]

CONTROL = ["\x1b[2J", "\x00", "\t", "\r", "\x7f", "\u202e", "\ufeff", "\u2028", "\n"]


class Case:
    def __init__(self):
        self.files = {}     # relative path -> str or bytes
        self.links = {}     # relative path -> link target
        self.fifos = []
        self.devices = []   # character devices made by the runner (as root only): relative paths
        self.dirs = []
        self.steps = []
        self.unchanged = []
        self.absent = []
        self.secrets = []
        self.same = []      # [path, reference path]: trees byte-identical at the end

    def step(self, args, ok=(0, 2), **extra):
        s = {"args": args, "ok": list(ok)}
        s.update(extra)
        self.steps.append(s)

    def spec(self):
        return {"steps": self.steps, "unchanged": self.unchanged, "absent": self.absent, "secrets": self.secrets,
                "same": self.same, "links": self.links, "fifos": self.fifos, "devices": self.devices,
                "dirs": self.dirs}


def read(path):
    with open(os.path.join(ROOT, path), "rb") as f:
        return f.read().decode("utf-8", "surrogateescape")


def listing(folder, suffix):
    return sorted(f for f in os.listdir(os.path.join(ROOT, folder)) if f.endswith(suffix))


def absolute_paths(text):
    """The shipped scenarios name files relative to the source tree: make those absolute."""
    return re.sub(r"(?<![\w/])((?:platforms|scenarios)/[\w./-]+)", lambda m: os.path.join(ROOT, m.group(1)), text)


def mutate_scalar(rng, text):
    spots = list(re.finditer(r"(\b[a-z_]+): ([^,{}\[\]\n#]+)", text))
    if not spots:
        return text + rng.choice(VALUES) + "\n"
    m = rng.choice(spots)
    value = rng.choice(VALUES)
    if rng.random() < 0.2:
        value = m.group(2) + rng.choice(CONTROL)
    return text[: m.start(2)] + value + text[m.end(2):]


def mutate_text(rng, text):
    kind = rng.randrange(8)
    if kind <= 2:
        return mutate_scalar(rng, text)
    lines = text.splitlines(keepends=True) or ["\n"]
    i = rng.randrange(len(lines))
    if kind == 3:
        del lines[i]
    elif kind == 4:
        lines.insert(i, lines[rng.randrange(len(lines))])
    elif kind == 5:
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    elif kind == 6:
        lines.insert(i, rng.choice(CONTROL) * rng.randrange(1, 4) + lines[i])
    else:
        return text[: rng.randrange(len(text) + 1)]
    return "".join(lines)


# ---- mutants of the shipped scenarios and sweeps ------------------------------------------------

def case_shipped(rng):
    c = Case()
    name = rng.choice(listing("scenarios", ".yaml"))
    text = absolute_paths(read("scenarios/" + name))
    if rng.random() < 0.3:  # a change that keeps it valid, such as a user's own edit
        text = re.sub(r"\bseed: \d+", "seed: %d" % rng.randrange(1000), text)
        text = re.sub(r"\bsteps: \d+", "steps: %d" % rng.choice([1, 2]), text)
    else:
        for _ in range(rng.randrange(1, 3)):
            text = mutate_text(rng, text)
    c.files["s.yaml"] = text
    c.step(["validate", "s.yaml"])
    # Running is only tried for mutants that stayed small (the shipped ones go up to 16,384 ranks).
    c.step(["run", "s.yaml", "--out", "out", "-q"], if_small={"ranks": 32, "steps": 4})
    return c


def case_sweep(rng):
    c = Case()
    if rng.random() < 0.5:
        text = absolute_paths(read("scenarios/sweeps/" + rng.choice(listing("scenarios/sweeps", ".yaml"))))
        small = False
    else:
        axis = rng.choice(["ranks: [2, 4]", "model.size: [64kB, 128kB]", "algorithm.name: [ring_allreduce, tree_allreduce]",
                           "seed: [1, 2, 3]", "steps: [1, 2]"])
        text = TINY + "sweep:\n  grid:\n    " + axis + "\n" + rng.choice(["", "  repeat: 2\n", "  out: o\n"])
        small = True
    for _ in range(rng.randrange(1, 3)):
        text = mutate_text(rng, text)
    c.files["sw.yaml"] = text
    c.step(["sweep", "expand", "sw.yaml", "--out", "out"])
    if small and rng.random() < 0.4:
        c.step(["sweep", "run", "sw.yaml", "--out", "out", "--jobs", "2"], ok=(0, 1, 2), timeout=60)
        c.step(["sweep", "merge", "sw.yaml", "--out", "out"], ok=(0, 1, 2))
    return c


# ---- mutants of the shipped platforms ----------------------------------------------------------

ATTRIBUTE_VALUES = ["0", "-3", "99999999999", "1e-300", "1e-300Bps", "1e-300f", "1e308GBps", "nan", "inf", "",
                    "1,2,3", "0.0", "2", "abc", "1e400", "-0", "1 ", " 4", "4abc", "9" * 400, "1Gf,0f",
                    "SHARED", "FATPIPE", "WIFI", "SPLITDUPLEX", "UP", "DOWN", "0,0,0", "1,2", "/etc/hostname",
                    "../p.xml", "&a;", "\x1b[31m"]

ELEMENTS = [
    '<host id="extra" speed="1Gf" core="{v}"/>', '<host id="extra" speed="1Gf,2Gf" pstate="{v}"/>',
    '<host id="extra" speed="{v}"/>', '<host id="extra" speed="1Gf" coordinates="{v}"/>',
    '<host id="extra" speed="1Gf" speed_file="{v}"/>', '<host id="extra" speed="1Gf" state_file="{v}"/>',
    '<link id="extra" bandwidth="{v}" latency="1us"/>', '<link id="extra" bandwidth="1Gbps" latency="{v}"/>',
    '<link id="extra" bandwidth="1Gbps" latency="1us" sharing_policy="{v}"/>',
    '<link id="extra" bandwidth="1Gbps" latency="1us" bandwidth_file="{v}"/>',
    '<router id="{v}"/>', '<include file="{v}"/>', '<trace id="t" periodicity="{v}">0 1</trace>',
    '<trace_connect kind="SPEED" trace="{v}" element="extra"/>', '<config id="c"><prop id="{v}" value="1"/></config>',
    '<actor host="extra" function="{v}"/>', '<random id="r" min="0" max="{v}" mean="1" std_deviation="1"/>',
    '<host_link id="{v}" up="l" down="l"/>', '<backbone id="bb" bandwidth="{v}" latency="1us"/>',
    '<peer id="pp" speed="1Gf" bw_in="{v}" bw_out="1Gbps" coordinates="0 0 0"/>',
    '<cabinet id="cab" prefix="c-" suffix="" radical="0-1" speed="1Gf" bw="{v}" lat="1us"/>',
    '<host id="extra" speed="1Gf"><disk id="d" read_bw="{v}" write_bw="1Gbps"/></host>',
    '<zoneRoute src="{v}" dst="z" gw_src="a" gw_dst="b"><link_ctn id="l"/></zoneRoute>',
    '<cluster id="cc" prefix="c-" suffix="" radical="0-1" speed="1Gf" bw="1Gbps" lat="1us" core="{v}"/>',
    '<cluster id="cc" prefix="c-" suffix="" radical="0-1" speed="1Gf" bw="1Gbps" lat="1us" limiter_link="{v}"/>',
    '<cluster id="cc" prefix="c-" suffix="" radical="0-1" speed="1Gf" bw="1Gbps" lat="1us" loopback_bw="{v}"/>',
    '<cluster id="cc" prefix="c-" suffix="" radical="{v}" speed="1Gf" bw="1Gbps" lat="1us"/>',
    '<prop id="{v}" value="{v}"/>',
]


BENIGN = {"speed": ["3Gf", "1.5Tf", "100Gf,50Gf"], "bandwidth": ["7Gbps", "100GBps", "1Bps"],
          "latency": ["2us", "0", "1ms"], "bw": ["7Gbps"], "lat": ["3us"], "core": ["2", "8"]}


def mutate_platform(rng, xml):
    if rng.random() < 0.3:  # a change that keeps the platform valid: the run then goes all the way
        spots = [m for m in re.finditer(r'\b(\w+)="([^"]*)"', xml) if m.group(1) in BENIGN]
        if spots:
            m = rng.choice(spots)
            return xml[: m.start(2)] + rng.choice(BENIGN[m.group(1)]) + xml[m.end(2):]
    kind = rng.randrange(5)
    if kind <= 1:  # an attribute of an element already there
        spots = list(re.finditer(r'(\w+)="([^"]*)"', xml))
        if spots:
            m = rng.choice(spots)
            return xml[: m.start(2)] + rng.choice(ATTRIBUTE_VALUES) + xml[m.end(2):]
    if kind == 2:  # an element of another kind, with a hostile value, inside the first zone or at the top
        element = rng.choice(ELEMENTS).replace("{v}", rng.choice(ATTRIBUTE_VALUES).replace('"', ""))
        at = xml.find(">", xml.find("<zone")) + 1 if "<zone" in xml and rng.random() < 0.7 else \
            xml.find(">", xml.find("<platform")) + 1
        return xml[:at] + "\n" + element + "\n" + xml[at:]
    if kind == 3:  # a new attribute on an element
        tags = list(re.finditer(r"<(host|link|cluster|zone|route|platform)\b", xml))
        if tags:
            m = rng.choice(tags)
            attribute = rng.choice(["core", "pstate", "speed_file", "availability_file", "state_file", "coordinates",
                                    "sharing_policy", "bandwidth_file", "latency_file", "version", "symmetrical",
                                    "topology", "topo_parameters", "bb_bw", "router_id"])
            return xml[: m.end()] + ' %s="%s"' % (attribute, rng.choice(ATTRIBUTE_VALUES)) + xml[m.end():]
    return mutate_text(rng, xml)


def case_platform(rng):
    c = Case()
    name = rng.choice(listing("platforms", ".xml"))
    xml = read("platforms/" + name)
    for _ in range(rng.randrange(1, 3)):
        xml = mutate_platform(rng, xml)
    c.files["p.xml"] = xml
    c.files["s.yaml"] = ("ranks: %d\nsteps: 1\nplatform: {file: p.xml}\nnetwork: %s\nmodel: {size: 64kB, proxy_dim: 8}\n"
                         "algorithm: {name: ring_allreduce}\n" % (rng.choice([2, 4, 8]),
                                                                 rng.choice(["lv08", "alpha_beta", "ns3"])))
    c.step(["validate", "s.yaml"])
    c.step(["run", "s.yaml", "--out", "out", "-q"])
    return c


# ---- mutants of the shipped measurement logs ---------------------------------------------------

def scenario_of_log(log):
    token = log.split("_")[0]
    for y in listing("tests/data/calibration", ".yaml"):
        if y.split("_")[0].split(".")[0] == token:
            return y
    return None


def mutate_log(rng, text):
    lines = text.splitlines(keepends=True)
    kind = rng.randrange(10)
    rows = [i for i, l in enumerate(lines) if re.match(r"\s*\d", l)]
    if kind == 0 and lines:  # a long launcher prefix on every line
        prefix = "[" + "1," * rng.choice([1000, 100000, 300000]) + "0]<stdout>: "
        return "".join(prefix + l for l in lines)
    if kind == 1:  # a rank line with an absurd rank, or a huge host name
        what = rng.choice(["9" * rng.choice([11, 1000, 1000000]), "-1", "0x10", "1e9"])
        host = rng.choice(["nodeA", "h" * rng.choice([10, 500000, 3000000])])
        return "#  Rank %s Group  0 Pid 1 on %s device  0 [0000:04:00] GPU\n" % (what, host) + text
    if kind == 2 and rows:  # a number of a row replaced
        i = rng.choice(rows)
        words = lines[i].split()
        words[rng.randrange(len(words))] = rng.choice(["1e300", "-1", "nan", "inf", "99999999999999999999999",
                                                        "1e-300", "0", "N/A", "", "0x10", "1,5"])
        lines[i] = "  ".join(words) + "\n"
        return "".join(lines)
    if kind == 3:  # binary junk, CRLF, a byte-order mark, NUL bytes
        return rng.choice([text.replace("\n", "\r\n"), "\ufeff" + text, text.replace(" ", "\x00", 3),
                           "".join(chr(rng.randrange(256)) for _ in range(rng.choice([1, 100, 4096])))])
    if kind == 4:  # a different banner
        return rng.choice(["# OSU MPI Allreduce Latency Test\n", "# OSU MPI Bi-Directional Bandwidth Test\n",
                           "# OSU MPI Something Else\n", "collective,ranks,nodes,bytes,time\n",
                           "# Collective test starting: broadcast_perf\n"]) + text
    if kind == 5:  # a CSV with hostile cells
        return "collective,ranks,nodes,bytes,time\n" + "\n".join(
            ",".join(rng.choice(["all_reduce", "1e300", "8", "1", "-1", "nan", "1e30", "\x1b[2J", "a" * 10000])
                     for _ in range(rng.choice([4, 5, 6]))) for _ in range(rng.randrange(1, 4))) + "\n"
    return mutate_text(rng, text)


def case_log(rng):
    c = Case()
    logs = [l for l in listing("tests/data/calibration", ".log") if scenario_of_log(l)]
    log = rng.choice(logs)
    text = read("tests/data/calibration/" + log)
    # At most three data rows: every point is simulated.
    out, rows = [], 0
    for l in text.splitlines(keepends=True):
        if re.match(r"\s*\d", l):
            rows += 1
            if rows > 3:
                continue
        out.append(l)
    c.files[log] = mutate_log(rng, "".join(out))
    c.files["s.yaml"] = read("tests/data/calibration/" + scenario_of_log(log))
    c.dirs.append("tmp")
    verb = rng.choice(["compare", "compare", "calibrate"])
    args = [verb, "s.yaml", log, "-j", "2"] + (["--csv", "out.csv"] if verb == "compare" else ["--out", "cal.yaml"])
    if rng.random() < 0.3:
        args += ["--ranks", rng.choice(["2", "8", "0", "99999999999"]), "--nodes", rng.choice(["1", "2", "0"])]
    c.step(args, ok=(0, 2), env={"TMPDIR": "tmp"}, timeout=60)
    c.absent.append("tmp/*")  # the points folder and probe calibrations are gone
    return c


# ---- output targets ----------------------------------------------------------------------------

def case_outputs(rng):
    c = Case()
    c.files["s.yaml"] = TINY
    c.files["victim/data.txt"] = "a month of results\n"
    target = rng.choice(["victim", "victim/data.txt", ".", "..", "/", "new/run", "empty-marker", "link-marker",
                         "foreign-marker", "link-to-victim", "fifo", "device", "file.txt", "file.txt/x", "run",
                         "sweep-folder", "x" * 300, "a/" * 100 + "b", "victim/../victim", "\x1b[31mred",
                         "-rf", "out\ttab"])
    c.files["file.txt"] = "precious\n"
    c.files["empty-marker/.aggsim-run"] = ""
    c.files["empty-marker/data.txt"] = "mine\n"
    c.files["elsewhere/.aggsim-run"] = "This folder was written by aggsim, which may replace it whole.\n"
    c.files["link-marker/data.txt"] = "mine\n"
    c.links["link-marker/.aggsim-run"] = "../elsewhere/.aggsim-run"
    c.files["foreign-marker/.aggsim-run"] = "a file of mine\n"
    c.links["link-to-victim"] = "victim"
    c.fifos.append("fifo")
    c.devices.append("device")
    c.files["sweep-folder/.aggsim-sweep"] = "This folder was written by aggsim, which writes and replaces files in it.\n"
    c.unchanged = ["victim", "file.txt", "empty-marker", "link-marker", "foreign-marker", "elsewhere", "link-to-victim",
                   "sweep-folder", "s.yaml"]
    verb = rng.choice(["run", "run", "compare", "calibrate", "sweep"])
    if verb in ("compare", "calibrate") and target in ("file.txt", "victim/data.txt"):
        c.unchanged.remove(target.split("/")[0])  # a regular file: what --csv and --out replace whole
    if verb == "run":
        c.step(["run", "s.yaml", "--out", target, "-q"] + (["--force"] if rng.random() < 0.5 else []))
    elif verb == "sweep":
        c.files["sw.yaml"] = TINY + "sweep:\n  grid:\n    ranks: [2, 4]\n"
        c.unchanged.append("sw.yaml")
        if target == "sweep-folder":
            c.unchanged.remove(target)  # an aggsim sweep folder: a sweep may write into it
        c.step(["sweep", "expand", "sw.yaml", "--out", target])
    else:
        c.files["m.csv"] = "collective,ranks,nodes,bytes,time\nall_reduce,4,4,1048576,0.001\n"
        c.unchanged.append("m.csv")
        c.dirs.append("tmp")
        c.step([verb, "s.yaml", "m.csv", "--csv" if verb == "compare" else "--out", target], env={"TMPDIR": "tmp"})
        c.absent.append("tmp/*")
    return c


# ---- foreign files at every file slot -----------------------------------------------------------

FOREIGN = {
    "shadow": "root:*:20228:0:99999:7:::\nalice:$6$saltsalt$Zq8SecretHash:20228:0:99999:7:::\n",
    "env": "API_TOKEN: hunter2-Zq8SecretHash\nDB_PASSWORD: Zq8SecretHash\n",
    "pem": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEZq8SecretHash\n-----END OPENSSH PRIVATE KEY-----\n",
    "ini": "[secrets]\npassword = Zq8SecretHash\n",
    "json": '{"token": "Zq8SecretHash", "user": "alice"}\n',
    "xml": "<?xml version='1.0'?>\n<secrets><token value=\"Zq8SecretHash\"/></secrets>\n",
    "dup": "Zq8SecretHash: 1\nZq8SecretHash: 2\n",
}


def case_secrets(rng):
    c = Case()
    kind = rng.choice(sorted(FOREIGN))
    c.files["foreign"] = FOREIGN[kind]
    c.secrets = ["Zq8SecretHash", "hunter2", "saltsalt", "alice", "20228"]
    c.files["s.yaml"] = TINY
    slot = rng.choice(["scenario", "calibration", "set-calibration", "layers", "platform", "sweep", "sweep-grid", "log"])
    if slot == "scenario":
        c.step(["validate", "foreign"])
        c.step(["run", "foreign", "--out", "out"])
    elif slot == "calibration":
        c.files["s.yaml"] = TINY + "calibration: foreign\n"
        c.step(["validate", "s.yaml"])
    elif slot == "set-calibration":
        c.step(["run", "s.yaml", "--set", "calibration=foreign", "--out", "out"])
    elif slot == "layers":
        c.files["s.yaml"] = TINY.replace("model: {size: 256kB, proxy_dim: 16}", "model: {layers: foreign}")
        c.step(["validate", "s.yaml"])
    elif slot == "platform":
        c.files["s.yaml"] = TINY.replace("{topology: cluster, hosts: 4, bandwidth: 10Gbps, latency: 1us}",
                                         "{file: foreign}")
        c.step(["run", "s.yaml", "--out", "out"])
    elif slot == "sweep":
        c.step(["sweep", "expand", "foreign", "--out", "out"])
    elif slot == "sweep-grid":
        c.step(["sweep", "expand", "foreign", "--grid", "ranks=2,4", "--out", "out"])
    else:
        c.dirs.append("tmp")
        c.step(["compare", "s.yaml", "foreign"], env={"TMPDIR": "tmp"})
    c.absent.append("out")
    return c


# ---- look-alike temporaries beside a run folder --------------------------------------------------

def case_temporaries(rng):
    c = Case()
    c.files["s.yaml"] = TINY
    dead = str(rng.choice([4194305, 9999999]))  # above the kernel's largest pid: no process has it
    token = "%032x" % rng.getrandbits(128)
    host = "@HOST@"  # the runner puts this host's name in (a temporary only counts on its own host)
    lookalikes = {
        ".mydata.old-vm-999999/data.csv": "results\n",
        ".notes.old-vm-123456": "notes\n",
        ".thesis.tmp-@HOST@-4000000/ch1.tex": "text\n",
        ".draft.tmp-@HOST@-%s/text" % dead: "draft\n",
        ".nomarker.tmp-@HOST@-%s-%s/keep" % (dead, token): "keep\n",
        ".othertext.tmp-@HOST@-%s-%s/.aggsim-temporary" % (dead, token): "aggsim temporary\n",
        ".othertoken.tmp-@HOST@-%s-%s/.aggsim-temporary" % (dead, token):
            "aggsim temporary %s\nThis folder was made by aggsim while writing beside it; aggsim removes it once the "
            "process that made it has ended.\n" % ("0" * 32),
        ".plainfile.tmp-@HOST@-%s-%s" % (dead, token): "aggsim temporary %s\n" % token,
    }
    for path, text in lookalikes.items():
        c.files[path] = text
    c.unchanged = sorted({p.split("/")[0] for p in lookalikes})
    genuine = ".run.tmp-%s-%s-%s" % (host, dead, token)
    c.files[genuine + "/.aggsim-temporary"] = (
        "aggsim temporary %s\nThis folder was made by aggsim while writing beside it; aggsim removes it once the "
        "process that made it has ended.\n" % token)
    c.files[genuine + "/content/summary.json"] = "{}\n"
    c.absent.append(genuine)
    c.step(["run", "s.yaml", "--out", rng.choice(["newrun", "run"]), "-q"], ok=(0,))
    return c


# ---- Slurm scripts --------------------------------------------------------------------------------

def case_slurm(rng):
    c = Case()
    hostile = ["$(touch pwned)", "`touch pwned`", "a;touch pwned", "a\ntouch pwned", "'; touch pwned; '",
               "\"; touch pwned; \"", "a b", "--wrap=touch pwned", "\x1b[31m", "a" * 2000, "#SBATCH --x", "$HOME"]
    text = TINY.replace("name: tiny", "name: %s" % json.dumps(rng.choice(hostile) if rng.random() < 0.5 else "tiny"))
    text += "description: %s\n" % json.dumps(rng.choice(hostile))
    text += "sweep:\n  grid:\n    ranks: [2, 4]\n"
    c.files["sw.yaml"] = text
    args = ["sweep", "slurm", "sw.yaml", "--out", "out"]
    for option in ["--partition", "--time", "--mem", "--account", "--sbatch"]:
        if rng.random() < 0.3:
            args += [option, rng.choice(hostile + ["gpu", "01:00:00", "4G", "--gres=gpu:1"])]
    if rng.random() < 0.5:
        args.append("--merge-job")
    c.step(args)
    # Run what was written as Slurm would (fake sbatch, one array task), if anything was written.
    c.step(["@slurm-scripts", "out/slurm"], ok=(0, 1, 2), timeout=60)
    return c


# ---- command-line paths -----------------------------------------------------------------------------

def case_args(rng):
    c = Case()
    c.files["s.yaml"] = TINY
    c.fifos.append("fifo")
    c.dirs.append("folder")
    c.links["loop1"] = "loop2"
    c.links["loop2"] = "loop1"
    path = rng.choice(["/dev/zero", "/dev/urandom", "/dev/null", "/proc/self/mem", "/proc/self/environ", "fifo",
                       "folder", "loop1", "x" * 300, "d/" * 300 + "s.yaml", "", "-", "--help", "s.yaml/",
                       "nowhere.yaml", "\x1b[31m.yaml", "s.yaml\n", "\u202es.yaml", "/", "..", "~/s.yaml"])
    slot = rng.choice(["scenario", "validate", "sweep", "log", "out", "csv"])
    if slot in ("scenario", "validate"):
        c.step([("run" if slot == "scenario" else "validate"), path] + (["--out", "out", "-q"] if slot == "scenario" else []))
    elif slot == "sweep":
        c.step(["sweep", "expand", path, "--out", "out"])
    elif slot == "log":
        c.dirs.append("tmp")
        c.step(["compare", "s.yaml", path], env={"TMPDIR": "tmp"})
    elif slot == "out":
        c.step(["run", "s.yaml", "--out", path, "-q"])
    else:
        c.dirs.append("tmp")
        c.files["m.csv"] = "collective,ranks,nodes,bytes,time\nall_reduce,4,4,1048576,0.001\n"
        c.step(["compare", "s.yaml", "m.csv", "--csv", path], env={"TMPDIR": "tmp"})
    c.unchanged = ["s.yaml"]
    return c


# ---- faults: kill -9 and a full disk, then the same command again ------------------------------------

def case_faults(rng):
    c = Case()
    text = TINY.replace("ranks: 4", "ranks: 8").replace("hosts: 4", "hosts: 8") + \
        "sweep:\n  grid:\n    model.size: [1MB, 2MB, 4MB]\n"
    c.files["sw.yaml"] = text
    c.step(["sweep", "run", "sw.yaml", "--out", "ref", "--jobs", "2"], ok=(0,), timeout=60)
    if rng.random() < 0.5:
        c.step(["sweep", "run", "sw.yaml", "--out", "out", "--jobs", "2"], ok=(0, 1, 2), kill_after=rng.uniform(0.02, 1.0),
               signal=9, timeout=60)
    else:
        verb = rng.choice(["expand", "run"])
        c.step(["sweep", verb, "sw.yaml", "--out", "out", "--jobs", "2"][: 5 if verb == "expand" else 7],
               ok=(0, 1, 2), fsize=rng.choice([0, 100, 200, 600, 1000, 3000, 10000]), timeout=60)
    c.step(["sweep", "run", "sw.yaml", "--out", "out", "--jobs", "2"], ok=(0,), timeout=60)
    c.same.append(["out/runs", "ref/runs"])
    c.same.append(["out/results.csv", "ref/results.csv"])
    return c


FAMILIES = [("shipped", case_shipped, 0.07), ("sweep", case_sweep, 0.05), ("platform", case_platform, 0.07),
            ("log", case_log, 0.02), ("outputs", case_outputs, 0.04), ("secrets", case_secrets, 0.03),
            ("temps", case_temporaries, 0.015), ("slurm", case_slurm, 0.015), ("args", case_args, 0.03),
            ("faults", case_faults, 0.005)]


def write_case(case_dir, case, write):
    for path, content in case.files.items():
        full = os.path.join(case_dir, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        write(full, content)
    write(os.path.join(case_dir, "case.json"), json.dumps(case.spec(), indent=1))
