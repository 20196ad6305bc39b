#!/usr/bin/env python3
"""The architecture's guard (docs/design.md, "Layers"): reads the symbols of the objects of
interpose/, order/, partition/, profiler/ and tools/ and fails on any circle between their files,
on any dependency of an interpose/ file on a file of a higher tier and on any use of a folder the
folder order forbids; does the same for the emulator's folders (tests/emu), its CUDA runtime
stand-in (tests/emu/cudart) held to tiers of its own; reads interpose/'s sources for writes of
owned state (a communicator's state and reason, the reentrancy guard, the communicator's
sub-structs) outside their owners and for moves of a communicator's state outside the life cycle
and the warm-up; and reads the includes between the files of interpose/ and
of tests/emu/cudart and fails on any circle among them.

File A depends on file B when A's object uses a global symbol (function or data) that B's object
defines.  Usage: layers.py [--obj DIR] [--src DIR] [--graph]
  --obj DIR   the objects, DIR/<folder>/<file>.o (default $BUILD/obj, BUILD defaulting to build)
  --src DIR   the source tree whose .c files are checked (default: this script's repository)
  --graph     print every file's dependencies and the counts, then check"""
import argparse
import os
import re
import subprocess
import sys

FOLDERS = ["interpose", "order", "partition", "profiler", "tools"]

# interpose/, top to bottom.  A file may use files of its own tier (without a circle) and of the
# tiers below it, never above.  Every interpose/*.c must be in exactly one tier.
TIERS = [
    ("wrappers and process hooks",
     ["nccl_wrap.c", "cuda_wrap.c", "driver_wrap.c", "cupti_wrap.c", "runtime.c"]),
    ("life cycle and CUDA hooks",
     ["lifecycle.c", "cuda_hooks.c", "identity.c"]),
    ("warm-up, agreement, decision, deferral, redirection",
     ["warmup.c", "agree_config.c", "agree_rt.c", "calibrate.c", "decide.c", "report_rt.c", "defer.c", "verify.c", "redirect.c"]),
    ("executor, groups, tables, timing, CUPTI, graph captures",
     ["exec.c", "group.c", "tables.c", "timing.c", "collwait.c", "cupti_watch.c", "capture.c"]),
    ("resolution, process globals, logging, guard, configuration",
     ["resolve.c", "cupti_find.c", "guard.c", "log.c", "globals.c", "config.c", "cuda_error.c"]),
]

# Circles still to break (sorted tuples of files) and upward uses still to remove ((user, used));
# the goal is two empty lists.
KNOWN_CIRCLES = []
KNOWN_UPWARD = []

# The folders, by what each may use (its own files aside).  The tools never link the runtime; the
# planner and the profiler never reach up into it, except for its configuration: interpose/config.c
# reads the USBYTE_* environment into the config X-list's struct, which the profiler's agreement
# encoding and report name values from.  It stays in interpose/ (it is the runtime's configuration,
# and its own tier there is the bottom one) because the check below holds it to that: config.c uses
# no other interpose/ file, so a use of it can never reach further into the runtime.
FOLDER_USES = {
    "interpose": {"profiler", "order", "partition"},
    "tools": {"profiler", "order", "partition"},
    "profiler": {"order", "partition"},
    "order": {"partition"},
    "partition": set(),
}
BELOW_RUNTIME = {"profiler", "order", "partition"}
BELOW_RUNTIME_MAY_USE = "interpose/config.c"

# The emulator (tests/emu): the CUDA runtime stand-in (cudart/) is the bottom; the driver, CUPTI
# and NCCL stand-ins and the launcher build on it and on nothing else of the emulator.
EMU_FOLDERS = ["tests/emu/cudart", "tests/emu/cuda", "tests/emu/cupti", "tests/emu/nccl", "tests/emu/launcher"]
EMU_USES = {
    "tests/emu/cudart": set(),
    "tests/emu/cuda": {"tests/emu/cudart"},
    "tests/emu/cupti": {"tests/emu/cudart"},
    "tests/emu/nccl": {"tests/emu/cudart"},
    "tests/emu/launcher": {"tests/emu/cudart"},
}
# tests/emu/cudart/, top to bottom, by the same rule as TIERS; every cudart/*.c in exactly one.
EMU_CUDART = "tests/emu/cudart"
EMU_CUDART_TIERS = [
    ("entry points and the hang dump",
     ["capture_api.c", "copy_nd.c", "entry_point.c", "hang_dump.c", "launch.c", "stream_api.c"]),
    ("graphs and stream work",
     ["graph.c", "work.c"]),
    ("events, memory, stream memory operations, queue deadlocks",
     ["event.c", "memory.c", "queue_check.c", "values.c"]),
    ("streams and their workers",
     ["stream.c"]),
    ("hardware queues, capture state",
     ["capture.c", "queue.c"]),
    ("stream objects, devices",
     ["device.c", "stream_object.c"]),
    ("errors, CUPTI hook, interference, exit, dump text",
     ["dump_text.c", "errors.c", "interference.c", "trace.c", "unloading.c"]),
]
# Circles among the emulator's files still to break (sorted tuples), printed by every run; the
# goal is an empty list.
KNOWN_EMU_CIRCLES = []

# The folders whose includes between their own files are read (include_errors).
INCLUDE_FOLDERS = ["interpose", EMU_CUDART]


# State with one writer, read from interpose/'s sources (comments and strings removed).  A write is
# an assignment (=, +=, ...), ++ or --, or the destination of memcpy/memset/snprintf/strcpy/....
# A communicator is any expression ending in a name this file declares `ub_comm *` (parameter,
# local or field), or a field that an interpose/ header declares `ub_comm *`: the rule holds
# whatever the variable is called.
#
# The communicator's fields with one writer: (field, owner, what a write elsewhere does).
COMM_FIELDS = [
    ("state", "interpose/tables.c", "sets a communicator's state (only ub_comm_set_state does)"),
    ("reason", "interpose/tables.c", "writes a communicator's reason (only ub_comm_set_state does)"),
    ("failed", "interpose/tables.c", "fails a communicator on this rank (only ub_comm_set_failed does)"),
    ("failure_reported", "interpose/lifecycle.c", "says the reports were written at a failure's first answer"),
]
# The communicator's sub-structs, each written only by its owners, through the communicator
# (c->sched.x = ...) or through a pointer of the sub-struct's type (ub_sched_rt *s; s->x = ...).
# (field, type, owners, what it is).  The report (ub_comm_report) is not here: the warm-up, the
# agreements, the decision, the CUPTI watcher and the identity each write their part of it.
SUB_STRUCTS = [
    ("cfg_agree", "ub_cfg_agreement", ["interpose/agree_config.c"], "the configuration agreement"),
    ("sched", "ub_sched_rt", ["interpose/defer.c", "interpose/exec.c", "interpose/redirect.c"], "schedule mode's state"),
    ("tm", "ub_timing", ["interpose/timing.c"], "the warm-up's timing"),
    ("verify", "ub_verify_rt", ["interpose/verify.c"], "the verification's state"),
    ("calib", "ub_calib_rt", ["interpose/calibrate.c"], "the calibration's state"),
]
# Writes of a sub-struct outside its owners still to move into them, (file, field): printed by
# every run, and an error once gone.
KNOWN_SUB_WRITES = []
# The communicator's report (ub_comm_report, c->report): each part written by one file, through
# the communicator (c->report.x = ...), through a pointer of its type (ub_comm_report *r; r->x),
# or through the report's own mutators (the verdict's reasons, the rank-local record).
REPORT_OWNERS = {
    "interpose/report_rt.c": ("the report's snapshot of the communicator",
                              ["index", "rank", "nranks", "iterations_observed", "state", "state_reason", "profiling"]),
    "interpose/identity.c": ("the communicator's identity", ["id", "children"]),
    "interpose/tables.c": ("the warm-up's setting", ["warmup"]),
    "interpose/agree_rt.c": ("the warm-up's record", ["calls_per_iteration", "nccl_calls_per_iteration", "other_calls",
                                                      "end_records", "consumers_stream", "consumers_host",
                                                      "consumers_host_other", "stream_ordered_example", "warmup_used",
                                                      "local"]),
    "interpose/cupti_watch.c": ("the CUPTI watch", ["cupti", "cupti_detail"]),
    "interpose/decide.c": ("the decision", ["have_profile", "profile", "fit", "fit_samples", "n_fit_samples",
                                            "measured_iteration", "ready_upstream_calls", "ready_fallback_calls",
                                            "merge_barriers", "need_segments", "stream_ordered", "schedulable",
                                            "n_reasons", "reasons", "have_plans", "policy_iteration", "chosen",
                                            "plan", "stream_completion", "other_completion", "completion_note"]),
}
REPORT_MUTATORS = {"ub_comm_report_add_reason": "reasons", "ub_comm_report_clear_reasons": "reasons",
                   "ub_comm_report_set_local": "local"}
# The files that move a communicator's state (call ub_comm_set_state): the life cycle, for every
# state's ways out, and the tables (the setter itself, and the failure of this rank).  The
# agreements, the decision, the calibration and the warm-up's restarts return what they decided
# (interpose/transition.h), the cursor whether its deviations ask for a new profile, and the life
# cycle applies it.
STATE_MOVERS = {"interpose/tables.c", "interpose/lifecycle.c"}
# The reentrancy guard: raised and lowered only by UB_REAL (guard.h).
GUARD = ("ub_inside", "interpose/guard.h", "changes the reentrancy guard by hand (UB_REAL does)")

WRITE_OP = r"\s*(?:=(?!=)|[-+*/%&|^]=|<<=|>>=|\+\+|--)"
WRITE_FN = r"\b(?:v?snprintf|v?sprintf|strn?cpy|strn?cat|memcpy|memmove|memset)\s*\(\s*&?\s*"
PATH_TAIL = r"(?:\s*(?:\.|->)\s*\w+|\s*\[[^\]]*\])*"


def strip_c(text):
    """The text with comments and string and character literals blanked, lines kept."""
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])+\'', '""', text)


def declared(text, type_name, writable_only=False):
    """The names this text declares as pointers to type_name (const ones left out if asked)."""
    const = r"(?<!const )" if writable_only else ""
    return set(re.findall(const + r"\b" + type_name + r"\s*\*\s*(?:const\s+)?([A-Za-z_]\w*)\s*[,;)=\[]", text))


def writes(line, lhs):
    """True when the line writes something lhs (a regular expression of an lvalue) matches."""
    return bool(re.search(r"(?<![\w.>])" + lhs + PATH_TAIL + WRITE_OP, line)
                or re.search(r"(?:\+\+|--)\s*" + lhs, line)
                or re.search(WRITE_FN + lhs, line))


def owned_writes(src):
    """(errors, known) writes of owned state outside their owners, as lines."""
    texts = {}
    for n in sorted(os.listdir(os.path.join(src, "interpose"))):
        if n.endswith((".c", ".h")):
            texts[f"interpose/{n}"] = strip_c(open(os.path.join(src, "interpose", n), encoding="utf-8").read())
    comm_fields = set()
    for f, text in texts.items():
        if f.endswith(".h"):
            comm_fields |= declared(text, "ub_comm")
    errors, known, seen = [], [], {}
    for f, text in texts.items():
        comms = declared(text, "ub_comm") | comm_fields
        comm = r"\b(?:" + "|".join(sorted(comms)) + r")\s*->\s*" if comms else None
        aliases = {sub: declared(text, ty, writable_only=True) for sub, ty, _, _ in SUB_STRUCTS}
        for i, line in enumerate(text.split("\n"), 1):
            if f != GUARD[1] and writes(line, r"\b" + GUARD[0] + r"\b"):
                errors.append(f"{f}:{i}: {GUARD[2]}")
            if f.endswith(".c") and f not in STATE_MOVERS and re.search(r"\bub_comm_set_state\s*\(", line):
                errors.append(f"{f}:{i}: moves a communicator's state (return a ub_transition to the life cycle, "
                              "lifecycle.c, which applies it)")
            if comm is None:
                continue
            for field, owner, what in COMM_FIELDS:
                if f != owner and writes(line, comm + field + r"\b"):
                    errors.append(f"{f}:{i}: {what}")
            for sub, ty, owners, what in SUB_STRUCTS:
                if f in owners:
                    continue
                lhs = [comm + sub + r"\b"] + [r"\b" + a + r"\s*->\s*\w+" for a in sorted(aliases[sub])]
                if any(writes(line, x) for x in lhs):
                    if (f, sub) in KNOWN_SUB_WRITES:
                        seen.setdefault((f, sub), []).append(str(i))
                    else:
                        errors.append(f"{f}:{i}: writes {what} ({sub}, {ty}), owned by {', '.join(owners)}")
    errors += report_writes(texts, comm_fields)
    for f, sub in KNOWN_SUB_WRITES:
        if (f, sub) in seen:
            what, owners = next((w, o) for s, _, o, w in SUB_STRUCTS if s == sub)
            known.append(f"{f}:{','.join(seen[(f, sub)])}: writes {what} ({sub}), owned by {', '.join(owners)}")
        else:
            errors.append(f"known write of {sub} by {f} is gone: remove it from KNOWN_SUB_WRITES")
    return errors, known


def report_writes(texts, comm_fields):
    """Writes of the communicator's report by a file that does not own the part written."""
    owner = {field: (f, what) for f, (what, fields) in REPORT_OWNERS.items() for field in fields}
    errors = []
    for f, text in texts.items():
        comms = declared(text, "ub_comm") | comm_fields
        reports = declared(text, "ub_comm_report", writable_only=True)
        heads = ([r"\b(?:" + "|".join(sorted(comms)) + r")\s*->\s*report\s*\.\s*"] if comms else []) + \
                [r"\b" + a + r"\s*->\s*" for a in sorted(reports)]
        for i, line in enumerate(text.split("\n"), 1):
            found = {m.group(1) for m in re.finditer(r"\b(" + "|".join(REPORT_MUTATORS) + r")\s*\(", line)}
            written = {REPORT_MUTATORS[m] for m in found}
            for head in heads:
                for m in re.finditer(head + r"(\w+)", line):
                    if writes(line, re.escape(m.group(0))):
                        written.add(m.group(1))
            for field in sorted(written):
                if field not in owner:
                    errors.append(f"{f}:{i}: writes the report's {field}, which REPORT_OWNERS gives no owner")
                elif owner[field][0] != f:
                    errors.append(f"{f}:{i}: writes the report's {field} ({owner[field][1]}), owned by {owner[field][0]}")
    return errors


def include_graph(src, folder):
    """{unit: {unit it includes: [the include lines]}} between the files of folder, a unit being
    a file x.c with its header x.h (a header with no .c of its name is a unit of its own)."""
    d = os.path.join(src, folder)
    names = sorted(n for n in os.listdir(d) if n.endswith((".c", ".h")))
    stems = {n[:-2] for n in names if n.endswith(".c")}

    def unit(n):
        return f"{folder}/{n[:-2]}" + (".c" if n[:-2] in stems else ".h")

    graph = {unit(n): {} for n in names}
    for n in names:
        for i, line in enumerate(open(os.path.join(d, n), encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"/]+\.h)"', line)
            if m and m.group(1) in names and unit(m.group(1)) != unit(n):
                graph[unit(n)].setdefault(unit(m.group(1)), []).append(f"{folder}/{n}:{i}")
    return graph


def include_errors(src):
    """The circles of the include graphs of INCLUDE_FOLDERS, as error lines: a file's header is
    included by the files that call it, so a circle of includes is a circle of calls the objects
    may not show."""
    errors = []
    for folder in INCLUDE_FOLDERS:
        errors += include_circles(include_graph(src, folder))
    return errors


def include_circles(graph):
    errors = []
    for comp in circles(graph):
        # One shortest circle through the first file, breadth first.
        start, inside = comp[0], set(comp)
        back, todo = {start: None}, [start]
        while todo and start not in [g for f in todo for g in graph[f]]:
            todo = [g for f in todo for g in sorted(graph[f]) if g in inside and g not in back and not back.update({g: f})]
        last = next(f for f in todo if start in graph[f])
        path = [last]
        while back[path[-1]] is not None:
            path.append(back[path[-1]])
        path.reverse()
        steps = "; ".join(f"{graph[f][g][0]} includes {g}" for f, g in zip(path, path[1:] + [start]))
        errors.append(f"circle of {len(comp)} files in the includes ({' '.join(comp)}), one of them: {steps}")
    return errors


def symbols(objs):
    """{object: (defined, used)} global symbols, from one run of nm over every object."""
    out = subprocess.run(["nm", "-P", "-A"] + objs, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"layers: nm failed: {out.stderr.strip()}")
    syms = {o: (set(), set()) for o in objs}
    for line in out.stdout.splitlines():
        where, _, rest = line.partition(": ")
        parts = rest.split()
        if len(parts) < 2 or where not in syms:
            continue
        name, kind = parts[0], parts[1]
        if kind in "Uwv":
            syms[where][1].add(name)  # undefined, weak undefined included
        elif kind.isupper() or kind == "u":
            syms[where][0].add(name)
    return syms


def read_graph(src, obj, folders=FOLDERS):
    """{file: {file it depends on: [symbols]}} over the given folders."""
    files = [f"{d}/{n}" for d in folders for n in sorted(os.listdir(os.path.join(src, d)))
             if n.endswith(".c")]
    objs = {f: os.path.join(obj, f[:-2] + ".o") for f in files}
    for o in objs.values():
        if not os.path.exists(o):
            sys.exit(f"layers: {o} is missing (build first: make all)")
    syms = symbols(list(objs.values()))
    owner = {}
    for f in files:
        for s in syms[objs[f]][0]:
            owner.setdefault(s, []).append(f)
    graph = {f: {} for f in files}
    for f in files:
        for s in sorted(syms[objs[f]][1]):
            for g in owner.get(s, []):
                if g != f:
                    graph[f].setdefault(g, []).append(s)
    return graph


def circles(graph):
    """The strongly connected components of more than one file (Tarjan), each sorted."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(tuple(sorted(comp)))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return sorted(found)


def tier_errors(graph, folder, tiers, known_upward=()):
    """The files of folder that are in no tier or not in the tree, and every use of a file of a
    higher tier (known_upward aside), as error lines."""
    errors = []
    tier = {}
    for i, (_, names) in enumerate(tiers):
        for n in names:
            tier[f"{folder}/{n}"] = i
    for f in graph:
        if f.startswith(folder + "/") and f not in tier:
            errors.append(f"{f}: in no tier of tests/layers/layers.py (place it in one, and in docs/design.md)")
    for f in tier:
        if f not in graph:
            errors.append(f"{f}: in a tier of tests/layers/layers.py but not in the tree")
    for f, deps in sorted(graph.items()):
        for g, syms in sorted(deps.items()):
            if f in tier and g in tier and tier[g] < tier[f] and (f, g) not in known_upward:
                errors.append(f"{f} ({tiers[tier[f]][0]}) uses {g} ({tiers[tier[g]][0]}), a higher tier: "
                              + ", ".join(syms[:4]) + (" ..." if len(syms) > 4 else ""))
    return errors


def check(graph):
    """The errors, one line each."""
    errors = tier_errors(graph, "interpose", TIERS, KNOWN_UPWARD)
    for comp in circles(graph):
        if comp in KNOWN_CIRCLES:
            continue
        detail = "; ".join(f"{f} -> {g} ({graph[f][g][0]})" for f in comp for g in comp if g in graph[f])
        errors.append(f"circle of {len(comp)} files: {detail}")
    for comp in KNOWN_CIRCLES:
        if comp not in circles(graph):
            errors.append(f"known circle {' '.join(comp)} is gone: remove it from KNOWN_CIRCLES")
    for f, g in KNOWN_UPWARD:
        if g not in graph.get(f, {}):
            errors.append(f"known upward use {f} -> {g} is gone: remove it from KNOWN_UPWARD")
    return errors


def folder_uses(graph, uses, exception=None, exception_users=()):
    """Uses of one folder's file by another's that `uses` does not allow, as error lines; the
    exception file may be used from the folders exception_users, and itself uses no file of its
    own folder."""
    errors = []
    for f, deps in sorted(graph.items()):
        a = os.path.dirname(f)
        for g, syms in sorted(deps.items()):
            b = os.path.dirname(g)
            if f == exception and b == a:
                errors.append(f"{f}, which the folders below its own may use, uses {g}: " + ", ".join(syms[:4]))
            if b == a or b in uses.get(a, set()) or (g == exception and a in exception_users):
                continue
            errors.append(f"{f} ({a}/) uses {g} ({b}/), which {a}/ may not use: "
                          + ", ".join(syms[:4]) + (" ..." if len(syms) > 4 else ""))
    return errors


def check_emu(graph):
    """(errors, known) of the emulator's files: circles, folder uses and cudart/'s tiers."""
    errors, known = folder_uses(graph, EMU_USES) + tier_errors(graph, EMU_CUDART, EMU_CUDART_TIERS), []
    found = circles(graph)
    for comp in found:
        if comp in KNOWN_EMU_CIRCLES:
            known.append(f"circle of {len(comp)} files still to break: {' '.join(comp)}")
            continue
        detail = "; ".join(f"{f} -> {g} ({graph[f][g][0]})" for f in comp for g in comp if g in graph[f])
        errors.append(f"circle of {len(comp)} files: {detail}")
    for comp in KNOWN_EMU_CIRCLES:
        if comp not in found:
            errors.append(f"known circle {' '.join(comp)} is gone or changed: update KNOWN_EMU_CIRCLES")
    return errors, known


def summary(graph):
    edges = sum(len(d) for d in graph.values())
    print(f"{len(graph)} files, {edges} edges, {len(circles(graph))} circles")
    for name, files in TIERS:
        print(f"  tier {name}: {len(files)} files")
    for comp in circles(graph):
        print(f"  circle: {' '.join(comp)}")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--obj", default=os.path.join(os.environ.get("BUILD", "build"), "obj"))
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--graph", action="store_true")
    a = ap.parse_args()
    graph = read_graph(a.src, a.obj)
    if a.graph:
        for f in sorted(graph):
            print(f, "->", " ".join(sorted(graph[f])))
        summary(graph)
    emu = read_graph(a.src, a.obj, EMU_FOLDERS)
    if a.graph:
        for f in sorted(emu):
            print(f, "->", " ".join(sorted(emu[f])))
    emu_errors, emu_known = check_emu(emu)
    write_errors, write_known = owned_writes(a.src)
    for k in emu_known + write_known:
        print("layers: known exception:", k)
    errors = check(graph) + folder_uses(graph, FOLDER_USES, BELOW_RUNTIME_MAY_USE, BELOW_RUNTIME) + emu_errors + write_errors + include_errors(a.src)
    for e in errors:
        print("layers:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
