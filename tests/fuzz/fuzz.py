#!/usr/bin/env python3
"""A bounded, seeded fuzzer of usbyte-sim's inputs: profiles, plans and reports.

Each case is derived from (seed, case number) alone, so `--seed S --case I` replays it.  A case
takes a valid document (a profile of the corpus, one generated here, a plan the simulator made
for one of them, a report wrapping a profile), mutates its structure or its text, and runs
usbyte-sim on it with random options (every policy in turn, --eval of plans, networks, extreme
costs, --json, --plan-out, --svg, --sweep).  Every run must end within the time bound with exit 0,
or with a non-zero exit and exactly one line on standard error; never by a signal or a timeout.
A successful --json run prints one JSON object per line, with finite numbers only, and no
output names nan or inf.

Known defects (KNOWN below) are named: a case that matches one is run (unless --skip-known) and
counted apart, so that a fix shows as "known-now-passes".  The last line is the summary; the
exit status is 1 when any case failed in a way not known, or 2 on bad arguments.
"""
import argparse
import copy
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

POLICIES = ["wfbp", "syncea", "mgwfbp", "mgwfbp-dp", "bytescheduler", "usbyte", "best", "all"]
NETS = ["10gbe", "56gb-ib", "100gb-ib", "nvlink"]
DTYPES = {"int8": 1, "uint8": 1, "int32": 4, "uint32": 4, "int64": 8, "uint64": 8, "float16": 2,
          "float32": 4, "float64": 8, "bfloat16": 2, "float8e4m3": 1, "float8e5m2": 1}
OPS = ["sum", "prod", "max", "min", "avg"]
# Numbers that break arithmetic: overflow, denormals, integer limits, exact zero.
EXTREME = [0, -0.0, 1e-320, 5e-324, 1e-30, 1e-12, 1e-6, 1, 1e6, 1e12, 1e30, 1e300, 1e308, -1, -1e-9,
           2 ** 31, 2 ** 32, 2 ** 53, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64, 1.5, 4001, 3]


def _policies(case):
    a = case["args"]
    if "--eval" in a:
        return set()
    if "--policy" not in a:
        return set(POLICIES)
    p = a[a.index("--policy") + 1]
    return set(POLICIES) if p == "all" else {p}


# (name, what is wrong, predicate on the case).  Each names a defect of the simulator or of the
# readers, to be fixed there; remove the entry with the fix (the summary counts the cases that
# match an entry and pass: "now pass").  None is known today.
KNOWN = []


class Gen:
    """The random choices of one case."""

    def __init__(self, seed, case):
        self.r = random.Random("%s:%d" % (seed, case))

    def number(self, x=None):
        r = self.r
        k = r.random()
        if k < 0.4:
            return r.choice(EXTREME)
        if k < 0.7 and isinstance(x, (int, float)) and not isinstance(x, bool):
            v = x * r.choice([0, 0.5, 2, 10, 1e3, 1e-3, -1])
            return int(v) if isinstance(x, int) and abs(v) < 2 ** 63 else v
        if k < 0.85:
            return r.randint(-5, 5)
        return r.uniform(-1, 1) * 10 ** r.randint(-12, 12)

    def legal_cost(self, top):
        """A finite cost >= 0, log-uniform down to 1e-40, or an edge value."""
        r = self.r
        if r.random() < 0.3:
            return r.choice([0.0, 5e-324, 1e-320, 1e-300, 1e-40, 1e-30, 1e-20, top])
        return top * 10 ** -r.uniform(0, 40)

    def other_type(self):
        return self.r.choice([None, True, "x", "1e3", [], {}, [1, 2], {"a": 1}, "\u00e9\ud7ff", ""])


def generated_profile(g, n=None):
    """A valid profile drawn at random: the shapes the corpus lacks (few calls, mixed dtypes and
    ops, merge barriers, several segments, a net of its own or none)."""
    r = g.r
    n = n or r.choice([1, 2, 3, 5, 8, 20, 60, 150])
    segs = r.choice([1, 1, 2, 5, 20])
    t, calls = 0.0, []
    for k in range(n):
        t += r.choice([0, 0, 1e-6, 1e-4, 1e-3, 1e-2]) * r.random()
        d = r.choice(list(DTYPES)) if r.random() < 0.3 else "float32"
        calls.append({"name": "t%d" % k, "bytes": DTYPES[d] * r.choice([1, 3, 256, 4096, 1 << 16, 1 << 20, 25 << 20]),
                      "ready": t, "need": r.randrange(segs), "dtype": d,
                      "op": r.choice(OPS) if r.random() < 0.2 else "sum", "merge": r.random() > 0.1})
    prof = {"usbyte_profile": 1, "name": "gen", "backward_end": t + r.random() * 1e-3, "gap": r.choice([0, 0, 1e-4]),
            "forward": [r.random() * 1e-3 for _ in range(segs)], "calls": calls}
    if r.random() < 0.6:
        prof["net"] = {"alpha": r.choice([1e-5, 1e-4, 5e-4]), "beta": r.choice([1e-10, 8.5e-10, 1e-9]),
                       "copy_beta": r.choice([0, 0, 1e-11])}
    if r.random() < 0.3:
        prof["ranks"] = r.choice([2, 8, 64])
    return prof


def paths(doc, prefix=()):
    """Every (path, value) in a JSON document, containers included."""
    yield prefix, doc
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def set_at(doc, path, value):
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    return doc


def mutate_tree(g, doc):
    """One structural mutation of a parsed document."""
    r = g.r
    all_paths = list(paths(doc))
    path, value = r.choice(all_paths)
    k = r.random()
    if isinstance(value, bool) or value is None or k < 0.1:
        return set_at(doc, path, g.other_type() if r.random() < 0.5 else g.number())
    if isinstance(value, (int, float)):
        return set_at(doc, path, g.number(value) if k < 0.85 else g.other_type())
    if isinstance(value, str):
        choices = list(DTYPES) + OPS + POLICIES + ["", "float", "SUM", "x" * 300, "\u00ff"]
        return set_at(doc, path, r.choice(choices) if k < 0.8 else g.other_type())
    if isinstance(value, list):
        if not value or k < 0.15:
            return set_at(doc, path, [] if value else [g.number()])
        i = r.randrange(len(value))
        op = r.random()
        if op < 0.3:
            del value[i]
        elif op < 0.55 and len(value) < 400:
            value.insert(r.randrange(len(value) + 1), copy.deepcopy(value[i]))
        elif op < 0.7:
            r.shuffle(value)
        elif op < 0.8:
            del value[r.randrange(len(value)):]
        elif op < 0.9 and len(value) < 200:
            value.extend(copy.deepcopy(value) * r.choice([1, 2]))
        else:
            value[i] = g.other_type()
        return doc
    if isinstance(value, dict):
        keys = list(value)
        op = r.random()
        if keys and op < 0.45:
            del value[r.choice(keys)]
        elif op < 0.6:
            value[r.choice(["extra", "net", "ranks", "merge", "need", "dtype", "copy_beta", "params"])] = (
                g.number() if r.random() < 0.6 else g.other_type())
        elif keys and op < 0.8:
            value[r.choice(keys)] = g.other_type()
        else:
            return set_at(doc, path, g.other_type())
        return doc
    return doc


def mutate_valid(g, prof):
    """A mutation that keeps a profile valid but pushes it to an edge the planner must survive:
    one-element and huge calls, equal or zero ready times, empty forward segments, barriers
    everywhere, many calls, mixed dtypes and ops, extreme but legal costs."""
    r = g.r
    calls = prof.get("calls") or []
    k = r.random()
    if not calls:
        return prof
    c = r.choice(calls)
    size = DTYPES.get(c.get("dtype", "float32"), 4)
    if k < 0.15:
        c["bytes"] = size * r.choice([1, 2, 3, 1 << 10, 1 << 20, 1 << 28, 1 << 31, 1 << 36, 1 << 50, (1 << 62) // size])
    elif k < 0.25:
        f = r.choice([1, 2, 7, 1000, 1 << 16])
        for x in calls:
            x["bytes"] = max(DTYPES.get(x.get("dtype", "float32"), 4),
                             (x["bytes"] // f) if r.random() < 0.5 else x["bytes"] * f)
    elif k < 0.35:
        t = r.choice([0, prof.get("backward_end", 0)])
        for x in calls:
            x["ready"] = t
    elif k < 0.42:
        prof["forward"] = [0.0] * len(prof.get("forward") or [0])
    elif k < 0.5:
        for x in calls:
            x["merge"] = r.random() < 0.5
    elif k < 0.6 and len(calls) < 400:
        calls.extend(copy.deepcopy(calls[: r.randint(1, len(calls))]))
    elif k < 0.68:
        d = r.choice(list(DTYPES))
        c["dtype"], c["bytes"] = d, DTYPES[d] * max(1, c["bytes"] // max(1, DTYPES[d]))
        c["op"] = r.choice(OPS)
    elif k < 0.76:
        prof["gap"] = r.choice([0, 1e-9, 1, 1e3])
        prof["backward_end"] = max(prof.get("backward_end", 0), max(x.get("ready", 0) for x in calls)) * r.choice([1, 10])
    elif k < 0.84:
        prof["net"] = {"alpha": r.choice([1e-5, 1e-4, 5e-4]) if r.random() < 0.6 else g.legal_cost(100),
                       "beta": r.choice([1e-10, 8.5e-10]) if r.random() < 0.4 else g.legal_cost(1e-6),
                       "copy_beta": r.choice([0, 1e-12, 1e-9, g.legal_cost(1e-6)])}
    elif k < 0.92:
        segs = max(1, len(prof.get("forward") or [0]))
        for x in calls:
            x["need"] = r.randrange(segs)
    else:
        del calls[r.randrange(len(calls)):][: max(0, len(calls) - 1)]
    return prof


def mutate_text(g, text):
    """One textual mutation: what a truncated, corrupted or hand-edited file looks like."""
    r = g.r
    b = bytearray(text.encode("utf-8"))
    k = r.random()
    i = r.randrange(len(b) + 1)
    if k < 0.2:
        del b[i:]
    elif k < 0.35 and b:
        b[min(i, len(b) - 1)] = r.randrange(256)
    elif k < 0.5:
        b[i:i] = r.choice([b",", b"}", b"]", b"{", b"[", b"\"", b"\xff\xfe", b"\x00", b"1e999", b"-", b"NaN",
                           b"Infinity", b"\"\\ud800\"", b"//"])
    elif k < 0.6:
        # A key written twice (the readers reject duplicate keys).
        m = list(re.finditer(rb'"([a-z_]+)":', bytes(b)))
        if m:
            x = r.choice(m)
            b[x.start():x.start()] = x.group(0) + b"0,"
    elif k < 0.7:
        b = bytearray(b"[" * r.choice([10, 1000, 100000]) + b"]" * r.choice([0, 10]))
    elif k < 0.8:
        b = bytearray(r.choice([b"", b"{}", b"[]", b"null", b"\xef\xbb\xbf{}", b"{\"usbyte_profile\": 1}",
                                b"{\"usbyte_plan\": 1}", b"{\"usbyte_report\": 1}"]))
    else:
        # A number replaced by an extreme one in the text (exponents JSON allows).
        m = list(re.finditer(rb"-?\d+(\.\d+)?(e-?\d+)?", bytes(b)))
        if m:
            x = r.choice(m)
            b[x.start():x.end()] = r.choice([b"1e400", b"-1e400", b"1e-400", b"99999999999999999999999",
                                             b"-0", b"0.0", b"18446744073709551616", b"4.9e-324"])
    return bytes(b)


def options(g, case_no, kind):
    """usbyte-sim's options for the case; every policy in turn over consecutive cases."""
    r = g.r
    args = []
    if kind != "plan":
        pol = POLICIES[case_no % len(POLICIES)]
        if r.random() < 0.03:
            pol = r.choice(["", "none", "usbyte,best", "BEST"])
        if pol != "all" or r.random() < 0.5:
            args += ["--policy", pol]
    k = r.random()
    if k < 0.35:
        ranks = r.choice([2, 8, 8, 16, 128, 1]) if r.random() < 0.9 else r.choice([0, -3, 100000, "x"])
        args += ["--ranks", str(ranks), "--net",
                 r.choice(NETS) if r.random() < 0.95 else "token-ring"]
    elif k < 0.6:
        a = r.choice([1e-5, 1e-4, 5e-4, 1e-3]) if r.random() < 0.8 else g.number()
        b = r.choice([1e-10, 8.5e-10, 3e-10]) if r.random() < 0.8 else g.number()
        args += ["--alpha", repr(a), "--beta", repr(b)]
    elif k < 0.75:
        # Legal but extreme costs: what a free or a glacial link does to the planners' arithmetic.
        a = r.choice([1e-5, 1e-4, 5e-4]) if r.random() < 0.6 else g.legal_cost(1e3)
        b = r.choice([1e-10, 8.5e-10]) if r.random() < 0.4 else g.legal_cost(1e-3)
        args += ["--alpha", repr(a), "--beta", repr(b)]
    if r.random() < 0.15:
        args += ["--copy-beta", repr(r.choice([0, 1e-11, 1e-9]) if r.random() < 0.7 else g.number())]
    if r.random() < 0.5:
        args.append("--json")
    if kind != "plan" and r.random() < 0.1 and "--ranks" not in args and "--alpha" not in args:
        args += ["--sweep", "ranks=" + ",".join(str(r.choice([2, 8, 64, 0])) for _ in range(r.randint(1, 3))),
                 "--net", r.choice(NETS)]
    if kind == "report" and r.random() < 0.3:
        args += ["--comm", str(r.choice([0, 1, -1, 5, 100000]))]
    return args


def make_case(seed, case_no, corpus, sim, work):
    """Writes the case's input files under work; returns its description."""
    g = Gen(seed, case_no)
    r = g.r
    k = r.random()
    kind = ("valid" if k < 0.35 else "profile" if k < 0.55 else "plan" if k < 0.8 else "report" if k < 0.9
            else "text")
    base = copy.deepcopy(r.choice(corpus)) if corpus and r.random() < 0.6 else generated_profile(g)
    case = {"seed": seed, "case": case_no, "kind": kind, "args": [], "files": {}}
    prof_path = os.path.join(work, "profile.json")
    if kind == "plan":
        # A plan the simulator made for the profile, then mutated; evaluated against the profile
        # (itself mutated one time in five).
        pol = r.choice(POLICIES[:-1])
        plan_src = os.path.join(work, "source.json")
        with open(plan_src, "w") as f:
            json.dump(base, f)
        made = os.path.join(work, "made-plan.json")
        net = ["--alpha", "1e-4", "--beta", "8e-10"] if "net" not in base else []
        try:
            subprocess.run([sim, plan_src, "--policy", pol, "--plan-out", made] + net, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=60)
        except subprocess.TimeoutExpired:
            pass   # no plan made: the fallback below (the profile runs are where hangs are judged)
        try:
            with open(made) as f:
                plan = json.load(f)
        except (OSError, ValueError):
            plan = {"usbyte_plan": 1, "policy": pol, "blocks": [{"segments": [[0, 0, 4]]}]}
        # One plan in eight is evaluated as made: the simulator must then accept it.
        case["must_pass"] = os.path.exists(made) and r.random() < 0.125
        if not case["must_pass"]:
            for _ in range(r.choice([1, 1, 2, 3])):
                plan = mutate_tree(g, plan)
            if r.random() < 0.2:
                base = mutate_tree(g, base)
        plan_path = os.path.join(work, "plan.json")
        with open(plan_path, "w") as f:
            json.dump(plan, f)
        if case["must_pass"]:
            # Under the costs it was made with.
            case["args"] = [prof_path, "--eval", plan_path] + net + (["--json"] if r.random() < 0.5 else [])
        else:
            case["args"] = [prof_path, "--eval", plan_path] + options(g, case_no, kind)
        if "net" not in base and "--alpha" not in case["args"] and "--net" not in case["args"]:
            case["args"] += ["--alpha", "1e-4", "--beta", "8e-10"]
    elif kind == "report":
        comm = {"index": 0, "state": "planned", "profile": base}
        rep = {"usbyte_report": 1, "rank": 0, "world_size": 2, "comms": [comm]}
        if r.random() < 0.3:
            rep["comms"].insert(0, {"index": 1, "state": "pass-through", "profile": None})
        for _ in range(r.choice([0, 1, 2])):
            rep = mutate_tree(g, rep)
        base = rep
        case["args"] = [prof_path] + options(g, case_no, kind)
    else:
        if kind == "profile":
            for _ in range(r.choice([1, 1, 2, 4])):
                base = mutate_tree(g, base)
        elif kind == "valid":
            for _ in range(r.choice([1, 2, 3, 5])):
                base = mutate_valid(g, base)
        case["args"] = [prof_path] + options(g, case_no, kind)
    text = json.dumps(base)
    data = mutate_text(g, text) if kind == "text" else text.encode()
    with open(prof_path, "wb") as f:
        f.write(data)
    case["text"] = data
    if kind != "text":
        case["profile_doc"] = base
    if kind != "plan" and r.random() < 0.15:
        case["args"] += ["--plan-out", os.path.join(work, "out-plan.json")]
    if kind != "plan" and r.random() < 0.1:
        case["args"] += ["--svg", os.path.join(work, "out.svg")]
    if kind in ("profile", "valid") and r.random() < 0.05:
        case["args"][0:1] = ["--synthetic", "%d,%d%s" % (r.choice([1, 2, 50, 400, 0, -1]), r.randrange(1 << 30),
                                                         ",layerwise" if r.random() < 0.5 else "")]
    return case


NONFINITE_WORD = re.compile(r"(?<![A-Za-z_])-?(nan|inf|infinity)(?![A-Za-z_])", re.I)


def check(case, rc, out, err, bound):
    """None when the run kept the contract, else what broke it."""
    if rc is None:
        return "timeout after %.0f s" % bound
    if rc < 0:
        return "killed by signal %d" % -rc
    lines = [l for l in err.decode("utf-8", "replace").split("\n") if l.strip()]
    if rc != 0 and case.get("must_pass"):
        return "a plan the simulator made was rejected: %s" % (lines[0][:200] if lines else "(no message)")
    if rc != 0:
        if len(lines) != 1:
            return "exit %d with %d lines on standard error" % (rc, len(lines))
        if re.search(r"[\x00-\x08\x0b-\x1f\x7f]", lines[0]):
            return "the error line holds a control character: %r" % lines[0][:100]
        return None
    text = out.decode("utf-8", "replace")
    for l in text.splitlines():
        m = NONFINITE_WORD.search(l)
        # The net line shows 1/beta: a free link (beta 0: one rank) or a denormal beta has a
        # bandwidth beyond any double, and "(inf GB/s)" says so truly.  Anywhere else (a cost,
        # an iteration time, a speedup) inf or nan is wrong.
        if m and not (l.startswith("net:") and not NONFINITE_WORD.search(l.replace("(inf GB/s)", ""))):
            return "output names nan or inf: %s" % l.strip()[:100]
    if "--json" in case["args"]:
        for l in text.splitlines():
            if not l.strip() or not l.lstrip().startswith("{"):
                continue
            try:
                json.loads(l, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
            except ValueError as e:
                return "--json printed a line that is not JSON (%s)" % str(e)[:60]
    return None


def known(case):
    return [name for name, _, pred in KNOWN if _safe(pred, case)]


def _safe(pred, case):
    try:
        return pred(case)
    except Exception:
        return False


def load_corpus(dirs):
    docs = []
    for d in dirs:
        for p in sorted(glob.glob(os.path.join(d, "*.json"))):
            try:
                with open(p) as f:
                    doc = json.load(f)
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and doc.get("usbyte_profile") == 1:
                docs.append(doc)
    return docs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sim", required=True, help="the usbyte-sim binary")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--runs", type=int, default=0, help="number of cases (default: until --seconds)")
    ap.add_argument("--seconds", type=float, default=0, help="time budget for the cases")
    ap.add_argument("--first", type=int, default=0, help="first case number")
    ap.add_argument("--case", type=int, action="append", help="run only this case (repeatable)")
    ap.add_argument("--timeout", type=float, default=20, help="time bound of one run, seconds")
    ap.add_argument("--known-timeout", type=float, default=3,
                    help="time bound of a run that matches a known defect (it may hang)")
    ap.add_argument("--corpus", action="append", default=[], help="a folder of profiles (repeatable)")
    ap.add_argument("--skip-known", action="store_true", help="do not run cases that match a known defect")
    ap.add_argument("--strict", action="store_true", help="no known defects: every failure counts")
    ap.add_argument("--out", help="where to keep failing cases (default: discard)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if not os.access(a.sim, os.X_OK):
        print("fuzz: %s is not an executable: build it first (make)" % a.sim, file=sys.stderr)
        return 2
    if not a.case and a.runs <= 0 and a.seconds <= 0:
        print("fuzz: give --runs, --seconds or --case", file=sys.stderr)
        return 2
    a.sim = os.path.abspath(a.sim)   # the runs happen inside each case's folder
    corpus = load_corpus(a.corpus)
    start = time.monotonic()
    stats = {"ok": 0, "error": 0, "failed": 0, "known": 0, "known_passed": 0, "skipped": 0}
    kinds, policies_seen, known_seen, now_passing, failures = {}, set(), {}, {}, []
    root = tempfile.mkdtemp(prefix="usbyte-fuzz-")

    def case_numbers():
        if a.case:
            yield from a.case
        elif a.runs > 0:
            yield from range(a.first, a.first + a.runs)
        else:
            n = a.first
            while time.monotonic() - start < a.seconds:
                yield n
                n += 1

    try:
        for case_no in case_numbers():
            work = os.path.join(root, "case-%d" % case_no)
            os.makedirs(work, exist_ok=True)
            case = make_case(a.seed, case_no, corpus, a.sim, work)
            kinds[case["kind"]] = kinds.get(case["kind"], 0) + 1
            policies_seen |= _policies(case) if case["kind"] != "plan" else {"--eval"}
            names = [] if a.strict else known(case)
            if names and a.skip_known:
                stats["skipped"] += 1
                shutil.rmtree(work)
                continue
            bound = a.known_timeout if names else a.timeout
            t0 = time.monotonic()
            try:
                p = subprocess.run([a.sim] + case["args"], cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                                   timeout=bound)
                rc, out, err = p.returncode, p.stdout, p.stderr
            except subprocess.TimeoutExpired as e:
                rc, out, err = None, e.stdout or b"", e.stderr or b""
            elapsed = time.monotonic() - t0
            problem = check(case, rc, out, err, bound)
            if problem is None:
                stats["ok" if rc == 0 else "error"] += 1
                if names:
                    stats["known_passed"] += 1
                    for nm in names:
                        now_passing[nm] = now_passing.get(nm, 0) + 1
            elif names:
                stats["known"] += 1
                for nm in names:
                    known_seen[nm] = known_seen.get(nm, 0) + 1
            else:
                stats["failed"] += 1
                failures.append((case_no, problem))
                print("FAIL case %d (%s): %s\n  replay: %s --sim %s --seed %s --case %d --out DIR\n  usbyte-sim %s\n%s"
                      % (case_no, case["kind"], problem, sys.argv[0], a.sim, a.seed, case_no,
                         " ".join(case["args"]), "".join("  | " + l + "\n" for l in
                                                         err.decode("utf-8", "replace").splitlines()[:5])),
                      flush=True)
                if a.out:
                    dest = os.path.join(a.out, "seed-%s-case-%d" % (a.seed, case_no))
                    shutil.rmtree(dest, ignore_errors=True)
                    shutil.copytree(work, dest)
                    with open(os.path.join(dest, "README"), "w") as f:
                        f.write("%s\nusbyte-sim %s\n(run inside this folder)\n%s" % (
                            problem, " ".join(os.path.relpath(x, work) if x.startswith(work) else x
                                              for x in case["args"]), err.decode("utf-8", "replace")))
            if a.verbose:
                print("case %d %s rc=%s %.2fs %s%s" % (case_no, case["kind"], rc, elapsed, problem or "ok",
                                                       " known=" + ",".join(names) if names else ""))
            shutil.rmtree(work)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    total = sum(kinds.values())
    pol = sorted(p for p in policies_seen if p in POLICIES)
    print("fuzz: seed %s, %d runs (%s) in %.0f s: %d exit 0, %d clear errors, %d failed; known defects: %d "
          "still failing%s, %d now pass%s, %d skipped; policies %s%s"
          % (a.seed, total, ", ".join("%d %s" % (v, k) for k, v in sorted(kinds.items())), time.monotonic() - start,
             stats["ok"], stats["error"], stats["failed"], stats["known"],
             " (" + ", ".join("%s %d" % kv for kv in sorted(known_seen.items())) + ")" if known_seen else "",
             stats["known_passed"],
             " (" + ", ".join("%s %d" % kv for kv in sorted(now_passing.items())) + ")" if now_passing else "",
             stats["skipped"], ",".join(pol) or "none", " and --eval" if "--eval" in policies_seen else ""))
    return 1 if stats["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
