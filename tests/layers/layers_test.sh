#!/usr/bin/env bash
# The layer check's own test: it passes on the built objects and fails on a copy of them with a
# planted upward call (logging calling the life cycle), a planted circle (order/), planted uses of
# a folder the folder order forbids (profiler/ and tools/ into interpose/, partition/ into order/,
# config.c into the rest of interpose/, the emulator's cudart/ into its driver), a planted circle
# and a planted upward call in the emulator's cudart/; and on a copy of the sources where a second
# file sets a communicator's state or reason through any name, a file other than the life cycle
# and the warm-up moves the state (ub_comm_set_state), changes the reentrancy guard by
# hand, writes a sub-struct of the communicator, or a part of its report, it does not own (through
# the communicator, a pointer of the sub-struct's type, or the report's mutators), or where an
# include closes a circle (interpose/, cudart/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { "$here/layers.py" --obj "$tmp/obj" "$@"; }

copy_objs() {
    rm -rf "$tmp/obj"
    for d in interpose order partition profiler tools tests/emu/cudart tests/emu/cuda tests/emu/cupti \
             tests/emu/nccl tests/emu/launcher; do
        mkdir -p "$tmp/obj/$d"
        cp "$BUILD/obj/$d/"*.o "$tmp/obj/$d/"
    done
}
# plant OBJ SYMBOL: OBJ also calls SYMBOL, as if its source did.
plant() {
    printf 'void %s(void);\nvoid ub_planted_call(void) { %s(); }\n' "$2" "$2" > "$tmp/planted.c"
    cc -c -o "$tmp/planted.o" "$tmp/planted.c"
    ld -r -o "$tmp/merged.o" "$tmp/obj/$1" "$tmp/planted.o"
    mv "$tmp/merged.o" "$tmp/obj/$1"
}
expect_fail() {  # expect_fail WHAT PATTERN
    if check > "$tmp/out" 2>&1; then
        echo "FAIL: the check passed with $1"; cat "$tmp/out"; exit 1
    fi
    grep -q -- "$2" "$tmp/out" || { echo "FAIL: $1 not named (want /$2/):"; cat "$tmp/out"; exit 1; }
    echo "ok: $1 fails: $(grep -- "$2" "$tmp/out" | head -1 | cut -c1-160)"
}

copy_objs
check || { echo "FAIL: the check fails on the built objects"; exit 1; }
echo "ok: the built objects pass"

plant interpose/log.o ub_coll_before
expect_fail "log.c calling the life cycle" 'interpose/log.c (.*) uses interpose/lifecycle.c (.*), a higher tier: ub_coll_before'

copy_objs
plant order/evaluate.o ub_policy_name
expect_fail "order/evaluate.c calling the policy registry" 'circle of .*order/evaluate.c -> order/policy.c (ub_policy_name)'
copy_objs
plant profiler/derive.o ub_comm_set_state
expect_fail "profiler/derive.c setting a communicator's state" 'profiler/derive.c (profiler/) uses interpose/tables.c (interpose/), which profiler/ may not use: ub_comm_set_state'
copy_objs
plant tools/usbyte-sim.o ub_config_defaults
expect_fail "tools/usbyte-sim.c reading the runtime's configuration" 'tools/usbyte-sim.c (tools/) uses interpose/config.c (interpose/), which tools/ may not use'
copy_objs
plant partition/wfbp.o ub_evaluate
expect_fail "partition/wfbp.c calling the evaluator" 'partition/wfbp.c (partition/) uses order/evaluate.c (order/), which partition/ may not use: ub_evaluate'
copy_objs
plant interpose/config.o ub_log_enabled
expect_fail "config.c calling the log" 'interpose/config.c, which the folders below its own may use, uses interpose/log.c'
copy_objs
plant tests/emu/cudart/trace.o cuStreamBeginCapture
expect_fail "the emulator's cudart/ calling its driver" 'tests/emu/cudart/trace.c (tests/emu/cudart/) uses tests/emu/cuda/capture.c (tests/emu/cuda/), which tests/emu/cudart/ may not use'
copy_objs
plant tests/emu/cudart/queue.o emu_stream_resolve
expect_fail "the emulator's queues calling its streams back" \
    'circle of 2 files: .*tests/emu/cudart/queue.c -> tests/emu/cudart/stream.c (emu_stream_resolve)'
copy_objs
plant tests/emu/cudart/errors.o emu_stream_resolve
expect_fail "the emulator's error state calling its streams" \
    'tests/emu/cudart/errors.c (.*) uses tests/emu/cudart/stream.c (streams and their workers), a higher tier: emu_stream_resolve'
copy_objs

root=$(cd "$here/../.." && pwd)
mkdir -p "$tmp/src/tests/emu"
for d in order partition profiler tools; do ln -s "$root/$d" "$tmp/src/$d"; done
for d in "$root"/tests/emu/*; do ln -s "$d" "$tmp/src/tests/emu/"; done
rm "$tmp/src/tests/emu/cudart"
cp -r "$root/interpose" "$tmp/src/interpose"
cp -r "$root/tests/emu/cudart" "$tmp/src/tests/emu/cudart"
check() { "$here/layers.py" --obj "$tmp/obj" --src "$tmp/src"; }
# plant_src FILE LINE: FILE (of interpose/) also has LINE; restore_src FILE undoes it.
plant_src() { printf '%s\n' "$2" >> "$tmp/src/interpose/$1"; }
restore_src() { cp "$root/interpose/$1" "$tmp/src/interpose/$1"; }

plant_src defer.c 'static void planted(ub_comm *c) { c->state = UB_COMM_PASS_THROUGH; }'
expect_fail "defer.c setting a communicator's state" 'interpose/defer.c:[0-9]*: sets a communicator.s state'
restore_src defer.c
plant_src defer.c 'static void planted(ub_comm *comm) { comm->state = UB_COMM_PASS_THROUGH; }'
expect_fail "defer.c setting the state of a communicator called comm" 'interpose/defer.c:[0-9]*: sets a communicator.s state'
restore_src defer.c
plant_src warmup.c 'static void planted(ub_comm *x) { snprintf(x->reason, sizeof x->reason, "planted"); }'
expect_fail "warmup.c writing a communicator's reason" 'interpose/warmup.c:[0-9]*: writes a communicator.s reason'
restore_src warmup.c
plant_src decide.c 'static void planted(ub_comm *c) { ub_comm_set_state(c, UB_COMM_PASS_THROUGH, "planted"); }'
expect_fail "decide.c moving a communicator's state" 'interpose/decide.c:[0-9]*: moves a communicator.s state'
restore_src decide.c
plant_src exec.c 'static void planted(void) { ub_inside++; }'
expect_fail "exec.c raising the guard by hand" 'interpose/exec.c:[0-9]*: changes the reentrancy guard by hand'
restore_src exec.c
plant_src exec.c 'static void planted(void) { ub_inside += 1; }'
expect_fail "exec.c adding to the guard" 'interpose/exec.c:[0-9]*: changes the reentrancy guard by hand'
restore_src exec.c
plant_src warmup.c 'static void planted(ub_comm *o) { o->cfg_agree.issued = true; }'
expect_fail "warmup.c writing the configuration agreement" 'interpose/warmup.c:[0-9]*: writes the configuration agreement (cfg_agree'
restore_src warmup.c
plant_src lifecycle.c 'static void planted(ub_comm *c) { ub_sched_rt *sr = &c->sched; sr->period = 0; }'
expect_fail "lifecycle.c writing schedule mode's state through a pointer" 'interpose/lifecycle.c:[0-9]*: writes schedule mode.s state (sched'
restore_src lifecycle.c
plant_src defer.c 'static void planted(ub_comm *c) { c->verify.kept = 0; }'
expect_fail "defer.c writing the verification's state" 'interpose/defer.c:[0-9]*: writes the verification.s state (verify'
restore_src defer.c
plant_src report_rt.c 'static void planted(ub_comm *c) { memset(&c->tm, 0, sizeof c->tm); }'
expect_fail "report_rt.c clearing the warm-up's timing" 'interpose/report_rt.c:[0-9]*: writes the warm-up.s timing (tm'
restore_src report_rt.c
plant_src warmup.c 'static void planted(ub_comm *c) { c->report.have_plans = false; }'
expect_fail "warmup.c clearing the report's plans" 'interpose/warmup.c:[0-9]*: writes the report.s have_plans (the decision), owned by interpose/decide.c'
restore_src warmup.c
plant_src lifecycle.c 'static void planted(ub_comm *c) { ub_comm_report *rp = &c->report; rp->schedulable = false; }'
expect_fail "lifecycle.c writing the verdict through a pointer" 'interpose/lifecycle.c:[0-9]*: writes the report.s schedulable (the decision)'
restore_src lifecycle.c
plant_src report_rt.c 'static void planted(ub_comm *c) { ub_comm_report_add_reason(&c->report, "planted"); }'
expect_fail "report_rt.c adding a reason to the verdict" 'interpose/report_rt.c:[0-9]*: writes the report.s reasons (the decision)'
restore_src report_rt.c
plant_src warmup.c 'static void planted(ub_comm *c) { snprintf(c->report.cupti_detail, 8, "x"); }'
expect_fail "warmup.c writing the CUPTI detail" 'interpose/warmup.c:[0-9]*: writes the report.s cupti_detail (the CUPTI watch), owned by interpose/cupti_watch.c'
restore_src warmup.c
plant_src redirect.c '/* a comment naming c->state = UB_COMM_PASS_THROUGH is no write */'
plant_src redirect.c 'static const char *planted = "c->reason[0] = 0";'
check > "$tmp/out" 2>&1 || { echo "FAIL: a comment or a string counted as a write:"; cat "$tmp/out"; exit 1; }
echo "ok: comments and strings are not writes"
restore_src redirect.c
sed -i 's/^#include "log.h"$/&\n#include "lifecycle.h"/' "$tmp/src/interpose/log.c"
expect_fail "log.c including the life cycle's header" \
    'circle of [0-9]* files in the includes .*interpose/log.c:[0-9]* includes interpose/lifecycle.c'
restore_src log.c
sed -i 's/^#include "queue.h"$/&\n#include "stream.h"/' "$tmp/src/tests/emu/cudart/queue.c"
expect_fail "the emulator's queue.c including the streams' header" \
    'circle of 2 files in the includes (tests/emu/cudart/queue.c tests/emu/cudart/stream.c), one of them: tests/emu/cudart/queue.c:[0-9]* includes tests/emu/cudart/stream.c'
echo "layers_test: ok"
