#!/usr/bin/env bash
# Set up this checkout on a fresh machine: a virtual environment in .venv with the CPU build of
# torch, cuco (editable) and what the tests need. Safe to run again; it only adds what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# The CPU build of torch first: a bare `torch` requirement would pull a multi-GB CUDA build.
# On a GPU machine that already has torch in .venv, this keeps it.
.venv/bin/python -c "import torch" 2>/dev/null || .venv/bin/python -m pip install -q "torch==${CUCO_TORCH_VERSION:-2.13.0}"
.venv/bin/python -m pip install -q -e ".[dev]"
command -v g++ >/dev/null || { echo "g++ is missing: apt-get install g++" >&2; exit 1; }
.venv/bin/cuco --help >/dev/null
echo "cuco is set up: .venv/bin/cuco"
