#!/usr/bin/env bash
# Schedule mode on 4 emulated ranks with the self-checking loop of runtime_sched.c (every result of
# every iteration checked on the host against the exact sum or mean over ranks): the consumers that
# rely on stream order (one end event, a host stream sync, events per call, a query loop), mixed
# float16/float32 sum/avg and out-of-place calls, and one run per fault of docs/design.md section 1
# (a size change on every rank, a barrier between iterations, equal sizes that hide the period, a
# capture begun through each entry point, on the NCCL stream or joined by it, a point-to-point
# group, destroy and exit with blocks pending, two communicators interleaved, calls from a second
# thread, fork), each ending with correct results; host waits of the issuing thread that the plan
# did not expect, on every rank or on one, change nothing that is issued, also exact (the
# launcher's timeout is the hang detector); a blocking NCCL stream read on the legacy stream stays
# in pass-through.
source "$(dirname "$0")/runtime_lib.sh"
PROG=$BUILD/tests/integration/runtime_sched
need "$BUILD/libusbyte.so" "$PROG" "$BUILD/emu/emu-run"
# A latency-bound link, where the plan merges calls (so blocks are staged and reordered).
# USBYTE_MIN_GAIN_PCT=0: a plan runs whatever the fitted link of a busy machine predicts it to gain
# (best is never slower than wfbp); the min-gain case sets its own.
export USBYTE_EMU_ALPHA_US=300 USBYTE_EMU_GBPS=1 USBYTE_WARMUP=2 USBYTE_LOG=info USBYTE_MIN_GAIN_PCT=0
unset USBYTE_MODE USBYTE_COMPLETION
N=4
# merging COMMAND...: runs a case that must exercise merged (staged) blocks.  With one hardware
# queue (CUDA_DEVICE_MAX_CONNECTIONS=1) the warm-up's profile is back-pressured: a stream wait at
# the head of the one queue holds the producers behind it, as on a GPU, and the planner rightly
# finds nothing to gain by merging; syncea (one block per dtype and op) then merges regardless.
merging() {
    if [ "${CUDA_DEVICE_MAX_CONNECTIONS:-8}" = 1 ]; then
        USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 "$@"
    else
        "$@"
    fi
}

# run NAME EXPECT(ok|fails) ARGS...: runs the loop with the library; ok: every rank checked every
# result (fails: the caller checks; LAST_RC is the exit status); the reports go to $WORK/NAME-%r.json.
run() {
    local name=$1 expect=$2
    shift 2
    local out=$WORK/$name.out start=$(date +%s%N) rc=0
    LD_PRELOAD="$USBYTE_PRELOAD" USBYTE_REPORT="$WORK/$name-%r.json" \
        "$BUILD/emu/emu-run" -n $N --timeout 90 -- "$PROG" "$@" >"$out" 2>&1 || rc=$?
    local ms=$((($(date +%s%N) - start) / 1000000))
    if [ "$expect" = ok ]; then
        if [ $rc -ne 0 ] || [ "$(grep -c 'runtime_sched ok' "$out")" -ne $N ]; then
            sed 's/^/    | /' "$out" | tail -40
            fail "$name: exit $rc, $(grep -c 'runtime_sched ok' "$out") of $N ranks checked every result"
        fi
    fi
    echo "info: $name: exit $rc in $ms ms"
    LAST_RC=$rc
}

# report NAME PYTHON: asserts on every rank's report of NAME (variables: c = first communicator,
# s = its schedule object or {}, comms, rank).
report() {
    local name=$1 code=$2
    python3 - "$WORK" "$name" $N "$code" <<'PY' || fail "$name: report check failed"
import json, sys
work, name, n, code = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
for rank in range(n):
    doc = json.load(open("%s/%s-%d.json" % (work, name, rank)))
    comms = doc["comms"]
    c = comms[0]
    s = c.get("schedule") or {}
    try:
        exec(code)
    except AssertionError as e:
        print("FAIL: %s rank %d: %s; state %r (%s), schedule %s" % (name, rank, e, c.get("state"),
              c.get("state_reason"), json.dumps({k: v for k, v in s.items() if k != "blocks"})))
        sys.exit(1)
PY
}

# Consumers that rely on stream order, and mixed dtypes/ops/out-of-place calls.  The program's
# iterations follow each other with no forward pass between them, so no gap between ready times
# marks where one begins: the iteration stays where the detector locked it (the job's first call),
# and the job ends where the schedule's iteration does (no flush), on 8 queues as on one.
merging run end-event ok --consumer end-event --mixed --iters 24
report end-event '
assert c["state"] == "schedule", "not scheduled"
assert s["iterations"] >= 8, "iterations %r" % s["iterations"]
assert s["deviations"] == 0 and s["unexpected_waits"] == 0 and s["flushes"] == 0, "deviations or flushes"
assert s["completion"] == "stream", s["completion"]
plan = c["plan"]["blocks"]
assert any(len({g[0] for g in b["segments"]}) > 1 for b in plan), "the plan merges no calls: the test needs a link where it does"
assert s["staging_bytes"] > 0, "no staging buffer"
p = c["profile"]["calls"]
for b in plan:
    kinds = {(p[g[0]]["dtype"], p[g[0]]["op"]) for g in b["segments"]}
    assert len(kinds) == 1, "block mixes dtypes or ops: %r" % kinds
assert {x["dtype"] for x in p} == {"float16", "float32"} and {x["op"] for x in p} == {"sum", "avg"}, "not mixed"
assert len(s["blocks"]) == len(plan) and all(b["end"] >= b["start"] >= 0 for b in s["blocks"]), s["blocks"]
assert s["measured_iteration"] > 0 and s["measured_speedup"] > 0 and s["predicted_speedup"] > 0, "numbers"
assert s["predicted_speedup"] >= 1 or c["plan"]["policy"] != "best", "best predicted slower than wfbp"
'
run stream-sync ok --consumer stream-sync --mixed --iters 24
report stream-sync 'assert c["state"] == "schedule" and s["iterations"] >= 8, "not scheduled"'
run query-poll ok --consumer query-poll --iters 24
report query-poll 'assert c["state"] == "schedule" and s["iterations"] >= 8, "not scheduled"'
USBYTE_COMPLETION=call run per-call ok --consumer per-call --mixed
report per-call 'assert c["state"] == "schedule" and s["completion"] == "call", "not scheduled with call completion"'
# A plan predicted to gain less than USBYTE_MIN_GAIN_PCT is not run: pass-through, saying why.
USBYTE_MIN_GAIN_PCT=100000 run min-gain ok --consumer end-event
report min-gain 'assert c["state"] == "pass-through" and "USBYTE_MIN_GAIN_PCT" in c["state_reason"] and not s, "scheduled"'
# Per-call completion without an event after every call: refused, stream completion used.
USBYTE_COMPLETION=call run call-refused ok --consumer end-event
report call-refused 'assert c["state"] == "schedule" and s["completion"] == "stream" and "refused" in s["completion_note"], "call accepted"'

# A blocking NCCL stream (cudaStreamCreate) whose results are read by copies on the legacy default
# stream, which CUDA orders after every blocking stream's earlier work (no event at all): deferred
# calls would be read before their blocks ran, so the communicator stays in pass-through, saying why.
run blocking ok --nccl-stream blocking --consumer legacy
report blocking '
assert c["state"] == "pass-through" and not s, "scheduled"
assert any("blocking stream" in r for r in c["verdict"]["reasons"]), c["verdict"]
'

# Equal sizes repeating within the iteration: the portable sequence locks a period of 3, the
# buffers refute it on every rank, detection restarts and finds the true 24.
run repeat-sizes ok --iters 40 --repeat-sizes
report repeat-sizes 'assert c["state"] == "schedule" and c["calls_per_iteration"] == 24 and s["iterations"] >= 8, "period %r" % c.get("calls_per_iteration")'

# Faults: each ends in correct results.
run size-change ok --iters 30 --size-change-at 10
report size-change '
assert s["deviations"] >= 1 and s["flushes"] >= 1, "no deviation counted"
assert c["state"] in ("schedule", "detect", "profile", "agree", "planned"), "state %s" % c["state"]
'
# Half of the layers frozen for good: deviations, a new warm-up and a second plan for the 12 calls
# left, every result exact across the change (block values keep growing across plans).
run freeze ok --iters 52 --freeze-at 11
report freeze '
assert c["state"] == "schedule" and c["calls_per_iteration"] == 12, "state %s, %r calls" % (c["state"], c.get("calls_per_iteration"))
assert s["deviations"] >= 1 and s["iterations"] >= 16, "deviations %r, iterations %r" % (s["deviations"], s["iterations"])
'
# The odd half kept instead: call 0, where the plan's iteration begins, never comes again, so the
# plan cannot resume after the first deviation; a whole period of calls without it counts as
# another, and the communicator is profiled again all the same.
run freeze-odd ok --iters 56 --freeze-at 11 --freeze-odd
report freeze-odd '
assert c["state"] == "schedule" and c["calls_per_iteration"] == 12, "state %s, %r calls" % (c["state"], c.get("calls_per_iteration"))
assert s["deviations"] >= 1 and s["iterations"] >= 16, "deviations %r, iterations %r" % (s["deviations"], s["iterations"])
'
# Device memory runs out on rank 1 during the warm-up (a 64 MiB device, filled to 16 KiB): the
# executor's reservation before the agreement fails there, which the agreement carries, so every
# rank stays in pass-through (no rank-local abort) and says that rank 1 could not set it up.
USBYTE_EMU_DEVICE_MEM_MB=64 run nomem ok --fill-at 4 --fill-rank 1 --fill-free-kb 16
report nomem '
assert c["state"] == "pass-through" and "rank 1" in c.get("state_reason", "") and "executor" in c.get("state_reason", ""), c.get("state_reason")
assert not s, "a plan ran"
'
# Device memory runs out on rank 1 before the first lock: with nothing left, the configuration
# agreement (issued by every rank at the lock) cannot be set up there; with 16 KiB left, the
# warm-up's agreement buffers cannot.  The other ranks issue theirs, so that rank cannot follow
# them: its communicator fails (one line), the call returns ncclSystemError without reaching NCCL
# (the program stops on it, exit 1: the launcher then ends the job), and its report says why at
# once.  The process is never killed by an abort() (status 134).
for free_kb in 0 16; do
    USBYTE_EMU_DEVICE_MEM_MB=64 run nomem-lock-$free_kb fails --fill-at 0 --fill-rank 1 --fill-free-kb $free_kb
    out=$WORK/nomem-lock-$free_kb.out
    what="the configuration agreement's buffers"
    [ $free_kb = 0 ] || what="the agreement buffers"
    { [ "$LAST_RC" = 1 ] && ! grep -q 'killed by signal' "$out" &&
      grep -q "rank 1\] usbyte\[1\]: error: communicator 0: this rank cannot take part in what every rank issues: cannot allocate $what; this rank issues nothing more on it: this call and every later one on it return ncclSystemError" "$out" &&
      grep -q "rank 1\] .*ncclAllReduce(.*) failed: unhandled system error" "$out"; } \
        || { sed 's/^/    | /' "$out" | tail -12; fail "nomem-lock-$free_kb: exit $LAST_RC; rank 1 did not fail its communicator"; }
    jq -e --arg w "cannot allocate $what" '.comms[0] | .state == "pass-through" and (.state_reason | endswith($w))' \
        "$WORK/nomem-lock-$free_kb-1.json" >/dev/null \
        || fail "nomem-lock-$free_kb: rank 1's report: $(jq -c '.comms[0] | [.state, .state_reason]' "$WORK/nomem-lock-$free_kb-1.json")"
done
run barrier ok --iters 24 --barrier-at 11
report barrier 'assert c["state"] == "schedule" and s["deviations"] == 1 and s["iterations"] >= 8, "barrier"'
run capture ok --iters 24 --capture-at 11
# (A flush at the end, when the program stops in the middle of the plan's iteration, is not the
# capture's: where the plan's iteration begins follows the agreed phase, which timing can move.)
report capture 'assert c["state"] == "schedule" and s["deviations"] == 1 and s["flushes"] - s["ended_mid_iteration"] == 1, "capture"'
# The same capture begun and ended every other way a program can: usbyte sees each one at its
# begin (no capture-status query in the middle of an iteration would find it), flushes, and the
# capture succeeds.
for via in runtime-to-graph driver driver-lookup runtime-lookup; do
    run capture-$via ok --iters 24 --capture-at 11 --capture-via $via
    report capture-$via 'assert c["state"] == "schedule" and s["deviations"] == 1 and s["flushes"] - s["ended_mid_iteration"] == 1, "capture"'
done
# Begun where no interposer sees it (dlsym on libcuda's own handle), at an iteration's first call:
# the capture-status query there finds it before anything is deferred.
run capture-hidden ok --iters 24 --capture-at 11 --capture-via hidden --capture-call 0
report capture-hidden 'assert c["state"] == "schedule" and s["deviations"] == 1, "capture"'
run p2p ok --iters 24 --p2p-at 11
report p2p 'assert c["state"] == "schedule" and s["deviations"] == 1, "p2p group"'
# Both scheduled whatever the second one's predicted gain (its calls queue behind the first's on
# the emulated link), to interleave two running plans.
run two-comms ok --two-comms --calls 16
report two-comms 'assert [x["state"] for x in comms] == ["schedule", "schedule"], [x["state"] for x in comms]'
run second-thread ok --iters 24 --second-thread
report second-thread 'assert c["state"] == "schedule" and s["iterations"] >= 8, "not scheduled"'
if [[ "$SAN" == *thread* ]]; then
    echo "info: fork: skipped under ThreadSanitizer (it kills a child that starts threads after a multi-threaded fork)"
else
    run fork ok --fork-at 11
    report fork 'assert c["state"] == "schedule" and s["deviations"] == 0, "fork"'
fi
run destroy ok --iters 20 --destroy-at 16
report destroy 'assert c["state"] == "schedule" and s["flushes"] == 1 and s["ended_mid_iteration"], "destroy did not flush"'
mkdir -p "$WORK/exit-barrier"
run exit any --iters 20 --exit-at 16 --exit-barrier "$WORK/exit-barrier"
[ "$(grep -c 'exiting with calls pending' "$WORK/exit.out")" -eq $N ] || fail "exit: not every rank exited mid-iteration"
[ "$LAST_RC" -eq 0 ] || { sed 's/^/    | /' "$WORK/exit.out" | tail -20; fail "exit with calls pending: exit $LAST_RC"; }
report exit 'assert c["state"] == "schedule" and s["iterations"] >= 4, "exit"'

# Host waits the warm-up never saw, made by the issuing thread in the middle of an iteration while
# calls are deferred (syncea: one block holds every call, so every call waits for the last one;
# the count of such waits shows the plan ran then; a flush at the end, where the schedule's
# iteration may end elsewhere than the program's, is no deviation):
# such a wait may be made on some ranks only (a log line on rank 0, an allocator's retry), so it must
# not change what is issued.  It returns once the work submitted to the device is done, the deferred
# calls stay deferred, and every rank issues the plan's blocks: every result exact, no deviation,
# one line on the rank that waited.  First on every rank, on call 0's event before call 1 arrives:
USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 run early ok --iters 24 --sync-at 14 --sync-kind event --sync-after 0
report early '
assert c["state"] == "schedule" and s["iterations"] >= 8, "not scheduled"
assert s["unexpected_waits"] == 1 and s["deviations"] == 0, "unexpected waits %r, deviations %r" % (s["unexpected_waits"], s["deviations"])
'
[ "$(grep -c 'cudaEventSynchronize on the thread that issues its calls waits for allreduce 0' "$WORK/early.out")" -eq $N ] ||
    fail "early: not one line per rank naming the wait"
# Then on rank 0 alone, after call 3, each kind of wait (a flush there would issue blocks of the
# calls that arrived on rank 0 only: the emulator's rank signature check stops the job).
for kind in device stream event stream-wait; do
    USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 run sync-$kind ok --iters 24 --sync-at 14 --sync-after 3 --sync-rank 0 \
        --sync-kind $kind
    report sync-$kind '
assert c["state"] == "schedule" and s["iterations"] >= 8 and s["deviations"] == 0, "deviated"
assert s["unexpected_waits"] == (1 if rank == 0 else 0), "unexpected waits %r" % s["unexpected_waits"]
'
done

# PyTorch's capture shape: the capture begins on the compute stream and the NCCL stream joins it
# through an event recorded in the capture, with one deferred call (call 0) or several before it.
# The join is a capture begin for the NCCL stream: its deferred calls go out before it, outside the
# capture (issued inside, they would join the private stream to the capture, and EndCapture would
# fail with cudaErrorStreamCaptureUnjoined on every rank).
for via in runtime runtime-to-graph driver driver-lookup runtime-lookup; do
    for call in 1 12; do
        USBYTE_POLICY=syncea USBYTE_MIN_GAIN_PCT=-100 run join-$via-$call ok --iters 20 --capture-at 11 --capture-on compute \
            --capture-via $via --capture-call $call
        report join-$via-$call 'assert c["state"] == "schedule" and s["deviations"] == 1, "capture"'
    done
done
echo "runtime schedule: ok"
