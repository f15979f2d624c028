#!/usr/bin/env bash
# Build the exported kernel and its launcher into @PACKAGE@/lib@PACKAGE@.so (one nvcc call).
#
#   ./build.sh [ARCH]          ARCH: the GPU architecture, default @ARCH@ (e.g. sm_90a, sm_100)
#
# Environment:
#   NVCC        the CUDA compiler (default: nvcc on PATH, then $CUDA_HOME/bin/nvcc)
#   NCCL_HOME   an NCCL >= 2.28 install with include/nccl_device.h and lib/libnccl.so.2
#               (default: the nvidia-nccl-cu13 wheel of $PYTHON)
#   PYTHON      the Python whose wheels to look in (default: python3)
#   DTYPE       element type: bf16, fp16 or fp32 (default @DTYPE_NAME@, the one cuco evaluated)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ARCH="${1:-${ARCH:-@ARCH@}}"
PYTHON="${PYTHON:-python3}"
case "${DTYPE:-@DTYPE_NAME@}" in
  fp32) DTYPE_CODE=0 ;;
  fp16) DTYPE_CODE=1 ;;
  bf16) DTYPE_CODE=2 ;;
  *) echo "build.sh: DTYPE must be bf16, fp16 or fp32, got '${DTYPE:-}'" >&2; exit 2 ;;
esac

NVCC="${NVCC:-$(command -v nvcc || true)}"
if [ -z "$NVCC" ] && [ -n "${CUDA_HOME:-}" ]; then NVCC="$CUDA_HOME/bin/nvcc"; fi
if [ -z "$NVCC" ] || [ ! -x "$NVCC" ]; then
  echo "build.sh: nvcc not found: install the CUDA toolkit (13.0 or newer) or set NVCC=/path/to/nvcc" >&2
  exit 2
fi

if [ -z "${NCCL_HOME:-}" ]; then
  NCCL_HOME="$("$PYTHON" -c 'import importlib.util as u; s = u.find_spec("nvidia.nccl"); print(list(s.submodule_search_locations)[0] if s else "")' 2>/dev/null || true)"
fi
NCCL_INC="${NCCL_HOME:+$NCCL_HOME/include}"
NCCL_LIB=""
for d in "${NCCL_HOME:-/nonexistent}/lib" "${NCCL_HOME:-/nonexistent}/lib64"; do
  if [ -e "$d/libnccl.so.2" ]; then NCCL_LIB="$d"; break; fi
done
if [ -z "$NCCL_INC" ] || [ ! -f "$NCCL_INC/nccl_device.h" ] || [ -z "$NCCL_LIB" ]; then
  echo "build.sh: NCCL >= 2.28 (nccl_device.h and libnccl.so.2) not found${NCCL_HOME:+ in $NCCL_HOME}:" \
       "pip install nvidia-nccl-cu13, or set NCCL_HOME to an NCCL install" >&2
  exit 2
fi

OUT="$HERE/@PACKAGE@/lib@PACKAGE@.so"
echo "build.sh: $ARCH, ${DTYPE:-@DTYPE_NAME@}, NCCL from $NCCL_HOME -> $OUT"
"$NVCC" -shared -Xcompiler -fPIC -arch="$ARCH" -std=c++17 -O3 -lineinfo -cudart static \
  -DCUCO_COMM_NCCL -DCUCO_DTYPE="$DTYPE_CODE" -I"$HERE/runtime" -I"$NCCL_INC" \
  -L"$NCCL_LIB" -l:libnccl.so.2 -Xlinker -rpath,"$NCCL_LIB" \
  -o "$OUT" "$HERE/launcher.cu"
