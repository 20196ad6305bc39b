#!/usr/bin/env bash
# Schedule mode's calibration (docs/runtime.md, "Calibration"), on the Horovod-like trainer with
# fusion off (GoogLeNet's 64 calls, 2 emulated ranks) on a shipped curve (USBYTE_EMU_NET: AWS
# g4dn over TCP sockets, a latency floor then a bend), where syncea's one block of every call is
# a size the warm-up never issues:
# - the probes go out at agree_at + period, their agreed times one iteration later, the plan one
#   more iteration later, on every rank at the same calls (the emulator checks every collective's
#   signature on every rank: a probe of another size on one rank stops the job);
# - the sizes are ones the calls do not show and fit the staging buffer; every rank reports the
#   same sizes, times and call indices (agreed data);
# - the net fitted with the probes passes through their agreed times (within the fit's 3%); the net
#   fitted on the calls alone (USBYTE_CALIBRATE=0) is further off at those sizes;
# - with verification on, the calibrated plan is the candidate it measures against pass-through,
#   from the switch after calibration, the verdict the same on every rank;
# - results bit-identical to the run without usbyte, calibrated or not.
source "$(dirname "$0")/runtime_lib.sh"
TRAINER=$BUILD/trainers/horovod_like
need "$BUILD/libusbyte.so" "$TRAINER" "$BUILD/emu/emu-run"
export USBYTE_VERIFY=0 USBYTE_WARMUP=3 USBYTE_LOG=info USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100
unset USBYTE_MODE USBYTE_CALIBRATE USBYTE_VERIFY_EVERY
export USBYTE_EMU_NET=data/net/11-aws-g4dn-tcp-socket-2node-2r.tsv
N=2
ITERS=30
ARGS=(--profile data/profiles/googlenet-k80-8x10gbe-measured.json --fusion-threshold-mb 0 --time-scale 0.002
      --bytes-scale 0.02)

# train NAME PRELOAD(yes|no) [ITERS]: output in $WORK/NAME.out, reports in $WORK/NAME-%r.json.
train() {
    local name=$1 preload=$2 iters=${3:-$ITERS} pre=""
    [ "$preload" = yes ] && pre=$USBYTE_PRELOAD
    LD_PRELOAD="$pre" USBYTE_REPORT="$WORK/$name-%r.json" "$BUILD/emu/emu-run" -n $N --timeout 120 -- \
        "$TRAINER" "${ARGS[@]}" --iters "$iters" >"$WORK/$name.out" 2>&1 ||
        { tail -30 "$WORK/$name.out"; fail "$name: exit $?"; }
}

train base no
train calibrated yes
same_results calibrated base
USBYTE_CALIBRATE=0 train uncalibrated yes
same_results uncalibrated base
# Verification's window (39 iterations) after the switch (about iteration 9; later when the
# agreement is issued again, one iteration each time), and room for a second window where the
# first is inconclusive (a slow host: ThreadSanitizer's spreads the sides' times).
train verified-base no 130
USBYTE_VERIFY=1 train verified yes 130
same_results verified verified-base

python3 - "$WORK" $N <<'PY' || fail "report check failed"
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
def comm(name, r):
    return json.load(open("%s/%s-%d.json" % (work, name, r)))["comms"][0]
def cost(net, m):
    segs = net.get("segments")
    if segs:
        s = [x for x in segs if x["from"] <= m][-1]
        return s["alpha"] + s["beta"] * m
    return net["alpha"] + net["beta"] * m
cal = [comm("calibrated", r) for r in range(n)]
unc = [comm("uncalibrated", r) for r in range(n)]
c, u = cal[0], unc[0]
k = c.get("calibration")
assert k is not None, "no calibration in the report: state %r (%s)" % (c.get("state"), c.get("state_reason"))
local = ("series_seconds", "repeat_spread")
agreed = {f: v for f, v in k.items() if f not in local}
for r in range(1, n):
    other = {f: v for f, v in cal[r]["calibration"].items() if f not in local}
    assert other == agreed, "rank %d's calibration differs from rank 0's:\n%s\n%s" % (r, other, agreed)
assert k["agreed"], "the probes' times were not agreed: %s" % json.dumps(k)
assert len(k["sizes"]) >= 1 and k["sizes"] == sorted(k["sizes"]), k["sizes"]
calls = [x["bytes"] for x in c["profile"]["calls"]]
for m in k["sizes"]:
    assert all(not (b <= 1.5 * m and m <= 1.5 * b) for b in calls), "probe %d is a size the calls show" % m
    assert m <= c["profile"]["staging_max"], "probe %d exceeds the staging buffer %d" % (m, c["profile"]["staging_max"])
period = c["calls_per_iteration"]
assert k["agree_call"] == k["probe_call"] + period and k["apply_call"] == k["agree_call"] + period, \
    "call indices: %s, period %d" % (json.dumps(k), period)
assert c["state"] == "schedule" and c["schedule"]["iterations"] >= 1, "the plan did not run: %r" % c["state"]
assert "calibration" not in u, "USBYTE_CALIBRATE=0 still calibrated"
assert u["state"] == "schedule", "uncalibrated: %r (%s)" % (u["state"], u.get("state_reason"))
# Probe sizes are 4x apart and 1.5x from every call: each is a knot of its own, so the curve passes
# through its agreed time unless the times fall with size, where the monotone fit pools it with
# the samples out of order around it (a noisy series: a smaller size slower, or a larger one
# faster) and the curve lies between their times; UB_FIT_LINE_TOLERANCE (3%) is the fit's own
# bound for a sample it follows.
tol = 0.03
points = c["fit"]["points"]
assert len(points) == len(c["profile"]["calls"]) + len(k["sizes"]), "fit points: %d" % len(points)
def pooled_range(m, t):
    slower_below = [s for b, s in points if b < m and s > t]
    faster_above = [s for b, s in points if b > m and s < t]
    return min([t] + faster_above), max([t] + slower_below)
# The model against what the probes measured, at the probe sizes.
def off_range(net, m, t):
    lo, hi = pooled_range(m, t)
    x = cost(net, m)
    return max(0.0, lo / x - 1 if x < lo else x / hi - 1 if x > hi else 0.0)
e_cal = max(off_range(c["profile"]["net"], m, t) for m, t in zip(k["sizes"], k["seconds"]))
e_unc = max(off_range(u["profile"]["net"], m, t) for m, t in zip(k["sizes"], k["seconds"]))
for m, t in zip(k["sizes"], k["seconds"]):
    lo, hi = pooled_range(m, t)
    print("info: probe %d B: agreed %.1f us%s; calibrated model %.1f us; uncalibrated model %.1f us" % (
        m, 1e6 * t, "" if lo == hi else " (out of order: pooled with %.1f-%.1f us)" % (1e6 * lo, 1e6 * hi),
        1e6 * cost(c["profile"]["net"], m), 1e6 * cost(u["profile"]["net"], m)))
for name, x in (("calibrated", c), ("uncalibrated", u)):
    s = x["schedule"]
    print("info: %s: plan predicted %.3f ms, measured %.3f ms (%+.1f%%)" % (
        name, 1e3 * s["predicted_iteration"], 1e3 * s["measured_iteration"],
        100 * (s["predicted_iteration"] / s["measured_iteration"] - 1)))
print("info: model error at the probe sizes: calibrated %.2f%%, uncalibrated %.2f%%; probe series %.2f ms on rank "
      "0's device (repeat spread %s)" % (100 * e_cal, 100 * e_unc, 1e3 * k["series_seconds"], k["repeat_spread"]))
assert e_cal <= tol, "the calibrated model is %.1f%% off the probes' agreed times" % (100 * e_cal)
# The plan under the calibrated model against its measured iterations: printed, not asserted (the
# emulator's iteration on a loaded machine moves by more than the link's share of it).
s = c["schedule"]
sd = s["iteration_spread"]["stdev"]
print("info: calibrated run: the plan predicted %.3f ms before calibration, %.3f ms after; measured %.3f ms "
      "(stdev %.3f ms over %d iterations)" % (1e3 * k["predicted_before"], 1e3 * k["predicted_after"],
                                               1e3 * s["measured_iteration"], 1e3 * sd, s["iteration_spread"]["n"]))
# Verification measures the calibrated plan.
ver = [comm("verified", r) for r in range(n)]
vk, v = ver[0].get("calibration"), ver[0].get("verification")
assert vk and vk["agreed"] and v, "verified run: calibration %s, verification %s" % (vk, v)
for r in range(1, n):
    assert ver[r]["verification"] == v, "rank %d's verification differs from rank 0's" % r
first = v["candidates"][0]
assert first["policy"] == "syncea" and abs(first["predicted_iteration"] - vk["predicted_after"]) <= 1e-12, \
    "the first candidate is not the calibrated plan: %s vs %s" % (first, vk)
assert v["at_call"] is not None and v["at_call"] > vk["apply_call"], "verdict at %s, switch at %s" % (
    v["at_call"], vk["apply_call"])
print("info: verified run: %s kept at call %d (switch at call %d): %s" % (v["kept"], v["at_call"], vk["apply_call"],
                                                                        v["reason"]))
# Off the probes' own times, or off the range a noisy series allows (one slow sample of a smaller
# size makes that range wide enough to hold both models): calibration must move the model nearer
# by one of the two, so that a calibration that changed nothing fails.
p_cal = max(abs(cost(c["profile"]["net"], m) / t - 1) for m, t in zip(k["sizes"], k["seconds"]))
p_unc = max(abs(cost(u["profile"]["net"], m) / t - 1) for m, t in zip(k["sizes"], k["seconds"]))
assert e_unc > e_cal or p_unc > p_cal, "without calibration the model is no further off (%.2f%% vs %.2f%%; off the " \
    "probes' times %.2f%% vs %.2f%%)" % (100 * e_unc, 100 * e_cal, 100 * p_unc, 100 * p_cal)
PY
echo "runtime_calibrate: ok"
