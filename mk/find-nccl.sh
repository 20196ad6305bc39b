#!/bin/sh
# Where the build takes nccl.h from, and where libnccl.so.2 is, in the places clusters keep them,
# first found wins:
#   1. NCCL_HOME              (NCCL_HOME/include/nccl.h, NCCL_HOME/lib)
#   2. CUDA_HOME              (CUDA_HOME/include/nccl.h, CUDA_HOME/lib64 or lib)
#   3. the nvidia-nccl wheel  (the nvidia/nccl/{include,lib} folders of $PYTHON's site-packages:
#                              pip install nvidia-nccl-cu13, which PyTorch's wheels use)
#   4. the system             (/usr/include/nccl.h, libnccl.so.2 from ldconfig)
# Prints one line "INCDIR LIBDIR WHERE" (LIBDIR "-" when no libnccl.so.2 was found beside the
# header: the build needs only the header, jobs find the library at run time), or "- - WHY" naming
# every place looked at.  Reads NCCL_HOME, CUDA_HOME and PYTHON (python3).
set -u
nccl_home=${NCCL_HOME:-}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
python=${PYTHON:-python3}

# libdir DIR...: the first DIR holding libnccl.so.2 (or libnccl.so), else "-".
libdir() {
    for d in "$@"; do
        if [ -e "$d/libnccl.so.2" ] || [ -e "$d/libnccl.so" ]; then
            echo "$d"
            return
        fi
    done
    echo -
}

looked=""
if [ -n "$nccl_home" ]; then
    if [ -f "$nccl_home/include/nccl.h" ]; then
        echo "$nccl_home/include $(libdir "$nccl_home/lib" "$nccl_home/lib64") NCCL_HOME"
        exit 0
    fi
    looked="NCCL_HOME=$nccl_home has no include/nccl.h"
else
    looked="NCCL_HOME is not set"
fi
if [ -f "$cuda_home/include/nccl.h" ]; then
    echo "$cuda_home/include $(libdir "$cuda_home/lib64" "$cuda_home/lib") CUDA_HOME"
    exit 0
fi
looked="$looked; CUDA_HOME=$cuda_home has no include/nccl.h"
# nvidia is a namespace package: nvidia.nccl has a search location, not a __file__.
wheel=$("$python" -c 'import importlib.util
s = importlib.util.find_spec("nvidia.nccl")
print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else "")' 2>/dev/null)
if [ -n "$wheel" ] && [ -f "$wheel/include/nccl.h" ]; then
    echo "$wheel/include $(libdir "$wheel/lib") the nvidia-nccl wheel of $python"
    exit 0
fi
if [ -n "$wheel" ]; then
    looked="$looked; the nvidia-nccl wheel at $wheel has no include/nccl.h"
else
    looked="$looked; $python has no nvidia-nccl wheel (nvidia.nccl)"
fi
if [ -f /usr/include/nccl.h ]; then
    lib=$(ldconfig -p 2>/dev/null | sed -n 's/^[[:space:]]*libnccl\.so\.2 .*=> \(.*\)\/libnccl\.so\.2$/\1/p' | head -1)
    echo "/usr/include ${lib:--} the system"
    exit 0
fi
echo "- - $looked; /usr/include has no nccl.h"
