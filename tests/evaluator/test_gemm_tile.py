"""The GEMM tile of the device runtime (evaluator/runtime/cuco_gemm.h): nvcc turns it into
tensor-core code without spills, and the CPU emulator runs the same candidate source with exact
results at ragged and unaligned shapes, for both B layouts, both tile configs and every epilogue."""

import atexit
import functools
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest

from evaluator import build, shim_build, toolchain
from tests.evaluator.shim_kernels.harness import RUNTIME_CACHE, from_bf16_bits, run, to_bf16_bits

F32, F16, BF16 = 0, 1, 2
_BUILDS = Path(tempfile.mkdtemp(prefix="cuco-gemm-tile-"))
atexit.register(shutil.rmtree, _BUILDS, ignore_errors=True)

# A candidate: C = A @ B over all output tiles, grid-strided so a CTA runs several tiles and
# reuses its shared memory. dims = {M, N, K, variant, activation, config (0 small, 1 large),
# B layout (0 [K, N], 1 [N, K]), A offset in elements}. Variants: 0 store; 1 scale 0.5 + bias +
# activation; 2 store, then accumulate 2 * acc; 3 fp32 store; 4 A staged in shared memory first
# (padding NaN); 5 for_each writes C^T (fp32) to out[0] and counts owners in out[1]; 6 launched
# with half the threads the config needs (misuse).
CANDIDATE = r"""
#include "cuco_comm.h"

extern __shared__ __align__(16) unsigned char smem[];

template <class Cfg>
static __device__ void stage_a(const cuco_t* A, int64_t rows, int64_t K, cuco_t* As, int lds) {
  const cuco_t nan = cuco_from_float<cuco_t>(nanf(""));
  for (int i = threadIdx.x; i < Cfg::BM * lds; i += blockDim.x) {
    const int r = i / lds, k = i % lds;
    As[i] = r < rows && k < K ? A[r * K + k] : nan;
  }
  __syncthreads();
}

template <class Cfg, int BL>
__global__ void __launch_bounds__(Cfg::THREADS) gemm_kernel(const cuco_ctx c) {
  const int64_t M = c.dims[0], N = c.dims[1], K = c.dims[2];
  const int variant = (int)c.dims[3];
  const cuco_t* A = static_cast<const cuco_t*>(c.in[0]) + c.dims[7];
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  const int64_t ldb = BL == CUCO_B_KN ? N : K, tn = (N + Cfg::BN - 1) / Cfg::BN;
  for (int64_t tile = blockIdx.x; tile < (M + Cfg::BM - 1) / Cfg::BM * tn; tile += gridDim.x) {
    const int64_t m0 = tile / tn * Cfg::BM, n0 = tile % tn * Cfg::BN, rows = M - m0, cols = N - n0;
    const cuco_t* Bt = BL == CUCO_B_KN ? B + n0 : B + n0 * K;
    cuco_gemm_acc<Cfg> acc;
    acc.zero();
    if (variant == 4) {
      const int lds = (int)((K + 15) / 16 * 16 + 8);
      cuco_t* As = reinterpret_cast<cuco_t*>(smem + Cfg::SMEM_B_BYTES);
      stage_a<Cfg>(A + m0 * K, rows, K, As, lds);
      cuco_gemm_tile_smem_a<Cfg, BL>(acc, smem, As, lds, Bt, ldb, cols, (int)K);
    } else {
      cuco_gemm_tile<Cfg, BL>(acc, smem, A + m0 * K, K, rows, Bt, ldb, cols, K);
    }
    cuco_gemm_epilogue ep;
    if (variant == 1) {
      ep.scale = 0.5f;
      ep.bias = static_cast<const cuco_t*>(c.in[2]) + n0;
      ep.act = (int)c.dims[4];
    }
    if (variant == 3) {
      cuco_gemm_store_f32(acc, static_cast<float*>(c.out[0]) + m0 * N + n0, N, rows, cols);
    } else if (variant == 5) {
      float* T = static_cast<float*>(c.out[0]);
      int* owners = static_cast<int*>(c.out[1]);
      cuco_gemm_for_each(acc, rows, cols, [&](int r, int col, float v) {
        T[(n0 + col) * M + m0 + r] = v;
        atomicAdd(&owners[(m0 + r) * N + n0 + col], 1);
      });
    } else {
      cuco_t* C = static_cast<cuco_t*>(c.out[0]) + m0 * N + n0;
      cuco_gemm_store(acc, C, N, rows, cols, ep);
      if (variant == 2) {
        ep.scale = 2.f;
        ep.accumulate = true;
        cuco_gemm_store(acc, C, N, rows, cols, ep);
      }
    }
  }
}

template <class Cfg, int BL>
static int launch(const cuco_ctx& c, cudaStream_t s) {
  const int64_t M = c.dims[0], N = c.dims[1], K = c.dims[2];
  const int64_t tiles = (M + Cfg::BM - 1) / Cfg::BM * ((N + Cfg::BN - 1) / Cfg::BN);
  size_t smem_bytes = Cfg::SMEM_BYTES;
  if (c.dims[3] == 4) smem_bytes = Cfg::SMEM_B_BYTES + Cfg::BM * ((K + 15) / 16 * 16 + 8) * sizeof(cuco_t);
  cudaFuncSetAttribute(gemm_kernel<Cfg, BL>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem_bytes);
  const int threads = c.dims[3] == 6 ? Cfg::THREADS / 2 : Cfg::THREADS;
  gemm_kernel<Cfg, BL><<<(unsigned)(tiles < 3 ? tiles : 3), threads, smem_bytes, s>>>(c);
  return cudaGetLastError() != cudaSuccess;
}

extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  const bool large = ctx->dims[5] != 0, nk = ctx->dims[6] != 0;
  if (large) return nk ? launch<cuco_gemm_large, CUCO_B_NK>(*ctx, stream)
                       : launch<cuco_gemm_large, CUCO_B_KN>(*ctx, stream);
  return nk ? launch<cuco_gemm_small, CUCO_B_NK>(*ctx, stream) : launch<cuco_gemm_small, CUCO_B_KN>(*ctx, stream);
}
"""

# What nvcc must turn into tensor-core code: each config and B layout with a bias + GELU
# epilogue, A from shared memory (P V), and a scalar-loop GEMM that must not show HMMA.
NVCC_KERNELS = r"""
#include "cuco_comm.h"

extern __shared__ __align__(16) unsigned char smem[];

template <class Cfg, int BL>
__global__ void __launch_bounds__(Cfg::THREADS) tile_gemm(const cuco_t* A, const cuco_t* B, const cuco_t* bias,
                                                          cuco_t* C, int M, int N, int K) {
  const int64_t m0 = (int64_t)blockIdx.y * Cfg::BM, n0 = (int64_t)blockIdx.x * Cfg::BN;
  cuco_gemm_acc<Cfg> acc;
  acc.zero();
  const cuco_t* Bt = BL == CUCO_B_KN ? B + n0 : B + n0 * K;
  cuco_gemm_tile<Cfg, BL>(acc, smem, A + m0 * K, K, M - m0, Bt, BL == CUCO_B_KN ? N : K, N - n0, K);
  cuco_gemm_epilogue ep;
  ep.bias = bias + n0;
  ep.act = CUCO_ACT_GELU_TANH;
  cuco_gemm_store(acc, C + m0 * N + n0, N, M - m0, N - n0, ep);
}

template <class Cfg>
__global__ void __launch_bounds__(Cfg::THREADS) smem_a_gemm(const cuco_t* P, const cuco_t* V, float* O, int M,
                                                            int N, int K) {
  const int64_t m0 = (int64_t)blockIdx.y * Cfg::BM, n0 = (int64_t)blockIdx.x * Cfg::BN;
  const int lds = (K + 15) / 16 * 16 + 8;
  cuco_t* Ps = reinterpret_cast<cuco_t*>(smem + Cfg::SMEM_B_BYTES);
  for (int i = threadIdx.x; i < Cfg::BM * lds; i += Cfg::THREADS) {
    const int r = i / lds, k = i % lds;
    Ps[i] = m0 + r < M && k < K ? P[(m0 + r) * K + k] : cuco_from_float<cuco_t>(0.f);
  }
  __syncthreads();
  cuco_gemm_acc<Cfg> acc;
  acc.zero();
  cuco_gemm_tile_smem_a<Cfg>(acc, smem, Ps, lds, V + n0, N, N - n0, K);
  cuco_gemm_store_f32(acc, O + m0 * N + n0, N, M - m0, N - n0);
}

__global__ void scalar_gemm(const cuco_t* A, const cuco_t* B, cuco_t* C, int M, int N, int K) {
  const int r = blockIdx.y * blockDim.y + threadIdx.y, c = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= M || c >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += cuco_to_float(A[r * K + k]) * cuco_to_float(B[k * N + c]);
  C[r * N + c] = cuco_from_float<cuco_t>(acc);
}

#define TILE_GEMM(CFG, BL) \
  template __global__ void tile_gemm<CFG, BL>(const cuco_t*, const cuco_t*, const cuco_t*, cuco_t*, int, int, int);
TILE_GEMM(cuco_gemm_large, CUCO_B_KN)
TILE_GEMM(cuco_gemm_large, CUCO_B_NK)
TILE_GEMM(cuco_gemm_small, CUCO_B_KN)
TILE_GEMM(cuco_gemm_small, CUCO_B_NK)
template __global__ void smem_a_gemm<cuco_gemm_large>(const cuco_t*, const cuco_t*, float*, int, int, int);
template __global__ void smem_a_gemm<cuco_gemm_small>(const cuco_t*, const cuco_t*, float*, int, int, int);

extern "C" int cuco_run(const cuco_ctx*, cudaStream_t) { return 0; }
"""


# --------------------------------------------------------------------------- nvcc and SASS


def sass_tool() -> str | None:
    """cuobjdump from PATH or the nvidia-cuda-cuobjdump wheel (the `dev` extra)."""
    found = shutil.which("cuobjdump")
    wheels = [p for root in toolchain.nvidia_roots() for p in root.glob("*/bin/cuobjdump")]
    return found or (str(wheels[0]) if wheels else None)


def hmma_per_kernel(cubin: Path) -> dict[str, int]:
    """Tensor-core MMA instructions (HMMA) in each kernel's SASS."""
    out = subprocess.run([sass_tool(), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    parts = re.split(r"\n\s*Function : (\S+)", out)
    return {name: len(re.findall(r"\bHMMA\b", body)) for name, body in zip(parts[1::2], parts[2::2])}


@functools.lru_cache(maxsize=None)
def nvcc_build(arch: str, dtype: int):
    work = _BUILDS / f"nvcc-{arch}-{dtype}"
    out = build.build(NVCC_KERNELS, arch=arch, comm_backend="symm", dtype_code=dtype, tc=toolchain.toolchain(),
                      cache_dir=work / "cache", work_dir=work / "w")
    assert out.ok, out.log
    return out.stats.kernels, work / "w" / "candidate.cubin"


needs_sass = pytest.mark.skipif(sass_tool() is None,
                                reason="cuobjdump not found: pip install -e '.[dev]' (nvidia-cuda-cuobjdump)")


@needs_sass
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("dtype", [BF16, F16])
def test_tile_builds_to_tensor_core_mma_without_spills(arch, dtype):
    kernels, cubin = nvcc_build(arch, dtype)
    tiles = [k for k in kernels if "tile_gemm" in k.name or "smem_a_gemm" in k.name]
    assert len(tiles) == 6
    for k in tiles:
        assert (k.spill_stores, k.spill_loads, k.stack_bytes) == (0, 0, 0), k
    hmma = hmma_per_kernel(cubin)
    assert all(hmma[k.name] >= 32 for k in tiles), hmma
    assert hmma[next(n for n in hmma if "scalar_gemm" in n)] == 0


@needs_sass
def test_fp32_build_uses_cuda_cores():
    kernels, cubin = nvcc_build("sm_90", F32)
    assert all(k.spill_stores == 0 for k in kernels)
    assert set(hmma_per_kernel(cubin).values()) == {0}


# --------------------------------------------------------------------------- CPU emulator

needs_gxx = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")


@functools.lru_cache(maxsize=None)
def emulator(dtype: int) -> Path:
    work = _BUILDS / f"emu-{dtype}"
    res = shim_build.compile_emulator(CANDIDATE, work, dtype_code=dtype, cache_dir=RUNTIME_CACHE)
    assert res.ok, res.log
    return res.binary


def encode(x: np.ndarray, dtype: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    return {F32: x, F16: x.astype(np.float16).view(np.uint16), BF16: to_bf16_bits(x)}[dtype]


def decode(raw: bytes, dtype: int) -> np.ndarray:
    if dtype == F32:
        return np.frombuffer(raw, dtype=np.float32)
    bits = np.frombuffer(raw, dtype=np.uint16)
    return bits.view(np.float16).astype(np.float32) if dtype == F16 else from_bf16_bits(bits)


def rounded(x: np.ndarray, dtype: int) -> np.ndarray:
    return decode(encode(x, dtype).tobytes(), dtype).reshape(np.shape(x))


def operands(m: int, n: int, k: int, seed: int = 0):
    """Multiples of 1/8 in [-0.5, 0.5]: exact in every dtype, and so is every fp32 partial sum."""
    rng = np.random.default_rng(seed)
    return [(rng.integers(-4, 5, shape) / 8).astype(np.float32) for shape in ((m, k), (k, n), (n,))]


def gemm(tmp, dtype, shape, *, variant=0, act=0, large=False, nk=False, a_off=0):
    m, n, k = shape
    a, b, bias = operands(m, n, k)
    a_in = np.concatenate([np.full(a_off, np.nan, np.float32), a.reshape(-1)])
    inputs = {(0, 0): encode(a_in, dtype), (0, 1): encode(b.T.copy() if nk else b, dtype), (0, 2): encode(bias, dtype)}
    elem = 4 if dtype == F32 or variant in (3, 5) else 2
    outputs = {(0, 0): elem * m * n, **({(0, 1): 4 * m * n} if variant == 5 else {})}
    res = run(emulator(dtype), tmp, inputs=inputs, outputs=outputs, dims=(m, n, k, variant, act, int(large), int(nk),
                                                                         a_off), dtype=dtype)
    return res, a @ b, bias


SHAPES = [(40, 72, 56), (128, 192, 96)]  # ragged M, N and K (K % 32 != 0); whole tiles


@needs_gxx
@pytest.mark.parametrize("dtype", [BF16, F16])
@pytest.mark.parametrize("large", [False, True], ids=["64x64", "128x128"])
@pytest.mark.parametrize("nk", [False, True], ids=["B_KN", "B_NK"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_emulated_tile_matches_numpy(tmp_path, dtype, large, nk, shape):
    res, ref, _ = gemm(tmp_path, dtype, shape, large=large, nk=nk)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(decode(res.outputs[(0, 0)], dtype).reshape(ref.shape), rounded(ref, dtype))


@needs_gxx
@pytest.mark.parametrize("dtype", [F32, BF16])
@pytest.mark.parametrize("nk", [False, True], ids=["B_KN", "B_NK"])
def test_unaligned_operands_and_odd_k(tmp_path, dtype, nk):
    for i, (shape, a_off) in enumerate([((40, 70, 57), 0), ((33, 72, 56), 1)]):
        res, ref, _ = gemm(tmp_path / str(i), dtype, shape, nk=nk, a_off=a_off)
        assert res.returncode == 0, res.stderr
        np.testing.assert_array_equal(decode(res.outputs[(0, 0)], dtype).reshape(ref.shape), rounded(ref, dtype))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(0.7978845608 * (x + 0.044715 * x**3)))


ACTIVATIONS = {0: lambda x: x, 1: lambda x: np.maximum(x, 0), 2: gelu_tanh, 3: lambda x: x / (1 + np.exp(-x))}


@needs_gxx
@pytest.mark.parametrize("act", sorted(ACTIVATIONS), ids=["none", "relu", "gelu_tanh", "silu"])
def test_epilogue_scale_bias_and_activation(tmp_path, act):
    res, ref, bias = gemm(tmp_path, BF16, (40, 72, 56), variant=1, act=act, large=True)
    assert res.returncode == 0, res.stderr
    expect = ACTIVATIONS[act](0.5 * ref + rounded(bias, BF16))
    np.testing.assert_allclose(decode(res.outputs[(0, 0)], BF16).reshape(ref.shape), expect, rtol=2**-7, atol=1e-3)


@needs_gxx
def test_epilogue_accumulates_into_the_output(tmp_path):
    res, ref, _ = gemm(tmp_path, F16, (40, 72, 56), variant=2)
    assert res.returncode == 0, res.stderr
    expect = rounded(rounded(ref, F16) + 2 * ref, F16)
    np.testing.assert_array_equal(decode(res.outputs[(0, 0)], F16).reshape(ref.shape), expect)


@needs_gxx
def test_fp32_store_keeps_the_accumulators(tmp_path):
    res, ref, _ = gemm(tmp_path, BF16, (40, 72, 56), variant=3, nk=True)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(decode(res.outputs[(0, 0)], F32).reshape(ref.shape), ref)


@needs_gxx
@pytest.mark.parametrize("large", [False, True], ids=["64x64", "128x128"])
@pytest.mark.parametrize("nk", [False, True], ids=["B_KN", "B_NK"])
def test_a_operand_in_shared_memory_ignores_its_padding(tmp_path, large, nk):
    res, ref, _ = gemm(tmp_path, BF16, (40, 72, 56), variant=4, large=large, nk=nk)  # K % 16 != 0: NaN read
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(decode(res.outputs[(0, 0)], BF16).reshape(ref.shape), rounded(ref, BF16))


@needs_gxx
@pytest.mark.parametrize("large", [False, True], ids=["64x64", "128x128"])
def test_for_each_visits_every_element_once(tmp_path, large):
    res, ref, _ = gemm(tmp_path, BF16, (72, 136, 40), variant=5, large=large)
    assert res.returncode == 0, res.stderr
    np.testing.assert_array_equal(decode(res.outputs[(0, 0)], F32).reshape(ref.T.shape), ref.T)
    # outputs start as 0xFF bytes (-1): exactly one owner per element leaves 0
    assert np.frombuffer(res.outputs[(0, 1)], dtype=np.int32).tolist() == [0] * ref.size


@needs_gxx
def test_wrong_block_size_traps_with_a_message(tmp_path):
    res, _, _ = gemm(tmp_path, BF16, (40, 72, 56), variant=6)
    assert res.returncode == 2
    assert "cuco_gemm: wrong block size (blockDim has 64 threads, Cfg::THREADS = 128" in res.stderr
