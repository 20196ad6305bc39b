"""Horovod with PyTorch on synthetic ImageNet-sized data.

    horovodrun -np 8 python examples/horovod_train.py
    USBYTE_REPORT=usbyte-%r.json horovodrun -np 8 -x LD_PRELOAD=$PWD/build/libusbyte.so \\
        -x USBYTE_REPORT python examples/horovod_train.py

With Horovod's default tensor fusion (HOROVOD_FUSION_THRESHOLD=64 MB) the fused buffer is copied
in and out on Horovod's NCCL stream; usbyte sees those copies during warm-up and reports the
communicator as not schedulable, naming the fix.  Run again with HOROVOD_FUSION_THRESHOLD=0
(each gradient its own in-place allreduce) so that usbyte does the merging and the ordering."""
import torch
import torch.nn.functional as F
import horovod.torch as hvd

from common_gpu import StepTimer, checksum, deterministic, make_model, parse_args, synthetic_batch


def main():
    args = parse_args(__doc__)
    deterministic()
    hvd.init()
    torch.cuda.set_device(hvd.local_rank())
    device = torch.device("cuda", hvd.local_rank())
    model = make_model(args.model).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    timer = StepTimer(args.warmup_steps)
    for step in range(args.steps):
        x, y = synthetic_batch(args.batch, device, step, hvd.rank())
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        timer.step(step)
    if hvd.rank() == 0:
        print("mean step %.2f ms over %d steps" % (timer.mean_ms(), timer.n))
    print("rank %d checksum %s" % (hvd.rank(), checksum(model)))


if __name__ == "__main__":
    main()
