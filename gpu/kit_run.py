#!/usr/bin/env python3
"""kit_run: starts N ranks of a program on this machine, as torchrun starts the ranks of a node.

    kit_run.py -n N [--timeout S] [--gpus G] [--hostid PREFIX] -- PROGRAM ARGS...

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK (rank modulo G, so that ranks share the G GPUs),
LOCAL_WORLD_SIZE, MASTER_ADDR/MASTER_PORT (127.0.0.1 and a free port, for torch.distributed's
env:// rendezvous) and TRAINER_NCCL_ID_FILE (a fresh file through which rank 0 passes its
ncclUniqueId to the others: the kit's C programs read it); with --hostid, NCCL_HOSTID=PREFIX-RANK
so that NCCL takes each rank for a host of its own and lets two ranks share one GPU (see the kit's
README).  Variables already set are kept, but not those four per-rank ones.  Output is forwarded
line by line as "[rank R] ...".  When a rank fails, the others are stopped and the exit status is
that rank's (128+signal for a signal); after S seconds every rank is stopped and the status is
124."""
import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

KILL_GRACE_S = 3.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_of(code):
    return 128 - code if code < 0 else code


def _forward(rank, pipe, out, lock):
    for raw in iter(pipe.readline, b""):
        line = raw.decode(errors="replace").rstrip("\n")
        with lock:
            out.write("[rank %d] %s\n" % (rank, line))
            out.flush()
    pipe.close()


def _stop(procs):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
    end = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < end and any(p.poll() is None for p in procs):
        time.sleep(0.05)
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        p.wait()


def run_ranks(n, argv, timeout=120.0, gpus=1, hostid=None, env=None, out=None):
    """Runs the ranks; returns (status, seconds).  out: a text stream (default stdout)."""
    out = out or sys.stdout
    base = dict(os.environ if env is None else env)
    base.setdefault("MASTER_ADDR", "127.0.0.1")
    base.setdefault("MASTER_PORT", str(free_port()))
    tmp = tempfile.mkdtemp(prefix="kit-run-")
    base["TRAINER_NCCL_ID_FILE"] = os.path.join(tmp, "nccl-id")
    lock = threading.Lock()
    procs, threads = [], []
    start = time.monotonic()
    status = 0
    try:
        for r in range(n):
            e = dict(base, RANK=str(r), WORLD_SIZE=str(n), LOCAL_RANK=str(r % max(gpus, 1)),
                     LOCAL_WORLD_SIZE=str(n))
            if hostid:
                e["NCCL_HOSTID"] = "%s-%d" % (hostid, r)
            try:
                p = subprocess.Popen(argv, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as err:
                out.write("kit_run: cannot run %s: %s\n" % (argv[0], err))
                _stop(procs)
                return 127, time.monotonic() - start
            procs.append(p)
            t = threading.Thread(target=_forward, args=(r, p.stdout, out, lock), daemon=True)
            t.start()
            threads.append(t)
        deadline = start + timeout
        while True:
            codes = [p.poll() for p in procs]
            failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
            if failed:
                r, c = failed[0]
                with lock:
                    out.write("kit_run: rank %d %s\n" % (
                        r, "killed by signal %d" % -c if c < 0 else "exited with status %d" % c))
                status = status_of(c)
                _stop(procs)
                break
            if all(c == 0 for c in codes):
                break
            if time.monotonic() >= deadline:
                with lock:
                    out.write("kit_run: timeout after %g s\n" % timeout)
                status = 124
                _stop(procs)
                break
            time.sleep(0.02)
    finally:
        _stop(procs)
        for t in threads:
            t.join(timeout=2)
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)
    return status, time.monotonic() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 usage="kit_run.py -n N [--timeout S] [--gpus G] [--hostid PREFIX] -- PROGRAM ARGS...")
    ap.add_argument("-n", type=int, required=True, help="ranks")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds (124 after)")
    ap.add_argument("--gpus", type=int, default=1, help="GPUs to spread the ranks over")
    ap.add_argument("--hostid", help="NCCL_HOSTID=PREFIX-RANK for each rank")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if a.n < 1 or not cmd or a.timeout <= 0 or a.gpus < 1:
        ap.error("need -n >= 1, --timeout > 0, --gpus >= 1 and a command after --")
    status, _ = run_ranks(a.n, cmd, a.timeout, a.gpus, a.hostid)
    sys.exit(status)


if __name__ == "__main__":
    main()
