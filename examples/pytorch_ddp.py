"""PyTorch DistributedDataParallel on synthetic ImageNet-sized data: the job usbyte is made for.

    torchrun --nproc_per_node 8 examples/pytorch_ddp.py                       # without usbyte
    USBYTE_REPORT=usbyte-%r.json LD_PRELOAD=$PWD/build/libusbyte.so \\
        torchrun --nproc_per_node 8 examples/pytorch_ddp.py                   # with usbyte

Both runs print the same checksum (observe mode changes nothing) and the mean step time; the
reports usbyte-<rank>.json say what usbyte measured and what each policy would gain.  DDP's
defaults are kept on purpose: 25 MB buckets, buffer broadcast at each forward, bucket rebuild after
the first iteration; usbyte has to cope with all of them."""
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

from common_gpu import StepTimer, checksum, deterministic, init, make_model, parse_args, synthetic_batch


def options(ap):
    ap.add_argument("--bucket-cap-mb", type=float, help="DDP's bucket_cap_mb (default: DDP's own, 25)")


def main():
    args = parse_args(__doc__, options)
    deterministic()
    device = init(args)
    rank = dist.get_rank()
    kw = {} if args.bucket_cap_mb is None else {"bucket_cap_mb": args.bucket_cap_mb}
    model = DDP(make_model(args.model).to(device), device_ids=[device.index] if device.type == "cuda" else None, **kw)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    timer = StepTimer(args.warmup_steps, device)
    for step in range(args.steps):
        x, y = synthetic_batch(args.batch, device, step, rank, args.image_size)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        timer.step(step)
    if rank == 0:
        print("mean step %.2f ms over %d steps" % (timer.mean_ms(), timer.n))
    print("rank %d checksum %s" % (rank, checksum(model.module)))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
