#!/usr/bin/env python3
"""make bench-schedule: what schedule mode gains on the emulator, next to what it predicts.

For each trainer (DDP-like, Horovod-like with fusion off, per-layer under stream and call
completion) x two profiles x four emulated links, three runs on 4 ranks: without usbyte, with
observe, with schedule; the three are interleaved and the whole round repeated REPEAT times, and
the tables show medians.  The links (tests/bench/links.py): `10gbe` and `100gb-ib`, usbyte-sim's
presets at the trainers' 4 ranks, scaled like the trainers' times and bytes, so communication
weighs what it would on such a network; and two stress tests that no network is: 1 ms per ring
step (latency-bound, where merging gains the most) and 20 us per step at 0.05 GB/s
(bandwidth-bound).  BENCH_LINKS (names, space-separated) and BENCH_TRAINERS (a substring of the
trainer's name) select a subset.

- base, observe, schedule: the trainer's own mean over its last 10 iterations (backward start to
  backward start, host clock of the compute stream's host functions: docs/model.md's iteration; the
  last 10 of 30 come after usbyte's warm-up and switch), without the library, with
  USBYTE_MODE=observe and with schedule mode;
- device: the report's schedule.measured_iteration (device events one iteration apart, steady
  iterations only), the library's own reading of the same;
- predicted: the report's wfbp and chosen-plan iterations (the agreed profile, docs/model.md);
- measured speedup = base / schedule, predicted speedup = wfbp / chosen, ratio = measured /
  predicted.

The link rows run with USBYTE_VERIFY=0: they show what the plan itself gains, every iteration
from the switch.  The curve rows (each measured allreduce curve of data/net/, USBYTE_EMU_NET, with
and without USBYTE_EMU_INTERFERENCE=0.2 USBYTE_EMU_JITTER_PCT=5) run with verification on, as a job
does by default, on CURVE_RANKS ranks, CURVE_ITERS iterations, CURVE_REPEAT rounds of a run
without usbyte and one with it: predicted (the model's plan and wfbp), the verification's agreed
measurements of the candidate and of pass-through, what it kept, and the final steady state (the
trainer's last 10 iterations) against the run without usbyte.  BENCH_PART=links or curves runs one
part (each rewrites only its own section of the file); BENCH_CURVES (a substring of the file name)
selects curves.

Writes the table to docs/bench-schedule.md (or the path given) and prints it.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import links  # noqa: E402  (tests/bench/links.py: the emulated links)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("BUILD", "build")
REPEAT = int(os.environ.get("REPEAT", "3"))
RANKS = 4
PROF = os.path.join(ROOT, "data", "profiles")

# name, trainer, extra environment, extra arguments, profiles
TRAINERS = [
    ("DDP-like, 1 MB buckets", "ddp_like", {}, ["--bucket-cap-mb", "1", "--first-bucket-mb", "0.25"],
     ["resnet50-v100-b64-barrier", "vgg16-v100-b64-barrier"]),
    ("DDP-like, 25 MB buckets", "ddp_like", {}, [], ["resnet50-v100-b64-barrier"]),
    ("Horovod-like, fusion off", "horovod_like", {}, ["--fusion-threshold-mb", "0"],
     ["vgg16-v100-b64-barrier", "resnet50-v100-b64-barrier"]),
    ("per-layer, stream completion", "per_layer", {"USBYTE_COMPLETION": "stream"}, [],
     ["vgg16-v100-b64", "resnet50-v100-b64"]),
    ("per-layer, call completion", "per_layer", {"USBYTE_COMPLETION": "call"}, [],
     ["vgg16-v100-b64", "resnet50-v100-b64"]),
]
# link name (links.py), label, stress test?
LINK_NAMES = [("10gbe", "10gbe", False), ("100gb-ib", "100gb-ib", False),
              ("stress", "stress: 1 ms/step", True), ("stress-bandwidth", "stress: bandwidth", True)]
ITERS = 30
COMMON = ["--iters", str(ITERS), "--time-scale", str(links.TIME_SCALE), "--bytes-scale", str(links.BYTES_SCALE)]


def run(trainer, args, env_extra, mode, work, ranks=RANKS):
    env = dict(os.environ)
    env.setdefault("USBYTE_VERIFY", "0")
    env.update(env_extra)
    env.update({"USBYTE_WARMUP": "3", "USBYTE_LOG": "warn"})
    report = os.path.join(work, "r-%r.json")
    if mode == "base":
        env["LD_PRELOAD"] = ""
    else:
        env["LD_PRELOAD"] = env_extra.get("LD_PRELOAD", os.path.join(ROOT, BUILD, "libusbyte.so"))
        env["USBYTE_MODE"] = mode
        env["USBYTE_REPORT"] = report
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    cmd = [os.path.join(ROOT, BUILD, "emu", "emu-run"), "-n", str(ranks), "--timeout", "300", "--",
           os.path.join(ROOT, BUILD, "trainers", trainer)] + args
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit("bench-schedule: %s %s (%s) failed:\n%s" % (trainer, " ".join(args), mode, p.stdout[-3000:]))
    iters = [float(l.split("last-iterations ")[1].split(" ms")[0]) * 1e-3 for l in p.stdout.splitlines()
             if "] last-iterations " in l]
    sums = sorted(set(l.split("checksum ")[1].strip() for l in p.stdout.splitlines() if "checksum " in l))
    out = {"iteration": statistics.median(iters), "checksums": sums}
    if mode != "base":
        c = json.load(open(report.replace("%r", "0")))["comms"][0]
        pol = {x["policy"]: x["iteration"] for x in c.get("policies", [])}
        out.update(state=c["state"], wfbp=pol.get("wfbp"), chosen=(c.get("plan") or {}).get("iteration"),
                   policy=(c.get("plan") or {}).get("policy"), blocks=len((c.get("plan") or {}).get("blocks", [])),
                   calls=c.get("calls_per_iteration"), schedule=c.get("schedule") or {},
                   fit_alpha=(c.get("fit") or {}).get("alpha"), verification=c.get("verification"))
    return out


CURVE_RANKS = int(os.environ.get("CURVE_RANKS", "2"))
CURVE_ITERS = int(os.environ.get("CURVE_ITERS", "120"))
CURVE_REPEAT = int(os.environ.get("CURVE_REPEAT", "5"))
CURVE_TRAINER = ("Horovod-like, fusion off", "horovod_like", ["--fusion-threshold-mb", "0"], "resnet50-v100-b64-barrier")
NOISE = {"USBYTE_EMU_INTERFERENCE": "0.2", "USBYTE_EMU_JITTER_PCT": "5"}
CURVES_BEGIN, CURVES_END = "<!-- curve rows: tests/bench/schedule.py -->", "<!-- end of curve rows -->"


def median_or_none(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def verdict_iteration(r):
    """The trainer iteration of the latest verdict (its call index over the calls per iteration), None
    when verification took none."""
    v = r.get("verification") or {}
    at, calls = v.get("at_call"), r.get("calls")
    return at // calls if at is not None and at >= 0 and calls else None


def steady_after_verdict(trainer, args, env, work):
    """A schedule-mode run whose last 10 iterations (the steady state) all come after the latest
    verdict: a run whose verdict fell later (a second candidate's window, a re-profiled warm-up)
    runs again with twice the iterations."""
    iters = CURVE_ITERS
    while True:
        a = list(args)
        a[a.index("--iters") + 1] = str(iters)
        r = run(trainer, a, env, "schedule", work, CURVE_RANKS)
        at = verdict_iteration(r)
        if at is None or at < iters - 10 or iters >= 8 * CURVE_ITERS:
            r["steady_after_verdict"] = at is None or at < iters - 10
            return r
        iters *= 2


def curve_rows(work):
    """One row per shipped curve x (quiet, interference and jitter)."""
    netdir = os.path.join(ROOT, "data", "net")
    curves = sorted(f for f in os.listdir(netdir) if f.endswith(".tsv") and os.environ.get("BENCH_CURVES", "") in f)
    tname, trainer, extra, prof = CURVE_TRAINER
    args = ["--profile", os.path.join(PROF, prof + ".json"), "--iters", str(CURVE_ITERS), "--time-scale",
            str(links.TIME_SCALE), "--bytes-scale", str(links.BYTES_SCALE)] + extra
    rows = []
    for curve in curves:
        for noisy in (False, True):
            env = {"USBYTE_EMU_NET": os.path.join(netdir, curve), "USBYTE_VERIFY": "1"}
            if noisy:
                env.update(NOISE)
            base, sched = [], []
            for _ in range(CURVE_REPEAT):   # interleaved
                base.append(run(trainer, args, env, "base", work, CURVE_RANKS))
                sched.append(steady_after_verdict(trainer, args, env, work))
            vs = [r["verification"] for r in sched if r.get("verification")]
            first = [v["candidates"][0] for v in vs if v.get("candidates")]
            kept = sorted(set(v.get("kept") or "undecided" for v in vs)) or ["no plan ran (%s)" % "/".join(
                sorted(set(r["state"] for r in sched)))]
            row = {
                "curve": curve[:-4], "noisy": noisy, "calls": sched[0]["calls"], "policy": sched[0]["policy"],
                "wfbp": median_or_none(r["wfbp"] for r in sched), "chosen": median_or_none(r["chosen"] for r in sched),
                "measured": median_or_none(c.get("measured_iteration") for c in first),
                "pass": median_or_none(v.get("pass_through_iteration") for v in vs),
                # The model against what ran, per run (medians of the runs' ratios): the plan's
                # prediction over its measured median, wfbp's over the pass-through median.
                "plan_error": median_or_none(c["predicted_iteration"] / c["measured_iteration"] for c in first
                                             if c.get("predicted_iteration") and c.get("measured_iteration")),
                # The same plan under the model re-fitted with its own measured blocks (the
                # executor's cost per block known): its prediction over its measured median.
                "refit_error": median_or_none(c["refit_predicted_iteration"] / c["measured_iteration"] for c in first
                                              if c.get("refit_predicted_iteration") and c.get("measured_iteration")),
                "wfbp_error": median_or_none(r["wfbp"] / r["verification"]["pass_through_iteration"] for r in sched
                                             if r.get("wfbp") and (r.get("verification") or {}).get("pass_through_iteration")),
                "kept": "/".join(kept), "n_kept": sum(1 for v in vs if v.get("kept") not in (None, "pass-through")),
                "base": statistics.median(r["iteration"] for r in base),
                "schedule": statistics.median(r["iteration"] for r in sched),
                "state": "/".join(sorted(set(r["state"] for r in sched))),
                "checksums": all(r["checksums"] == base[0]["checksums"] for r in base + sched),
                "after_verdict": all(r["steady_after_verdict"] for r in sched),
            }
            row["steady_ratio"] = row["schedule"] / row["base"]
            # The machine's noise on this row: the spread of the runs without usbyte (1.4826 x their
            # median absolute deviation, relative), and the standard error of a ratio of two medians
            # of CURVE_REPEAT runs with that spread each.
            b = [r["iteration"] for r in base]
            mad = statistics.median(abs(x - row["base"]) for x in b)
            row["base_spread"] = 1.4826 * mad / row["base"]
            row["ratio_se"] = 1.2533 * row["base_spread"] * (2.0 / len(b)) ** 0.5
            rows.append(row)
            print("%s %s: predicted wfbp %s, %s %s; verification: %s measured %s, pass-through %s, kept %s; steady "
                  "%s vs base %s (%.3f)" % (row["curve"], "noisy" if noisy else "quiet", ms(row["wfbp"]), row["policy"],
                                            ms(row["chosen"]), row["policy"], ms(row["measured"]), ms(row["pass"]),
                                            row["kept"], ms(row["schedule"]), ms(row["base"]), row["steady_ratio"]),
                  flush=True)
    return rows


def curve_table(rows, seconds):
    worst = max((r["steady_ratio"] for r in rows), default=float("nan"))
    lines = [
        CURVES_BEGIN,
        "## Measured curves (data/net/), verification on",
        "",
        "Each curve of data/net/ as the emulator's allreduce time (`USBYTE_EMU_NET`), used as it is at the sizes the "
        "trainer issues (its bytes x%g: the curves' small-message region, where their latency floors and protocol "
        "steps are), on %d ranks, %s with `%s` (profile %s, %d calls), %d iterations per run.  Each row is the "
        "median of %d interleaved pairs of runs (without usbyte, with it).  `wfbp`, `plan`: predicted on the "
        "agreed profile; `measured`, `pass-through`: the verification's agreed medians of the plan's and the "
        "application's own iterations, side by side; `plan/measured` and `wfbp/pass-through`: the predictions "
        "over what ran (the median of the runs' ratios; 1 is a model that follows the network); `re-fitted/measured`: "
        "the same plan predicted by the model re-fitted with its own measured blocks (the executor's cost per block "
        "known) over what it measured; `kept`: its verdict (every run's); `steady`: the trainer's "
        "mean over its last 10 iterations with usbyte, all after the verification's latest verdict (a run "
        "whose verdict came later runs again with twice the iterations), `base` without; `steady/base` above "
        "1.02 would be a slowdown; `base spread`: the runs without usbyte's spread (1.4826 x their median "
        "absolute deviation, relative to their median), the machine's noise on that row; `s.e.`: the standard "
        "error of steady/base from that spread (medians of %d runs each side), what the row can resolve.  Worst steady/base: %.3f.  Took %.0f s." % (
            links.BYTES_SCALE, CURVE_RANKS, CURVE_TRAINER[0], " ".join(CURVE_TRAINER[2]), CURVE_TRAINER[3],
            rows[0]["calls"] if rows else 0, CURVE_ITERS, CURVE_REPEAT, CURVE_REPEAT, worst, seconds),
        "",
        "| curve | interference 0.2, jitter 5% | wfbp (pred.) | plan (pred.) | measured | pass-through | "
        "plan/measured | re-fitted/measured | wfbp/pass-through | kept | "
        "steady | base | steady/base | base spread | s.e. of steady/base | steady after verdict | checksums |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f | %.1f%% | %.3f | %s | %s |" % (
            r["curve"], "yes" if r["noisy"] else "no", ms(r["wfbp"]), ms(r["chosen"]), ms(r["measured"]),
            ms(r["pass"]), ratio(r["plan_error"]), ratio(r["refit_error"]), ratio(r["wfbp_error"]), r["kept"], ms(r["schedule"]), ms(r["base"]), r["steady_ratio"], 100 * r["base_spread"],
            r["ratio_se"], "yes" if r["after_verdict"] else "NO", "equal" if r["checksums"] else "DIFFER"))
    lines += ["", CURVES_END, ""]
    return "\n".join(lines)


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "bench-schedule.md")
    work = tempfile.mkdtemp()
    part = os.environ.get("BENCH_PART", "")
    if part == "curves":
        started = time.time()
        crows = curve_rows(work)
        section = curve_table(crows, time.time() - started)
        text = open(dest).read() if os.path.exists(dest) else ""
        if CURVES_BEGIN in text and CURVES_END in text:
            a, b = text.index(CURVES_BEGIN), text.index(CURVES_END) + len(CURVES_END) + 1
            text = text[:a] + section + text[b:]
        else:
            text = text.rstrip("\n") + "\n\n" + section
        with open(dest, "w") as f:
            f.write(text)
        print(section)
        if not all(r["checksums"] for r in crows):
            sys.exit("bench-schedule: checksums differ")
        return
    rows = []
    started = time.time()
    sim = os.path.join(ROOT, BUILD, "usbyte-sim")
    known = links.presets(sim)
    wanted = os.environ.get("BENCH_LINKS", "").split()
    link_rows = []
    for name, label, stress in LINK_NAMES:
        if wanted and name not in wanted:
            continue
        alpha, gbps = links.link(name, sim, known=known)
        link_rows.append((label, alpha, gbps, stress))
    only = os.environ.get("BENCH_TRAINERS", "")
    for tname, trainer, env_extra, extra, profiles in TRAINERS:
        if only not in tname:
            continue
        for prof in profiles:
            for lname, alpha, gbps, stress in link_rows:
                env = dict(env_extra, USBYTE_EMU_ALPHA_US=str(alpha), USBYTE_EMU_GBPS=str(gbps))
                args = ["--profile", os.path.join(PROF, prof + ".json")] + COMMON + extra
                res = {"base": [], "observe": [], "schedule": []}
                for _ in range(REPEAT):
                    for mode in ("base", "observe", "schedule"):   # interleaved
                        res[mode].append(run(trainer, args, env, mode, work))
                sched = res["schedule"]
                ok = all(r["checksums"] == res["base"][0]["checksums"] for m in res for r in res[m])
                scheduled = [r for r in sched if r["state"] == "schedule" and r["schedule"].get("measured_iteration")]
                row = {
                    "trainer": tname, "profile": prof, "link": lname, "stress": stress, "alpha_us": alpha, "gbps": gbps,
                    "base": statistics.median(r["iteration"] for r in res["base"]),
                    "observe": statistics.median(r["iteration"] for r in res["observe"]),
                    "schedule": statistics.median(r["iteration"] for r in sched),
                    "device": statistics.median(r["schedule"]["measured_iteration"] for r in scheduled) if scheduled else None,
                    "wfbp": statistics.median(r["wfbp"] for r in sched if r["wfbp"]),
                    "chosen": statistics.median(r["chosen"] for r in sched if r["chosen"]),
                    "state": "/".join(sorted(set(r["state"] for r in sched))),
                    "fit_alpha": statistics.median(r["fit_alpha"] for r in sched if r["fit_alpha"]),
                    "blocks": sched[0]["blocks"], "calls": sched[0]["calls"], "policy": sched[0]["policy"],
                    "checksums": ok,
                }
                row["measured_speedup"] = row["base"] / row["schedule"]
                row["predicted_speedup"] = row["wfbp"] / row["chosen"]
                row["ratio"] = row["measured_speedup"] / row["predicted_speedup"] if row["measured_speedup"] else None
                rows.append(row)
                print_row(row)
    table = render(rows, link_rows, time.time() - started)
    crows = []
    if part != "links":
        started = time.time()
        crows = curve_rows(work)
        table += "\n" + curve_table(crows, time.time() - started)
    else:
        # The curve rows (and what is written after them) are another run's: kept as they are.
        text = open(dest).read() if os.path.exists(dest) else ""
        if CURVES_BEGIN in text:
            table += "\n" + text[text.index(CURVES_BEGIN):]
    with open(dest, "w") as f:
        f.write(table)
    print(table)
    bad = [r for r in rows + crows if not r["checksums"]]
    if bad:
        sys.exit("bench-schedule: checksums differ in %d rows" % len(bad))


def ratio(x):
    return "-" if x is None else "%.2f" % x


def ms(x):
    return "%.2f" % (1e3 * x) if x else "-"


def print_row(r):
    print("%s | %s | %s: base %s ms, observe %s, schedule %s (device %s); predicted wfbp %s, %s %s; speedup %s measured, %.2fx predicted"
          % (r["trainer"], r["profile"], r["link"], ms(r["base"]), ms(r["observe"]), ms(r["schedule"]), ms(r["device"]), ms(r["wfbp"]),
             r["policy"], ms(r["chosen"]), "%.2fx" % r["measured_speedup"] if r["measured_speedup"] else "-",
             r["predicted_speedup"]), flush=True)


def table(rows):
    lines = [
        "| trainer | profile | link | link alpha (us) | fitted alpha (us) | calls | plan blocks | base | observe | "
        "schedule | device | wfbp (pred.) | plan (pred.) | measured speedup | predicted speedup | ratio | state | "
        "checksums |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %s | %s | %.1f | %.1f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2fx | %s | %s | %s |" % (
            r["trainer"], r["profile"], r["link"], 2 * (RANKS - 1) * r["alpha_us"], 1e6 * r["fit_alpha"],
            r["calls"], r["blocks"], ms(r["base"]), ms(r["observe"]),
            ms(r["schedule"]), ms(r["device"]), ms(r["wfbp"]), ms(r["chosen"]),
            "%.2fx" % r["measured_speedup"] if r["measured_speedup"] else "-", r["predicted_speedup"],
            "%.2f" % r["ratio"] if r["ratio"] else "-", r["state"], "equal" if r["checksums"] else "DIFFER"))
    return lines


def render(rows, link_rows, seconds):
    described = "; ".join("%s: %.4g us per ring step, %.4g GB/s" % (l, a, g) for l, a, g, _ in link_rows)
    lines = [
        "# make bench-schedule",
        "",
        "Schedule mode on the emulator (4 ranks), generated by `tests/bench/schedule.py`: each row is the median of "
        "%d interleaved rounds of three runs (without usbyte, observe, schedule), %d iterations each, times x%g and "
        "bytes x%g of the profile.  Iterations in ms.  `base`, `observe` and `schedule` are the trainer's own mean "
        "over its last 10 iterations (after usbyte's warm-up and switch); `device` is the report's steady measured "
        "iteration (device events); `wfbp` and `plan` are the predictions on the agreed profile.  Speedups are over "
        "the run without usbyte (measured) and over wfbp, the calls as the trainer issues them (predicted); the "
        "DDP-like rows' calls are DDP's buckets, so there both are gains over DDP's own bucketing.  This machine has "
        "two cores shared with other work: the emulator's per-operation cost grows with the load, which the fitted "
        "alpha (and so every prediction) includes.  Took %.0f s." % (REPEAT, ITERS, links.TIME_SCALE,
                                                                 links.BYTES_SCALE, seconds),
        "",
        "Links (tests/bench/links.py): %s.  `10gbe` and `100gb-ib` are usbyte-sim's presets (docs/planner.md) at "
        "these 4 ranks, the per-step latency scaled like the times (x%g) and the bandwidth like bytes over times "
        "(x%g), so that every allreduce takes the preset's time for the unscaled bytes, scaled like the rest of the "
        "iteration.  The stress links are no network anyone runs: 1 ms per ring step is the latency a ring of 64+ "
        "ranks pays, put on 4 ranks, where merging small allreduces gains the most.  `link alpha` is the emulated "
        "link's startup per allreduce at 4 ranks (6 ring steps); `fitted alpha` is what usbyte measured, the link "
        "plus the emulator's own cost per operation (its processes share this machine's cores), which every "
        "prediction uses: where the fitted alpha is far above the link's, the row measures the emulator's "
        "startup cost more than the network's." % (
            described, links.TIME_SCALE, links.BYTES_SCALE / links.TIME_SCALE),
        "",
    ]
    real = [r for r in rows if not r["stress"]]
    stress = [r for r in rows if r["stress"]]
    if real:
        lines += ["## Links like a cluster's: 10 Gb Ethernet and 100 Gb InfiniBand", ""] + table(real) + [""]
    if stress:
        lines += ["## Stress tests (links no network is)", ""] + table(stress) + [""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
