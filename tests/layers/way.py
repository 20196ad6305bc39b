#!/usr/bin/env python3
"""The way of the runtime's calls, read from a run (tests/layers/way.sh makes one): the entries and
exits of every interpose/ and profiler/ function of a libusbyte.so built with TRACE_CALLS=1
(tests/layers/call_tracer.c), each function placed in its file by the link map and each file in its
tier by layers.py's TIERS (profiler/ below them all, with the one interpose/ file layers.py lets
it use, the configuration).

    way.py LIB LINK_MAP TRACE... [--entry ncclAllReduce] [--last N] [--show] [--tree]

Prints, for the last N top-level calls of the entry function of each trace (the steady state of
the run), how many functions, files and tiers one call goes through, how often it enters a tier
from above, how often it enters a file it had already left, and the most common way, file by
file (--show: every way seen; --tree: the functions of one call that took the most common way).
Fails (exit 1) on what the object check (layers.py) cannot see: a call from a file to one of
a higher tier through a function pointer (a callback), and a call into a file that is already on
the call's stack (a circle).  A wrapper entered from below it is the real library calling its own
API through the PLT (NCCL's launch calls the CUDA runtime), guarded by ub_inside: counted, not a
fault.
"""
import collections
import os
import re
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import BELOW_RUNTIME_MAY_USE, TIERS  # noqa: E402

# profiler/ is below every interpose/ tier, and so is the configuration, which it may use
# (layers.py holds config.c to using no other interpose/ file).
PROFILER_TIER = len(TIERS)
TIER_NAMES = [name for name, _ in TIERS] + [f"profiler/ (the pure pieces) and {BELOW_RUNTIME_MAY_USE}"]


def tier_of(path):
    folder, name = path.split("/", 1)
    if folder == "profiler" or path == BELOW_RUNTIME_MAY_USE:
        return PROFILER_TIER
    for i, (_, names) in enumerate(TIERS):
        if name in names:
            return i
    sys.exit(f"way: {path} is in no tier of tests/layers/layers.py")


def text_ranges(link_map):
    """(start, end, 'interpose/x.c') of each instrumented object's .text in the library."""
    ranges = []
    pat = re.compile(r"^ \.text\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+\S*/obj/((?:interpose|profiler)/\w+)\.o$")
    for line in open(link_map):
        m = pat.match(line.rstrip("\n"))
        if m and int(m.group(2), 16):
            start = int(m.group(1), 16)
            ranges.append((start, start + int(m.group(2), 16), m.group(3) + ".c"))
    if not ranges:
        sys.exit(f"way: {link_map}: no .text of interpose/ or profiler/ objects (not a TRACE_CALLS=1 link map?)")
    return sorted(ranges)


def file_of(ranges, offset):
    lo, hi = 0, len(ranges)
    while lo < hi:
        mid = (lo + hi) // 2
        if ranges[mid][1] <= offset:
            lo = mid + 1
        else:
            hi = mid
    if lo < len(ranges) and ranges[lo][0] <= offset < ranges[lo][1]:
        return ranges[lo][2]
    return None


def names_of(lib, offsets):
    out = subprocess.run(["addr2line", "-f", "-e", lib] + [hex(o) for o in offsets],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return {o: out[2 * i] for i, o in enumerate(offsets)}


def read_trace(path):
    data = open(path, "rb").read()
    if len(data) < 8:
        sys.exit(f"way: {path}: no events (was the library built with TRACE_CALLS=1?)")
    (lost,) = struct.unpack_from("<Q", data, 0)
    if lost:
        sys.exit(f"way: {path}: {lost} events did not fit the tracer's buffer: run fewer iterations")
    return list(struct.iter_unpack("<QII", data[8:]))


class Call:
    __slots__ = ("fn", "file", "children")

    def __init__(self, fn, file):
        self.fn, self.file, self.children = fn, file, []


def call_trees(events, file_for):
    """The top-level calls of each thread, as trees of Call (functions outside the instrumented
    objects are skipped; their callees hang on the nearest instrumented caller)."""
    stacks, tops = collections.defaultdict(list), collections.defaultdict(list)
    for offset, thread, enter in events:
        f = file_for(offset)
        if f is None:
            continue
        stack = stacks[thread]
        if enter:
            c = Call(offset, f)
            (stack[-1].children if stack else tops[thread]).append(c)
            stack.append(c)
        elif stack:
            stack.pop()
    return [c for t in sorted(tops) for c in tops[t]]


# The functions that note a forwarded call's work on its stream (schedule mode's completion of
# events): the way in's lock (the cursor, or the life cycle after it) or, without it, the wrapper.
FORWARDED_NOTES = {"ub_coll_forwarded", "ub_redirect_stream_work_on", "ub_redirect_stream_work_locked"}


def noted(c, names):
    return names[c.fn] in FORWARDED_NOTES or any(noted(ch, names) for ch in c.children)


def walk(top, wrappers, faults, names):
    """Figures of one top-level call; faults collects the upward calls and the circles."""
    fig = collections.Counter()
    tiers_in, files_seen, way = collections.Counter(), set(), []

    def visit(c, stack_files, caller):
        fig["functions"] += 1
        if caller is not None and c.file != caller.file:
            fig["file moves"] += 1
            up, down = tier_of(caller.file), tier_of(c.file)
            through_library = c.file in wrappers and down < up
            if through_library:
                fig["through a real library"] += 1
            elif down < up:
                faults.add(f"upward call: {caller.file}:{names[caller.fn]} ({TIER_NAMES[up]}) -> "
                           f"{c.file}:{names[c.fn]} ({TIER_NAMES[down]})")
            if down > up:
                tiers_in[down] += 1
            if c.file in stack_files and not through_library:
                faults.add(f"circle: {c.file}:{names[c.fn]} entered from {caller.file}:{names[caller.fn]} "
                           f"while {c.file} is on the stack")
            if c.file in files_seen:
                fig["entries into a file already left"] += 1
            way.append(c.file)
        files_seen.add(c.file)
        for ch in c.children:
            visit(ch, stack_files | {c.file}, c)

    way.append(top.file)
    visit(top, frozenset(), None)
    fig["files"] = len(files_seen)
    fig["tiers"] = len({tier_of(f) for f in files_seen})
    fig["tier entries from above"] = sum(tiers_in.values())
    return fig, tiers_in, tuple(way)


def main(argv):
    args, entry, last, show, tree = [], "ncclAllReduce", 100, False, False
    it = iter(argv)
    for a in it:
        if a == "--entry":
            entry = next(it)
        elif a == "--last":
            last = int(next(it))
        elif a == "--show":
            show = True
        elif a == "--tree":
            tree = True
        else:
            args.append(a)
    if len(args) < 3:
        sys.exit(__doc__)
    lib, link_map, traces = args[0], args[1], args[2:]
    ranges = text_ranges(link_map)
    per_trace = [(t, read_trace(t)) for t in traces]
    offsets = sorted({e[0] for _, evs in per_trace for e in evs})
    names = names_of(lib, offsets)
    file_cache = {}

    def file_for(o):
        if o not in file_cache:
            file_cache[o] = file_of(ranges, o)
        return file_cache[o]

    wrappers = {f"interpose/{n}" for n in TIERS[0][1]}
    faults = set()
    # per kind of call: [figures, tier entries, ways, an example of each way]
    kinds = {k: ([], [], collections.Counter(), {}) for k in ("taken over", "forwarded")}
    for path, evs in per_trace:
        tops = [c for c in call_trees(evs, file_for) if names[c.fn] == entry]
        if not tops:
            sys.exit(f"way: {path}: no top-level call of {entry}")
        for top in tops[-last:]:
            # the call went to NCCL as it is (pass-through: its work on the stream is noted for the
            # completion of events), or schedule mode took it over
            kind = "forwarded" if noted(top, names) else "taken over"
            figs, tier_counts, ways, example = kinds[kind]
            fig, tiers_in, way = walk(top, wrappers, faults, names)
            figs.append(fig)
            tier_counts.append(tiers_in)
            ways[way] += 1
            example.setdefault(way, top)
        # every call of the run, for the faults
        for top in call_trees(evs, file_for):
            walk(top, wrappers, faults, names)

    total = sum(len(k[0]) for k in kinds.values())
    print(f"way: {total} calls of {entry} (the last {last} of each of {len(traces)} traces)")
    for kind, (figs, tier_counts, ways, example) in kinds.items():
        if not figs:
            continue
        print(f"  {len(figs)} {kind}" + (" (schedule mode's)" if kind == "taken over" else
                                         " to NCCL as they are (pass-through)") + ":")

        def spread(v):
            v = sorted(v)
            return f"median {v[len(v) // 2]} (from {v[0]} to {v[-1]})"
        for key in ["functions", "files", "tiers", "file moves", "tier entries from above",
                    "entries into a file already left", "through a real library"]:
            print(f"    {key}: {spread(f[key] for f in figs)}")
        for t in range(1, len(TIER_NAMES)):
            print(f"    entries into tier {t} ({TIER_NAMES[t]}): {spread(c[t] for c in tier_counts)}")
        way, n = ways.most_common(1)[0]
        print(f"    the most common way ({n} of {len(figs)} calls), file by file:")
        print("      " + " > ".join(f.split("/")[1][:-2] if f.startswith("interpose/") else f[:-2] for f in way))
        if show:
            for w, k in ways.most_common():
                print(f"    {k}: " + " > ".join(w))
        if tree:
            def show_tree(c, depth):
                print("      " + "  " * depth + f"{c.file}:{names[c.fn]}")
                for ch in c.children:
                    show_tree(ch, depth + 1)
            show_tree(example[way], 0)
    for f in sorted(faults):
        print(f"FAIL: {f}")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
