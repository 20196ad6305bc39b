#!/usr/bin/env python3
"""A bounded, seeded fuzzer of usbyte-report: mutated and mixed rank reports.

Each case is derived from (seed, case number) alone, so `--seed S --case I` replays it.  A case
takes one to four rank reports of the corpus (directories of real reports, one job each), often
from different jobs (a stale file beside a newer run's), mutates their structure, their numbers,
their identities or their ranks, and runs usbyte-report on them as files, as a directory, or as
two directories (the comparison), with or without --summary.  Every run must end within the time
bound with exit 0 or 1 (then the page and the trace exist, the trace follows the Chrome trace
event format) or with exit 2 and exactly one line on standard error; never by a signal, a
sanitizer's report or a timeout.  The last line is the summary; the exit status is 1 when any
case failed, 2 on bad arguments.
"""
import argparse
import copy
import glob
import importlib.util
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("check", os.path.join(HERE, "..", "integration", "tools_report_check.py"))
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)

EXITS = {}  # how the runs ended: exit status -> count (the summary shows that both outcomes happen)
EXTREME = [0, -1, 1e-320, 1e300, -1e300, 2 ** 63, -2 ** 63, 2 ** 64, 1.5, "x", None, True, [], {}, "", "\u00e9\u4e2d"]


def corpus(dirs):
    jobs = []
    for d in dirs:
        reps = []
        for p in sorted(glob.glob(os.path.join(d, "*.json"))):
            doc = json.load(open(p))
            if isinstance(doc, dict) and "usbyte_report" in doc:
                reps.append(doc)
        if reps:
            jobs.append(reps)
    return jobs


def places(doc, path=()):
    """Every (container, key) in the document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield doc, k
            yield from places(v, path + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield doc, i
            yield from places(v, path + (i,))


def mutate(r, doc):
    spots = list(places(doc))
    if not spots:
        return
    kind = r.random()
    parent, key = r.choice(spots)
    if kind < 0.3:
        parent[key] = r.choice(EXTREME)
    elif kind < 0.45 and isinstance(parent, dict):
        del parent[key]
    elif kind < 0.55 and isinstance(parent, list):
        del parent[key]
    elif kind < 0.65 and isinstance(parent[key], list) and parent[key]:
        parent[key].append(copy.deepcopy(r.choice(parent[key])))
    elif kind < 0.75 and isinstance(parent[key], (int, float)) and not isinstance(parent[key], bool):
        parent[key] = parent[key] * r.choice([-1, 0, 0.5, 2, 1e6, 1e-6])
    elif kind < 0.85:
        # identities and ranks: jobs mixed, ranks duplicated or out of range
        target = r.choice(["rank", "world_size", "job", "id"])
        if target in ("rank", "world_size"):
            doc[target] = r.choice([0, 1, 2, 3, 7, -1, 1000])
        elif target == "job":
            doc["job"] = {"id": r.choice(["0000000000000000", "ffffffffffffffff", None, 5])}
        elif doc.get("comms"):
            c = r.choice(doc["comms"])
            if isinstance(c, dict):
                c["id"] = r.choice(["aaaa", None, 3, "0123456789abcdef"])
    else:
        # a subtree moved elsewhere (a plan of another profile, a recording of another plan)
        other_parent, other_key = r.choice(spots)
        try:
            parent[key] = copy.deepcopy(other_parent[other_key])
        except (KeyError, IndexError, TypeError):
            pass


def one_case(args, jobs, seed, case, work):
    r = random.Random("%s:%d" % (seed, case))
    n = r.randint(1, 4)
    picks = []
    for _ in range(n):
        job = r.choice(jobs) if r.random() < 0.4 else jobs[0]
        picks.append(copy.deepcopy(r.choice(job)))
    for doc in picks:
        for _ in range(r.choice([0, 0, 1, 1, 2, 5])):
            mutate(r, doc)
    d = os.path.join(work, "case%d" % case)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "a"))
    os.makedirs(os.path.join(d, "b"))
    paths = []
    for i, doc in enumerate(picks):
        sub = "a" if i < (n + 1) // 2 or n == 1 else "b"
        p = os.path.join(d, sub, "r%d.json" % i)
        text = json.dumps(doc)
        if r.random() < 0.05:
            text = text[: r.randint(0, len(text))]  # a file cut short
        open(p, "w").write(text)
        paths.append(p)
    how = r.random()
    if how < 0.5:
        cmd = [args.report] + paths
    elif how < 0.75:
        cmd = [args.report, os.path.join(d, "a")]
    else:
        cmd = [args.report, os.path.join(d, "a"), os.path.join(d, "b")]
    out = os.path.join(d, "out")
    cmd += ["-o", out, "--quiet"] + (["--summary"] if r.random() < 0.5 else [])
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return "timeout after %gs: %s" % (args.timeout, " ".join(cmd))
    err = p.stderr.strip().splitlines()
    EXITS[p.returncode] = EXITS.get(p.returncode, 0) + 1
    if p.returncode < 0 or p.returncode not in (0, 1, 2):
        return "exit %d: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:])
    if p.returncode == 2:
        if len(err) != 1 or not err[0].startswith("usbyte-report: "):
            return "exit 2 without one line: %s\n%s" % (" ".join(cmd), p.stderr[-2000:])
        return None
    if err:
        return "exit %d with standard error: %s\n%s" % (p.returncode, " ".join(cmd), p.stderr[-2000:])
    if not glob.glob(os.path.join(out, "usbyte-*.html")):
        return "exit %d and no page: %s" % (p.returncode, " ".join(cmd))
    trace = os.path.join(out, "usbyte-trace.json")
    if os.path.exists(trace):
        errors = check.validate_chrome_trace(json.load(open(trace)))
        if errors:
            return "the trace breaks the format: %s: %s" % (errors[0], " ".join(cmd))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", required=True, help="the usbyte-report binary")
    ap.add_argument("--corpus", action="append", required=True, help="a directory of one job's reports")
    ap.add_argument("--seed", default="1")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--case", type=int, help="replay one case")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    jobs = corpus(args.corpus)
    if not jobs:
        print("fuzz_report: no report in %s" % args.corpus)
        sys.exit(2)
    work = tempfile.mkdtemp(prefix="fuzz_report.")
    cases = [args.case] if args.case is not None else range(args.runs)
    failed, t0 = 0, time.time()
    for case in cases:
        why = one_case(args, jobs, args.seed, case, work)
        if why:
            failed += 1
            print("FAIL case %d (replay: --seed %s --case %d): %s" % (case, args.seed, case, why))
        else:
            shutil.rmtree(os.path.join(work, "case%d" % case), ignore_errors=True)
    shutil.rmtree(work, ignore_errors=True)
    print("fuzz_report: %d cases of seed %s from %d jobs in %.0f s (exit status: %s): %d failed" % (
        len(cases), args.seed, len(jobs), time.time() - t0,
        ", ".join("%d x%d" % (k, v) for k, v in sorted(EXITS.items())), failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
