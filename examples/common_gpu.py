"""Shared bits of the GPU examples: synthetic data, a bit-exact parameter checksum, step timing.

Nothing here depends on usbyte: the examples are ordinary training scripts, and usbyte is added
from the outside with LD_PRELOAD (see README.md).  `--device cpu --backend gloo` runs a script's
own logic where torch exists without a GPU (usbyte then has nothing to intercept)."""
import argparse
import hashlib
import os
import time

import torch
import torch.distributed as dist


def parse_args(description, more=None):
    """The options common to the scripts; more(parser) adds a script's own."""
    ap = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="resnet50",
                    help="a torchvision model name, or 'convnet': a small CNN built in (no torchvision needed), "
                         "deterministic on CUDA, so that runs compare bit for bit")
    ap.add_argument("--batch", type=int, default=64, help="images per GPU")
    ap.add_argument("--image-size", type=int, default=224, help="synthetic images are SIZE x SIZE")
    ap.add_argument("--steps", type=int, default=60, help="training steps")
    ap.add_argument("--warmup-steps", type=int, default=10, help="steps left out of the timing")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu: the script's logic without a GPU (with --backend gloo)")
    ap.add_argument("--backend", help="torch.distributed backend (default: nccl on cuda, gloo on cpu)")
    if more:
        more(ap)
    a = ap.parse_args()
    a.backend = a.backend or ("nccl" if a.device == "cuda" else "gloo")
    return a


def init(args):
    """The process group (env:// rendezvous: torchrun's variables) and this rank's device."""
    dist.init_process_group(args.backend)
    if args.device == "cpu":
        return torch.device("cpu")
    local = int(os.environ.get("LOCAL_RANK", 0))
    torch.cuda.set_device(local)
    return torch.device("cuda", local)


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


class ConvNet(torch.nn.Module):
    """Seven 3x3 convolutions with batch norm (every other one halves the image), a mean over the
    image and a linear classifier: about 5.2 M parameters in 23 tensors (21 MB of gradients, 20 DDP
    buckets of 1 MB).  Stride instead of pooling and a plain mean instead of adaptive pooling:
    every kernel has a deterministic CUDA version, so two runs agree bit for bit."""

    def __init__(self, num_classes=1000, widths=(64, 128, 128, 256, 256, 512, 512)):
        super().__init__()
        layers, c = [], 3
        for i, w in enumerate(widths):
            layers += [torch.nn.Conv2d(c, w, 3, stride=2 if i % 2 else 1, padding=1, bias=False),
                       torch.nn.BatchNorm2d(w), torch.nn.ReLU(inplace=True)]
            c = w
        self.features = torch.nn.Sequential(*layers)
        self.fc = torch.nn.Linear(c, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).mean(dim=(2, 3)))


def make_model(name):
    if name == "convnet":
        return ConvNet(num_classes=1000)
    import torchvision
    return getattr(torchvision.models, name)(num_classes=1000)


def synthetic_batch(batch, device, step, rank, size=224):
    g = torch.Generator(device="cpu").manual_seed(1000 * step + rank)
    x = torch.randn(batch, 3, size, size, generator=g).to(device, non_blocking=True)
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
    synchronises the device during training, so the next forward can overlap the allreduces.  On
    the CPU, the host clock."""

    def __init__(self, warmup, device=None):
        self.warmup, self.events = warmup, []
        self.cuda = device is None or device.type == "cuda"

    def step(self, i):
        if i >= self.warmup:
            if self.cuda:
                ev = torch.cuda.Event(enable_timing=True)
                ev.record()
                self.events.append(ev)
            else:
                self.events.append(time.perf_counter())

    @property
    def n(self):
        return max(len(self.events) - 1, 0)

    def mean_ms(self):
        if self.n == 0:
            return float("nan")
        if not self.cuda:
            return 1e3 * (self.events[-1] - self.events[0]) / self.n
        self.events[-1].synchronize()
        return self.events[0].elapsed_time(self.events[-1]) / self.n
