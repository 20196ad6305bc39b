#!/usr/bin/env python3
"""Checks usbyte-report's outputs against the reports they came from (tests/integration/tools_report.sh).

  tools_report_check.py html PAGE REPORT... [--expect-problems N] [--expect-diff RANK:WHAT ...] [--dom]
  tools_report_check.py trace TRACE REPORT... --sim USBYTE_SIM
  tools_report_check.py png SCREENSHOT --min-width W --min-height H [--band RRGGBB:N ...]
  tools_report_check.py console CHROMIUM_STDERR

Prints one line per failure and exits 1 when there is any; the expected values are all derived
from the report files (and, for the other policies' plans, from usbyte-sim), never from the page.
"""
import json
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def load_reports(paths):
    reps = {}
    for p in paths:
        r = json.load(open(p))
        reps[r["rank"]] = r
    return reps


def at(doc, path):
    for part in path.split("/"):
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


NUM = re.compile(r"^-?\d+(?:\.(\d+))?(?:e([+-]?\d+))?$")


def shown_matches(text, value, scale):
    """True when `text` is value*scale rounded as the text's own precision shows it."""
    m = NUM.match(text.strip())
    if not m:
        return False
    dec = len(m.group(1) or "")
    exp = int(m.group(2) or 0)
    tol = 0.5 * 10 ** (exp - dec) * 1.0001 + 1e-12
    return abs(float(text) - value * scale) <= tol


class Page(HTMLParser):
    """Elements by id, elements with data-p, and the stack of enclosing ids and classes."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []      # (tag, attrs)
        self.numbers = []    # [attrs, text, ancestors' (tag, attrs)]
        self.ids = {}
        self.elements = []   # (tag, attrs, ancestors)
        self.open_numbers = []
        self.external = []
        self.text = []

    VOID = {"meta", "br", "img", "input", "link", "hr", "col", "area", "base", "wbr", "source"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        anc = list(self.stack)
        self.elements.append((tag, a, anc))
        if "id" in a:
            self.ids[a["id"]] = (tag, a, anc)
        if tag == "script" and "src" in a:
            self.external.append("script src=" + a["src"])
        if tag == "link":
            self.external.append("link " + str(a))
        for k in ("src", "href"):
            if k in a and re.match(r"^(https?:|//)", a[k] or ""):
                self.external.append("%s=%s" % (k, a[k]))
        if tag in self.VOID:
            return
        self.stack.append((tag, a))
        if "data-p" in a:
            self.open_numbers.append([a, "", anc])

    def handle_startendtag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a, list(self.stack)))
        if "id" in a:
            self.ids[a["id"]] = (tag, a, list(self.stack))

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        while self.stack:
            t, a = self.stack.pop()
            if "data-p" in a and self.open_numbers:
                self.numbers.append(self.open_numbers.pop())
            if t == tag:
                break

    def handle_data(self, data):
        self.text.append(data)
        for n in self.open_numbers:
            n[1] += data


def inside(anc, key, value):
    return any(a.get(key) == value for _, a in anc)


def has_class(a, cls):
    return cls in (a.get("class") or "").split()


def check_html(page_path, report_paths, expect_problems, expect_diff, dom):
    reps = load_reports(report_paths)
    raw = open(page_path, encoding="utf-8").read()
    pg = Page()
    pg.feed(raw)
    text = " ".join(pg.text)

    # Self-contained: nothing fetched from anywhere.
    for e in pg.external:
        fail("external resource: " + e)
    for m in re.finditer(r"https?://[^\s\"'<>]+", raw):
        if m.group(0) != "http://www.w3.org/2000/svg":
            fail("page refers to %s" % m.group(0))
    if re.search(r"@import|url\(", raw):
        fail("the style loads something (@import or url())")
    if dom and not any(t == "th" and has_class(a, "sort") for t, a, _ in pg.elements):
        fail("the page's script did not run in the browser (no sortable header marked)")

    # Every SVG is well-formed XML.
    svgs = re.findall(r"<svg\b.*?</svg>", raw, re.S)
    for i, s in enumerate(svgs):
        try:
            ET.fromstring(s)
        except ET.ParseError as e:
            fail("svg %d is not well-formed: %s" % (i, e))

    # Every number shown from a report equals the report's value.
    checked = set()
    for a, t, _ in pg.numbers:
        r, p, x = int(a["data-r"]), a["data-p"], float(a["data-x"])
        if r not in reps:
            fail("number from rank %d, which was not given" % r)
            continue
        try:
            v = at(reps[r], p)
        except (KeyError, IndexError, ValueError, TypeError):
            fail("rank %d has no %s (shown as %r)" % (r, p, t))
            continue
        if not shown_matches(t, v, x):
            fail("rank %d %s: page shows %r, report has %r (x %g)" % (r, p, t, v, x))
        checked.add((r, p))

    ref = min(reps)
    want = set()
    for rank, rep in reps.items():
        for ci, c in enumerate(rep["comms"]):
            want.add((rank, "comms/%d/measured_iteration" % ci))
            if c.get("schedule") and c["schedule"].get("measured_iteration") is not None:
                want.add((rank, "comms/%d/schedule/measured_iteration" % ci))
    for ci, c in enumerate(reps[ref]["comms"]):
        base = "comms/%d/" % ci
        if c.get("fit"):
            want |= {(ref, base + "fit/" + k) for k in ("alpha", "beta", "rel_rms", "rms")}
        want |= {(ref, base + "policies/%d/iteration" % j) for j in range(len(c.get("policies", [])))}
        if c.get("plan"):
            want.add((ref, base + "plan/iteration"))
            want.add((ref, base + "plan/lower_bound"))
            for b in range(len(c["plan"]["blocks"])):
                want |= {(ref, base + "plan/blocks/%d/%s" % (b, k)) for k in ("start", "end")}
        if c.get("profile"):
            for k in range(len(c["profile"]["calls"])):
                want |= {(ref, base + "profile/calls/%d/%s" % (k, f)) for f in ("bytes", "ready", "need")}
            want.add((ref, base + "profile/backward_end"))
        s = c.get("schedule")
        if s:
            want |= {(ref, base + "schedule/" + k) for k in ("measured_iteration", "predicted_iteration",
                                                             "measured_pass_through", "measured_speedup",
                                                             "predicted_speedup", "iterations")
                     if s.get(k) is not None}
            for b in range(len(s.get("blocks", []))):
                want |= {(ref, base + "schedule/blocks/%d/%s" % (b, k)) for k in ("start", "end")}
    for r, p in sorted(want - checked):
        fail("the page does not show rank %d's %s" % (r, p))

    # Per communicator: verdict, reasons with their fixes, tables, timeline.
    for ci, c in enumerate(reps[ref]["comms"]):
        idx = c["index"]
        for what in ("comm-%d", "verdict-%d", "ranks-%d"):
            if what % idx not in pg.ids:
                fail("no element #" + what % idx)
        v = pg.ids.get("verdict-%d" % idx)
        if v:
            ok = c["verdict"]["schedulable"]
            planned = c["state"] in ("planned", "schedule")
            want_cls = ("ok" if ok else "bad") if planned else "warn"
            if not has_class(v[1], want_cls):
                fail("verdict-%d has class %r, want %r" % (idx, v[1].get("class"), want_cls))
        for reason in c["verdict"]["reasons"]:
            if reason not in text:
                fail("reason not shown: " + reason)
            if "HOROVOD_FUSION_THRESHOLD" in reason and not re.search(r"Fix: [^.]*HOROVOD_FUSION_THRESHOLD=0", text):
                fail("no fix naming HOROVOD_FUSION_THRESHOLD=0 for: " + reason)
        rows = [e for e in pg.elements if e[0] == "tr" and "data-rank" in e[1] and inside(e[2], "id", "ranks-%d" % idx)]
        if sorted(int(e[1]["data-rank"]) for e in rows) != sorted(reps):
            fail("ranks-%d: rows for ranks %s, want %s" % (idx, [e[1]["data-rank"] for e in rows], sorted(reps)))
        if c.get("plan"):
            n = sum(1 for e in pg.elements if e[0] == "tr" and inside(e[2], "id", "plan-blocks-%d" % idx)) - 1
            if n != len(c["plan"]["blocks"]):
                fail("plan table: %d rows, the plan has %d blocks" % (n, len(c["plan"]["blocks"])))
            opt = c["plan"].get("optimal")
            o = pg.ids.get("optimal-%d" % idx)
            if opt is not None and not o:
                fail("plan carries optimal=%s and the page does not show it" % opt)
        if c.get("profile"):
            n = sum(1 for e in pg.elements if e[0] == "tr" and inside(e[2], "id", "profile-calls-%d" % idx)) - 1
            if n != len(c["profile"]["calls"]):
                fail("profile table: %d rows for %d calls" % (n, len(c["profile"]["calls"])))
            tl = [e for e in pg.elements if inside(e[2], "id", "timeline-%d" % idx)]
            groups = [e[1].get("data-policy") for e in tl if e[0] == "g" and has_class(e[1], "ub-policy")]
            # In schedule mode the chosen plan is drawn first on its own, with the measured blocks.
            measured_blocks = (c.get("schedule") or {}).get("blocks") or []
            want_groups = ([c["plan"]["policy"]] if measured_blocks else []) + [p["policy"] for p in c["policies"]]
            if groups != want_groups:
                fail("timeline-%d: lanes %s, want %s" % (idx, groups, want_groups))
            ready = sum(1 for e in tl if has_class(e[1], "ub-ready"))
            svgs_here = sum(1 for e in tl if e[0] == "svg")
            if ready != len(c["profile"]["calls"]) * svgs_here:
                fail("timeline-%d: %d ready marks for %d calls in %d drawings" % (idx, ready, len(c["profile"]["calls"]),
                                                                                 svgs_here))
            if c.get("plan"):
                chosen = c["plan"]["policy"]
                blocks = sum(1 for e in tl if has_class(e[1], "ub-block") and inside(e[2], "data-policy", chosen))
                if blocks != len(c["plan"]["blocks"]) * groups.count(chosen):
                    fail("timeline-%d: %d %s blocks drawn, the plan has %d" % (idx, blocks, chosen,
                                                                              len(c["plan"]["blocks"])))
                measured = [e for e in tl if has_class(e[1], "ub-measured")]
                want_m = len(c["schedule"]["blocks"]) if c.get("schedule") else 0
                if len(measured) != want_m:
                    fail("timeline-%d: %d measured blocks drawn, the schedule has %d" % (idx, len(measured), want_m))
                if any(not inside(e[2], "data-policy", chosen) for e in measured):
                    fail("timeline-%d: measured blocks outside the chosen plan's lanes" % idx)
                ends = sum(1 for e in tl if has_class(e[1], "ub-end"))
                if ends != len(groups):
                    fail("timeline-%d: %d iteration ends for %d plans" % (idx, ends, len(groups)))

    cons = pg.ids.get("consistency")
    if not cons:
        fail("no #consistency")
    elif int(cons[1].get("data-problems", -1)) != expect_problems:
        fail("consistency: %s problems, want %d" % (cons[1].get("data-problems"), expect_problems))
    for d in expect_diff:
        rank, what = d.split(":")
        cells = [e for e in pg.elements if e[0] == "td" and has_class(e[1], "diff")
                 and any(a.get("data-rank") == rank for _, a in e[2])]
        if not cells:
            fail("rank %s's row shows no difference" % rank)
        if not re.search(r"rank %s's [^<]*%s[^<]* differ" % (rank, what), text):
            fail("the banner does not say that rank %s's %s differs" % (rank, what))
    print("info: %d numbers checked against the reports, %d SVGs parsed" % (len(checked), len(svgs)))


def check_trace(trace_path, report_paths, sim):
    reps = load_reports(report_paths)
    doc = json.load(open(trace_path))
    ev = doc.get("traceEvents")
    if not isinstance(ev, list) or not ev:
        fail("no traceEvents")
        return
    names = {}
    procs = {}
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
        if e.get("ph") == "X":
            for k in ("ts", "dur", "pid", "tid", "name"):
                if k not in e:
                    fail("complete event without %s: %s" % (k, e))
            if e.get("dur", 0) < 0 or e.get("ts", 0) < 0:
                fail("negative time: %s" % e)
    if sorted(procs) != sorted(reps):
        fail("processes %s, want one per rank %s" % (sorted(procs), sorted(reps)))
    tracks = {}
    for e in ev:
        if e.get("ph") == "X":
            tracks.setdefault(names.get((e["pid"], e["tid"]), "?"), {}).setdefault(e["pid"], []).append(e)
    for rank, rep in reps.items():
        src = next(p for p in report_paths if json.load(open(p))["rank"] == rank)
        for ci, c in enumerate(rep["comms"]):
            if not c.get("profile"):
                continue
            idx = c["index"]
            sim_plans = {}
            out = subprocess.run([sim, src, "--comm", str(ci), "--policy", "all", "--json"], check=True,
                                 capture_output=True, text=True).stdout
            for line in out.splitlines():
                p = json.loads(line)
                sim_plans[p["policy"]] = p
            if c.get("plan"):
                sim_plans[c["plan"]["policy"]] = c["plan"]  # the chosen plan is the report's own
            for pol, plan in sim_plans.items():
                got = tracks.get("comm %d: %s link" % (idx, pol), {}).get(rank, [])
                got.sort(key=lambda e: e["ts"])
                if len(got) != len(plan["blocks"]):
                    fail("rank %d comm %d %s: %d blocks in the trace, %d in the plan" % (rank, idx, pol, len(got),
                                                                                      len(plan["blocks"])))
                    continue
                for e, b in zip(got, plan["blocks"]):
                    if abs(e["ts"] - b["start"] * 1e6) > 1e-3 or abs(e["ts"] + e["dur"] - b["end"] * 1e6) > 1e-3:
                        fail("rank %d comm %d %s %s: %.3f+%.3f us, plan %.3f..%.3f" % (
                            rank, idx, pol, e["name"], e["ts"], e["dur"], b["start"] * 1e6, b["end"] * 1e6))
                        break
                fw = tracks.get("comm %d: %s forward" % (idx, pol), {}).get(rank, [])
                if len(fw) != len(c["profile"]["forward"]):
                    fail("rank %d comm %d %s: %d forward segments, the profile has %d" % (
                        rank, idx, pol, len(fw), len(c["profile"]["forward"])))
                elif pol == c.get("plan", {}).get("policy"):
                    end = max(e["ts"] + e["dur"] for e in fw)
                    if abs(end - plan["iteration"] * 1e6) > 1e-2:
                        fail("rank %d comm %d %s: forward ends at %.3f us, the plan's iteration is %.3f us" % (
                            rank, idx, pol, end, plan["iteration"] * 1e6))
            s = c.get("schedule")
            got = tracks.get("comm %d: measured blocks (schedule)" % idx, {}).get(rank, [])
            want = s["blocks"] if s else []
            if len(got) != len(want):
                fail("rank %d comm %d: %d measured blocks in the trace, the report has %d" % (rank, idx, len(got),
                                                                                             len(want)))
            for e, b in zip(sorted(got, key=lambda e: e["ts"]), want):
                if abs(e["ts"] - b["start"] * 1e6) > 1e-3 or abs(e["dur"] - (b["end"] - b["start"]) * 1e6) > 1e-3:
                    fail("rank %d comm %d measured %s: %s, report %s" % (rank, idx, e["name"], e, b))
    print("info: %d trace events, %d tracks" % (len(ev), len(names)))


def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA PNG (what chromium writes) into (width, height, rows of bytes, bpp)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    if depth != 8 or ctype not in (2, 6):
        raise ValueError("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows, bpp


def colour_bands(rows, w, bpp, rgb, share=0.3):
    """How many separate runs of rows have `rgb` over at least `share` of their width."""
    bands, inside_band = 0, False
    for r in rows:
        hits = sum(1 for x in range(0, w, 2) if r[x * bpp:x * bpp + 3] == rgb)
        on = hits >= share * (w // 2)
        bands += on and not inside_band
        inside_band = on
    return bands


def check_png(path, min_w, min_h, bands=()):
    w, h, rows, bpp = png_pixels(path)
    for spec in bands:
        hexrgb, want = spec.split(":")
        got = colour_bands(rows, w, bpp, bytes.fromhex(hexrgb))
        print("info: %d band(s) of #%s on the first screen" % (got, hexrgb))
        if got < int(want):
            fail("the first screen shows %d band(s) of #%s, want %s" % (got, hexrgb, want))
    if w < min_w or h < min_h:
        fail("screenshot %dx%d, want at least %dx%d" % (w, h, min_w, min_h))
    counts = {}
    for y in range(0, h, 4):
        r = rows[y]
        for x in range(0, w, 4):
            px = r[x * bpp:x * bpp + 3]
            counts[px] = counts.get(px, 0) + 1
    colours = counts
    total = sum(counts.values())
    share = 1 - max(counts.values()) / total  # what is not the background (the commonest colour)
    print("info: screenshot %dx%d, %d colours, %.1f%% not background" % (w, h, len(colours), 100 * share))
    if len(colours) < 16 or share < 0.05:
        fail("the screenshot is blank: %d colours, %.1f%% drawn" % (len(colours), 100 * share))


def check_console(path):
    lines = [l for l in open(path, errors="replace") if ":CONSOLE" in l or "Uncaught" in l]
    for l in lines:
        fail("console: " + l.strip())
    print("info: %d console messages" % len(lines))


def main(argv):
    mode = argv[1]
    if mode == "html":
        args, problems, diffs, dom = [], 0, [], False
        it = iter(argv[2:])
        for a in it:
            if a == "--expect-problems":
                problems = int(next(it))
            elif a == "--expect-diff":
                diffs.append(next(it))
            elif a == "--dom":
                dom = True
            else:
                args.append(a)
        check_html(args[0], args[1:], problems, diffs, dom)
    elif mode == "trace":
        i = argv.index("--sim")
        sim = argv[i + 1]
        rest = argv[2:i] + argv[i + 2:]
        check_trace(rest[0], rest[1:], sim)
    elif mode == "png":
        bands = [argv[i + 1] for i, a in enumerate(argv) if a == "--band"]
        check_png(argv[2], int(argv[argv.index("--min-width") + 1]), int(argv[argv.index("--min-height") + 1]), bands)
    elif mode == "console":
        check_console(argv[2])
    else:
        sys.exit("unknown mode " + mode)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv)
