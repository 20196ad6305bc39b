#!/usr/bin/env python3
"""The emulated links of make bench-schedule and make demo.

Realistic links come from usbyte-sim's network presets (`usbyte-sim --list-nets --json`: per ring
step latency a0 and per-byte time b0, docs/model.md's ring formula).  The emulator applies the same
formula at the trainer's own rank count, so a preset needs only scaling: the trainers run the
profile's times x TIME_SCALE and its bytes x BYTES_SCALE, and the link is scaled so that every
allreduce takes TIME_SCALE times what the preset gives for the unscaled bytes:

    USBYTE_EMU_ALPHA_US = a0 * 1e6 * TIME_SCALE
    USBYTE_EMU_GBPS     = (1 / b0) / 1e9 * BYTES_SCALE / TIME_SCALE

The stress link is no network anyone runs: 1 ms per ring step (the latency a 64+ rank ring pays
per allreduce, put on 4 ranks), where merging small allreduces gains the most.

    links.py [--sim build/usbyte-sim] [--time-scale S] [--bytes-scale S] NAME...

prints one line per NAME, "NAME ALPHA_US GBPS", NAME a preset or "stress".
"""
import argparse
import json
import os
import subprocess
import sys

TIME_SCALE = 0.05
BYTES_SCALE = 0.002
# name, alpha us per ring step, GB/s (already at the emulator's scale)
STRESS = {"stress": (1000.0, 10.0), "stress-bandwidth": (20.0, 0.05)}


def presets(sim):
    out = subprocess.run([sim, "--list-nets", "--json"], stdout=subprocess.PIPE, check=True, text=True).stdout
    return {p["name"]: p for p in map(json.loads, out.splitlines())}


def link(name, sim, time_scale=TIME_SCALE, bytes_scale=BYTES_SCALE, known=None):
    """(alpha_us, gbps) of the emulated link NAME."""
    if name in STRESS:
        return STRESS[name]
    known = known if known is not None else presets(sim)
    if name not in known:
        raise KeyError("%s: not a preset of %s (%s) nor one of %s" % (name, sim, ", ".join(known), ", ".join(STRESS)))
    p = known[name]
    return p["a0"] * 1e6 * time_scale, 1e-9 / p["b0"] * bytes_scale / time_scale


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    ap.add_argument("--sim", default=os.path.join(os.environ.get("BUILD", "build"), "usbyte-sim"))
    ap.add_argument("--time-scale", type=float, default=TIME_SCALE)
    ap.add_argument("--bytes-scale", type=float, default=BYTES_SCALE)
    ap.add_argument("names", nargs="+")
    a = ap.parse_args()
    known = presets(a.sim)
    for name in a.names:
        try:
            alpha, gbps = link(name, a.sim, a.time_scale, a.bytes_scale, known)
        except KeyError as e:
            sys.exit("links.py: %s" % e.args[0])
        print("%s %.6g %.6g" % (name, alpha, gbps))


if __name__ == "__main__":
    main()
