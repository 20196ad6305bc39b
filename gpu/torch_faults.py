"""Faults a PyTorch job can throw at usbyte once schedule mode runs: each must end in a result, an
error or a clear diagnostic, never a hang (the caller's timeout is the hang detector).

    python3 torch_faults.py --fault empty-cache|abort|graph [--steps N] [--fault-step K] ...

DDP on the built-in convnet with 1 MB buckets (many allreduces, which usbyte schedules from the
iteration after its warm-up), and at step K:
  empty-cache  torch.cuda.empty_cache() inside a backward hook, half-way through the backward;
  abort        a thread aborts the process group half-way through the backward, then the main
               thread calls torch.cuda.synchronize();
  graph        a CUDA graph that holds an allreduce is captured on the process group's
               communicator, replayed and checked, then training goes on.
Prints "fault NAME: result ...", "fault NAME: error ..." and "rank R checksum ..." (after a
result); exit 0 for a result, 3 for an error the script caught (it then leaves at once, as a job
would, without tearing the process group down)."""
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

from common_gpu import checksum, deterministic, init, make_model, parse_args, synthetic_batch  # noqa: E402


def options(ap):
    ap.add_argument("--fault", required=True, choices=("empty-cache", "abort", "graph"))
    ap.add_argument("--fault-step", type=int, default=15, help="the step the fault happens in")
    ap.set_defaults(model="convnet", batch=16, image_size=64, steps=20)


def say(args, what):
    print("fault %s: %s" % (args.fault, what), flush=True)


def leave(args, code, what):
    say(args, what)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def abort_group():
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_abort_process_group"):
        c10d._abort_process_group()
    else:
        c10d._get_default_group()._get_backend(torch.device("cuda")).abort()


def graph_allreduce(args, device, rank, world):
    """Captures an allreduce of 1 M floats in a CUDA graph (warmed up on a side stream first, as
    capture requires), replays it three times and checks every element."""
    t = torch.empty(1 << 20, device=device)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            t.fill_(rank + 1)
            dist.all_reduce(t)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        dist.all_reduce(t)
    want = world * (world + 1) / 2
    for _ in range(3):
        t.fill_(rank + 1)
        g.replay()
        torch.cuda.synchronize()
        bad = (t != want).sum().item()
        if bad:
            leave(args, 3, "error: the replayed graph's allreduce is wrong in %d of %d elements" % (bad, t.numel()))
    say(args, "result: a captured allreduce replayed 3 times, every element %g" % want)


def main():
    args = parse_args(__doc__, options)
    if args.fault == "abort":
        # PyTorch's own error handling would abort the communicator itself on the first failed work.
        os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "0")
    deterministic()
    device = init(args)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = DDP(make_model(args.model).to(device), device_ids=[device.index], bucket_cap_mb=1)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    params = [p for p in model.parameters() if p.requires_grad]
    middle = params[len(params) // 2]
    for step in range(args.steps):
        hook = None
        if step == args.fault_step and args.fault == "empty-cache":
            def empty(grad):
                torch.cuda.empty_cache()
                say(args, "torch.cuda.empty_cache() called in a backward hook at step %d" % step)
                return grad
            hook = middle.register_hook(empty)
        elif step == args.fault_step and args.fault == "abort":
            aborter = []

            def start_abort(grad):
                th = threading.Thread(target=abort_group, daemon=True)
                th.start()
                aborter.append(th)
                return grad
            hook = middle.register_hook(start_abort)
        x, y = synthetic_batch(args.batch, device, step, rank, args.image_size)
        try:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
        except Exception as e:
            if args.fault != "abort" or step != args.fault_step:
                raise
            say(args, "the backward raised after the abort: %s" % str(e).splitlines()[0][:200])
        if hook is not None:
            hook.remove()
        if args.fault == "abort" and step == args.fault_step:
            for th in aborter:
                th.join(timeout=60)
            start = time.monotonic()
            try:
                torch.cuda.synchronize()
            except Exception as e:
                leave(args, 3, "error: torch.cuda.synchronize() after the abort raised after %.1f s: %s"
                      % (time.monotonic() - start, str(e).splitlines()[0][:200]))
            leave(args, 0, "result: torch.cuda.synchronize() returned %.1f s after the abort"
                  % (time.monotonic() - start))
        opt.step()
        if step == args.fault_step and args.fault == "graph":
            graph_allreduce(args, device, rank, world)
    torch.cuda.synchronize()
    say(args, "result: %d steps done" % args.steps)
    print("rank %d checksum %s" % (rank, checksum(model.module)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
