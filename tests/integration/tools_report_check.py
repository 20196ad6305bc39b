#!/usr/bin/env python3
"""Checks usbyte-report's outputs against the reports they came from (tests/integration/tools_report.sh).

  tools_report_check.py html PAGE REPORT... [--expect-problems N] [--expect-diff RANK:WHAT ...] [--dom]
  tools_report_check.py trace TRACE REPORT... --sim USBYTE_SIM
  tools_report_check.py png SCREENSHOT --min-width W --min-height H [--band RRGGBB:N ...]
  tools_report_check.py console CHROMIUM_STDERR
  tools_report_check.py validate TRACE
  tools_report_check.py compare PAGE REPORT_A... -- REPORT_B...

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


def expected_outcome(rep, c):
    """The headline (tools/report_job.c's rp_comm_outcome) from the report alone."""
    s = c.get("schedule")
    if s and (s.get("iterations", 0) > 0 or c["state"] == "schedule"):
        slower = s.get("measured_speedup") is not None and s["measured_speedup"] < 1
        return "Scheduled", "warn" if slower else "ok"
    observe = (rep.get("config") or {}).get("USBYTE_MODE") == "observe"
    state, ok = c["state"], c["verdict"]["schedulable"]
    reason = c.get("state_reason") or ""
    if state in ("detect", "profile", "agree"):
        return ("Observed" if observe else "Not scheduled"), "warn"
    passed = state in ("pass-through", "disabled")
    if observe:
        bad = passed or not ok
        return "Observed", "bad" if bad else "ok" if c.get("plan") else "warn"
    if passed:
        return "Not scheduled", "warn" if "USBYTE_MIN_GAIN_PCT" in reason else "bad"
    return "Not scheduled", "warn" if ok else "bad"


def derived(pg, cls, idx):
    """The data-v of the element of class cls inside #verdict-idx (None when absent)."""
    for t, a, anc in pg.elements:
        if has_class(a, cls) and inside(anc, "id", "verdict-%d" % idx) and "data-v" in a:
            return float(a["data-v"])
    return None


def check_derived(pg, c, idx):
    """The numbers the page derives (exposed communication, share hidden) from the report's."""
    prof = c.get("profile")
    if not prof or not c.get("measured_iteration"):
        return
    compute = prof.get("backward_end", 0) + prof.get("gap", 0) + sum(prof.get("forward", [0]))
    exposed = max(0.0, c["measured_iteration"] - compute)
    for cls, want in (("compute", compute), ("exposed", exposed)):
        got = derived(pg, cls, idx)
        if got is None or abs(got - want) > 1e-12 * max(1, abs(want)):
            fail("comm %d %s: page %r, report gives %r" % (idx, cls, got, want))
    pol = {p["policy"]: p["iteration"] for p in c.get("policies", [])}
    plan = c.get("plan")
    if plan and "wfbp" in pol and pol["wfbp"] - compute > 0 and exposed >= 0.01 * c["measured_iteration"]:
        want = (pol["wfbp"] - plan["iteration"]) / (pol["wfbp"] - compute)
        got = derived(pg, "hidden-predicted", idx)
        if got is None or abs(got - want) > 1e-9:
            fail("comm %d share hidden (predicted): page %r, report gives %r" % (idx, got, want))
    s = c.get("schedule")
    if s and s.get("measured_iteration") is not None and exposed >= 0.01 * c["measured_iteration"]:
        slower = s["measured_iteration"] > c["measured_iteration"]
        want = s["measured_iteration"] - c["measured_iteration"] if slower else \
            (c["measured_iteration"] - s["measured_iteration"]) / exposed
        got = derived(pg, "slower-by" if slower else "hidden-measured", idx)
        if got is None or abs(got - want) > 1e-9:
            fail("comm %d share hidden (measured): page %r, report gives %r" % (idx, got, want))


def check_chart(pg, c, idx):
    """The chart: an axis with ticks, a legend, no bar for a time not measured, equal bars said equal."""
    els = [e for e in pg.elements if inside(e[2], "id", "bars-%d" % idx)]
    bars = [e for e in els if has_class(e[1], "bar")]
    if not c.get("measured_iteration") and not c.get("policies"):
        if bars:
            fail("bars-%d: %d bars drawn for nothing measured" % (idx, len(bars)))
        return
    if sum(1 for e in els if has_class(e[1], "tick")) < 2:
        fail("bars-%d: no axis ticks" % idx)
    if not any(has_class(e[1], "legend") for e in els):
        fail("bars-%d: no legend" % idx)
    for e in bars:
        if float(e[1].get("width", 0)) <= 0:
            fail("bars-%d: a bar of width %s" % (idx, e[1].get("width")))
    its = [p["iteration"] for p in c.get("policies", [])]
    equal = sum(1 for i, v in enumerate(its) if any(abs(v - w) <= 1e-9 * max(abs(v), abs(w)) for w in its[:i]))
    said = sum(1 for e in els if has_class(e[1], "same-as"))
    if said != equal:
        fail("bars-%d: %d policies predict the same as an earlier one, %d said so" % (idx, equal, said))


def element_text(raw, id_):
    """The text inside the element with this id (tags dropped, entities kept as written)."""
    m = re.search(r'<(\w+)[^>]*\bid="%s"[^>]*>(.*?)</\1>' % re.escape(id_), raw, re.S)
    return re.sub(r"<[^>]+>", "", m.group(2)) if m else None


def esc(t):
    return t.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def expand_ranks(text):
    """{0, 1, 2, 5} from "0-2, 5"."""
    out = set()
    for part in text.split(","):
        a, _, b = part.strip().partition("-")
        out |= set(range(int(a), int(b or a) + 1))
    return out


def check_run(pg, raw, reps):
    """The run's details: start, hosts, command, GPU, versions, settings and refused values."""
    for id_ in ("run-started", "run-hosts", "run-command", "run-gpu", "run-versions", "run-settings"):
        if id_ not in pg.ids:
            fail("no #" + id_)
    r0 = reps[min(reps)]
    # The start shown is the first rank's to start (ranks may straddle a second).
    first = min(reps.values(), key=lambda r: (r.get("run") or {}).get("started_unix") or float("inf"))
    for key, id_ in (("command", "run-command"), ("host", "run-hosts"), ("gpu", "run-gpu"), ("started", "run-started")):
        rep = first if key == "started" else r0
        run = rep.get("run") or {}
        if run.get(key) and esc(run[key]) not in (element_text(raw, id_) or ""):
            fail("#%s does not show rank %d's %s %r" % (id_, rep["rank"], key, run[key]))
    for rank, rep in reps.items():
        for name, value in ((rep.get("config") or {}).get("ignored") or {}).items():
            shown = re.search(r"ranks? ([0-9, -]+): <code>%s=%s</code> is not a valid value" % (
                re.escape(esc(name)), re.escape(esc(value or "?"))), raw)
            if not shown or rank not in expand_ranks(shown.group(1)):
                fail("the refused %s=%r of rank %d is not shown" % (name, value, rank))
    settings = element_text(raw, "run-settings") or ""
    for name, src in ((r0.get("config") or {}).get("sources") or {}).items():
        if src == "env" and name + "=" not in settings:
            fail("#run-settings does not show %s (set in the environment)" % name)


def check_ready_spread(pg, reps, c):
    """Per call, the ranks' own ready times: earliest, latest and their spread."""
    idx = c["index"]
    n = len((c.get("profile") or {}).get("calls", []))
    own = {}
    for rank, rep in reps.items():
        for cc in rep["comms"]:
            if cc["index"] == idx and len((cc.get("local") or {}).get("ready", [])) == n:
                own[rank] = cc["local"]["ready"]
    rows = [e for e in pg.elements if e[0] == "tr" and "data-call" in e[1] and inside(e[2], "id", "ready-spread-%d" % idx)]
    if len(own) < 2 or n < 2:
        if rows:
            fail("ready-spread-%d shown for %d ranks" % (idx, len(own)))
        return
    if len(rows) != n:
        fail("ready-spread-%d: %d rows for %d calls" % (idx, len(rows), n))
    cells = [e for e in pg.elements if has_class(e[1], "spread") and inside(e[2], "id", "ready-spread-%d" % idx)]
    for k, e in enumerate(cells):
        vals = [v[k] for v in own.values() if v[k] is not None]
        want = max(vals) - min(vals)
        if abs(float(e[1]["data-v"]) - want) > 1e-12:
            fail("ready-spread-%d call %d: spread %s, reports give %r" % (idx, k, e[1]["data-v"], want))


def check_self_contained(pg, raw):
    """Checks that the page fetches nothing from anywhere."""
    for e in pg.external:
        fail("external resource: " + e)
    for m in re.finditer(r"https?://[^\s\"'<>]+", raw):
        if m.group(0) != "http://www.w3.org/2000/svg":
            fail("page refers to %s" % m.group(0))
    if re.search(r"@import|url\(", raw):
        fail("the style loads something (@import or url())")


def check_script_ran(pg):
    """Checks that the browser's DOM carries what the page's script marks (the sortable headers)."""
    if not any(t == "th" and has_class(a, "sort") for t, a, _ in pg.elements):
        fail("the page's script did not run in the browser (no sortable header marked)")


def check_svgs(raw):
    """Checks that every SVG is well-formed XML; how many there are."""
    svgs = re.findall(r"<svg\b.*?</svg>", raw, re.S)
    for i, s in enumerate(svgs):
        try:
            ET.fromstring(s)
        except ET.ParseError as e:
            fail("svg %d is not well-formed: %s" % (i, e))
    return len(svgs)


def check_numbers(pg, reps):
    """Checks that every number shown from a report equals the report's value; the (rank, path)s checked."""
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
    return checked


def rank_numbers(reps):
    """The (rank, path)s of each rank's own iteration times (the straggler view), not the agreed number repeated."""
    want = set()
    for rank, rep in reps.items():
        for ci, c in enumerate(rep["comms"]):
            it = (c.get("local") or {}).get("iteration") or {}
            if it.get("n", 0) > 0:
                want |= {(rank, "comms/%d/local/iteration/%s" % (ci, k)) for k in ("mean", "stdev", "min", "max")}
            s = c.get("schedule") or {}
            sp = s.get("iteration_spread") or {}
            if sp.get("n", 0) > 0:
                want |= {(rank, "comms/%d/schedule/iteration_spread/%s" % (ci, k)) for k in ("mean", "min", "max")}
            elif s.get("measured_iteration") is not None:
                want.add((rank, "comms/%d/schedule/measured_iteration" % ci))
    return want


def agreed_numbers(reps, ref):
    """The (ref, path)s of the agreed numbers: measured and predicted iterations, fit, plan, profile, schedule."""
    want = set()
    for ci, c in enumerate(reps[ref]["comms"]):
        base = "comms/%d/" % ci
        if c.get("measured_iteration", 0) > 0:
            want.add((ref, base + "measured_iteration"))
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
    return want


def check_numbers_shown(reps, ref, checked):
    """Checks that the page shows every number it should: each rank's own and the agreed ones."""
    want = rank_numbers(reps) | agreed_numbers(reps, ref)
    for r, p in sorted(want - checked):
        fail("the page does not show rank %d's %s" % (r, p))


def check_verdict(pg, rep, c, idx):
    """Checks that the communicator's section, verdict and ranks exist and the verdict says the right outcome."""
    for what in ("comm-%d", "verdict-%d", "ranks-%d"):
        if what % idx not in pg.ids:
            fail("no element #" + what % idx)
    v = pg.ids.get("verdict-%d" % idx)
    if v:
        word, want_cls = expected_outcome(rep, c)
        if v[1].get("data-outcome") != word:
            fail("verdict-%d says %r, want %r" % (idx, v[1].get("data-outcome"), word))
        if not has_class(v[1], want_cls):
            fail("verdict-%d has class %r, want %r" % (idx, v[1].get("class"), want_cls))


def check_reasons(c, text, raw):
    """Checks that each reason is shown whole and once, with its fix, and each fix once."""
    for reason in c["verdict"]["reasons"]:
        n = text.count(reason)
        if n != 1:
            fail("reason shown %d times (want once): %s" % (n, reason))
        if "HOROVOD_FUSION_THRESHOLD" in reason and not re.search(r"Fix: [^.]*HOROVOD_FUSION_THRESHOLD=0", text):
            fail("no fix naming HOROVOD_FUSION_THRESHOLD=0 for: " + reason)
    for m in set(re.findall(r"Fix: ([^<]*)<", raw)):
        if raw.count("Fix: " + m + "<") != 1:
            fail("fix shown %d times (want once): %s" % (raw.count("Fix: " + m + "<"), m))


def check_tables(pg, reps, c, idx):
    """Checks the rows of the policies, ranks, plan and profile tables, and the plan's optimality shown."""
    pols = [e for e in pg.elements
            if e[0] == "tr" and "data-policy" in e[1] and inside(e[2], "id", "policies-%d" % idx)]
    if [e[1]["data-policy"] for e in pols] != [p["policy"] for p in c.get("policies", [])]:
        fail("policies-%d: rows %s" % (idx, [e[1]["data-policy"] for e in pols]))
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


def check_timeline(pg, c, idx):
    """Checks the timeline's lanes (one per policy) and its ready marks (one per call per drawing)."""
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
        check_timeline_blocks(c, idx, tl, groups)


def check_timeline_blocks(c, idx, tl, groups):
    """Checks the timeline's blocks: the plan's in each of its lanes, the measured in its own, one end per lane."""
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


def check_comm(pg, raw, text, reps, ref, c):
    """Checks one communicator's section: verdict, reasons and fixes, derived numbers, chart, tables, timeline."""
    idx = c["index"]
    check_verdict(pg, reps[ref], c, idx)
    check_reasons(c, text, raw)
    check_derived(pg, c, idx)
    check_chart(pg, c, idx)
    check_tables(pg, reps, c, idx)
    if c.get("profile"):
        check_timeline(pg, c, idx)


def check_consistency(pg, text, expect_problems, expect_diff):
    """Checks the consistency banner: its count of problems and each difference --expect-diff names."""
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


def check_html(page_path, report_paths, expect_problems, expect_diff, dom):
    """Checks a usbyte-report page (or the browser's DOM of it, with dom) against the reports it shows."""
    reps = load_reports(report_paths)
    raw = open(page_path, encoding="utf-8").read()
    pg = Page()
    pg.feed(raw)
    text = " ".join(pg.text)
    check_self_contained(pg, raw)
    if dom:
        check_script_ran(pg)
    n_svgs = check_svgs(raw)
    checked = check_numbers(pg, reps)
    ref = min(reps)
    check_numbers_shown(reps, ref, checked)
    for c in reps[ref]["comms"]:
        check_comm(pg, raw, text, reps, ref, c)
    check_run(pg, raw, reps)
    for c in reps[ref]["comms"]:
        check_ready_spread(pg, reps, c)
    check_consistency(pg, text, expect_problems, expect_diff)
    print("info: %d numbers checked against the reports, %d SVGs parsed" % (len(checked), n_svgs))


# The Chrome trace event format (docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU,
# "Trace Event Format"), as far as this trace uses it, and what Perfetto's JSON importer needs:
# an object with a "traceEvents" array (or the bare array), "displayTimeUnit" "ms" or "ns";
# every event an object with a string "ph"; X (complete) events with name, integer pid and tid,
# finite ts and dur >= 0; i/I (instant) events with ts and a scope "s" of g, p or t; M (metadata)
# events named process_name, process_labels, process_sort_index, thread_name or
# thread_sort_index with the matching args; B/E pairs balanced per thread; "args" an object;
# and complete events on one thread nested, never partly overlapping (the importer would cut
# them).
PHASES = set("BEXiIMCbnesftPONDRcpv(") | {"I"}
META = {"process_name": ("name", str), "process_labels": ("labels", str), "process_sort_index": ("sort_index", int),
        "thread_name": ("name", str), "thread_sort_index": ("sort_index", int)}


def validate_chrome_trace(doc):
    errors = []
    if isinstance(doc, list):
        events = doc
    elif isinstance(doc, dict):
        events = doc.get("traceEvents")
        if not isinstance(events, list):
            return ["the object has no traceEvents array"]
        if "displayTimeUnit" in doc and doc["displayTimeUnit"] not in ("ms", "ns"):
            errors.append("displayTimeUnit %r is neither ms nor ns" % doc["displayTimeUnit"])
        if "otherData" in doc and not isinstance(doc["otherData"], dict):
            errors.append("otherData is not an object")
    else:
        return ["the document is neither an array nor an object"]

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v and abs(v) != float("inf")

    slices, stacks = {}, {}
    for i, e in enumerate(events):
        where = "traceEvents[%d]" % i
        if not isinstance(e, dict):
            errors.append("%s is not an object" % where)
            continue
        ph = e.get("ph")
        if not isinstance(ph, str) or ph not in PHASES:
            errors.append("%s: unknown phase %r" % (where, ph))
            continue
        if "args" in e and not isinstance(e["args"], dict):
            errors.append("%s: args is not an object" % where)
        if "cat" in e and not isinstance(e["cat"], str):
            errors.append("%s: cat is not a string" % where)
        for k in ("pid", "tid"):
            if k in e and (not isinstance(e[k], int) or isinstance(e[k], bool)):
                errors.append("%s: %s %r is not an integer" % (where, k, e[k]))
        if ph == "M":
            want = META.get(e.get("name"))
            if not want:
                errors.append("%s: metadata event %r" % (where, e.get("name")))
            elif not isinstance((e.get("args") or {}).get(want[0]), want[1]):
                errors.append("%s: %s without args.%s" % (where, e.get("name"), want[0]))
            continue
        if not isinstance(e.get("name"), str):
            errors.append("%s: no name" % where)
        if not number(e.get("ts")):
            errors.append("%s: ts %r is not a finite number" % (where, e.get("ts")))
            continue
        key = (e.get("pid"), e.get("tid"))
        if ph == "X":
            if not number(e.get("dur")) or e["dur"] < 0:
                errors.append("%s: dur %r" % (where, e.get("dur")))
                continue
            slices.setdefault(key, []).append((e["ts"], e["ts"] + e["dur"], where))
        elif ph in ("i", "I"):
            if e.get("s", "t") not in ("g", "p", "t"):
                errors.append("%s: instant scope %r" % (where, e.get("s")))
        elif ph == "B":
            stacks.setdefault(key, []).append(where)
        elif ph == "E":
            if not stacks.get(key):
                errors.append("%s: E without B" % where)
            else:
                stacks[key].pop()
    for key, st in stacks.items():
        if st:
            errors.append("thread %s: %d B events never ended" % (key, len(st)))
    for key, lst in slices.items():
        lst.sort(key=lambda x: (x[0], -x[1]))
        open_ = []
        for s0, e0, where in lst:
            while open_ and open_[-1][1] <= s0:
                open_.pop()
            if open_ and e0 > open_[-1][1] + 1e-3:
                errors.append("thread %s: %s (%.3f..%.3f) overlaps %s (..%.3f) without nesting" % (
                    key, where, s0, e0, open_[-1][2], open_[-1][1]))
                break
            open_.append((s0, e0, where))
    return errors


def model_origin(c):
    """Where the model is drawn: the reference rank's first recorded first ready, else 0."""
    wu = (c.get("local") or {}).get("warmup")
    if wu and wu["iterations"] and wu["iterations"][0] and wu["iterations"][0][0][0] is not None:
        return wu["origin"] + wu["iterations"][0][0][0]
    rec = (c.get("schedule") or {}).get("recording")
    if rec and rec["iterations"]:
        return rec["origin"] + rec["iterations"][0]["start"]
    return 0.0


def close(a, b, tol=1.0):
    """Equal to the trace's resolution: whole microseconds on an absolute clock."""
    return abs(a - b) <= tol


def trace_tracks(doc, reps):
    """The trace's events by track name and process, and the model's process id (the world size)."""
    ev = doc["traceEvents"]
    names, procs = {}, {}
    for e in ev:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
        if e.get("ph") == "M" and e.get("name") == "process_name":
            procs[e["pid"]] = e["args"]["name"]
    world = next(iter(reps.values()))["world_size"]
    ranks = sorted(p for p in procs if p != world)
    if ranks != sorted(reps):
        fail("processes %s, want one per rank %s" % (ranks, sorted(reps)))
    if not procs.get(world, "").startswith("model"):
        fail("no model process (pid %d)" % world)
    tracks = {}
    for e in ev:
        if e.get("ph") in ("X", "i"):
            tracks.setdefault(names.get((e["pid"], e["tid"]), "?"), {}).setdefault(e["pid"], []).append(e)
    return names, tracks, world


def check_model_tracks(reps, report_paths, sim, tracks, world):
    """The model: once, from the reference rank (the lowest) and usbyte-sim's plans of its profile."""
    ref = min(reps)
    src = next(p for p in report_paths if json.load(open(p))["rank"] == ref)
    for ci, c in enumerate(reps[ref]["comms"]):
        if not c.get("profile"):
            continue
        idx, at = c["index"], model_origin(c) * 1e6
        sim_plans = {}
        out = subprocess.run([sim, src, "--comm", str(ci), "--policy", "all", "--json"], check=True,
                             capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = json.loads(line)
            sim_plans[p["policy"]] = p
        if c.get("plan"):
            sim_plans[c["plan"]["policy"]] = c["plan"]  # the chosen plan is the report's own
        for pol, plan in sim_plans.items():
            got = sorted((e for e in tracks.get("comm %d: %s link" % (idx, pol), {}).get(world, []) if e["ph"] == "X"),
                         key=lambda e: e["ts"])
            if len(got) != len(plan["blocks"]):
                fail("model comm %d %s: %d blocks in the trace, %d in the plan" % (idx, pol, len(got), len(plan["blocks"])))
                continue
            for e, b in zip(got, plan["blocks"]):
                if not close(e["ts"], at + b["start"] * 1e6) or not close(e["ts"] + e["dur"], at + b["end"] * 1e6):
                    fail("model comm %d %s %s: %.3f+%.3f us, plan %.3f..%.3f" % (
                        idx, pol, e["name"], e["ts"] - at, e["dur"], b["start"] * 1e6, b["end"] * 1e6))
                    break
            fw = tracks.get("comm %d: %s forward" % (idx, pol), {}).get(world, [])
            if len(fw) != len(c["profile"]["forward"]):
                fail("model comm %d %s: %d forward segments, the profile has %d" % (
                    idx, pol, len(fw), len(c["profile"]["forward"])))
            elif pol == c.get("plan", {}).get("policy"):
                end = max(e["ts"] + e["dur"] for e in fw)
                if not close(end, at + plan["iteration"] * 1e6):
                    fail("model comm %d %s: forward ends at %.3f us, the plan's iteration is %.3f us" % (
                        idx, pol, end - at, plan["iteration"] * 1e6))


def check_warmup_track(rank, c, tracks):
    """One rank's measured warm-up calls of communicator c, on its clock; returns how many."""
    idx = c["index"]
    wu = (c.get("local") or {}).get("warmup")
    got = sorted((e for e in tracks.get("comm %d: warm-up calls (measured)" % idx, {}).get(rank, [])
                  if e["ph"] == "X"), key=lambda e: e["ts"])
    want = []
    for it in (wu or {}).get("iterations", []):
        prev = float("-inf")
        for k, (r0, s0, e0) in enumerate(it):
            if s0 is None or e0 is None or e0 < s0:
                continue
            s1 = max(s0, prev)
            if e0 >= s1:
                want.append((k, (wu["origin"] + s1) * 1e6, (wu["origin"] + e0) * 1e6))
                prev = e0
    if len(got) != len(want):
        fail("rank %d comm %d: %d warm-up calls in the trace, the report has %d" % (rank, idx, len(got), len(want)))
    for e, (k, t0, t1) in zip(got, want):
        if e["name"] != "call %d" % k or not close(e["ts"], t0) or not close(e["ts"] + e["dur"], t1):
            fail("rank %d comm %d: warm-up %s at %r, report call %d %r..%r" % (rank, idx, e["name"], e["ts"], k,
                                                                               t0, t1))
            break
    return len(want)


def check_schedule_track(rank, c, tracks):
    """One rank's measured scheduled blocks of communicator c and its own plan's prediction beside
    them; returns how many blocks were measured."""
    idx = c["index"]
    s = c.get("schedule") or {}
    rec = s.get("recording")
    got = sorted((e for e in tracks.get("comm %d: scheduled blocks (measured)" % idx, {}).get(rank, [])
                  if e["ph"] == "X"), key=lambda e: e["ts"])
    pred = sorted((e for name, per in tracks.items() if name.startswith("comm %d: " % idx) and "predicted at" in name
                   for e in per.get(rank, [])), key=lambda e: e["ts"])
    want, want_pred = [], []
    prev = float("-inf")
    for it in (rec or {}).get("iterations", []):
        for b, (b0, b1) in enumerate(it["blocks"]):
            pb = c["plan"]["blocks"][b]
            want_pred.append(((rec["origin"] + it["start"] + pb["start"]) * 1e6, b))
            if b0 is None or b1 is None:
                continue
            s1 = max(b0, prev)
            if b1 >= s1:
                want.append(((rec["origin"] + s1) * 1e6, (rec["origin"] + b1) * 1e6, b, it["iteration"]))
                prev = b1
    if len(got) != len(want):
        fail("rank %d comm %d: %d scheduled blocks in the trace, the recording has %d" % (rank, idx, len(got),
                                                                                            len(want)))
    for e, (t0, t1, b, it) in zip(got, want):
        if not close(e["ts"], t0) or not close(e["ts"] + e["dur"], t1) or e["args"].get("block") != b or \
                e["args"].get("iteration") != it:
            fail("rank %d comm %d: scheduled %s %r, recording block %d of iteration %d %r..%r" % (
                rank, idx, e["name"], e, b, it, t0, t1))
            break
    want_pred.sort()
    if len(pred) != len(want_pred):
        fail("rank %d comm %d: %d predicted blocks beside the recording, want %d" % (rank, idx, len(pred),
                                                                                       len(want_pred)))
    for e, (t0, b) in zip(pred, want_pred):
        if not close(e["ts"], t0):
            fail("rank %d comm %d: predicted block at %r, want %r" % (rank, idx, e["ts"], t0))
            break
    return len(want)


def check_trace(trace_path, report_paths, sim):
    reps = load_reports(report_paths)
    doc = json.load(open(trace_path))
    for err in validate_chrome_trace(doc):
        fail("trace format: " + err)
    ev = doc.get("traceEvents")
    if not isinstance(ev, list) or not ev:
        fail("no traceEvents")
        return
    names, tracks, world = trace_tracks(doc, reps)
    check_model_tracks(reps, report_paths, sim, tracks, world)
    # Each rank: its own recording, on its clock, and its own plan's prediction beside it.
    recorded = 0
    for rank, rep in reps.items():
        for c in rep["comms"]:
            recorded += check_warmup_track(rank, c, tracks)
            recorded += check_schedule_track(rank, c, tracks)
    clock = (doc.get("otherData") or {}).get("clock", "")
    if recorded and "CLOCK_REALTIME" not in clock:
        fail("the trace does not say its clock: %r" % clock)
    print("info: %d trace events, %d tracks, %d measured spans checked" % (len(ev), len(names), recorded))


def check_compare(page_path, a_paths, b_paths):
    """The comparison page of two runs: each run's numbers from its own reports, what changed."""
    raw = open(page_path, encoding="utf-8").read()
    pg = Page()
    pg.feed(raw)
    runs = [load_reports(a_paths), load_reports(b_paths)]
    refs = [r[min(r)] for r in runs]

    def cell(row_id, run):
        for t, a, anc in pg.elements:
            if t == "td" and a.get("data-run") == run and inside(anc, "id", row_id):
                return float(a["data-v"]) if "data-v" in a else None
        return "absent"

    for c in refs[0]["comms"]:
        idx = c["index"]
        other = next((x for x in refs[1]["comms"] if x["index"] == idx), None)
        if other is None:
            continue
        for side, cc in (("a", c), ("b", other)):
            pol = {p["policy"]: p["iteration"] for p in cc.get("policies", [])}
            s = cc.get("schedule") or {}
            want = {"measured": cc["measured_iteration"] or None, "wfbp": pol.get("wfbp"),
                    "plan": (cc.get("plan") or {}).get("iteration"),
                    "blocks": len(cc["plan"]["blocks"]) if cc.get("plan") else None,
                    "measured-plan": s.get("measured_iteration"), "calls": cc["calls_per_iteration"]}
            for key, v in want.items():
                got = cell("cmp-%d-%s" % (idx, key), side)
                if got == "absent":
                    fail("compare: no cell %s of run %s" % (key, side))
                elif (v is None) != (got is None) or (v is not None and abs(got - v) > 1e-12 * max(1, abs(v))):
                    fail("compare: comm %d %s of run %s: page %r, report %r" % (idx, key, side, got, v))
    # Every setting that differs between the runs' first ranks is listed, and none that does not.
    ca, cb = refs[0].get("config") or {}, refs[1].get("config") or {}
    for k in sorted(set(ca) | set(cb)):
        if not k.startswith("USBYTE_") or k in ("USBYTE_REPORT", "USBYTE_LOG_FILE", "USBYTE_DUMP_CONFIG"):
            continue
        listed = "chg-" + k in pg.ids
        if (ca.get(k) != cb.get(k)) != listed:
            fail("compare: %s is %s but %s listed" % (k, "different" if ca.get(k) != cb.get(k) else "the same",
                                                      "is" if listed else "not"))
    print("info: comparison checked for %d communicators" % len(refs[0]["comms"]))


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
    elif mode == "compare":
        i = argv.index("--")
        check_compare(argv[2], argv[3:i], argv[i + 1:])
    elif mode == "validate":
        # The format rules alone, on any trace (the test also feeds it broken ones).
        errs = validate_chrome_trace(json.load(open(argv[2])))
        for e in errs:
            fail(e)
        print("info: %s: %d format errors" % (argv[2], len(errs)))
    else:
        sys.exit("unknown mode " + mode)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main(sys.argv)
