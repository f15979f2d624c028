"""Single-rank CUDA semantics in the CPU emulator: shared memory, barriers, warps, atomics,
dynamic shared memory, launch forms, streams/events and 16-bit float conversions."""

import shutil

import numpy as np
import pytest

from tests.evaluator.shim_kernels.harness import build, floats, from_bf16_bits, run, to_bf16_bits

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")


def test_block_reduction_with_shared_memory_and_barriers(tmp_path):
    n, blocks = 4096, 4
    x = (np.arange(n) % 7).astype(np.float32)  # small integers: float sums are exact
    x[::13] = 0.0
    res = run(build("block_reduce"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * 2 * blocks},
              dims=(n, blocks))
    assert res.returncode == 0, res.stderr
    out = floats(res.outputs[(0, 0)])
    idx = np.arange(n)
    expect_sums = [x[(idx // 128) % blocks == b].sum() for b in range(blocks)]
    per_thread = np.zeros((blocks, 128))
    for i in range(n):
        per_thread[(i // 128) % blocks, i % 128] += x[i]
    assert out[:blocks].tolist() == expect_sums
    assert out[blocks:].tolist() == [float((per_thread[b] != 0).sum()) for b in range(blocks)]


def test_block_reduction_without_barriers_is_wrong(tmp_path):
    n, blocks = 4096, 4
    x = np.ones(n, dtype=np.float32)
    res = run(build("block_reduce", "NO_SYNC"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * 2 * blocks},
              dims=(n, blocks))
    assert res.returncode == 0, res.stderr
    assert floats(res.outputs[(0, 0)])[:blocks].tolist() != [1024.0] * blocks


def test_warp_shuffles_votes_and_scan(tmp_path):
    x = np.random.default_rng(1).integers(-20, 120, 192).astype(np.float32)
    res = run(build("warp_ops"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * (192 + 18), (0, 1): 4 * 24})
    assert res.returncode == 0, res.stderr
    out = floats(res.outputs[(0, 0)])
    votes = np.frombuffer(res.outputs[(0, 1)], dtype=np.uint32).reshape(6, 4)
    warps = x.reshape(6, 32)
    assert out[:192].tolist() == np.cumsum(warps, axis=1).reshape(-1).tolist()
    per_warp = out[192:].reshape(6, 3)
    assert per_warp[:, 0].tolist() == warps.sum(axis=1).tolist()  # shfl_down: lane 0
    assert per_warp[:, 1].tolist() == warps.sum(axis=1).tolist()  # shfl_xor: every lane, lane 5 checked
    assert per_warp[:, 2].tolist() == warps[:, 3].tolist()       # broadcast from lane 3
    for w in range(6):
        ballot = sum(1 << lane for lane in range(32) if warps[w, lane] > 0)
        assert votes[w].tolist() == [ballot, int((warps[w] > 100).any()), 1, sum(range(32))]


def test_atomics_across_blocks_and_a_spin_lock(tmp_path):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    res = run(build("atomics"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * 7}, dims=(n,))
    assert res.returncode == 0, res.stderr
    out = np.frombuffer(res.outputs[(0, 0)], dtype=np.int32)
    locked = sum(1 for i in range(n) if (i % 64) % 8 == 0)
    assert out.tolist() == [n, n - 1, 0, -1, int(x.sum()), locked, n]


def test_dynamic_shared_memory_with_2d_blocks(tmp_path):
    width, height = 32, 24
    x = np.arange(width * height, dtype=np.float32)
    res = run(build("dyn_smem"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * (width * height + 6 * 64)})
    assert res.returncode == 0, res.stderr
    out = floats(res.outputs[(0, 0)])
    img = x.reshape(height, width)
    rev, tr = out[: width * height].reshape(height, width), out[width * height :].reshape(6, 8, 8)
    for by in range(3):
        for bx in range(2):
            tile = img[by * 8 : by * 8 + 8, bx * 16 : bx * 16 + 16]
            assert rev[by * 8 : by * 8 + 8, bx * 16 : bx * 16 + 16].tolist() == tile[::-1, ::-1].tolist()
            assert tr[by * 2 + bx].tolist() == tile[:8, :8].T.tolist()


def test_template_launch_forms_and_launch_errors(tmp_path):
    n = 100
    x = np.arange(n, dtype=np.float32)
    res = run(build("templates"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * (n + 32)}, dims=(n,))
    assert res.returncode == 0, res.stderr
    out = floats(res.outputs[(0, 0)])
    assert out[:n].tolist() == (x * 3 + 1).tolist()
    assert out[n : n + 16].tolist() == [7.0] * 16 and out[n + 16 :].tolist() == [9.0] * 16


def test_streams_and_events_order_the_consumer(tmp_path):
    n = 500
    x = np.arange(n, dtype=np.float32)
    res = run(build("streams"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * n, (0, 1): 4 * n}, dims=(n,),
              workspace_bytes=4 * n)
    assert res.returncode == 0, res.stderr
    assert floats(res.outputs[(0, 0)]).tolist() == (x * 2 + 2).tolist()
    assert floats(res.outputs[(0, 1)]).tolist() == (x * 2 + 1).tolist()


def test_missing_event_wait_is_caught(tmp_path):
    n = 500
    x = np.arange(n, dtype=np.float32)
    res = run(build("streams", "NO_WAIT"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 4 * n, (0, 1): 4 * n},
              dims=(n,),
              workspace_bytes=4 * n)
    assert res.returncode == 0, res.stderr
    assert np.isnan(floats(res.outputs[(0, 0)])).all()  # read the poisoned workspace


def test_half_and_bfloat16_round_to_nearest_even(tmp_path):
    specials = [0.0, -0.0, 1.0, 65504.0, 65519.99, 65520.0, 1e6, -1e6, 6e-8, 3e-8, 2.98e-8, 5.96e-8, 1e-5,
                np.inf, -np.inf, np.nan, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11, 1.0 + 2.0**-8, 1.0 + 3 * 2.0**-8]
    rng = np.random.default_rng(7)
    x = np.concatenate([np.array(specials, dtype=np.float32), rng.standard_normal(300).astype(np.float32) * 100,
                        rng.standard_normal(100).astype(np.float32) * 1e-6]).astype(np.float32)
    n = len(x)
    res = run(build("convert"), tmp_path, inputs={(0, 0): x}, outputs={(0, 0): 8 * n}, dims=(n,))
    assert res.returncode == 0, res.stderr
    raw = res.outputs[(0, 0)]
    h = np.frombuffer(raw[: 2 * n], dtype=np.float16)
    b = np.frombuffer(raw[2 * n : 4 * n], dtype=np.uint16)
    back = np.frombuffer(raw[4 * n :], dtype=np.float32)
    with np.errstate(over="ignore"):
        expect_h = x.astype(np.float16)
    assert (h.view(np.uint16)[~np.isnan(x)] == expect_h.view(np.uint16)[~np.isnan(x)]).all()
    assert np.isnan(h[np.isnan(x)]).all() and np.isnan(from_bf16_bits(b[np.isnan(x)])).all()
    assert (b[~np.isnan(x)] == to_bf16_bits(x)[~np.isnan(x)]).all()
    with np.errstate(invalid="ignore"):
        expect_back = expect_h.astype(np.float32) + from_bf16_bits(to_bf16_bits(x))
    assert np.array_equal(back, expect_back, equal_nan=True)


def test_schedule_is_adversarial_and_reproducible(tmp_path):
    runs = [run(build("order"), tmp_path / str(k), outputs={(0, 0): 4 * 24}, iterations=1) for k in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].outputs == runs[1].outputs
    order = np.frombuffer(runs[0].outputs[(0, 0)], dtype=np.int32).reshape(2, 3, 4)  # launch, block, thread
    assert order[1].max() < order[0].min()  # the later launch (on another stream) runs first
    assert order[1, 2].max() < order[1, 1].min() < order[1, 1].max() < order[1, 0].min()  # highest block first
    assert (np.diff(order[1, 2]) > 0).all()  # threads of a block in ascending order
