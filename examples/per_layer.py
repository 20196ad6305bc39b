"""Layer-wise overlap with the next forward (the pattern priority schedulers exploit): each
gradient is allreduced as soon as it is accumulated, and each module's forward waits only for its
own parameters' allreduces (work.wait() makes the current stream wait on that call's end event),
steps them, then runs.  usbyte's report shows one `need` per layer instead of DDP's single barrier.

    torchrun --nproc_per_node 8 examples/per_layer.py
    USBYTE_REPORT=usbyte-%r.json LD_PRELOAD=$PWD/build/libusbyte.so torchrun --nproc_per_node 8 examples/per_layer.py
"""
import torch
import torch.distributed as dist
import torch.nn.functional as F

from common_gpu import StepTimer, checksum, deterministic, init, make_model, parse_args, synthetic_batch


def main():
    args = parse_args(__doc__)
    deterministic()
    device = init(args)
    rank, world = dist.get_rank(), dist.get_world_size()
    model = make_model(args.model).to(device)
    for p in model.parameters():
        dist.broadcast(p.data, 0)
    pending = {}   # parameter -> async allreduce work of the last backward

    def on_grad(p):
        pending[p] = dist.all_reduce(p.grad, async_op=True)

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(on_grad)

    def before_forward(module, _inputs):
        # Only this module's own parameters: the forward overlaps the other layers' allreduces.
        with torch.no_grad():
            for p in module.parameters(recurse=False):
                work = pending.pop(p, None)
                if work is not None:
                    work.wait()
                    p.add_(p.grad, alpha=-args.lr / world)
                    p.grad = None

    for m in model.modules():
        if any(True for _ in m.parameters(recurse=False)):
            m.register_forward_pre_hook(before_forward)

    timer = StepTimer(args.warmup_steps, device)
    for step in range(args.steps):
        x, y = synthetic_batch(args.batch, device, step, rank, args.image_size)
        F.cross_entropy(model(x), y).backward()
        timer.step(step)
    for m in model.modules():   # the last step of every layer
        before_forward(m, None)
    if rank == 0:
        print("mean step %.2f ms over %d steps" % (timer.mean_ms(), timer.n))
    print("rank %d checksum %s" % (rank, checksum(model)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
