#!/usr/bin/env python3
"""The Python of the examples and of the GPU kit: every script compiles (python3 -m py_compile);
the kit's launcher (gpu/kit_run.py) gives each rank its variables and a shared id file, forwards
output as "[rank R] ...", stops the others and returns the status of a rank that fails, and
stops everything with 124 at its timeout; and where python3 has torch, the PyTorch scripts run
on 2 CPU ranks with --device cpu --backend gloo (equal checksums on both ranks)."""
import glob
import os
import py_compile
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUN = [sys.executable, os.path.join(ROOT, "gpu", "kit_run.py")]
failures = []


def fail(msg):
    print("FAIL: " + msg)
    failures.append(msg)


def launch(args, timeout=60):
    start = time.monotonic()
    p = subprocess.run(RUN + args, capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - start


with tempfile.TemporaryDirectory() as tmp:
    scripts = sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")) + glob.glob(os.path.join(ROOT, "gpu", "*.py")))
    for s in scripts:
        try:
            py_compile.compile(s, cfile=os.path.join(tmp, os.path.basename(s) + "c"), doraise=True)
        except py_compile.PyCompileError as e:
            fail("%s does not compile: %s" % (os.path.relpath(s, ROOT), e.msg.strip()))
    print("info: %d scripts compile" % len(scripts))

    # Each rank's variables; the id file is one path shared by the ranks of a launch.
    rc, out, _ = launch(["-n", "3", "--gpus", "2", "--hostid", "h", "--", "sh", "-c",
                         'echo "$RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NCCL_HOSTID $MASTER_ADDR:$MASTER_PORT $TRAINER_NCCL_ID_FILE"'])
    rows = sorted(re.findall(r"^\[rank (\d)\] (\d) 3 (\d) 3 (\S+) 127\.0\.0\.1:(\d+) (\S+)$", out, re.M))
    if rc != 0 or len(rows) != 3:
        fail("3 ranks: exit %d, output %r" % (rc, out))
    else:
        for r, rank, local, hostid, port, idfile in rows:
            if r != rank or int(local) != int(rank) % 2 or hostid != "h-" + rank:
                fail("rank %s: RANK %s LOCAL_RANK %s NCCL_HOSTID %s" % (r, rank, local, hostid))
        if len({x[4] for x in rows}) != 1 or len({x[5] for x in rows}) != 1:
            fail("ranks got different ports or id files: %r" % rows)
        if os.path.exists(rows[0][5]) or os.path.exists(os.path.dirname(rows[0][5])):
            fail("the id file's folder is left behind: %s" % rows[0][5])
    # No --hostid: NCCL_HOSTID is left as it is.
    rc, out, _ = launch(["-n", "1", "--", "sh", "-c", 'echo "[${NCCL_HOSTID:-unset}]"'])
    if "[rank 0] [unset]" not in out:
        fail("NCCL_HOSTID set without --hostid: %r" % out)
    # A failing rank stops the others, its status is the launch's.
    rc, out, secs = launch(["-n", "2", "--timeout", "60", "--", "sh", "-c",
                            'if [ "$RANK" = 1 ]; then exit 7; fi; sleep 50'])
    if rc != 7 or secs > 20 or "rank 1 exited with status 7" not in out:
        fail("a failing rank: exit %d after %.1f s: %r" % (rc, secs, out))
    # The timeout stops every rank, status 124.
    rc, out, secs = launch(["-n", "2", "--timeout", "1", "--", "sleep", "50"])
    if rc != 124 or secs > 20 or "timeout after 1 s" not in out:
        fail("the timeout: exit %d after %.1f s: %r" % (rc, secs, out))
    # Bad usage.
    rc, out, _ = launch(["-n", "0", "--", "true"])
    if rc != 2:
        fail("-n 0: exit %d" % rc)

    # The PyTorch scripts' own logic on CPU ranks, where torch exists.
    has_torch = subprocess.run([sys.executable, "-c", "import torch"], capture_output=True).returncode == 0
    if not has_torch:
        print("info: %s has no torch: the PyTorch scripts' CPU runs (--device cpu --backend gloo) are left out"
              % sys.executable)
    else:
        common = ["--device", "cpu", "--backend", "gloo", "--model", "convnet", "--batch", "2", "--image-size", "16",
                  "--steps", "3", "--warmup-steps", "1"]
        for script, extra in (("pytorch_ddp.py", ["--bucket-cap-mb", "1"]), ("per_layer.py", [])):
            rc, out, secs = launch(["-n", "2", "--timeout", "240", "--", sys.executable,
                                    os.path.join(ROOT, "examples", script)] + common + extra, timeout=300)
            sums = re.findall(r"^\[rank (\d)\] rank \d checksum (.*)$", out, re.M)
            if rc != 0 or len(sums) != 2 or sums[0][1] != sums[1][1]:
                fail("%s on 2 CPU ranks: exit %d, checksums %r: %s" % (script, rc, sums, out[-2000:]))
            else:
                print("info: %s on 2 CPU ranks in %.1f s, checksum %s" % (script, secs, sums[0][1]))

if failures:
    print("%d failure(s)" % len(failures))
    sys.exit(1)
print("gpu_scripts: all checks passed")
