#!/usr/bin/env python3
"""The GPU acceptance kit's driver (check.sh runs it): every check of usbyte on this machine, each
under its own timeout and all within a time budget, into OUT/gpu-check.md (a table) and
OUT/gpu-check.json (one object per check), with the logs, rank reports and usbyte-report.html of
the runs under OUT/.  Exit 0 when every check that ran passed, 1 otherwise, 2 for bad usage.

    check.sh --out DIR [--rehearse] [--steps 1,2,3] [--budget SECONDS] [--only REGEX]

Steps: 1 facts, 2 CUDA's hardware queues, 3 CUDA + NCCL without PyTorch, 4 PyTorch DDP,
5 PyTorch per-layer hooks, 6 faults.  --rehearse runs steps 1-3 on the CPU emulator the kit
carries (emu/) instead of a GPU, and skips 4-6.  The kit's README says what each check does."""
import argparse
import datetime
import glob
import json
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

KIT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.path.join(KIT, "py")
sys.path.insert(0, PY)

STEP_NAMES = {1: "facts", 2: "hardware queues", 3: "CUDA + NCCL", 4: "PyTorch DDP", 5: "PyTorch per-layer",
              6: "faults"}
SHARED_GPU_NOTE = ("Ranks that share one GPU measure the mechanism, not a cluster: their NCCL runs over "
                   "sockets on the loopback interface and their kernels share one device.")


class Checks:
    """The results so far; written after every check, so a run cut short leaves what it found."""

    def __init__(self, out, meta):
        self.out, self.meta, self.items, self.brief = out, meta, [], {}

    def add(self, step, name, status, reason="", brief=None, **numbers):
        """brief: the numbers the table shows (all of them when None); the JSON has every one."""
        assert status in ("pass", "fail", "skip")
        item = {"step": step, "name": name, "status": status, "reason": reason, "numbers": numbers}
        if brief is not None:
            self.brief[id(item)] = brief
        self.items.append(item)
        print("check.sh: [%s] step %d %s%s" % (status, step, name, (": " + reason) if reason else ""), flush=True)
        self.write()
        return item

    def failed(self):
        return [c for c in self.items if c["status"] == "fail"]

    def write(self):
        doc = {"meta": self.meta, "checks": self.items}
        tmp = os.path.join(self.out, "gpu-check.json.tmp")
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, os.path.join(self.out, "gpu-check.json"))
        tmp = os.path.join(self.out, "gpu-check.md.tmp")
        with open(tmp, "w") as f:
            f.write(self.markdown())
        os.replace(tmp, os.path.join(self.out, "gpu-check.md"))

    def markdown(self):
        m = self.meta
        counts = {s: sum(1 for c in self.items if c["status"] == s) for s in ("pass", "fail", "skip")}
        lines = ["# usbyte GPU check", "",
                 "%s on %s, %s." % (m["date"], m["host"], m["mode"]),
                 "",
                 "- machine: %s" % m.get("machine", "?"),
                 "- versions: %s" % m.get("versions", "?"),
                 "- libraries: %s" % m.get("libraries", "?"),
                 "- environment: %s" % m.get("environment", "?"),
                 "- %s" % SHARED_GPU_NOTE,
                 "- %d passed, %d failed, %d skipped%s." % (
                     counts["pass"], counts["fail"], counts["skip"],
                     ", in %.0f s" % m["seconds"] if "seconds" in m else " (still running)"),
                 "",
                 "| step | check | status | result |",
                 "| --- | --- | --- | --- |"]
        for c in self.items:
            text = c["reason"]
            shown = self.brief.get(id(c))
            nums = ", ".join("%s %s" % (k, fmt(v)) for k, v in c["numbers"].items() if shown is None or k in shown)
            if nums:
                text = (text + "; " if text else "") + nums
            lines.append("| %d %s | %s | %s | %s |" % (c["step"], STEP_NAMES[c["step"]], c["name"],
                                                       c["status"].upper() if c["status"] == "fail" else c["status"],
                                                       text.replace("|", "/").replace("\n", " ")))
        return "\n".join(lines) + "\n"


def fmt(v):
    if isinstance(v, float):
        return "%.3g" % v
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %s" % (k, fmt(x)) for k, x in v.items()) + "}"
    return str(v)


class Run:
    def __init__(self, rc, out, seconds, timed_out):
        self.rc, self.out, self.seconds, self.timed_out = rc, out, seconds, timed_out

    def rank_lines(self, rank=None):
        lines = re.findall(r"^\[rank (\d+)\] (.*)$", self.out, re.M)
        return [t for r, t in lines if rank is None or int(r) == rank]

    def tail(self, n=3):
        lines = [l for l in self.out.splitlines() if l.strip()]
        return " / ".join(lines[-n:])[-400:]


class Kit:
    def __init__(self, a):
        self.a = a
        self.out = os.path.abspath(a.out)
        self.rehearse = a.rehearse
        self.deadline = time.monotonic() + a.budget
        self.started = time.monotonic()
        self.libexec = os.path.join(KIT, "libexec")
        self.emu = os.path.join(KIT, "emu")
        self.profiles = os.path.join(KIT, "profiles")
        self.run_usbyte = os.path.join(KIT, "bin", "usbyte-run")
        self.libdirs = []          # where libcudart/libnccl/libcupti are taken from
        self.gpus = 1
        self.torch = None          # torch_facts.py's object when torch imports
        self.smoke_ok = self.smoke_tried = False
        self.job = 0
        meta = {"date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M"), "host": socket.gethostname(),
                "mode": "rehearsal: steps 1-3 on the CPU emulator the kit carries, 4-6 skipped" if a.rehearse
                else "on the GPU", "kit": KIT}
        try:
            with open(os.path.join(KIT, "MANIFEST.json")) as f:
                meta["kit_manifest"] = json.load(f)
        except (OSError, ValueError) as e:
            meta["kit_manifest"] = "unreadable: %s" % e
        self.checks = Checks(self.out, meta)

    # ---- running things ---------------------------------------------------------------------

    def left(self):
        return self.deadline - time.monotonic()

    def env(self, **extra):
        """The environment of a program: the chosen CUDA/NCCL libraries first, no usbyte unless asked."""
        e = {k: v for k, v in os.environ.items() if not k.startswith("USBYTE_") and k != "LD_PRELOAD"}
        # A sanitizer runtime preloaded by whoever started the kit stays (a sanitizer build of it
        # needs it first); usbyte itself is preloaded only where a check asks for it.
        san = [p for p in os.environ.get("LD_PRELOAD", "").replace(":", " ").split()
               if re.match(r"lib(a|t|ub|hwa|m|l)san", os.path.basename(p))]
        if san:
            e["LD_PRELOAD"] = " ".join(san)
        e["LD_LIBRARY_PATH"] = ":".join(self.libdirs + [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p])
        if self.rehearse:
            # The emulator's link: latency-bound, so that plans merge; its ranks meet in shared
            # memory under a job name of this run's own (removed afterwards).
            e.setdefault("USBYTE_EMU_ALPHA_US", "300")
            e.setdefault("USBYTE_EMU_GBPS", "1")
            self.job += 1
            e["USBYTE_EMU_JOB"] = "kit-%d-%d" % (os.getpid(), self.job)
        for k, v in extra.items():
            if v is None:
                e.pop(k, None)
            else:
                e[k] = str(v)
        return e

    def run(self, argv, env, timeout, log):
        """Runs argv in a session of its own; on timeout the whole session is stopped."""
        timeout = max(1.0, min(timeout, self.left()))
        os.makedirs(os.path.dirname(log), exist_ok=True)
        start = time.monotonic()
        with open(log, "w") as f:
            f.write("$ %s\n" % " ".join(argv))
            f.flush()
            p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=f, stderr=subprocess.STDOUT,
                                 start_new_session=True, cwd=self.out)
            timed_out = False
            try:
                p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                for sig, wait in ((signal.SIGTERM, 3), (signal.SIGKILL, 10)):
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        pass
                    try:
                        p.wait(timeout=wait)
                        break
                    except subprocess.TimeoutExpired:
                        pass
            if timed_out:
                f.write("check.sh: stopped after %.0f s (timeout)\n" % timeout)
        if self.rehearse and env.get("USBYTE_EMU_JOB"):
            for seg in glob.glob("/dev/shm/usbyte-emu-%s-*" % env["USBYTE_EMU_JOB"]):
                try:
                    os.unlink(seg)
                except OSError:
                    pass
        with open(log, errors="replace") as f:
            out = f.read()
        return Run(p.returncode if not timed_out else 124, out, time.monotonic() - start, timed_out)

    def ranks(self, n, argv, env, timeout, log, report=None, usbyte_args=(), mode="schedule"):
        """n ranks of argv through kit_run.py; with report=DIR, under usbyte-run --mode MODE."""
        cmd = [sys.executable, os.path.join(PY, "kit_run.py"), "-n", str(n), "--timeout", str(int(timeout)),
               "--gpus", str(self.gpus)]
        if n > 1:
            cmd += ["--hostid", "usbyte-kit-%d" % os.getpid()]
        cmd += ["--"] + argv
        if report:
            os.makedirs(report, exist_ok=True)
            cmd = [self.run_usbyte, "--mode", mode, "--log", "info", "--report", report] + list(usbyte_args) + ["--"] + cmd
        # The ranks have `timeout` (kit_run.py's own); usbyte-run then writes the summary and the
        # page, which on a busy machine under a sanitizer takes tens of seconds.
        return self.run(cmd, env, timeout + (60 if report else 15), log)

    def budget_skip(self, step, name, need):
        """True when the check is not to run: left out by --only (not recorded), or the time left
        is less than it needs (recorded as a skip)."""
        if self.a.only and not re.search(self.a.only, name):
            return True
        if self.left() < need:
            self.checks.add(step, name, "skip", "time budget: %.0f s left of %d, this needs about %d" % (
                max(self.left(), 0), self.a.budget, need))
            return True
        return False


def reports(d):
    """{rank: report} of the usbyte-run reports in d."""
    out = {}
    for path in glob.glob(os.path.join(d, "usbyte-report-*.json")):
        m = re.search(r"-(\d+)\.json$", path)
        try:
            with open(path) as f:
                out[int(m.group(1))] = json.load(f)
        except (OSError, ValueError, AttributeError):
            pass
    return out


def comm_summary(reps, n):
    """(ok, text, numbers) from the first communicator of every rank's report: state schedule."""
    if sorted(reps) != list(range(n)):
        return False, "reports of ranks %s, expected 0..%d" % (sorted(reps), n - 1), {}
    states, nums, why = [], {}, []
    for r in range(n):
        comms = reps[r].get("comms") or []
        if not comms:
            return False, "rank %d's report has no communicator" % r, {}
        c = comms[0]
        states.append(c.get("state"))
        if c.get("state") != "schedule":
            why.append("rank %d: %s (%s; verdict: %s)" % (r, c.get("state"), c.get("state_reason"),
                                                         "; ".join((c.get("verdict") or {}).get("reasons", [])) or "-"))
        if r == 0:
            s = c.get("schedule") or {}
            nums = {"state": c.get("state"), "calls_per_iteration": c.get("calls_per_iteration"),
                    "plan_blocks": len((c.get("plan") or {}).get("blocks", [])) or None,
                    "scheduled_iterations": s.get("iterations"),
                    "measured_speedup": s.get("measured_speedup"), "predicted_speedup": s.get("predicted_speedup"),
                    "deviations": s.get("deviations")}
            nums = {k: v for k, v in nums.items() if v is not None}
    if why:
        return False, "not scheduled: " + " | ".join(why), nums
    return True, "every rank in schedule", nums


def checksums(run, pattern=r"checksum ([0-9a-f]{16})\b"):
    """{rank: checksum} from the rank lines."""
    out = {}
    for r, text in re.findall(r"^\[rank (\d+)\] (.*)$", run.out, re.M):
        m = re.search(pattern, text)
        if m:
            out[int(r)] = m.group(1)
    return out


# ---- step 1: facts --------------------------------------------------------------------------

def lib_dirs_from(torch_libs):
    """The folders of the libcudart, libnccl and libcupti PyTorch loaded."""
    dirs = []
    for key in ("libcudart.so", "libnccl.so", "libcupti.so"):
        p = torch_libs.get(key)
        if p and os.path.dirname(p) not in dirs:
            dirs.append(os.path.dirname(p))
    return dirs


def find_lib(name, dirs):
    """The first of dirs holding name, else the nvidia wheels, CUDA_HOME, ldconfig's answer."""
    cands = list(dirs)
    for sp in sys.path:
        cands += sorted(glob.glob(os.path.join(sp, "nvidia", "*", "lib")))
    cuda = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    cands += [os.path.join(cuda, "lib64"), os.path.join(cuda, "lib"), os.path.join(cuda, "extras", "CUPTI", "lib64")]
    if os.environ.get("NCCL_HOME"):
        cands += [os.path.join(os.environ["NCCL_HOME"], "lib")]
    for d in cands:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    try:
        out = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        m = re.search(r"^\s*%s \(.*\) => (\S+)$" % re.escape(name), out, re.M)
        if m:
            return m.group(1)
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def step1(k):
    S = 1
    # PyTorch first: the libraries it loads are the machine's own, which the C programs then use.
    t = k.run([sys.executable, os.path.join(PY, "torch_facts.py")], k.env(), 120, os.path.join(k.out, "step1", "torch.log"))
    info = None
    for line in t.out.splitlines():
        if line.startswith("{"):
            try:
                info = json.loads(line)
            except ValueError:
                pass
    if info and "error" not in info:
        k.torch = info
        k.checks.add(S, "PyTorch", "pass", "", torch=info.get("torch"), cuda=info.get("torch_cuda"),
                     nccl=info.get("nccl"), torchvision=info.get("torchvision"),
                     cuda_available=info.get("cuda_available"), device=info.get("device0"),
                     loaded=info.get("libs"))
    elif info:
        k.checks.add(S, "PyTorch", "skip", info["error"], python=info.get("python"))
    else:
        k.checks.add(S, "PyTorch", "fail", "torch_facts.py: exit %s: %s" % (t.rc, t.tail()))

    # The CUDA runtime, NCCL and CUPTI the kit's programs load.
    if k.rehearse:
        k.libdirs = [k.emu]
        k.checks.add(S, "libraries", "pass", "the emulator's stand-ins in %s (rehearsal)" % k.emu)
    else:
        dirs = lib_dirs_from((k.torch or {}).get("libs") or {})
        found = {n: find_lib(n, dirs) for n in ("libcudart.so.13", "libnccl.so.2", "libcupti.so.13")}
        for p in found.values():
            if p and os.path.dirname(p) not in k.libdirs:
                k.libdirs.append(os.path.dirname(p))
        missing = [n for n, p in found.items() if not p]
        k.checks.add(S, "libraries", "fail" if missing else "pass",
                     ("not found: %s (looked beside PyTorch's, in the nvidia wheels, CUDA_HOME, NCCL_HOME, ldconfig)"
                      % ", ".join(missing)) if missing else
                     ("PyTorch's own" if dirs and all(os.path.dirname(p) in dirs for p in found.values()) else
                      "found beside PyTorch's, in the nvidia wheels, CUDA_HOME or ldconfig"), **found)
    k.checks.meta["libraries"] = "LD_LIBRARY_PATH of the kit's programs: %s" % ":".join(k.libdirs)

    # Every file of the kit loads (the libraries it carries found through RUNPATH, none missing).
    env = k.env()
    files = [os.path.join(KIT, "lib", "libusbyte.so")] + sorted(glob.glob(os.path.join(KIT, "bin", "usbyte-*"))) + \
        sorted(glob.glob(os.path.join(k.libexec, "*")))
    missing = []
    for f in files:
        try:
            with open(f, "rb") as fh:
                if fh.read(4) != b"\x7fELF":
                    continue
            r = subprocess.run(["ldd", f], env=env, capture_output=True, text=True, timeout=20)
            bad = [l.strip() for l in (r.stdout + r.stderr).splitlines() if "not found" in l]
            if bad:
                missing.append("%s: %s" % (os.path.relpath(f, KIT), "; ".join(bad)))
        except (OSError, subprocess.SubprocessError) as e:
            missing.append("%s: %s" % (os.path.relpath(f, KIT), e))
    glibc = os.confstr("CS_GNU_LIBC_VERSION").replace("glibc ", "") if hasattr(os, "confstr") else "?"
    need = (k.checks.meta.get("kit_manifest") or {}).get("glibc_needed") if isinstance(k.checks.meta.get("kit_manifest"), dict) else None
    k.checks.add(S, "kit loads", "fail" if missing else "pass",
                 " | ".join(missing) if missing else "%d files, every dependency resolved" % len(files),
                 glibc=glibc, glibc_needed=need)

    # nvidia-smi.
    smi = shutil.which("nvidia-smi")
    if k.rehearse:
        k.checks.add(S, "nvidia-smi", "skip", "rehearsal: no GPU, the emulator stands in")
    elif not smi:
        k.checks.add(S, "nvidia-smi", "skip", "nvidia-smi not found")
    else:
        full = k.run([smi], os.environ.copy(), 30, os.path.join(k.out, "step1", "nvidia-smi.txt"))
        q = subprocess.run([smi, "--query-gpu=name,driver_version,memory.total,compute_cap,count",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
        rows = [r.strip() for r in q.stdout.splitlines() if r.strip()]
        if full.rc == 0 and rows:
            k.gpus = len(rows)
            f = [x.strip() for x in rows[0].split(",")]
            k.checks.add(S, "nvidia-smi", "pass", "", gpus=len(rows), name=f[0], driver=f[1] if len(f) > 1 else "?",
                         memory=f[2] if len(f) > 2 else "?", compute_cap=f[3] if len(f) > 3 else "?")
            k.checks.meta["machine"] = "%d x %s, driver %s" % (len(rows), f[0], f[1] if len(f) > 1 else "?")
        else:
            k.checks.add(S, "nvidia-smi", "fail", "exit %s: %s" % (full.rc, full.tail()))

    # What a CUDA + NCCL program of the kit finds: versions, device attributes, loaded libraries.
    r = k.run([os.path.join(k.libexec, "facts")], env, 60, os.path.join(k.out, "step1", "facts.log"))
    m = re.search(r"^\{.*^\}", r.out, re.M | re.S)
    facts = None
    if m:
        try:
            facts = json.loads(m.group(0))
        except ValueError:
            pass
    if not facts:
        k.checks.add(S, "device (CUDA + NCCL program)", "fail", "facts: exit %s: %s" % (r.rc, r.tail()))
    else:
        need = {"stream_mem_ops_64bit": 1, "can_map_host_memory": 1, "unified_addressing": 1}
        wrong = ["%s %s" % (a, facts.get(a)) for a, v in need.items() if facts.get(a) != v]
        if facts.get("devices", 0) < 1:
            wrong.insert(0, "no device (%s)" % facts.get("cuda_error"))
        if facts.get("stream_priority_greatest", 0) >= facts.get("stream_priority_least", 0):
            wrong.append("no stream priorities")
        nums = {k2: v for k2, v in facts.items() if k2 not in ("cuda_error",)}
        k.checks.add(S, "device (CUDA + NCCL program)", "fail" if wrong else "pass",
                     ("missing: " + ", ".join(wrong)) if wrong else "what usbyte relies on is there",
                     brief=("device0", "devices", "compute_capability_major", "compute_capability_minor",
                            "multiprocessors", "stream_mem_ops_64bit", "stream_priority_greatest", "libcudart",
                            "libnccl"), **nums)
        if k.rehearse:
            k.checks.meta["machine"] = "%s (%d emulated devices)" % (facts.get("device0"), facts.get("devices", 0))
        k.checks.meta["versions"] = "CUDA runtime %s, driver API %s, NCCL %s%s" % (
            facts.get("runtime_version"), facts.get("driver_version"), facts.get("nccl_version"),
            ", torch %s (CUDA %s, NCCL %s)" % (k.torch.get("torch"), k.torch.get("torch_cuda"), k.torch.get("nccl"))
            if k.torch else ", no torch")
    k.checks.meta["environment"] = ", ".join("%s=%s" % (v, os.environ[v]) for v in sorted(os.environ)
                                             if re.match(r"(CUDA_|NCCL_|TORCH_NCCL|LD_PRELOAD$|LD_LIBRARY_PATH$)", v)) \
        or "no CUDA_*, NCCL_*, TORCH_NCCL_* variable set (CUDA_DEVICE_MAX_CONNECTIONS: CUDA's default, 8)"

    # usbyte-doctor on the libraries and on the programs that will run.
    targets = [p for p in (find_lib("libnccl.so.2", k.libdirs), find_lib("libcudart.so.13", k.libdirs)) if p]
    targets += [os.path.join(k.libexec, n) for n in ("ddp_like", "runtime_sched")]
    if k.torch:
        targets += [p for key, p in sorted((k.torch.get("libs") or {}).items()) if key.startswith("libtorch_cuda")]
    d = k.run([os.path.join(KIT, "bin", "usbyte-doctor")] + targets, env, 60, os.path.join(k.out, "step1", "doctor.log"))
    verdicts = re.findall(r"verdict: (.*)", d.out)
    k.checks.add(S, "usbyte-doctor", "pass" if d.rc == 0 else "fail",
                 "every file interposable for schedule mode" if d.rc == 0 else "exit %d: %s" % (
                     d.rc, " | ".join(v for v in verdicts if not v.startswith("interposable")) or d.tail()),
                 files=[os.path.basename(t) for t in targets])
    if k.torch:
        d = k.run([os.path.join(KIT, "bin", "usbyte-doctor"), "--python"], env, 120,
                  os.path.join(k.out, "step1", "doctor-python.log"))
        k.checks.add(S, "usbyte-doctor --python", "pass" if d.rc == 0 else "fail",
                     "torch's libraries are interposable" if d.rc == 0 else "exit %d: %s" % (d.rc, d.tail(4)))
    else:
        k.checks.add(S, "usbyte-doctor --python", "skip", "no torch")


# ---- step 2: hardware queues ----------------------------------------------------------------

QUEUE_CONFIGS = [  # CUDA_DEVICE_MAX_CONNECTIONS (None: unset), streams created first, pairs
    ("1", 0, [1, 2]),
    ("8", 0, list(range(1, 18))),
    ("32", 0, [1, 8, 16, 31, 32, 33]),
    ("8", 64, [1, 7, 8, 9]),
    (None, 0, [1, 8, 16]),
]


def queue_pattern(k, libdirs, conns, pre, pairs, wait_ms, log):
    """{'ok': [...], 'hang': [...], 'stuck': [...], 'status': ...} of one queues run."""
    saved, k.libdirs = k.libdirs, libdirs
    try:
        env = k.env(CUDA_DEVICE_MAX_CONNECTIONS=conns)
    finally:
        k.libdirs = saved
    timeout = 20 + len(pairs) * 2 * wait_ms / 1000.0
    r = k.run([os.path.join(k.libexec, "queues"), "--pre", str(pre), "--pairs", ",".join(map(str, pairs)),
               "--wait-ms", str(wait_ms)], env, timeout, log)
    res = {"ok": [], "hang": [], "stuck": []}
    for line in r.out.splitlines():
        if line.startswith("{") and '"pair"' in line:
            try:
                o = json.loads(line)
                res[o["result"]].append(o["pair"])
            except (ValueError, KeyError):
                pass
    done = len(res["ok"]) + len(res["hang"]) + len(res["stuck"])
    if r.rc == 0 and done == len(pairs):
        res["status"] = "ended"
    elif r.rc == 3 or r.timed_out:
        res["status"] = "a wait the host could not release" + (" (stopped at the timeout)" if r.timed_out else "")
    else:
        res["status"] = "error: exit %s: %s" % (r.rc, r.tail())
    return res


def held_text(held, pairs):
    if not held:
        return "s0's wait holds back none of s%s" % ", s".join(map(str, pairs))
    return "s0's wait holds back s%s (they share its hardware queue)" % ", s".join(map(str, held))


def step2(k):
    S = 2
    wait_ms = 300 if k.rehearse else 2000
    gpu_side = "emulator" if k.rehearse else "GPU"
    results = []
    for conns, pre, pairs in QUEUE_CONFIGS:
        name = "CUDA_DEVICE_MAX_CONNECTIONS=%s, %d streams first" % (conns or "unset", pre)
        if k.budget_skip(S, name, 30):
            continue
        res = queue_pattern(k, k.libdirs, conns, pre, pairs, wait_ms,
                            os.path.join(k.out, "step2", "queues-%s-%d.log" % (conns or "unset", pre)))
        results.append((name, conns, pre, pairs, res))
        error = res["status"].startswith("error")
        k.checks.add(S, name, "fail" if error else "pass",
                     res["status"] if error else
                     "%s: %s%s" % (gpu_side, held_text(res["hang"] + res["stuck"], pairs),
                                   "; " + res["status"] if res["status"] != "ended" else ""),
                     streams_through=res["ok"], streams_held=res["hang"] + res["stuck"])
    # The emulator's model of the same runs (on the GPU only: in a rehearsal both sides are it).
    if k.rehearse:
        k.checks.add(S, "emulator's model vs the GPU", "skip", "rehearsal: the emulator is on both sides")
        return
    diffs, ran = [], 0
    ended = [x for x in results if not x[4]["status"].startswith("error")]
    for name, conns, pre, pairs, res in ended:
        if k.left() < 30:
            break
        emu = queue_pattern(k, [k.emu], conns, pre, pairs, 300,
                            os.path.join(k.out, "step2", "emulator-%s-%d.log" % (conns or "unset", pre)))
        ran += 1
        if sorted(emu["hang"] + emu["stuck"]) != sorted(res["hang"] + res["stuck"]) or emu["status"].startswith("error"):
            diffs.append("%s: GPU holds back %s, emulator %s%s" % (name, res["hang"] + res["stuck"],
                                                                   emu["hang"] + emu["stuck"],
                                                                   " (%s)" % emu["status"] if emu["status"] != "ended" else ""))
    if not ran:
        k.checks.add(S, "emulator's model vs the GPU", "skip", "no GPU run ended to compare with" if not ended
                     else "time budget: no time left for the emulator's runs")
    else:
        k.checks.add(S, "emulator's model vs the GPU", "fail" if diffs else "pass",
                     " | ".join(diffs) if diffs else "the same streams held back in %d configurations" % ran)


# ---- step 3: CUDA + NCCL without PyTorch ----------------------------------------------------

def step3_programs(k):
    if k.rehearse:
        it, ts, bs = 12, 0.05, 0.002
    else:
        it, ts, bs = 30, 0.1, 0.02
    common = ["--iters", str(it), "--time-scale", str(ts), "--bytes-scale", str(bs)]
    p = k.profiles
    return [
        ("runtime_sched", ["runtime_sched", "--iters", str(it), "--consumer", "end-event", "--mixed"], r"runtime_sched ok"),
        ("ddp_like", ["ddp_like", "--profile", os.path.join(p, "resnet50-v100-b64-barrier.json"), "--bucket-cap-mb", "1",
                      "--first-bucket-mb", "0.25"] + common, None),
        ("horovod_like", ["horovod_like", "--profile", os.path.join(p, "vgg16-v100-b64-barrier.json"),
                          "--fusion-threshold-mb", "0"] + common, None),
        ("per_layer", ["per_layer", "--profile", os.path.join(p, "vgg16-v100-b64.json")] + common, None),
    ]


def iteration_ms(run):
    v = [float(x) for x in re.findall(r"^\[rank \d+\] last-iterations ([0-9.]+) ms", run.out, re.M)]
    return max(v) if v else None


NCCL_ENV = {"NCCL_SOCKET_IFNAME": "lo", "NCCL_MNNVL_ENABLE": "0", "NCCL_DEBUG": os.environ.get("NCCL_DEBUG", "WARN")}


def smoke(k):
    """A plain 2-rank allreduce, before anything else runs on 2 ranks (steps 3-6 need it)."""
    S = 3
    if k.left() < 30:
        k.checks.add(S, "2-rank allreduce (smoke test)", "skip", "time budget: %.0f s left" % max(k.left(), 0))
    else:
        r = k.ranks(2, [os.path.join(k.libexec, "smoke")], k.env(**NCCL_ENV), 60, os.path.join(k.out, "step3", "smoke.log"))
        oks = len(re.findall(r"^\[rank \d+\] smoke ok", r.out, re.M))
        sizes = {}
        for line in r.rank_lines(0):
            if line.startswith("{"):
                try:
                    o = json.loads(line)
                    sizes["%d B" % o["bytes"]] = "%.3f ms" % o["mean_ms"]
                except (ValueError, KeyError):
                    pass
        k.smoke_ok = r.rc == 0 and oks == 2
        k.checks.add(S, "2-rank allreduce (smoke test)", "pass" if k.smoke_ok else "fail",
                     "exact sums, time per allreduce" if k.smoke_ok else "exit %s, %d of 2 ranks ok: %s" % (r.rc, oks, r.tail()),
                     **sizes)


CURVE_TSV = "allreduce-curve.tsv"
CURVE_MODEL_TSV = "allreduce-curve-model.tsv"
# The emulated network of the rehearsal's curve: a measured one, slow enough that the emulator's
# own cost per call (tens of microseconds) is small beside it.
REHEARSAL_NET = "11-aws-g4dn-tcp-socket-2node-2r.tsv"


def read_curve(path):
    """[(bytes, out-of-place us, in-place us)] of a table in data/net's format; ValueError if bad."""
    rows = []
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) != 3:
                raise ValueError("%s: %r is not bytes<TAB>us<TAB>in_place_us" % (path, line))
            rows.append((int(cols[0]), float(cols[1]), float(cols[2])))
    return rows


def line_fit(xs, ts):
    """alpha + beta*x minimising the relative error (weights 1/t^2); (alpha, beta)."""
    w = [1.0 / (t * t) for t in ts]
    sw, sx, st = sum(w), sum(a * x for a, x in zip(w, xs)), sum(a * t for a, t in zip(w, ts))
    sxx, sxt = sum(a * x * x for a, x in zip(w, xs)), sum(a * x * t for a, x, t in zip(w, xs, ts))
    det = sw * sxx - sx * sx
    if det == 0:
        return st / sw, 0.0
    return (sxx * st - sx * sxt) / det, (sw * sxt - sx * st) / det


def curve(k):
    """The allreduce curve of the kit's 2 ranks (4 KiB to 256 MiB, factor 2) in data/net's table
    format, with usbyte observing the same run: beside each size, the line usbyte fitted from the
    run's calls (its report's fit) and the alpha-beta fit of the curve's own sizes."""
    S = 3
    name = "allreduce curve, 2 ranks, usbyte observing"
    if not k.smoke_ok:
        k.checks.add(S, name, "skip", "the 2-rank smoke test failed")
        return
    if k.budget_skip(S, name, 90):
        return
    d = os.path.join(k.out, "step3", "curve")
    os.makedirs(d, exist_ok=True)
    out = os.path.join(d, CURVE_TSV)
    top = (1 << 20) if k.rehearse else (256 << 20)
    argv = [os.path.join(k.libexec, "curve"), "--min", "4096", "--max", str(top), "--warmup", "1", "--iters", "5",
            "--sweeps", "8", "--out", out]
    extra = dict(NCCL_ENV, USBYTE_WARMUP=2)
    if k.rehearse:
        # The emulator times the measured table, and its op log says by how much each call ran
        # past the table's time (data moved on a busy CPU, a late wake-up).
        extra.update(USBYTE_EMU_NET=os.path.join(KIT, "net", REHEARSAL_NET),
                     USBYTE_EMU_OPLOG=os.path.join(d, "oplog-%r.txt"))
    r = k.ranks(2, argv, k.env(**extra), 150, os.path.join(d, "curve.log"), report=d, mode="observe")
    oks = len(re.findall(r"^\[rank \d+\] curve ok", r.out, re.M))
    try:
        rows = read_curve(out) if r.rc == 0 and oks == 2 else []
    except (OSError, ValueError) as e:
        rows, r.out = [], r.out + "\n%s" % e
    want = [4096 << i for i in range((top // 4096).bit_length())]
    if not rows or [b for b, _, _ in rows] != want or min(min(o, i) for _, o, i in rows) <= 0:
        k.checks.add(S, name, "fail", "exit %s, %d of 2 ranks ok, %d of %d sizes: %s" % (
            r.rc, oks, len(rows), len(want), r.tail()))
        return
    xs, ts = [b for b, _, _ in rows], [o for _, o, _ in rows]
    own_a, own_b = line_fit(xs, ts)
    fit = ((reports(d).get(0) or {}).get("comms") or [{}])[0].get("fit") or {}
    have_line = fit.get("alpha") is not None and fit.get("beta") is not None and fit.get("samples", 0) > 0
    with open(os.path.join(d, CURVE_MODEL_TSV), "w") as f:
        f.write("# the measured curve (%s) beside two lines: usbyte_line = the line usbyte fitted from this run's "
                "calls (rank 0's report, comms[0].fit: %s); own_fit = alpha + beta*bytes fitted to this curve's "
                "out-of-place times (least squares on relative error: alpha %.2f us, beta %.6f us/byte)\n" % (
                    CURVE_TSV, "alpha %.2f us, beta %.6f us/byte, %d samples" % (
                        fit["alpha"] * 1e6, fit["beta"] * 1e6, fit["samples"]) if have_line else "none in the report",
                    own_a, own_b))
        f.write("# columns: bytes\ttime_us_out_of_place\ttime_us_in_place\tusbyte_line_us\tusbyte_line_error_pct"
                "\town_fit_us\town_fit_error_pct\n")
        errs, own_errs = [], []
        for b, o, i in rows:
            line = (fit["alpha"] + fit["beta"] * b) * 1e6 if have_line else float("nan")
            own = own_a + own_b * b
            errs.append(100.0 * (line - o) / o)
            own_errs.append(100.0 * (own - o) / o)
            f.write("%d\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.1f\n" % (b, o, i, line, errs[-1], own, own_errs[-1]))
    by = dict((b, o) for b, o, _ in rows)
    nums = {"sizes": len(rows), "latency_floor_us": min(ts), "largest_us": ts[-1]}
    if (64 << 20) in by:
        nums["bytes_per_us_64MiB"] = (64 << 20) / by[64 << 20]
    if have_line:
        nums["usbyte_line_alpha_us"] = fit["alpha"] * 1e6
        nums["usbyte_line_max_error_pct"] = max(errs, key=abs)
    nums["own_fit_max_error_pct"] = max(own_errs, key=abs)
    k.checks.add(S, name, "pass", "step3/curve/%s, beside %s: %s" % (
        CURVE_TSV, CURVE_MODEL_TSV, "usbyte's fitted line and the curve's own fit" if have_line
        else "the curve's own fit only (usbyte's report has no fit)"), **nums)


def step3(k):
    S = 3
    usb = {"USBYTE_MIN_GAIN_PCT": 0}
    if k.rehearse:
        usb["USBYTE_WARMUP"] = 2
    nccl_env = NCCL_ENV
    if not k.smoke_tried:
        k.smoke_tried = True
        smoke(k)
    curve(k)
    for name, argv, ok_pattern in step3_programs(k):
        for n in (1, 2):
            check = "%s, %d rank%s, without and with usbyte" % (name, n, "s" if n > 1 else "")
            if n == 2 and not k.smoke_ok:
                k.checks.add(S, check, "skip", "the 2-rank smoke test failed")
                continue
            if k.budget_skip(S, check, 45):
                continue
            prog = [os.path.join(k.libexec, argv[0])] + argv[1:]
            d = os.path.join(k.out, "step3", "%s-%dr" % (name, n))
            env = k.env(**dict(nccl_env, **usb))
            base = k.ranks(n, prog, k.env(**nccl_env), 90, os.path.join(d, "without.log"))
            withu = k.ranks(n, prog, env, 90, os.path.join(d, "with.log"), report=d)
            problems = []
            for label, r in (("without", base), ("with", withu)):
                if r.rc != 0:
                    problems.append("%s usbyte: exit %s (%s)" % (label, r.rc, r.tail(2)))
            nums = {}
            if ok_pattern:
                for label, r in (("without", base), ("with", withu)):
                    got = len(re.findall(r"^\[rank \d+\] " + ok_pattern, r.out, re.M))
                    if got != n:
                        problems.append("%s usbyte: %d of %d ranks checked every result" % (label, got, n))
                nums["exact"] = not problems
            else:
                cb, cw = checksums(base), checksums(withu)
                if sorted(cb) != list(range(n)) or len(set(cb.values())) != 1:
                    problems.append("without usbyte: checksums %s" % cb)
                elif cw != cb:
                    problems.append("checksums differ: without %s, with %s" % (cb, cw))
                nums["checksum"] = cb.get(0)
                nums["equal_checksums"] = cw == cb and bool(cb)
                nums["iteration_ms_without"] = iteration_ms(base)
                nums["iteration_ms_with"] = iteration_ms(withu)
            ok, text, rep = comm_summary(reports(d), n)
            nums.update(rep)
            if not ok:
                problems.append(text)
            k.checks.add(S, check, "fail" if problems else "pass", " | ".join(problems) if problems else
                         ("exact results" if ok_pattern else "equal checksums") + ", " + text,
                         **{x: y for x, y in nums.items() if y is not None})
    step3_capture(k, usb)


CAPTURE_ROUTES = ("runtime", "runtime-to-graph", "driver", "driver-lookup", "runtime-lookup", "hidden")


def step3_capture(k, usb):
    """A CUDA graph captured mid-iteration in schedule mode, begun through each route usbyte wraps
    (the runtime, the driver linked, cuGetProcAddress, cudaGetDriverEntryPoint) and, at an
    iteration's first call, through dlsym on libcuda's own handle: every result exact, every rank
    back in schedule after the deviation."""
    S = 3
    n = 2 if k.smoke_ok else 1
    check = "graph capture through each entry point, %d rank%s, with usbyte" % (n, "s" if n > 1 else "")
    if k.budget_skip(S, check, 60):
        return
    it = 12 if k.rehearse else 24
    problems, nums = [], {}
    for route in CAPTURE_ROUTES:
        argv = [os.path.join(k.libexec, "runtime_sched"), "--iters", str(it), "--consumer", "end-event",
                "--capture-at", str(it // 2), "--capture-via", route]
        if route == "hidden":
            argv += ["--capture-call", "0"]
        d = os.path.join(k.out, "step3", "capture-%s-%dr" % (route, n))
        # The capture must fall after the switch: calibration (which moves the switch two iterations
        # later) is off, so that the short rehearsal's capture lands in schedule mode.
        env = k.env(**dict(NCCL_ENV, **dict(usb, USBYTE_CALIBRATE="0")))
        r = k.ranks(n, argv, env, 90, os.path.join(d, "with.log"), report=d)
        oks = len(re.findall(r"^\[rank \d+\] runtime_sched ok", r.out, re.M))
        ok, text, rep = comm_summary(reports(d), n)
        if r.rc != 0 or oks != n:
            problems.append("%s: exit %s, %d of %d ranks exact (%s)" % (route, r.rc, oks, n, r.tail(2)))
        elif not ok or not rep.get("deviations"):
            problems.append("%s: %s, deviations %s" % (route, text, rep.get("deviations")))
        nums[route] = "exact, deviations %s" % rep.get("deviations") if r.rc == 0 and oks == n else "failed"
    k.checks.add(S, check, "fail" if problems else "pass", " | ".join(problems) if problems else
                 "exact results and schedule mode after the capture, every route", **nums)


# ---- steps 4-6: PyTorch ---------------------------------------------------------------------

def torch_ready(k, step, name):
    if not k.torch:
        k.checks.add(step, name, "skip", "python3 has no torch")
    elif not k.torch.get("cuda_available"):
        k.checks.add(step, name, "skip", "torch sees no CUDA device")
    elif not k.smoke_ok:
        k.checks.add(step, name, "skip", "the 2-rank NCCL smoke test of step 3 did not pass")
    else:
        return True
    return False


def torch_pair(k, step, name, script, args, runs, timeout=150):
    """Runs script without usbyte and then each of runs (label, usbyte env, usbyte-run args) with it;
    one check per run: exit 0, the checksum of every rank equal to the run without usbyte, every
    rank in schedule (when wanted), step times."""
    d = os.path.join(k.out, "step%d" % step, name)
    argv = [sys.executable, os.path.join(KIT, script)] + args
    if k.budget_skip(step, name + ": without usbyte", 40):
        return
    base = k.ranks(2, argv, k.env(**NCCL_ENV), timeout, os.path.join(d, "without.log"))
    cb = checksums(base, r"checksum (\S+ sum \S+)")
    step_ms = re.findall(r"mean step ([0-9.]+) ms", base.out)
    if base.rc != 0 or sorted(cb) != [0, 1] or len(set(cb.values())) != 1:
        k.checks.add(step, name + ": without usbyte", "fail", "exit %s, checksums %s: %s" % (base.rc, cb, base.tail()))
        return
    k.checks.add(step, name + ": without usbyte", "pass", "", step_ms=float(step_ms[0]) if step_ms else None,
                 checksum=cb[0])
    for label, extra, uargs, want_schedule in runs:
        check = "%s: %s" % (name, label)
        if k.budget_skip(step, check, 40):
            continue
        rd = os.path.join(d, re.sub(r"[^A-Za-z0-9]+", "-", label).strip("-"))
        r = k.ranks(2, argv, k.env(**dict(NCCL_ENV, USBYTE_MIN_GAIN_PCT=0, **extra)), timeout,
                    os.path.join(rd, "run.log"), report=rd, usbyte_args=uargs)
        cw = checksums(r, r"checksum (\S+ sum \S+)")
        ms = re.findall(r"mean step ([0-9.]+) ms", r.out)
        problems = []
        if r.rc != 0:
            problems.append("exit %s: %s" % (r.rc, r.tail()))
        if cw != cb:
            problems.append("checksums %s, without usbyte %s" % (cw, cb))
        ok, text, nums = comm_summary(reports(rd), 2)
        if want_schedule and not ok:
            problems.append(text)
        nums["step_ms"] = float(ms[0]) if ms else None
        nums["step_ms_without"] = float(step_ms[0]) if step_ms else None
        k.checks.add(step, check, "fail" if problems else "pass", " | ".join(problems) if problems else
                     "equal checksums, " + text, **{x: y for x, y in nums.items() if y is not None})


def step4(k):
    if not torch_ready(k, 4, "DDP"):
        return
    args = ["--model", "convnet", "--batch", "32", "--image-size", "64", "--steps", "40", "--warmup-steps", "15"]
    torch_pair(k, 4, "DDP, 1 MB buckets", "examples/pytorch_ddp.py", args + ["--bucket-cap-mb", "1"],
               [("with usbyte", {}, [], True),
                ("with usbyte, CUDA_DEVICE_MAX_CONNECTIONS=1", {"CUDA_DEVICE_MAX_CONNECTIONS": 1}, [], True)])
    torch_pair(k, 4, "DDP, default buckets", "examples/pytorch_ddp.py", args,
               [("with usbyte (pass-through cost)", {}, [], False)])


def step5(k):
    if not torch_ready(k, 5, "per-layer hooks"):
        return
    args = ["--model", "convnet", "--batch", "32", "--image-size", "64", "--steps", "40", "--warmup-steps", "15"]
    torch_pair(k, 5, "per-layer hooks", "examples/per_layer.py", args,
               [("with usbyte, stream completion", {}, ["--completion", "stream"], True),
                ("with usbyte, call completion", {}, ["--completion", "call"], True)])


def step6(k):
    S = 6
    if not torch_ready(k, S, "faults"):
        return
    for fault in ("empty-cache", "abort", "graph"):
        name = fault
        if k.budget_skip(S, name, 60):
            continue
        d = os.path.join(k.out, "step6", fault)
        argv = [sys.executable, os.path.join(KIT, "py", "torch_faults.py"), "--fault", fault]
        base = k.ranks(2, argv, k.env(**NCCL_ENV), 60, os.path.join(d, "without.log"))
        r = k.ranks(2, argv, k.env(**dict(NCCL_ENV, USBYTE_MIN_GAIN_PCT=0)), 60, os.path.join(d, "with.log"), report=d)

        def outcome(run):
            said = [l.split(": ", 1)[1] for l in run.rank_lines(0) if l.startswith("fault %s: " % fault)]
            return said[-1] if said else "(no outcome line)"
        cb, cw = checksums(base, r"checksum (\S+ sum \S+)"), checksums(r, r"checksum (\S+ sum \S+)")
        ok, text, nums = comm_summary(reports(d), 2)
        nums = {x: y for x, y in nums.items() if y is not None}
        if r.timed_out and base.timed_out:
            k.checks.add(S, name, "skip", "it hangs without usbyte too (PyTorch's or NCCL's doing): nothing to compare",
                         **nums)
            continue
        problems = []
        if r.timed_out:
            problems.append("a hang: stopped after its timeout (without usbyte: %s, exit %s)" % (outcome(base), base.rc))
        elif r.rc > 128 or re.search(r"killed by signal", r.out):
            problems.append("killed by a signal: %s" % r.tail())
        elif r.rc == 0 and base.rc == 0 and cw != cb:
            problems.append("a result, but checksums %s differ from without usbyte %s" % (cw, cb))
        elif r.rc not in (0, 3) and not re.search(r"usbyte", r.out):
            problems.append("exit %s without a diagnostic: %s" % (r.rc, r.tail()))
        k.checks.add(S, name, "fail" if problems else "pass", " | ".join(problems) if problems else
                     "with usbyte: %s (exit %s); without: %s (exit %s)" % (outcome(r), r.rc, outcome(base), base.rc),
                     seconds=round(r.seconds, 1), **nums)


STEPS = {1: step1, 2: step2, 3: step3, 4: step4, 5: step5, 6: step6}


def main():
    ap = argparse.ArgumentParser(prog="check.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="where gpu-check.md, gpu-check.json and the logs go")
    ap.add_argument("--rehearse", action="store_true", help="steps 1-3 on the CPU emulator, 4-6 skipped")
    ap.add_argument("--steps", default="1,2,3,4,5,6", help="which steps (1 always runs: the others need its facts)")
    ap.add_argument("--budget", type=int, default=450, help="seconds for everything (default 450)")
    ap.add_argument("--only", metavar="REGEX", help="of steps 2-6, only the checks whose name matches")
    a = ap.parse_args()
    try:
        steps = sorted({1} | {int(s) for s in a.steps.split(",") if s.strip()})
    except ValueError:
        ap.error("--steps: expected numbers 1-6 separated by commas, got '%s'" % a.steps)
    if not set(steps) <= set(STEPS):
        ap.error("--steps: expected numbers 1-6, got '%s'" % a.steps)
    os.makedirs(a.out, exist_ok=True)
    k = Kit(a)
    k.checks.meta["steps"] = steps
    k.checks.write()
    for s in STEPS:
        if s not in steps:
            continue
        if s >= 4 and not k.smoke_tried and not k.rehearse:
            k.smoke_tried = True
            smoke(k)
        if s >= 4 and k.rehearse:
            k.checks.add(s, STEP_NAMES[s], "skip", "rehearsal: PyTorch's NCCL backend needs a GPU")
            continue
        try:
            STEPS[s](k)
        except Exception as e:  # a bug of the kit must not hide the other steps' results
            import traceback
            traceback.print_exc()
            k.checks.add(s, "step %d" % s, "fail", "the kit failed: %s: %s" % (type(e).__name__, e))
    k.checks.meta["seconds"] = round(time.monotonic() - k.started, 1)
    k.checks.meta["python"] = "%s %s" % (sys.executable, platform.python_version())
    k.checks.write()
    failed = k.checks.failed()
    print("check.sh: %s: %d checks, %d failed; %s" % (
        "rehearsal" if a.rehearse else "GPU", len(k.checks.items), len(failed), os.path.join(k.out, "gpu-check.md")))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
