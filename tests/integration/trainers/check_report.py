#!/usr/bin/env python3
"""Checks usbyte observe-mode reports (docs/runtime.md, "The report") against a trainer's truth file.

    check_report.py reports --truth T-%r.json --world N REPORT... [options]
    check_report.py checksums --world N [--per-rank] BASELINE.out PRELOADED.out
    check_report.py summary REPORT

Every failed check prints one line "FAIL: ..." and the exit status is 1; measured accuracy is
printed as "info: ..." lines so that test logs carry the numbers.  Standard library only.
"""
import argparse
import json
import math
import re
import statistics
import sys

POLICIES = ["wfbp", "syncea", "mgwfbp", "mgwfbp-dp", "bytescheduler", "usbyte", "best"]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def info(msg):
    print("info: " + msg)


def norm(s):
    return re.sub(r"[^a-z]", "", str(s).lower())


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail("%s: cannot read: %s" % (path, e))
        return None


def without_timing(plan):
    """A plan without the fields that measure the planner's own run time (differ per rank)."""
    return {k: v for k, v in plan.items() if k != "plan_seconds"}


def config_value(config, name):
    """config[name] under the spellings a report may use: warmup, WARMUP, USBYTE_WARMUP."""
    if not isinstance(config, dict):
        return None
    for k, v in config.items():
        if norm(k) in (norm(name), norm("usbyte_" + name)):
            return v
    return None


def check_plan_covers(plan, calls, where):
    covered = [[] for _ in calls]
    for b, block in enumerate(plan.get("blocks", [])):
        for seg in block.get("segments", []):
            call, off, length = seg
            if not 0 <= call < len(calls):
                fail("%s: block %d names call %d of %d" % (where, b, call, len(calls)))
                return
            covered[call].append((off, length))
    for k, segs in enumerate(covered):
        segs.sort()
        at = 0
        for off, length in segs:
            if off != at or length <= 0:
                fail("%s: call %d: segments %s do not cover [0, %d) exactly once"
                     % (where, k, segs, calls[k]["bytes"]))
                break
            at += length
        else:
            if at != calls[k]["bytes"]:
                fail("%s: call %d: segments cover %d of %d bytes" % (where, k, at, calls[k]["bytes"]))


def load_truths(pattern, world):
    """The trainer's truth files: PATTERN with %r replaced by each rank (every rank's actual ready
    times), or the one file PATTERN names."""
    paths = [pattern.replace("%r", str(r)) for r in range(world)] if "%r" in pattern else [pattern]
    return [load(p) for p in paths]


def check_headers(a, reports):
    """Checks the ranks present and each report's header; False when a report lacks its one communicator."""
    ranks = sorted(r.get("rank") for r in reports)
    if ranks != list(range(a.world)):
        fail("reports hold ranks %s, expected 0..%d" % (ranks, a.world - 1))
    for p, r in zip(a.reports, reports):
        if r.get("usbyte_report") != 1:
            fail("%s: usbyte_report is %r, expected 1" % (p, r.get("usbyte_report")))
        if r.get("world_size") != a.world:
            fail("%s: world_size %r, expected %d" % (p, r.get("world_size"), a.world))
        for key in ("config", "versions", "comms"):
            if key not in r:
                fail("%s: no %r" % (p, key))
        if not isinstance(r.get("comms"), list) or len(r.get("comms")) != 1:
            fail("%s: expected exactly one communicator in comms, got %r" % (p, r.get("comms")))
            return False
    return True


def check_state(a, reports, comms):
    """Checks each rank's state against --expect-state."""
    states = [norm(c.get("state")) for c in comms]
    info("states %s, calls_per_iteration %s, iterations_observed %s"
         % (sorted(set(c.get("state") for c in comms)), comms[0].get("calls_per_iteration"),
            [c.get("iterations_observed") for c in comms]))
    if a.expect_state:
        for r, s in zip(reports, states):
            if s != norm(a.expect_state):
                fail("rank %s: state %r, expected %r" % (r.get("rank"), s, a.expect_state))


def check_passthrough_reasons(a, reports, comms):
    """Checks that each pass-through rank gives a reason matching --reason."""
    for r, c in zip(reports, comms):
        why = [c.get("state_reason", "")] + list((c.get("verdict") or {}).get("reasons", []))
        info("rank %s: state %s because %s" % (r.get("rank"), c.get("state"), json.dumps(why)))
        if a.reason and not any(re.search(a.reason, str(x), re.I) for x in why):
            fail("rank %s: no reason matches /%s/: %s" % (r.get("rank"), a.reason, why))


def check_ranks_agree(reports, comms, n_calls, n_other):
    """Checks that every rank holds rank 0's profile and plan and counts the trainer's calls."""
    c0 = comms[0]
    for r, c in zip(reports, comms):
        if c.get("profile") != c0.get("profile"):
            fail("rank %s: profile differs from rank %s's" % (r.get("rank"), reports[0].get("rank")))
        if without_timing(c.get("plan") or {}) != without_timing(c0.get("plan") or {}):
            fail("rank %s: plan differs from rank %s's" % (r.get("rank"), reports[0].get("rank")))
        if c.get("calls_per_iteration") not in (n_calls, n_calls + n_other):
            fail("rank %s: calls_per_iteration %r, the trainer issues %d allreduces (+%d other calls)"
                 % (r.get("rank"), c.get("calls_per_iteration"), n_calls, n_other))
        # Every NCCL call of the iteration counted once (an ncclBcast that NCCL turns into an inner
        # ncclBroadcast through its PLT is one call).
        if "nccl_calls_per_iteration" in c and c["nccl_calls_per_iteration"] != n_calls + n_other:
            fail("rank %s: nccl_calls_per_iteration %r, the trainer makes %d NCCL calls per iteration"
                 % (r.get("rank"), c["nccl_calls_per_iteration"], n_calls + n_other))
        if not isinstance(c.get("iterations_observed"), int) or c["iterations_observed"] < 1:
            fail("rank %s: iterations_observed %r" % (r.get("rank"), c.get("iterations_observed")))


def check_profile_calls(prof, n_calls):
    """Checks that the agreed profile is a profile of n_calls calls; its calls, or None when not."""
    if not isinstance(prof, dict) or prof.get("usbyte_profile") != 1:
        fail("the report's profile is not a docs/model.md profile: %r" % (prof,))
        return None
    calls = prof.get("calls", [])
    if len(calls) != n_calls:
        fail("profile has %d calls, the trainer issues %d per iteration" % (len(calls), n_calls))
        return None
    return calls


def check_call_bytes(a, calls, tp):
    """Checks each call's bytes exactly, its dtype and op, and its merge flag."""
    for k, (m, t) in enumerate(zip(calls, tp["calls"])):
        if m.get("bytes") != t["bytes"]:
            fail("call %d: %r bytes, the trainer sends %d" % (k, m.get("bytes"), t["bytes"]))
        if m.get("dtype", "float32") != t["dtype"] or m.get("op", "sum") != t["op"]:
            fail("call %d: dtype/op %s/%s, expected %s/%s" % (k, m.get("dtype"), m.get("op"), t["dtype"], t["op"]))
        if m.get("merge", True) is not True and not a.any_needs:
            fail("call %d: merge false, but nothing waits for it before the next call" % k)


def check_needs(a, prof, tp, calls):
    """Checks the measured need boundaries against the truth's, within --need-tol of forward compute."""
    # A need boundary is a claim about forward compute: segment s may start when its calls are
    # done.  The runtime may join truth segments whose compute is too short to tell apart, and may
    # split a truth segment where the consumer does a little work between two waits (DDP's
    # finalize copies bucket b out before waiting for bucket b+1).  Either changes the model only
    # by the forward compute between the two boundaries, so that compute must stay within the
    # need tolerance.  (Order is not assumed: DDP's finalize consumes buckets in arrival order,
    # the forward-overlap pattern in reverse.)
    tneed = [t["need"] for t in tp["calls"]]
    mneed = [m.get("need", 0) for m in calls]
    if a.any_needs:
        info("need: not checked (--any-needs); measured %s, merge flags %s"
             % (mneed, [int(m.get("merge", True)) for m in calls]))
        tneed = list(mneed)
    tf, mf = tp.get("forward", [0]), prof.get("forward", [0])
    distinct, tdistinct = len(set(mneed)), len(set(tneed))
    if not a.any_needs:
        info("need: %d distinct values measured, %d in the truth; exact match %s; measured %s"
         % (distinct, tdistinct, mneed == tneed, mneed))
    worst = check_need_boundaries(a, tneed, mneed, tf, mf)
    if not a.any_needs:
        info("need: largest forward compute across a joined or split boundary %.3f ms" % (1e3 * worst))
    if a.distinct_needs and distinct < 2:
        fail("expected distinct needs (the truth has %d), measured %s" % (tdistinct, mneed))
    nf = len(prof.get("forward", [0]))
    if max(mneed) >= nf:
        fail("need %d but the profile has %d forward segments" % (max(mneed), nf))


def check_need_boundaries(a, tneed, mneed, tf, mf):
    """Checks each pair of neighbouring calls' needs; the most forward compute a joined or split boundary spans."""
    worst = 0.0
    for k in range(len(mneed) - 1):
        lo, hi = sorted((mneed[k], mneed[k + 1]))
        tlo, thi = sorted((tneed[k], tneed[k + 1]))
        if (tneed[k] > tneed[k + 1]) != (mneed[k] > mneed[k + 1]) and tlo != thi and lo != hi:
            fail("calls %d and %d: measured needs %d, %d are in the opposite order of the truth's %d, %d"
                 % (k, k + 1, mneed[k], mneed[k + 1], tneed[k], tneed[k + 1]))
            continue
        if tlo == thi and lo != hi:
            between, what = sum(mf[lo:hi]), "split"
        elif tlo != thi and lo == hi:
            between, what = sum(tf[tlo:thi]), "joined"
        else:
            continue
        worst = max(worst, between)
        if between > a.need_tol:
            fail("calls %d and %d: the measured profile %s a forward segment across %.3f ms of compute "
                 "(tolerance %.3f ms)" % (k, k + 1, what, 1e3 * between, 1e3 * a.need_tol))
    return worst


def check_verdict(a, reports, comms):
    """Checks that every rank holds rank 0's verdict, and it against --expect-schedulable and --reason."""
    c0 = comms[0]
    verdict = c0.get("verdict") or {}
    reasons = verdict.get("reasons", [])
    info("verdict: schedulable %s, reasons %s" % (verdict.get("schedulable"), json.dumps(reasons)))
    info("pattern: %s" % json.dumps(c0.get("pattern")))
    for r, c in zip(reports, comms):
        if c.get("verdict") != verdict:
            fail("rank %s: verdict %r differs from rank 0's %r" % (r.get("rank"), c.get("verdict"), verdict))
    if a.expect_schedulable is not None:
        want = a.expect_schedulable == "yes"
        if verdict.get("schedulable") is not want:
            fail("schedulable %r, expected %r (reasons %s)" % (verdict.get("schedulable"), want, reasons))
    if a.reason:
        if not any(re.search(a.reason, str(x), re.I) for x in reasons):
            fail("no reason matches /%s/: %s" % (a.reason, reasons))


def check_policies(c0):
    """Checks that every policy predicts a positive iteration; the policies' iterations by name."""
    pols = {x.get("policy"): x.get("iteration") for x in c0.get("policies", [])}
    for name in POLICIES:
        if not isinstance(pols.get(name), (int, float)) or not pols[name] > 0:
            fail("policies: no positive iteration for %s (%r)" % (name, pols.get(name)))
    return pols


def check_plan(c0, calls, pols):
    """Checks that the plan is a plan, covers every call's bytes once and is no slower than any policy."""
    plan = c0.get("plan") or {}
    if plan.get("usbyte_plan") != 1:
        fail("plan is not a docs/model.md plan: %r" % (plan,))
        return
    check_plan_covers(plan, calls, "plan")
    if pols.get("best") is not None and plan.get("iteration") is not None:
        for name, t in pols.items():
            if isinstance(t, (int, float)) and plan["iteration"] > t * (1 + 1e-9):
                fail("the chosen plan (%s, %.6g s) is slower than %s (%.6g s)"
                     % (plan.get("policy"), plan["iteration"], name, t))
    if pols.get("wfbp"):
        info("policies (ms): %s; chosen %s predicts %.3f ms, %.3fx over wfbp"
             % (", ".join("%s %.3f" % (k, 1e3 * v) for k, v in pols.items() if isinstance(v, (int, float))),
                plan.get("policy"), 1e3 * plan.get("iteration", float("nan")),
                pols["wfbp"] / plan.get("iteration", float("nan"))))


def cmd_reports(a):
    """Checks one job's observe-mode reports against its trainer's truth files."""
    truths = load_truths(a.truth, a.world)
    reports = [load(p) for p in a.reports]
    if any(t is None for t in truths) or any(r is None for r in reports):
        return
    if not check_headers(a, reports):
        return
    comms = [r["comms"][0] for r in reports]
    c0 = comms[0]
    tp = truths[0]["profile"]
    n_calls = len(tp["calls"])
    n_other = len(truths[0].get("other_calls_per_iteration", []))

    check_state(a, reports, comms)
    if a.expect_state and norm(a.expect_state) == "passthrough":
        # Nothing was agreed: no profile or plan to compare, only why.
        check_passthrough_reasons(a, reports, comms)
        return
    check_ranks_agree(reports, comms, n_calls, n_other)
    prof = c0.get("profile")
    calls = check_profile_calls(prof, n_calls)
    if calls is None:
        return
    check_call_bytes(a, calls, tp)
    used_by_rank = {r.get("rank"): (r.get("comms") or [{}])[0].get("warmup_iterations_used") for r in reports}
    check_ready(a, c0, reports[0].get("config"), calls, tp, truths, [used_by_rank.get(k) for k in range(len(truths))])
    check_needs(a, prof, tp, calls)
    # The fitted link model against the emulator's settings (ring formula), or, with its op log,
    # against what the emulated link really delivered.
    if a.alpha_us is not None:
        check_fit(a, c0, calls, prof.get("net") or {}, reports[0].get("config"),
                  [used_by_rank.get(k) for k in range(a.world)])
    check_verdict(a, reports, comms)
    check_plan(c0, calls, check_policies(c0))


def warmup_of(comm, config):
    """How many whole iterations the runtime profiled (the report says; else its configuration)."""
    for v in (comm.get("warmup_iterations"), config_value(config, "warmup")):
        try:
            if int(v) >= 1:
                return int(v)
        except (TypeError, ValueError):
            pass
    return None


def fit_line(xs, ys):
    """The least-squares line y = alpha + beta x with alpha, beta >= 0, as profiler/fit.c solves it
    (UB_FIT_PLAIN): the unconstrained solution when feasible, else the better of the two faces."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx > 0:
        beta = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
        alpha = my - beta * mx
        if alpha >= 0 and beta >= 0:
            return alpha, beta
    sse = lambda al, be: sum((y - al - be * x) ** 2 for x, y in zip(xs, ys))
    sx2 = sum(x * x for x in xs)
    faces = [(0.0, max(0.0, sum(x * y for x, y in zip(xs, ys)) / sx2) if sx2 > 0 else 0.0), (max(0.0, my), 0.0)]
    return min(faces, key=lambda f: sse(*f))


def read_oplog(path):
    """{comm: [record...]} of one rank's emulator op log (tests/emu/nccl/oplog.h), in file order."""
    names = ("comm rank nranks index kind bytes queued_ns arrival_ns start_ns data_end_ns model_end_ns "
             "end_ns").split()
    comms = {}
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("#") or not line.strip():
                    continue
                v = line.split()
                if len(v) != len(names):
                    fail("%s: an op log line has %d fields, expected %d: %r" % (path, len(v), len(names), line))
                    return {}
                rec = dict(zip(names, v))
                for k in names[1:]:
                    if k != "kind":
                        rec[k] = int(rec[k])
                comms.setdefault(rec["comm"], []).append(rec)
    except OSError as e:
        fail("%s: cannot read the emulator's op log: %s" % (path, e))
    return comms


def delivered_iterations(comms, sizes):
    """The iterations of one rank's op log: each a run of allreduces whose bytes are the profile's
    calls in order, in the communicator that has the most; a list of record lists."""
    best = []
    for recs in comms.values():
        ar = [r for r in recs if r["kind"] == "allreduce"]
        its, j, p = [], 0, len(sizes)
        while j + p <= len(ar):
            if [r["bytes"] for r in ar[j:j + p]] == sizes:
                its.append(ar[j:j + p])
                j += p
            else:
                j += 1
        if len(its) > len(best):
            best = its
    return best


def check_fit(a, c0, calls, net, config, used_of):
    p = a.world
    alpha = 2 * (p - 1) * a.alpha_us * 1e-6
    beta = 2.0 * (p - 1) / p / (a.gbps * 1e9)
    fa, fb = net.get("alpha"), net.get("beta")
    info("fit: alpha %s s (emulator model %.6g s), beta %s s/B (emulator model %.6g s/B), fit %s"
         % (fa, alpha, fb, beta, json.dumps(c0.get("fit"))))
    xs = [float(m.get("bytes", 0)) for m in calls]
    want = {"alpha": alpha, "beta": beta}
    against = "the emulator's model"
    if a.emu_oplog:
        # The runtime fits (bytes, cost sample): per rank the median over its warm-up iterations
        # of the time from where the model starts the call (the later of its ready time and the
        # previous call's end, at most its start event) to the event just after it, the least over
        # ranks.  The op log has no ready time: end - queued (the event just before the call) is
        # the sample where the call did not wait behind the previous one, a few tens of
        # microseconds under it where it did, inside the tolerance below.  Which iterations it profiled is not in the
        # report, so every window of warmup consecutive iterations (from the third, as the ready
        # check) is a candidate; the report passes with the window whose delivered fit is nearest.
        # Inside a window, each rank's samples are the iterations its report lists as used
        # (warmup_iterations_used: those whose timing had settled when the agreement was issued;
        # a slow machine leaves the last ones out).
        # When the emulator kept its model (a quiet machine) this is the model; when it did not
        # (ThreadSanitizer's data movement, a descheduled worker) it is what the link delivered.
        w = warmup_of(c0, config)
        if w is None:
            fail("fit: the report says neither warmup_iterations nor its warm-up setting")
            return
        per_rank = [delivered_iterations(read_oplog(a.emu_oplog.replace("%r", str(r))), [int(x) for x in xs])
                    for r in range(p)]
        n_it = min(len(its) for its in per_rank) if per_rank else 0
        if n_it < w + 2:
            fail("fit: the op logs hold %d iterations of the profiled calls on some rank, fewer than warm-up %d + 2"
                 % (n_it, w))
            return
        late = max((r["end_ns"] - r["model_end_ns"]) * 1e-9 for its in per_rank for it in its for r in it)
        slow = max((r["data_end_ns"] - r["model_end_ns"]) * 1e-9 for its in per_rank for it in its for r in it)
        best = None
        offsets = [[u for u in used if isinstance(u, int) and 0 <= u < w] if isinstance(used, list) else list(range(w))
                   for used in (used_of + [None] * p)[:p]]
        if not any(offsets):
            fail("fit: no rank's report lists a used warm-up iteration")
            return
        for s0 in range(2, n_it - w + 1):
            ys = [min(statistics.median((its[s0 + u][k]["end_ns"] - its[s0 + u][k]["queued_ns"]) * 1e-9 for u in used)
                      for its, used in zip(per_rank, offsets) if used) for k in range(len(xs))]
            da, db = fit_line(xs, ys)
            err = max(abs(fa - da) / max(da, alpha * 1e-3), abs(fb - db) / max(db, beta * 1e-3)) \
                if isinstance(fa, (int, float)) and isinstance(fb, (int, float)) else float("inf")
            if best is None or err < best[0]:
                best = (err, s0, da, db)
        _, s0, da, db = best
        info("fit: the emulated link delivered alpha %.6g s, beta %.6g s/B (median of iterations %d-%d of %d; "
             "ops ended up to %.3f ms after the model's end, data up to %.3f ms past it)"
             % (da, db, s0, s0 + w - 1, n_it, 1e3 * late, 1e3 * max(slow, 0.0)))
        want = {"alpha": da, "beta": db}
        against = "the delivered link's"
    # How well the samples determine each coefficient: the standard errors of an ordinary
    # least-squares line through them, from the fit's own residuals (rms) and the sizes (one
    # sample per call).  Under load (sanitizers, 4 ranks on 2 cores) a late wake-up of a few
    # hundred microseconds in the fastest sample of a large bucket moves beta by 20-30% when
    # the sizes span only ~250 KB; three standard errors are added to the tolerance.  A clean
    # fit (rms of microseconds) stays at fit_tol.  A coefficient whose three standard errors
    # exceed fit_se_cap of its value is not determined well enough by these samples to be
    # judged alone (DDP's 5 buckets under ASan: residuals of 0.1-0.6 ms
    # where the per-byte cost over the sizes' span is 0.6 ms, beta's standard error 25-90% of
    # its value, and at worst the constrained fit clamps beta to 0): what the model uses of
    # it, the line's cost at the calls' sizes, is checked instead, by the same rule.
    nfit = (c0.get("fit") or {}).get("samples")
    rms = (c0.get("fit") or {}).get("rms")
    se = {"alpha": 0.0, "beta": 0.0}
    mx = sum(xs) / len(xs) if xs else 0.0
    sxx = sum((x - mx) ** 2 for x in xs)
    sigma = None
    if nfit == len(xs) and len(xs) > 2 and isinstance(rms, (int, float)):
        sigma = rms * math.sqrt(len(xs) / (len(xs) - 2.0))
        if sxx > 0:
            se = {"beta": sigma / math.sqrt(sxx), "alpha": sigma * math.sqrt(1.0 / len(xs) + mx * mx / sxx)}
    undetermined = []
    for name, got in (("alpha", fa), ("beta", fb)):
        ref = max(want[name], 1e-3 * (alpha if name == "alpha" else beta))
        if 3 * se[name] > a.fit_se_cap * ref and isinstance(got, (int, float)):
            undetermined.append(name)
            info("fit: %s %.6g is not determined by these samples (standard error %.3g, %.0f%% of %s %.6g; "
                 "3 of them exceed %.0f%%)" % (name, got, se[name], 100 * se[name] / ref, against, want[name],
                                                100 * a.fit_se_cap))
            continue
        tol = a.fit_tol * ref + 3 * se[name]
        info("fit: %s tolerance %.1f%% (%.0f%% + 3 standard errors %.1f%%)"
             % (name, 100 * tol / ref, 100 * a.fit_tol, 300 * se[name] / ref))
        if not isinstance(got, (int, float)) or not abs(got - want[name]) <= tol:
            fail("fitted %s %r is not within %.1f%% of %s %.6g" % (name, got, 100 * tol / ref, against, want[name]))
    if undetermined:
        for x in xs:
            got, ref = fa + fb * x, want["alpha"] + want["beta"] * x
            se_x = sigma * math.sqrt(1.0 / len(xs) + (x - mx) ** 2 / sxx) if sigma is not None and sxx > 0 else 0.0
            tol = a.fit_tol * ref + min(3 * se_x, a.fit_se_cap * ref)
            if not abs(got - ref) <= tol:
                fail("the fitted line's cost at %d bytes, %.6g s, is not within %.1f%% of %s %.6g s"
                     % (x, got, 100 * tol / ref, against, ref))
        info("fit: the line's cost at the %d calls' sizes within %.0f%% (+ 3 standard errors of the cost there) "
             "of %s" % (len(xs), 100 * a.fit_tol, against))


def check_ready(a, c0, config, calls, tp, truths, used_of):
    """Each call's reported ready time against when the trainer really produced its data.

    The runtime measures when the compute stream passed the event the NCCL stream waits on (a
    companion event it records right after the application's, inside cudaEventRecord), relative
    to call 0's, averages it over the USBYTE_WARMUP iterations it profiled (docs/design.md section 5,
    include/usbyte/record.h) and agrees on the max over the ranks (record.h: a collective's data is
    ready when its last rank's is).  Under load the trainer's layers run late (its "deadline
    lateness"), so the planned schedule is not the truth: the trainers record, per rank, iteration
    and call, when that event could complete (actual_ready: the later of the stream reaching it
    and the host recording it) and the latest a companion recorded inside cudaEventRecord can
    complete (actual_ready_by: the later of the stream and the return from cudaEventRecord; the
    same as actual_ready unless the host was behind the stream), both minus call 0's actual_ready.
    So one iteration's measured offset of call k lies in [ready[k] - by[0], by[k]], up to the
    emulator's microseconds.  Which consecutive iterations the runtime profiled is not in the
    report, so every window of that many iterations from iteration 2 on is a candidate (the
    iteration detector needs two periods before it locks).  The report passes if, for ONE window,
    every call lies within tol of [max over ranks of the window mean of the lower bound, max over
    ranks of the window mean of the upper bound].  A wrong call, a time measured on the link
    instead of the data, a wrong origin, time scale, or combination over iterations or ranks land
    outside: the calls sit milliseconds apart, and the one free choice (the window) is shared by
    all calls.  The planned schedule and the spreads are info."""
    n = len(calls)
    rows = [t.get("actual_ready") for t in truths]
    plan_errs = [m.get("ready", float("nan")) - t["ready"] for m, t in zip(calls, tp["calls"])]
    span = tp["calls"][-1]["ready"]
    info("ready vs the planned schedule: max |error| %.3f ms, mean error %+.3f ms over %d calls (backward span "
         "%.3f ms; the trainer's lateness makes part of it)"
         % (1e3 * max(abs(e) for e in plan_errs), 1e3 * sum(plan_errs) / n, n, 1e3 * span))
    if any(not isinstance(r, list) for r in rows):
        # A truth from a trainer that does not record when its data was produced: the plan is all
        # there is, with the planned tolerance.
        info("ready: no actual_ready in the truth: checked against the planned schedule")
        for k, (m, t) in enumerate(zip(calls, tp["calls"])):
            tol = a.ready_tol_abs + a.ready_tol_rel * t["ready"]
            if not abs(plan_errs[k]) <= tol:
                fail("call %d: ready %.6f s, truth %.6f s (error %+.6f s > tolerance %.6f s)"
                     % (k, m.get("ready", float("nan")), t["ready"], plan_errs[k], tol))
        return
    iters = min(len(r) for r in rows)
    w = warmup_of(c0, config)
    first = 2
    if w is None or w > iters - first:
        info("ready: the profiled window is unknown (warm-up %r, %d iterations): all iterations from %d"
             % (w, iters, first))
        w = iters - first
    got = [m.get("ready", float("nan")) for m in calls]
    bys = [t.get("actual_ready_by") or r for t, r in zip(truths, rows)]

    def bounds(r, by, i):
        """Call offsets of one rank's iteration i: ([lower], [upper]) or None."""
        if not (isinstance(r[i], list) and len(r[i]) == n and isinstance(by[i], list) and len(by[i]) == n):
            return None
        return [x - by[i][0] for x in r[i]], list(by[i])

    # Each rank contributes the profiled iterations whose timing had all completed when the
    # agreement was issued (its report lists them: warmup_iterations_used, offsets in the window).
    used = [[i for i in u if isinstance(i, int) and 0 <= i < w] if isinstance(u, list) and u else list(range(w))
            for u in used_of]
    best = None
    for s in range(first, iters - w + 1):
        per_rank = [[bounds(r, by, s + i) for i in u] for r, by, u in zip(rows, bys, used)]
        if any(b is None for pr in per_rank for b in pr):
            continue
        mlo = [[sum(b[0][k] for b in pr) / len(pr) for k in range(n)] for pr in per_rank]
        mhi = [[sum(b[1][k] for b in pr) / len(pr) for k in range(n)] for pr in per_rank]
        lo = [max(m[k] for m in mlo) for k in range(n)]
        hi = [max(m[k] for m in mhi) for k in range(n)]
        ranks_lo = [min(m[k] for m in mlo) for k in range(n)]
        out = [max(lo[k] - got[k], got[k] - hi[k], 0.0) if got[k] == got[k] else float("inf") for k in range(n)]
        spread = max(max(b[1][k] for pr in per_rank for b in pr) - min(b[0][k] for pr in per_rank for b in pr)
                     for k in range(n))
        if best is None or max(out) < best[0]:
            best = (max(out), s, lo, hi, ranks_lo, out, spread)
    if best is None:
        fail("ready: no window of %d iterations from iteration %d has every rank's actual ready times "
             "(%d ranks, %d iterations)" % (w, first, len(rows), iters))
        return
    worst, s, lo, hi, ranks_lo, out, spread = best
    for k in range(n):
        if not out[k] <= a.actual_tol:
            fail("call %d: ready %.6f s; the data was available at %.6f-%.6f s (mean over iterations %d-%d, max over "
                 "%d ranks; the ranks' means from %.6f s): off by %.6f s > tolerance %.6f s"
                 % (k, got[k], lo[k], hi[k], s, s + w - 1, len(rows), ranks_lo[k], out[k], a.actual_tol))
    info("ready vs actual availability: best window iterations %d-%d (%d ranks): largest distance outside the "
         "bounds %.3f ms (tolerance %.3f ms); bounds up to %.3f ms wide (the host behind the stream), the ranks' "
         "means differ by up to %.3f ms, one call's per-iteration spread is up to %.3f ms"
         % (s, s + w - 1, len(rows), 1e3 * worst, 1e3 * a.actual_tol, 1e3 * max(h - l for l, h in zip(lo, hi)),
            1e3 * max(h - l for l, h in zip(ranks_lo, lo)), 1e3 * spread))
    stats = [t.get("actual_ready_stats") for t in truths]
    if all(isinstance(x, dict) for x in stats):
        info("ready: the host recorded the event after the stream got there for %d of %d events; longest "
             "cudaEventRecord %.3f ms" % (sum(x.get("host_behind_stream", 0) for x in stats),
                                          sum(x.get("events", 0) for x in stats),
                                          1e3 * max(x.get("widest_record_s", 0) for x in stats)))


def checksums(path):
    with open(path, errors="replace") as f:
        return re.findall(r"checksum ([0-9a-f]{16})\b", f.read())


def rank_checksums(path):
    """{rank: checksum} from emu-run's "[rank R] ..." lines."""
    with open(path, errors="replace") as f:
        return {int(r): c for r, c in re.findall(r"^\[rank (\d+)\].*checksum ([0-9a-f]{16})\b", f.read(), re.M)}


def cmd_checksums(a):
    if a.per_rank:
        # A program whose ranks legitimately compute different results (a deliberately wrong one):
        # each rank must compute with the library what it computes without it.
        base, pre = rank_checksums(a.baseline), rank_checksums(a.preloaded)
        info("checksums per rank without the library %s, with it %s" % (base, pre))
        for name, sums in (("baseline", base), ("preloaded", pre)):
            if sorted(sums) != list(range(a.world)):
                fail("%s run: checksums of ranks %s, expected 0..%d" % (name, sorted(sums), a.world - 1))
        for r in range(a.world):
            if base.get(r) != pre.get(r):
                fail("rank %d: checksum %s without the library, %s with it" % (r, base.get(r), pre.get(r)))
        return
    base, pre = checksums(a.baseline), checksums(a.preloaded)
    info("checksums without the library %s, with it %s" % (sorted(set(base)), sorted(set(pre))))
    for name, sums, path in (("baseline", base, a.baseline), ("preloaded", pre, a.preloaded)):
        if len(sums) != a.world:
            fail("%s run %s: %d checksum lines, expected %d" % (name, path, len(sums), a.world))
        if len(set(sums)) > 1:
            fail("%s run: ranks disagree: %s" % (name, sums))
    if sorted(base) != sorted(pre):
        fail("checksums differ with the library: %s vs %s" % (sorted(base), sorted(pre)))


def cmd_summary(a):
    r = load(a.report)
    if r is None:
        return
    for i, c in enumerate(r.get("comms", [])):
        prof = c.get("profile") or {}
        plan = c.get("plan") or {}
        pols = {x.get("policy"): x.get("iteration") for x in c.get("policies", [])}
        verdict = c.get("verdict") or {}
        print("communicator %d: %s, %s calls per iteration, %s iterations observed"
              % (i, c.get("state"), c.get("calls_per_iteration"), c.get("iterations_observed")))
        net = prof.get("net") or {}
        if net:
            print("  fitted link: alpha %.1f us, beta %.3f ns/B (%.2f GB/s)"
                  % (1e6 * net.get("alpha", 0), 1e9 * net.get("beta", 0),
                     1e-9 / net["beta"] if net.get("beta") else float("nan")))
        if isinstance(c.get("measured_iteration"), (int, float)):
            print("  measured iteration: %.3f ms (usbyte, during the warm-up)" % (1e3 * c["measured_iteration"]))
        if a.measured_ms is not None:
            print("  measured iteration: %.3f ms (the trainer without usbyte, backward start to backward start)"
                  % a.measured_ms)
        if prof.get("calls"):
            print("  profile: %d calls, %.3f MB, backward %.3f ms from the first call, forward %.3f ms"
                  % (len(prof["calls"]), 1e-6 * sum(x.get("bytes", 0) for x in prof["calls"]),
                     1e3 * prof.get("backward_end", 0), 1e3 * sum(prof.get("forward", []))))
        print("  schedulable: %s%s" % (verdict.get("schedulable"),
                                      "" if not verdict.get("reasons") else " (" + "; ".join(map(str, verdict["reasons"])) + ")"))
        wfbp = pols.get("wfbp")
        for name in POLICIES:
            t = pols.get(name)
            if isinstance(t, (int, float)):
                print("  %-14s %9.3f ms predicted%s" % (name, 1e3 * t, "  %.3fx over wfbp" % (wfbp / t) if wfbp else ""))
        if plan.get("iteration") and wfbp:
            print("  chosen plan: %s, %d blocks, predicted %.3f ms, speedup %.3fx over wfbp (what NCCL does now)"
                  % (plan.get("policy"), len(plan.get("blocks", [])), 1e3 * plan["iteration"], wfbp / plan["iteration"]))
        lb = plan.get("lower_bound")
        if isinstance(lb, (int, float)) and lb > 0 and wfbp:
            print("  lower bound %.3f ms: wfbp is %.1f%% above it, the chosen plan %.1f%%"
                  % (1e3 * lb, 100 * (wfbp / lb - 1), 100 * (plan["iteration"] / lb - 1)))
        sch = c.get("schedule") or {}
        if sch.get("measured_iteration"):
            print("  schedule mode: %d iterations run, %d deviations; measured iteration %.3f ms (steady, device events)"
                  % (sch.get("iterations", 0), sch.get("deviations", 0), 1e3 * sch["measured_iteration"]))
            if a.measured_ms is not None:
                print("  measured speedup %.2fx over the run without usbyte; predicted %.2fx (wfbp over the plan)"
                      % (a.measured_ms * 1e-3 / sch["measured_iteration"], sch.get("predicted_speedup") or float("nan")))
            if sch.get("completion_note"):
                print("  " + sch["completion_note"])


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reports")
    r.add_argument("--truth", required=True, help="truth file; %%r: one per rank (every rank's actual ready times)")
    r.add_argument("--world", type=int, required=True)
    r.add_argument("--expect-state")
    r.add_argument("--expect-schedulable", choices=["yes", "no"])
    r.add_argument("--reason")
    r.add_argument("--distinct-needs", action="store_true")
    r.add_argument("--ready-tol-abs", type=float, default=2e-3,
                   help="planned-schedule tolerance, used only for a truth without actual_ready")
    r.add_argument("--ready-tol-rel", type=float, default=0.05)
    r.add_argument("--actual-tol", type=float, default=0.5e-3,
                   help="how far (s) a ready time may lie outside the actual production times of its window")
    r.add_argument("--need-tol", type=float, default=2e-3)
    r.add_argument("--any-needs", action="store_true",
                   help="do not check needs and merge flags (a trainer whose waits race with its issues)")
    r.add_argument("--alpha-us", type=float)
    r.add_argument("--gbps", type=float)
    r.add_argument("--fit-tol", type=float, default=0.10)
    r.add_argument("--emu-oplog", help="the emulator's op logs (%%r: the rank): judge the fit against the "
                                       "durations the emulated link delivered, not its model")
    r.add_argument("--fit-se-cap", type=float, default=0.30,
                   help="most that 3 standard errors of a coefficient may be (fraction of its value) for "
                        "it to be judged alone; beyond, the fitted line's cost at the calls' sizes is")
    r.add_argument("reports", nargs="+")
    c = sub.add_parser("checksums")
    c.add_argument("--world", type=int, required=True)
    c.add_argument("--per-rank", action="store_true",
                   help="compare each rank's checksum with its own baseline (ranks may differ)")
    c.add_argument("baseline")
    c.add_argument("preloaded")
    s = sub.add_parser("summary")
    s.add_argument("--measured-ms", type=float)
    s.add_argument("report")
    a = ap.parse_args()
    {"reports": cmd_reports, "checksums": cmd_checksums, "summary": cmd_summary}[a.cmd](a)
    if failures:
        print("%d check(s) failed" % len(failures))
        sys.exit(1)


if __name__ == "__main__":
    main()
