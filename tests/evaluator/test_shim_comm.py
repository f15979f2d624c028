"""Multi-rank runs of the CPU emulator: the cuco comm API over shared memory, epochs, the
deterministic rank order that makes a deleted barrier fail every time, and deadlock reports."""

import shutil
import time

import numpy as np
import pytest

from tests.evaluator.shim_kernels.harness import build, floats, from_bf16_bits, run, to_bf16_bits

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")

SHARD = 64  # floats per rank


def allgather(tmp, variant: tuple[str, ...], world: int, iterations: int = 2):
    shards = {(r, 0): (np.arange(SHARD, dtype=np.float32) + 1000 * r) for r in range(world)}
    res = run(build("allgather", *variant), tmp, world=world, inputs=shards,
              outputs={(r, 0): 4 * SHARD * world for r in range(world)}, dims=(SHARD,), iterations=iterations,
              symm_bytes=4 * SHARD * world)
    expect = np.concatenate([shards[(r, 0)] for r in range(world)])
    return res, expect


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("variant", [(), ("USE_SIGNALS",)], ids=["barrier", "signals"])
def test_allgather_is_exact_over_two_epochs(tmp_path, world, variant):
    res, expect = allgather(tmp_path, variant, world)
    assert res.returncode == 0, res.stderr
    assert f"emu: ok world={world} iterations=2" in res.stdout
    for r in range(world):
        assert floats(res.outputs[(r, 0)]).tolist() == expect.tolist(), f"rank {r}"


@pytest.mark.parametrize("variant", [("NO_SYNC",), ("USE_SIGNALS", "NO_SYNC")], ids=["no-barrier", "no-wait"])
def test_deleted_synchronisation_fails_20_of_20_runs(tmp_path, variant):
    failures = 0
    for k in range(20):
        res, expect = allgather(tmp_path / str(k), variant, world=4)
        assert res.returncode == 0, res.stderr
        outs = [floats(res.outputs[(r, 0)]) for r in range(4)]
        failures += any(not np.array_equal(o, expect) for o in outs)
        # the last call is even, so ranks start in descending order: rank 3 reads its peers' poisoned shards
        assert np.isnan(outs[3]).any()
    assert failures == 20


def back_to_back(tmp, variant: tuple[str, ...], world: int, iterations: int):
    res = run(build("back_to_back", *variant), tmp, world=world, outputs={(r, 0): 8 for r in range(world)},
              iterations=iterations, symm_bytes=4 * world)
    assert res.returncode == 0, res.stderr
    return [floats(res.outputs[(r, 0)]).tolist() for r in range(world)]  # per rank: [bad reads, calls]


@pytest.mark.parametrize("world", [2, 4])
def test_a_store_into_a_peer_still_in_the_previous_call_is_caught_back_to_back(tmp_path, world):
    # two fenced calls cannot show it; the third follows back to back and does, every time
    assert all(bad == 0 for bad, _ in back_to_back(tmp_path / "fenced", (), world, iterations=2))
    for k in range(3):
        seen = back_to_back(tmp_path / str(k), (), world, iterations=3)
        assert all(calls == 3 for _, calls in seen)
        assert sum(bad for bad, _ in seen) > 0


@pytest.mark.parametrize("world", [2, 4])
def test_waiting_for_the_peers_to_enter_the_call_makes_back_to_back_calls_safe(tmp_path, world):
    seen = back_to_back(tmp_path, ("WAIT_ENTERED",), world, iterations=4)
    assert seen == [[0.0, 4.0]] * world


def test_unsent_signal_is_reported_as_deadlock(tmp_path):
    start = time.monotonic()
    res = run(build("faults", "FAULT_DEADLOCK"), tmp_path, world=2, stall_seconds=1, timeout_s=30)
    assert res.returncode == 3, res.stderr
    assert time.monotonic() - start < 10
    assert "deadlock: rank 0 block (0,0,0) thread (0,0,0): cuco_wait slot 7 have 0 want 1" in res.stderr
    assert "deadlock: rank 0 block (1,0,0) thread (1,0,0): __syncthreads slot -1 have 63 want 64" in res.stderr
    assert "deadlock: rank 1 host: harness barrier" in res.stderr
    assert "emu: failed code=3" in res.stdout


def gemm_case(world: int, m: int = 96, n: int = 64, k: int = 64, seed: int = 0):
    rng = np.random.default_rng(seed)
    a = from_bf16_bits(to_bf16_bits(rng.standard_normal((m, k)).astype(np.float32)))
    b = from_bf16_bits(to_bf16_bits(rng.standard_normal((k, n)).astype(np.float32)))
    rows = m // world
    inputs = {}
    for r in range(world):
        inputs[(r, 0)] = to_bf16_bits(a[r * rows : (r + 1) * rows])
        inputs[(r, 1)] = to_bf16_bits(b)
    return a @ b, inputs


@pytest.mark.parametrize("world", [2, 4])
def test_allgather_gemm_candidate(tmp_path, world):
    m, n, k = 96, 64, 64
    ref, inputs = gemm_case(world, m, n, k)
    binary = build("ag_gemm", dtype=2)
    res = run(binary, tmp_path, world=world, inputs=inputs, outputs={(r, 0): 2 * m * n for r in range(world)},
              dims=(m, n, k), symm_bytes=2 * m * k, dtype=2, num_sms=8)
    assert res.returncode == 0, res.stderr
    for r in range(world):
        out = from_bf16_bits(np.frombuffer(res.outputs[(r, 0)], dtype=np.uint16)).reshape(m, n)
        np.testing.assert_allclose(out, ref, rtol=2e-2, atol=5e-2)
    print(f"\nall-gather + GEMM run on {world} ranks (2 iterations, compile excluded): {res.seconds:.3f} s")
    assert res.seconds < 5.0
