#!/usr/bin/env python3
"""The observe tests are only as good as check_report.py: this proves it passes a consistent set of
reports and fails on each kind of error it is meant to catch.  Synthetic files, no emulator."""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = [sys.executable, os.path.join(HERE, "check_report.py")]
WORLD = 2
ALPHA_US, GBPS = 800.0, 0.2
POLICIES = ["wfbp", "syncea", "mgwfbp", "mgwfbp-dp", "bytescheduler", "usbyte", "best"]


ITERS, WARMUP, PROFILED = 10, 5, 3   # the synthetic runtime profiled iterations 3-7


def truth(rank=0):
    """Rank's truth: the planned profile and when its data was really produced per iteration
    (iteration 0 issued other calls; small jitter; rank 1's call 2 is 4 ms late in iteration 5, as a
    loaded machine makes it)."""
    calls = [{"name": None, "bytes": b, "ready": r, "need": n, "dtype": "float32", "op": "sum", "merge": True}
             for b, r, n in ((4000, 0.0, 1), (8000, 0.004, 1), (16000, 0.010, 0), (4000, 0.012, 0))]
    actual = [None]
    for it in range(1, ITERS):
        row = [0.0] + [c["ready"] + 1e-4 * ((rank + it + k) % 3) for k, c in enumerate(calls) if k > 0]
        if rank == 1 and it == 5:
            row[2] += 0.004
        actual.append(row)
    return {"trainer": "synthetic", "rank": rank, "profile": {"usbyte_profile": 1, "net": None, "backward_end": 0.012,
                                                              "gap": 0.0, "forward": [0.003, 0.005], "calls": calls},
            "other_calls_per_iteration": [], "actual_ready": actual}


def measured_ready(truths):
    """What the runtime reports: per rank the mean over the profiled window, the max over ranks."""
    n = len(truths[0]["profile"]["calls"])
    return [max(sum(t["actual_ready"][i][k] for i in range(PROFILED, PROFILED + WARMUP)) / WARMUP for t in truths)
            for k in range(n)]


def report(rank, t, truths):
    prof = copy.deepcopy(t["profile"])
    prof["net"] = {"alpha": 2 * (WORLD - 1) * ALPHA_US * 1e-6, "beta": 2.0 * (WORLD - 1) / WORLD / (GBPS * 1e9),
                   "copy_beta": 0.0}
    for c, r in zip(prof["calls"], measured_ready(truths)):
        c["ready"] = r + (0.0003 if r > 0 else 0.0)   # measured a little late, within the tolerance
    blocks = [{"segments": [[k, 0, c["bytes"]]], "start": 0.0, "end": 0.0} for k, c in enumerate(prof["calls"])]
    plan = {"usbyte_plan": 1, "policy": "best", "iteration": 0.030, "lower_bound": 0.029,
            "plan_seconds": 0.001 * (rank + 1), "blocks": blocks}
    comm = {"state": "planned", "calls_per_iteration": len(prof["calls"]), "iterations_observed": 8,
            "warmup_iterations": WARMUP,
            "profile": prof, "fit": {}, "pattern": {}, "verdict": {"schedulable": True, "reasons": []},
            "policies": [{"policy": p, "iteration": 0.030 if p == "best" else 0.031} for p in POLICIES],
            "plan": plan}
    return {"usbyte_report": 1, "rank": rank, "world_size": WORLD, "config": {}, "versions": {}, "comms": [comm]}


def run(tmp, truths, reports, extra=()):
    paths = []
    for r in reports:
        p = os.path.join(tmp, "report-%d.json" % r["rank"])
        json.dump(r, open(p, "w"))
        paths.append(p)
    for t in truths:
        json.dump(t, open(os.path.join(tmp, "truth-%d.json" % t["rank"]), "w"))
    tp = os.path.join(tmp, "truth-%r.json")
    args = CHECK + ["reports", "--truth", tp, "--world", str(WORLD), "--alpha-us", str(ALPHA_US),
                    "--gbps", str(GBPS)] + list(extra) + paths
    return subprocess.run(args, capture_output=True, text=True)


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        t = [truth(r) for r in range(WORLD)]
        good = [report(r, t[r], t) for r in range(WORLD)]
        res = run(tmp, t, good, ["--distinct-needs"])
        if res.returncode != 0:
            print("FAIL: a consistent set of reports is rejected:\n" + res.stdout)
            failures += 1
        # The plan says call 2 is ready at 10 ms; rank 1 really produced it 4 ms late once in the
        # profiled window: the planned check with a tight tolerance would reject this right report.
        res = run(tmp, t, good, ["--ready-tol-abs", "5e-4", "--ready-tol-rel", "0"])
        if res.returncode != 0:
            print("FAIL: a report that follows the actual (late) production is rejected:\n" + res.stdout)
            failures += 1
        # A truth without actual ready times (an older trainer): the planned schedule is checked.
        plain = copy.deepcopy(t)
        for x in plain:
            del x["actual_ready"]
        res = run(tmp, plain, good)
        if res.returncode != 0 or "checked against the planned schedule" not in res.stdout:
            print("FAIL: without actual_ready, a report within the planned tolerance is rejected:\n" + res.stdout)
            failures += 1

        def corrupt(name, fn, extra=(), truths=None):
            nonlocal failures
            reps = copy.deepcopy(good)
            fn(reps)
            res = run(tmp, truths or t, reps, extra)
            if res.returncode == 0:
                print("FAIL: check_report.py accepts %s" % name)
                failures += 1
            else:
                print("ok: rejects %s: %s" % (name, next(l for l in res.stdout.splitlines() if l.startswith("FAIL"))))

        def prof(reps):
            return [r["comms"][0]["profile"] for r in reps]

        corrupt("a byte count off by 4", lambda reps: [p["calls"][1].update(bytes=8004) for p in prof(reps)])
        corrupt("a missing call", lambda reps: [p["calls"].pop() for p in prof(reps)])
        corrupt("a ready time 5 ms late", lambda reps: [p["calls"][2].update(ready=0.0153) for p in prof(reps)])
        corrupt("every ready time shifted by +5 ms",
                lambda reps: [c.update(ready=c["ready"] + 0.005) for p in prof(reps) for c in p["calls"][1:]])
        corrupt("ready times 1 ms early (outside the 0.5 ms tolerance)",
                lambda reps: [c.update(ready=c["ready"] - 0.0013) for p in prof(reps) for c in p["calls"][1:]])

        def permute(reps):
            for p in prof(reps):
                r = [c["ready"] for c in p["calls"]]
                for c, x in zip(p["calls"], [r[0], r[2], r[1], r[3]]):
                    c["ready"] = x
        corrupt("ready times of the wrong calls (calls 1 and 2 swapped)", permute)
        corrupt("ready times of the planned schedule where the data came later",
                lambda reps: [c.update(ready=tc["ready"]) for p in prof(reps)
                              for c, tc in zip(p["calls"], t[0]["profile"]["calls"])])
        corrupt("a ready time 5 ms late (truth without actual_ready)",
                lambda reps: [p["calls"][2].update(ready=0.0153) for p in prof(reps)], truths=plain)
        corrupt("ready times of the earliest rank instead of the last",
                lambda reps: [c.update(ready=min(sum(x["actual_ready"][i][k] for i in range(PROFILED, PROFILED + WARMUP))
                                                 / WARMUP for x in t))
                              for p in prof(reps) for k, c in enumerate(p["calls"])])
        corrupt("truths with another rank's iteration missing in every window",
                lambda reps: None,
                truths=[t[0], dict(t[1], actual_ready=[r if i % 4 else None for i, r in enumerate(t[1]["actual_ready"])])])
        corrupt("alpha 20% high", lambda reps: [p["net"].update(alpha=p["net"]["alpha"] * 1.2) for p in prof(reps)])
        corrupt("beta 20% low", lambda reps: [p["net"].update(beta=p["net"]["beta"] * 0.8) for p in prof(reps)])

        def noisy_fit(factor, rms=1e-3):
            # Residuals of 1 ms over sizes spanning 12 KB: the samples cannot tell beta apart
            # (its standard error is 29 times the value), so what the model uses of it is
            # checked: the line's cost at the calls' sizes.  Residuals of 17 us make the
            # standard error half the value: three of them exceed what may widen a
            # coefficient's own tolerance (30%), so again the cost is checked.
            def fn(reps):
                for r in reps:
                    r["comms"][0]["fit"] = {"samples": 4, "rms": rms}
                    r["comms"][0]["profile"]["net"]["beta"] *= factor
            return fn
        for factor, rms, what in ((0.5, 1e-3, "beta 50% low"), (0.0, 1e-3, "beta clamped to 0"),
                                  (0.5, 1.7e-5, "beta 50% low with its standard error half the value")):
            reps = copy.deepcopy(good)
            noisy_fit(factor, rms)(reps)
            res = run(tmp, t, reps)
            if res.returncode != 0 or "is not determined by these samples" not in res.stdout:
                print("FAIL: %s, residuals %g s over 12 KB of sizes (the cost at the sizes within 5%%), is "
                      "rejected or not said undetermined:\n%s" % (what, rms, res.stdout))
                failures += 1
        corrupt("beta 100x high with a noisy fit (the line's cost at 16 KB 6x the link's)", noisy_fit(100.0))
        corrupt("profiles that differ between ranks", lambda reps: prof(reps)[1]["calls"][0].update(ready=0.0001))
        corrupt("plans that differ between ranks",
                lambda reps: reps[1]["comms"][0]["plan"]["blocks"].reverse())
        corrupt("a plan that misses bytes",
                lambda reps: [r["comms"][0]["plan"]["blocks"][0]["segments"][0].__setitem__(2, 2000) for r in reps])
        corrupt("a plan slower than a policy",
                lambda reps: [r["comms"][0]["plan"].update(iteration=0.040) for r in reps])
        corrupt("a missing policy", lambda reps: [r["comms"][0]["policies"].pop(0) for r in reps])
        corrupt("needs joined across 3 ms of forward compute",
                lambda reps: [c.update(need=0) for p in prof(reps) for c in p["calls"]])
        corrupt("a missing rank", lambda reps: reps.pop())
        corrupt("an unexpected verdict", lambda reps: None, ["--expect-schedulable", "no"])
        corrupt("a state other than pass-through", lambda reps: None, ["--expect-state", "pass-through"])
        corrupt("a merge barrier nobody made",
                lambda reps: [p["calls"][0].update(merge=False) for p in prof(reps)])

        base, pre = os.path.join(tmp, "a.out"), os.path.join(tmp, "b.out")
        open(base, "w").write("[rank 0] checksum 00000000000000aa\n[rank 1] checksum 00000000000000aa\n")
        open(pre, "w").write("[rank 0] checksum 00000000000000aa\n[rank 1] checksum 00000000000000ab\n")
        for b, p, want in ((base, base, 0), (base, pre, 1)):
            rc = subprocess.run(CHECK + ["checksums", "--world", "2", b, p], capture_output=True).returncode
            if (rc != 0) != bool(want):
                print("FAIL: checksums %s vs %s: exit %d" % (b, p, rc))
                failures += 1
    print("%d failure(s)" % failures)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
