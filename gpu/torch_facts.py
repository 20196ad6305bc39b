"""What PyTorch finds on this machine, as one JSON object on stdout: python, torch, torchvision and
NCCL versions, the device, and the CUDA, NCCL and CUPTI libraries torch loaded (their paths, from
/proc/self/maps, after the CUDA context exists and NCCL is loaded).  Exit 3 when torch cannot be
imported (the object then says why), 0 otherwise."""
import json
import os
import sys

LIBS = ("libcudart.so", "libnccl.so", "libcupti.so", "libcuda.so", "libtorch_cuda.so", "libc10_cuda.so")


def loaded():
    found = {}
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            path = parts[5].strip() if len(parts) == 6 else ""
            base = os.path.basename(path)
            for lib in LIBS:
                if base.startswith(lib) and lib not in found:
                    found[lib] = path
    return found


def main():
    out = {"python": sys.executable, "python_version": sys.version.split()[0]}
    try:
        import torch
    except Exception as e:  # any import failure is the answer
        out["error"] = "python3 cannot import torch: %s" % e
        print(json.dumps(out))
        sys.exit(3)
    out["torch"] = torch.__version__
    out["torch_cuda"] = torch.version.cuda
    try:
        import torchvision
        out["torchvision"] = torchvision.__version__
    except Exception:
        out["torchvision"] = None
    out["cuda_available"] = torch.cuda.is_available()
    out["nccl_available"] = bool(getattr(torch.distributed, "is_nccl_available", lambda: False)())
    if out["cuda_available"]:
        out["devices"] = torch.cuda.device_count()
        out["device0"] = torch.cuda.get_device_name(0)
        out["capability"] = "%d.%d" % torch.cuda.get_device_capability(0)
        torch.zeros(1, device="cuda").sum().item()   # the context exists, the runtime is loaded
    try:
        v = torch.cuda.nccl.version()
        out["nccl"] = ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v)
    except Exception as e:
        out["nccl"] = None
        out["nccl_error"] = str(e)
    out["libs"] = loaded()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
