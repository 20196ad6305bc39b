#!/usr/bin/env python3
"""make bench-schedule: what schedule mode gains on the emulator, next to what it predicts.

For each trainer (DDP-like, Horovod-like with fusion off, per-layer under stream and call
completion) x two profiles x two emulated links (latency-bound, as 64+ ranks are, and
bandwidth-bound), three runs on 4 ranks: without usbyte, with observe, with schedule; the three
are interleaved and the whole round repeated REPEAT times, and the table shows medians.

- base, observe, schedule: the trainer's own mean over its last 10 iterations (backward start to
  backward start, host clock of the compute stream's host functions: MODEL.md's iteration; the
  last 10 of 30 come after usbyte's warm-up and switch), without the library, with
  USBYTE_MODE=observe and with schedule mode;
- device: the report's schedule.measured_iteration (device events one iteration apart, steady
  iterations only), the library's own reading of the same;
- predicted: the report's wfbp and chosen-plan iterations (the agreed profile, MODEL.md);
- measured speedup = base / schedule, predicted speedup = wfbp / chosen, ratio = measured /
  predicted.

Writes the table to docs/bench-schedule.md (or the path given) and prints it.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

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
# name, alpha us per ring step, GB/s: the trainers' bytes are scaled by 0.002 and times by 0.05
LINKS = [("latency-bound", 1000, 10.0), ("bandwidth-bound", 20, 0.05)]
ITERS = 30
COMMON = ["--iters", str(ITERS), "--time-scale", "0.05", "--bytes-scale", "0.002"]


def run(trainer, args, env_extra, mode, work):
    env = dict(os.environ)
    env.update(env_extra)
    env.update({"USBYTE_WARMUP": "3", "USBYTE_LOG": "warn"})
    report = os.path.join(work, "r-%r.json")
    if mode == "base":
        env["LD_PRELOAD"] = ""
    else:
        env["LD_PRELOAD"] = os.path.join(ROOT, BUILD, "libusbyte.so")
        env["USBYTE_MODE"] = mode
        env["USBYTE_REPORT"] = report
    for f in os.listdir(work):
        os.unlink(os.path.join(work, f))
    cmd = [os.path.join(ROOT, BUILD, "emu", "emu-run"), "-n", str(RANKS), "--timeout", "300", "--",
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
                   calls=c.get("calls_per_iteration"), schedule=c.get("schedule") or {})
    return out


def main():
    dest = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs", "bench-schedule.md")
    work = tempfile.mkdtemp()
    rows = []
    started = time.time()
    for tname, trainer, env_extra, extra, profiles in TRAINERS:
        for prof in profiles:
            for lname, alpha, gbps in LINKS:
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
                    "trainer": tname, "profile": prof, "link": lname,
                    "base": statistics.median(r["iteration"] for r in res["base"]),
                    "observe": statistics.median(r["iteration"] for r in res["observe"]),
                    "schedule": statistics.median(r["iteration"] for r in sched),
                    "device": statistics.median(r["schedule"]["measured_iteration"] for r in scheduled) if scheduled else None,
                    "wfbp": statistics.median(r["wfbp"] for r in sched if r["wfbp"]),
                    "chosen": statistics.median(r["chosen"] for r in sched if r["chosen"]),
                    "state": "/".join(sorted(set(r["state"] for r in sched))),
                    "blocks": sched[0]["blocks"], "calls": sched[0]["calls"], "policy": sched[0]["policy"],
                    "checksums": ok,
                }
                row["measured_speedup"] = row["base"] / row["schedule"]
                row["predicted_speedup"] = row["wfbp"] / row["chosen"]
                row["ratio"] = row["measured_speedup"] / row["predicted_speedup"] if row["measured_speedup"] else None
                rows.append(row)
                print_row(row)
    table = render(rows, time.time() - started)
    with open(dest, "w") as f:
        f.write(table)
    print(table)
    bad = [r for r in rows if not r["checksums"]]
    if bad:
        sys.exit("bench-schedule: checksums differ in %d rows" % len(bad))


def ms(x):
    return "%.2f" % (1e3 * x) if x else "-"


def print_row(r):
    print("%s | %s | %s: base %s ms, observe %s, schedule %s (device %s); predicted wfbp %s, %s %s; speedup %s measured, %.2fx predicted"
          % (r["trainer"], r["profile"], r["link"], ms(r["base"]), ms(r["observe"]), ms(r["schedule"]), ms(r["device"]), ms(r["wfbp"]),
             r["policy"], ms(r["chosen"]), "%.2fx" % r["measured_speedup"] if r["measured_speedup"] else "-",
             r["predicted_speedup"]), flush=True)


def render(rows, seconds):
    lines = [
        "# make bench-schedule",
        "",
        "Schedule mode on the emulator (4 ranks), generated by `tests/bench/schedule.py`: each row is the median of "
        "%d interleaved rounds of three runs (without usbyte, observe, schedule), %d iterations each, times x0.05 and "
        "bytes x0.002 of the profile.  Latency-bound link: 1000 us per ring step, 10 GB/s; bandwidth-bound: 20 us, "
        "0.05 GB/s.  Iterations in ms.  `base`, `observe` and `schedule` are the trainer's own mean over its last 10 "
        "iterations (after usbyte's warm-up and switch); `device` is the report's steady measured iteration (device "
        "events); `wfbp` and `plan` are the predictions on the agreed profile.  Speedups are over the run without usbyte (measured) and over wfbp (predicted).  This machine has two "
        "cores shared with other work: the emulator's per-operation cost grows with the load, which the fitted alpha "
        "(and so every prediction) includes.  Took %.0f s." % (REPEAT, ITERS, seconds),
        "",
        "| trainer | profile | link | calls | plan blocks | base | observe | schedule | device | wfbp (pred.) | plan (pred.) | "
        "measured speedup | predicted speedup | ratio | state | checksums |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.2fx | %s | %s | %s |" % (
            r["trainer"], r["profile"], r["link"], r["calls"], r["blocks"], ms(r["base"]), ms(r["observe"]),
            ms(r["schedule"]), ms(r["device"]), ms(r["wfbp"]), ms(r["chosen"]),
            "%.2fx" % r["measured_speedup"] if r["measured_speedup"] else "-", r["predicted_speedup"],
            "%.2f" % r["ratio"] if r["ratio"] else "-", r["state"], "equal" if r["checksums"] else "DIFFER"))
    lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
