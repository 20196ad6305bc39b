#!/usr/bin/env python3
"""The architecture's guard (docs/design.md, "Layers"): reads the symbols of the objects of
interpose/, order/, partition/, profiler/ and tools/ and fails on any circle between their files
and on any dependency of an interpose/ file on a file of a higher tier; reads the includes between
interpose/ files and fails on any circle among them.

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
     ["warmup.c", "agree_config.c", "agree_rt.c", "decide.c", "report_rt.c", "defer.c", "verify.c", "redirect.c"]),
    ("executor, groups, tables, timing, CUPTI, graph captures",
     ["exec.c", "group.c", "tables.c", "timing.c", "collwait.c", "cupti_watch.c", "capture.c"]),
    ("resolution, process globals, logging, guard, configuration",
     ["resolve.c", "cupti_find.c", "guard.c", "log.c", "globals.c", "config.c"]),
]

# Circles still to break (sorted tuples of files) and upward uses still to remove ((user, used));
# the goal is two empty lists.
KNOWN_CIRCLES = []
KNOWN_UPWARD = []


# State with one writer: (pattern, the only file where it may appear, what it does).
OWNED = [
    (r"\bc->state\s*=[^=]", "interpose/tables.c", "sets c->state (only ub_comm_set_state does)"),
    (r"\bub_inside\s*(\+\+|--)", "interpose/guard.h", "raises the reentrancy guard by hand (UB_REAL does)"),
    (r"(->|\.)verify\.[\w.\[\]]+\s*(=[^=]|\+\+|--)", "interpose/verify.c",
     "writes the verification's state (only verify.c does)"),
]


def owned_writes(src):
    """Writes of OWNED state outside their owner, as error lines."""
    errors = []
    for n in sorted(os.listdir(os.path.join(src, "interpose"))):
        f = f"interpose/{n}"
        if not n.endswith((".c", ".h")):
            continue
        for i, line in enumerate(open(os.path.join(src, f), encoding="utf-8"), 1):
            for pattern, owner, what in OWNED:
                if f != owner and re.search(pattern, line):
                    errors.append(f"{f}:{i}: {what}")
    return errors


def include_graph(src):
    """{unit: {unit it includes: [the include lines]}} between interpose/ files, a unit being a
    file x.c with its header x.h (a header with no .c of its name is a unit of its own)."""
    d = os.path.join(src, "interpose")
    names = sorted(n for n in os.listdir(d) if n.endswith((".c", ".h")))
    stems = {n[:-2] for n in names if n.endswith(".c")}

    def unit(n):
        return f"interpose/{n[:-2]}" + (".c" if n[:-2] in stems else ".h")

    graph = {unit(n): {} for n in names}
    for n in names:
        for i, line in enumerate(open(os.path.join(d, n), encoding="utf-8"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"/]+\.h)"', line)
            if m and m.group(1) in names and unit(m.group(1)) != unit(n):
                graph[unit(n)].setdefault(unit(m.group(1)), []).append(f"interpose/{n}:{i}")
    return graph


def include_errors(src):
    """The circles of the include graph, as error lines: a file's header is included by the files
    that call it, so a circle of includes is a circle of calls the objects may not show."""
    graph = include_graph(src)
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


def read_graph(src, obj):
    """{file: {file it depends on: [symbols]}} over the checked folders."""
    files = [f"{d}/{n}" for d in FOLDERS for n in sorted(os.listdir(os.path.join(src, d)))
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


def check(graph):
    """The errors, one line each."""
    errors = []
    tier = {}
    for i, (_, names) in enumerate(TIERS):
        for n in names:
            tier["interpose/" + n] = i
    for f in graph:
        if f.startswith("interpose/") and f not in tier:
            errors.append(f"{f}: in no tier of tests/layers/layers.py (place it in one, and in docs/design.md)")
    for f in tier:
        if f not in graph:
            errors.append(f"{f}: in a tier of tests/layers/layers.py but not in the tree")
    for f, deps in sorted(graph.items()):
        for g, syms in sorted(deps.items()):
            if f in tier and g in tier and tier[g] < tier[f] and (f, g) not in KNOWN_UPWARD:
                errors.append(f"{f} ({TIERS[tier[f]][0]}) uses {g} ({TIERS[tier[g]][0]}), a higher tier: "
                              + ", ".join(syms[:4]) + (" ..." if len(syms) > 4 else ""))
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
    errors = check(graph) + owned_writes(a.src) + include_errors(a.src)
    for e in errors:
        print("layers:", e, file=sys.stderr)
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
