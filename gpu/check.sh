#!/usr/bin/env bash
# check.sh --out DIR [--rehearse] [--steps 1,2,...] [--budget SECONDS]: proves or refutes usbyte on
# this machine's GPU, unattended, within the budget (450 s unless given); see README.md beside it.
# Writes DIR/gpu-check.md and DIR/gpu-check.json; exit 0 when every check that ran passed.
KIT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PYTHON=${PYTHON:-python3}
command -v "$PYTHON" > /dev/null || { echo "check.sh: $PYTHON not found: the kit needs python3 (PyTorch's)" >&2; exit 2; }
exec "$PYTHON" "$KIT/py/check.py" "$@"
