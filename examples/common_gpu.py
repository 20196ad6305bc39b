"""Shared bits of the GPU examples: synthetic data, a bit-exact parameter checksum, step timing.

Nothing here depends on usbyte: the examples are ordinary training scripts, and usbyte is added
from the outside with LD_PRELOAD (see README.md)."""
import argparse
import hashlib
import os

import torch


def parse_args(description):
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", default="resnet50", help="a torchvision model name")
    ap.add_argument("--batch", type=int, default=64, help="images per GPU")
    ap.add_argument("--steps", type=int, default=60, help="training steps")
    ap.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the timing")
    ap.add_argument("--lr", type=float, default=0.01)
    return ap.parse_args()


def deterministic():
    """Deterministic kernels where PyTorch has them, so that 'with usbyte' and 'without' can be
    compared bit for bit.  warn_only: a few backward kernels (e.g. adaptive average pooling, used by
    ResNet) have no deterministic implementation; PyTorch then warns, and two runs may differ in
    the last bits whether usbyte is loaded or not: compare the 'sum' then, not the hash."""
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.use_deterministic_algorithms(True, warn_only=True)


def make_model(name):
    import torchvision
    return getattr(torchvision.models, name)(num_classes=1000)


def synthetic_batch(batch, device, step, rank):
    g = torch.Generator(device="cpu").manual_seed(1000 * step + rank)
    x = torch.randn(batch, 3, 224, 224, generator=g).to(device, non_blocking=True)
    y = torch.randint(0, 1000, (batch,), generator=g).to(device, non_blocking=True)
    return x, y


def checksum(model):
    """'<sha256 prefix of every parameter byte> sum <sum of all parameters>'."""
    h, total = hashlib.sha256(), 0.0
    for p in model.parameters():
        a = p.detach().float().cpu()
        h.update(a.numpy().tobytes())
        total += a.double().sum().item()
    return "%s sum %.12e" % (h.hexdigest()[:16], total)


class StepTimer:
    """Mean step time after the warm-up steps, from CUDA events on the current stream: nothing
    synchronises the device during training, so the next forward can overlap the allreduces."""

    def __init__(self, warmup):
        self.warmup, self.events = warmup, []

    def step(self, i):
        if i >= self.warmup:
            ev = torch.cuda.Event(enable_timing=True)
            ev.record()
            self.events.append(ev)

    @property
    def n(self):
        return max(len(self.events) - 1, 0)

    def mean_ms(self):
        if self.n == 0:
            return float("nan")
        self.events[-1].synchronize()
        return self.events[0].elapsed_time(self.events[-1]) / self.n
