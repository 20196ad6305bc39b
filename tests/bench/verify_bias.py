#!/usr/bin/env python3
"""The verification's pass-through side against the same job without a plan.

    BUILD=build python3 tests/bench/verify_bias.py [CURVE] [ROUNDS] [OTHER_LIBUSBYTE]

On one measured curve of data/net/ (default 08-aws-p5-efa-2node-16r) and bench-schedule's curve
trainer (tests/bench/schedule.py: Horovod-like, fusion off, ResNet-50, 2 ranks), ROUNDS (default
5) interleaved rounds of three runs: without usbyte, USBYTE_MODE=observe, schedule mode with
verification.  Prints per round and as medians: the trainer's last-10 mean of the first two, and
the verification's agreed pass-through and candidate medians of the third.  Pass-through inside
the window forwards the application's calls as they come, so its median should sit within the
noise of the observe run's iteration; a pass-through side well above it is a bias that tilts the
verdict toward keeping a plan.  With OTHER_LIBUSBYTE (another build of the library, e.g. before a
change), each round also runs schedule mode with it, interleaved with the rest.
"""
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import schedule  # noqa: E402  (its run(): one emulated job, the trainer's and the report's numbers)


def main():
    curve = sys.argv[1] if len(sys.argv) > 1 else "08-aws-p5-efa-2node-16r"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    other = sys.argv[3] if len(sys.argv) > 3 else None
    tname, trainer, extra, prof = schedule.CURVE_TRAINER
    args = ["--profile", os.path.join(schedule.PROF, prof + ".json"), "--iters", "60", "--time-scale",
            str(schedule.links.TIME_SCALE), "--bytes-scale", str(schedule.links.BYTES_SCALE)] + extra
    env = {"USBYTE_EMU_NET": os.path.join(schedule.ROOT, "data", "net", curve + ".tsv"), "USBYTE_VERIFY": "1"}
    work = tempfile.mkdtemp()
    libs = [("this build", {})] + ([(other, {"LD_PRELOAD": os.path.abspath(other)})] if other else [])
    got = {"base": [], "observe": []}
    for name, _ in libs:
        got[name] = {"pass": [], "plan": []}
    for i in range(rounds):
        b = schedule.run(trainer, args, env, "base", work, schedule.CURVE_RANKS)
        o = schedule.run(trainer, args, env, "observe", work, schedule.CURVE_RANKS)
        got["base"].append(b["iteration"])
        got["observe"].append(o["iteration"])
        line = "round %d: base %.2f ms, observe %.2f ms" % (i, 1e3 * b["iteration"], 1e3 * o["iteration"])
        for name, extra in libs:
            s = schedule.run(trainer, args, dict(env, **extra), "schedule", work, schedule.CURVE_RANKS)
            v = s.get("verification") or {}
            p = v.get("pass_through_iteration")
            c = (v.get("candidates") or [{}])[0].get("measured_iteration")
            if p:
                got[name]["pass"].append(p)
            if c:
                got[name]["plan"].append(c)
            line += "; %s: pass-through %s, %s %s" % (name, "%.2f ms" % (1e3 * p) if p else "-",
                                                     (v.get("candidates") or [{}])[0].get("policy"),
                                                     "%.2f ms" % (1e3 * c) if c else "-")
        print(line, flush=True)

    def med(x):
        return statistics.median(x) if x else float("nan")
    base, obs = med(got["base"]), med(got["observe"])
    print("medians of %d: base %.2f ms, observe %.2f ms" % (rounds, 1e3 * base, 1e3 * obs))
    for name, _ in libs:
        p, c = med(got[name]["pass"]), med(got[name]["plan"])
        print("  %s: pass-through side %.2f ms (%.2fx observe, %.2fx base), plan side %.2f ms" % (
            name, 1e3 * p, p / obs, p / base, 1e3 * c))


if __name__ == "__main__":
    main()
