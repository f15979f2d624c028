#!/usr/bin/env bash
# GPU check for a one-H200 machine with no network (finishes in under 8 minutes).
#
#   scripts/gpu_check.sh                    versions, builds (or the prepared dir), virtual-rank verification of
#                                           every template family, GEMM vs cuBLAS, NCCL device-communicator
#                                           and torch symmetric-memory smoke tests; a short table last
#   scripts/gpu_check.sh --prepare [N]      build the candidates here (a CPU machine is fine) into the
#                                           prepared dir; N limits it to the first N plan items
#   scripts/gpu_check.sh --plan             list what would be built and verified
#   --dir DIR   prepared/cache dir (default $CUCO_GPU_CHECK_DIR or .gpu_check)   --out DIR   also write the table
# See docs/gpu.md.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-}"
[ -z "$PY" ] && { [ -x "$ROOT/.venv/bin/python" ] && PY="$ROOT/.venv/bin/python" || PY="$(command -v python3)"; }
MODE=run; EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --prepare) MODE=prepare; if [[ "${2:-}" =~ ^[0-9]+$ ]]; then EXTRA+=(--limit "$2"); shift; fi ;;
    --plan) MODE=plan ;;
    --dir) EXTRA+=(--cache "$2"); shift ;;
    --out) EXTRA+=(--out "$2"); shift ;;
    --limit) EXTRA+=(--limit "$2"); shift ;;
    *) echo "gpu_check: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
cd "$ROOT"
if [ "$MODE" = run ]; then
  if ! ls /dev/nvidia[0-9]* >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_check: no NVIDIA GPU on this machine (no /dev/nvidia* or nvidia-smi fails); run it on the GPU machine, or use --prepare here" >&2
    exit 3
  fi
  exec timeout -k 10 470 "$PY" scripts/gpu_check.py run "${EXTRA[@]}"
fi
exec "$PY" scripts/gpu_check.py "$MODE" "${EXTRA[@]}"
