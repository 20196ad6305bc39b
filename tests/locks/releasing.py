#!/usr/bin/env python3
"""The half of the lock contract clang cannot check (interpose/lock_contract.h): a function called
with the global lock held that releases it meanwhile (itself, or through a function it calls) says
so in its declaration, UB_REQUIRES_UNLOCKS(ub_state_mutex), and one that does not says
UB_REQUIRES(ub_state_mutex).  A caller of such a function must expect what it read before the
call to have changed.

Reads interpose/*.c and *.h of the tree given (default: this script's repository) and fails naming
every function whose declaration says otherwise than its body.  Usage: releasing.py [--src DIR]"""
import argparse
import os
import re
import sys

DEF = re.compile(r"^(?:static\s+)?(?:inline\s+)?[A-Za-z_][\w\s\*]*?\b(\w+)\s*\(")
CALL = re.compile(r"\b(\w+)\s*\(")
HELD = "UB_REQUIRES(ub_state_mutex)"
UNLOCKS = "UB_REQUIRES_UNLOCKS(ub_state_mutex)"


def definitions(path):
    """{name: (line, signature text, body text)} of the functions defined at column 0."""
    lines = open(path, encoding="utf-8").read().split("\n")
    found, i = {}, 0
    while i < len(lines):
        m = DEF.match(lines[i])
        if not m or lines[i].rstrip().endswith(";"):
            i += 1
            continue
        if lines[i].rstrip().endswith("}") and "{" in lines[i]:  # a one-line definition
            found[m.group(1)] = (i + 1, lines[i][:lines[i].index("{")], lines[i][lines[i].index("{"):])
            i += 1
            continue
        j = i
        while j < len(lines) and not lines[j].startswith("{") and not lines[j].rstrip().endswith(";"):
            j += 1
        if j == len(lines) or not lines[j].startswith("{"):
            i = j + 1
            continue
        k = j + 1
        while k < len(lines) and not lines[k].startswith("}"):
            k += 1
        found[m.group(1)] = (i + 1, "\n".join(lines[i:j]), "\n".join(lines[j:k]))
        i = k + 1
    return found


def prototypes(paths):
    """{name: declaration text} of the functions declared (not defined) in the files."""
    found = {}
    for p in paths:
        text = open(p, encoding="utf-8").read()
        for m in re.finditer(r"^[A-Za-z_][^;{}#]*?\b(\w+)\s*\([^;{}]*\)[^;{}]*;", text, re.M):
            found[m.group(1)] = found.get(m.group(1), "") + m.group(0)
    return found


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=os.path.dirname(os.path.dirname(here)))
    a = ap.parse_args()
    d = os.path.join(a.src, "interpose")
    files = sorted(os.listdir(d))
    protos = prototypes([os.path.join(d, f) for f in files if f.endswith((".c", ".h"))])
    defs = {}
    for f in files:
        if f.endswith(".c"):
            for name, (line, sig, body) in definitions(os.path.join(d, f)).items():
                defs[name] = (f"interpose/{f}:{line}", sig + protos.get(name, ""), body)
    # Held on entry: the functions whose contract says so.
    held = {n for n, (_, decl, _) in defs.items() if HELD in decl or UNLOCKS in decl}
    # Releasing: unlocks itself, or calls a releasing function (to the fixed point); the lock's
    # own wait is the seed.
    releasing = {n for n, decl in protos.items() if UNLOCKS in decl and n not in defs}
    changed = True
    while changed:
        changed = False
        for n in held - releasing:
            body = defs[n][2]
            if "ub_state_unlock(" in body or "pthread_cond_timedwait(" in body or any(c in releasing for c in CALL.findall(body)):
                releasing.add(n)
                changed = True
    errors = []
    for n in sorted(held):
        where, decl, _ = defs[n]
        if n in releasing and UNLOCKS not in decl:
            errors.append(f"{where}: {n} releases the global lock meanwhile: declare it {UNLOCKS}")
        elif n not in releasing and UNLOCKS in decl:
            errors.append(f"{where}: {n} never releases the global lock: declare it {HELD}")
    for e in errors:
        print("releasing:", e, file=sys.stderr)
    if not errors:
        print(f"releasing: {len(held)} functions called with the lock held, {len(releasing & held)} release it meanwhile")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
