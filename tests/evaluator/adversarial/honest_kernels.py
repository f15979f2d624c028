"""Honest candidates written from scratch against the device contract alone (a complete .cu with
`#include "cuco_comm.h"`, evolve-block markers and `extern "C" int cuco_run(...)`), one per workload
the adversarial suite attacks. They depend on no template text, so the hostile kernels built from
them (kernels.py) keep meaning the same thing whatever the template families become.

Each honest kernel is one CTA that publishes this rank's share through the comm API (puts into
every peer's symmetric buffer, then a signal per peer; or a barrier), waits, and computes its
output in fp32, rounding once. Hostile variants fill the hooks:

- ``prelude``: file-scope code inside the evolve block, before the kernel;
- ``kernel_top``: the first statements of the kernel (``c``, ``rank``, ``world`` and the dims bound);
- ``host_top``: the first statements of ``cuco_run`` (``c`` bound);
- ``publish`` / ``signal``: the statements that give this rank's share to ``peer`` / signal it;
- ``store``: the statement that writes one output element ``out[i] = value``;
- ``launch``: the launch statement in ``cuco_run``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

import design_space as ds

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
ENTRY = 'extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {'
FIRST_LINE = "  const cuco_ctx& c = *ctx;"

_FRAME = """// cuco adversarial suite: ${title}
// written against the device contract only (README.md "The device contract").
#include "cuco_comm.h"

// Frozen: how one rank reads the contract's dims.
static __host__ __device__ __forceinline__ int64_t dim(const cuco_ctx& c, int i) { return c.dims[i]; }

// EVOLVE-BLOCK-START
#define THREADS 128
${prelude}
static __global__ void __launch_bounds__(THREADS) work(cuco_ctx c) {
  const int rank = c.rank, world = c.world;
${dims}
${kernel_top}
${body}
}

""" + ENTRY + """
""" + FIRST_LINE + """
${host_top}
  ${launch}
  return (int)cudaGetLastError();
}
// EVOLVE-BLOCK-END
"""

_LAUNCH = "work<<<1, THREADS, 0, stream>>>(c);"

# Publish: once every peer entered this call, this rank's share goes into every rank's symmetric
# buffer (its own included), then one signal per rank; everyone waits for all `world` signals of
# this call (signals count up).
_GATHER = """  if (threadIdx.x == 0) {  // calls run back to back: every peer is done reading the last call's shares
    cuco_enter(c);
    cuco_wait_all_entered(c);
  }
  __syncthreads();
  for (int peer = 0; peer < world; ++peer) {
    ${publish}
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int peer = 0; peer < world; ++peer) { ${signal} }
    cuco_wait(c, 0, (uint64_t)world * c.epoch);
  }
  __syncthreads();"""
_PUBLISH = "cuco_put_cta(c, peer, (size_t)rank * share, mine, share);"
_SIGNAL = "cuco_signal_add(c, peer, 0, 1);"
_STORE = "out[i] = cuco_from_float<cuco_t>(value);"

# allgather_gemm: C_r [M, N/n] = allgather(A) [M, K] @ B_r [K, N/n].
_ALLGATHER_GEMM = """  const int64_t shard = M / world, Nl = N / world;
  const size_t share = (size_t)shard * K * sizeof(cuco_t);
  const void* mine = c.in[0];
${gather}
  const cuco_t* A = static_cast<const cuco_t*>(c.symm);
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  for (int64_t i = threadIdx.x; i < M * Nl; i += blockDim.x) {
    const int64_t row = i / Nl, col = i % Nl;
    float value = 0.f;
    for (int64_t k = 0; k < K; ++k) value += cuco_to_float(A[row * K + k]) * cuco_to_float(B[k * Nl + col]);
    ${store}
  }"""

# gemm_allreduce: Y = sum_r A_r [M, K/n] @ B_r [K/n, N] on every rank (RMSNorm(Y) * gamma when
# rmsnorm == 1, Y + gamma when rmsnorm == 3). Each rank's fp32 partial sits in its own symmetric buffer; a barrier; every rank
# reads all partials through cuco_peer.
_GEMM_ALLREDUCE = """  const int64_t Kl = K / world;
  const cuco_t* A = static_cast<const cuco_t*>(c.in[0]);
  const cuco_t* B = static_cast<const cuco_t*>(c.in[1]);
  const cuco_t* gamma = static_cast<const cuco_t*>(c.in[2]);
  float* part = static_cast<float*>(c.symm);
  for (int64_t i = threadIdx.x; i < M * N; i += blockDim.x) {
    const int64_t row = i / N, col = i % N;
    float acc = 0.f;
    for (int64_t k = 0; k < Kl; ++k) acc += cuco_to_float(A[row * Kl + k]) * cuco_to_float(B[k * N + col]);
    part[i] = acc;
  }
  cuco_barrier(c, 0);
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  for (int64_t row = threadIdx.x; row < M; row += blockDim.x) {
    float ss = 0.f;
    for (int64_t col = 0; col < N; ++col) {
      float y = 0.f;
      for (int p = 0; p < world; ++p) y += static_cast<const float*>(cuco_peer(c, p))[row * N + col];
      ss += y * y;
    }
    const float scale = NORM == 1 ? rsqrtf(ss / (float)N + 1e-6f) : 1.f;
    for (int64_t col = 0; col < N; ++col) {
      float y = 0.f;
      for (int p = 0; p < world; ++p) y += static_cast<const float*>(cuco_peer(c, p))[row * N + col];
      const int64_t i = row * N + col;
      const float value = NORM == 1 ? y * scale * cuco_to_float(gamma[col])
                          : NORM == 3 ? y + cuco_to_float(gamma[col]) : y;
      ${store}
    }
  }
  cuco_barrier(c, 1);"""

# ring_attention: O_r = softmax(Q_r K^T / sqrt(D)) V over every rank's K and V (causal when mask
# == 2); Q, K, V are [H, S/n, D]. Slot p of every symmetric buffer holds rank p's K then V; the
# fp32 accumulator of each query row lives in the workspace.
_RING_ATTENTION = """  const int64_t Sl = S / world, block = H * Sl * D;
  const size_t share = 2 * (size_t)block * sizeof(cuco_t);
  cuco_t* pack = static_cast<cuco_t*>(c.workspace);
  for (int64_t i = threadIdx.x; i < block; i += blockDim.x) {
    pack[i] = static_cast<const cuco_t*>(c.in[1])[i];
    pack[block + i] = static_cast<const cuco_t*>(c.in[2])[i];
  }
  __syncthreads();
  const void* mine = pack;
${gather}
  const cuco_t* Q = static_cast<const cuco_t*>(c.in[0]);
  const cuco_t* KV = static_cast<const cuco_t*>(c.symm);
  float* acc = reinterpret_cast<float*>(pack + 2 * block);
  cuco_t* out = static_cast<cuco_t*>(c.out[0]);
  const float scale = rsqrtf((float)D);
  for (int64_t r = threadIdx.x; r < H * Sl; r += blockDim.x) {
    const int64_t h = r / Sl, qpos = rank * Sl + r % Sl;
    const cuco_t* q = Q + r * D;
    float m = -1e30f, l = 0.f;
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t d = 0; d < D; ++d) acc[r * D + d] = 0.f;
      for (int64_t j = 0; j < S; ++j) {
        if (MASK == 2 && j > qpos) break;
        const cuco_t* k = KV + (j / Sl) * 2 * block + (h * Sl + j % Sl) * D;
        const cuco_t* v = k + block;
        float s = 0.f;
        for (int64_t d = 0; d < D; ++d) s += cuco_to_float(q[d]) * cuco_to_float(k[d]);
        s *= scale;
        if (pass == 0) {
          const float nm = s > m ? s : m;
          l = l * expf(m - nm) + expf(s - nm);
          m = nm;
        } else {
          const float p = expf(s - m) / l;
          for (int64_t d = 0; d < D; ++d) acc[r * D + d] += p * cuco_to_float(v[d]);
        }
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = r * D + d;
      const float value = acc[i];
      ${store}
    }
  }"""


@dataclass(frozen=True)
class Workload:
    name: str  # the example folder and pattern
    title: str
    dims: str  # C++ binding the kernel's dims
    body: str
    uses_gather: bool
    dim_keys: tuple[str, ...]  # the spec's names of dims[0], dims[1]...

    @property
    def spec_dir(self) -> Path:
        return EXAMPLES / self.name

    def spec(self) -> ds.KernelSpec:
        from cuco.spec_loader import load_spec
        return load_spec(self.spec_dir)

    def render(self, *, prelude: str = "", kernel_top: str = "", host_top: str = "", publish: str = _PUBLISH,
               signal: str = _SIGNAL, store: str = _STORE, launch: str = _LAUNCH) -> str:
        gather = Template(_GATHER).substitute(publish=publish, signal=signal) if self.uses_gather else ""
        body = Template(self.body).substitute(gather=gather, store=store)
        return Template(_FRAME).substitute(title=self.title, prelude=prelude, dims=self.dims, kernel_top=kernel_top,
                                           body=body, host_top=host_top, launch=launch)


ALLGATHER_GEMM = Workload(
    "allgather_gemm", "allgather_gemm, C_r = allgather(A) @ B_r, puts + signals",
    "  const int64_t M = dim(c, 0), N = dim(c, 1), K = dim(c, 2);", _ALLGATHER_GEMM, True, ("m", "n", "k"))
GEMM_ALLREDUCE = Workload(
    "gemm_allreduce", "gemm_allreduce, Y = sum_r A_r @ B_r (+ RMSNorm), partials read through cuco_peer",
    "  const int64_t M = dim(c, 0), N = dim(c, 1), K = dim(c, 2), NORM = dim(c, 3);", _GEMM_ALLREDUCE, False,
    ("m", "n", "k", "rmsnorm"))
RING_ATTENTION = Workload(
    "ring_attention", "ring_attention, every rank's K and V put into every symmetric buffer",
    "  const int64_t H = dim(c, 0), S = dim(c, 1), D = dim(c, 2), MASK = dim(c, 3);", _RING_ATTENTION, True,
    ("h", "s", "d", "mask"))
WORKLOADS = {w.name: w for w in (ALLGATHER_GEMM, GEMM_ALLREDUCE, RING_ATTENTION)}


def honest(workload: str = "allgather_gemm") -> str:
    return WORKLOADS[workload].render()
