"""PyTorch DistributedDataParallel on synthetic ImageNet-sized data: the job usbyte is made for.

    torchrun --nproc_per_node 8 examples/pytorch_ddp.py                       # without usbyte
    build/usbyte-run --report runs/ddp -- \\
        torchrun --nproc_per_node 8 examples/pytorch_ddp.py                   # with usbyte
    build/usbyte-run --mode observe --report runs/ddp-observe -- torchrun ...  # measure and plan only

usbyte-run preloads build/libusbyte.so in its default schedule mode (the plan runs from the
iteration after the warm-up) and, when the job ends, prints the summary of the rank reports and
writes runs/ddp/usbyte-report.html.  With and without usbyte the runs print the mean step time and
a checksum of the final parameters: the sums must be equal (observe mode changes nothing; in
schedule mode a merged block may change the last bits of a sum over more than two ranks, as NCCL's
reduction order follows the message).  DDP's defaults are kept on purpose: 25 MB buckets, buffer
broadcast at each forward, bucket rebuild after the first iteration; usbyte has to cope with all of
them."""
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
