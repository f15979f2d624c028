"""The comm API's GIN, multimem, copy-engine and library-collective calls in the CPU emulator:
exact results over two epochs, and the GIN emulation's faithfulness (a put lands late, so a
consumer that does not wait, or a producer that reuses its source before flushing, fails)."""

import shutil

import numpy as np
import pytest

from tests.evaluator.shim_kernels.harness import build, floats, run

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")

N = 32  # floats per rank


def inputs(world: int) -> dict:
    return {(r, 0): (np.arange(N, dtype=np.float32) * (r + 1) + 100 * r) for r in range(world)}


def launch(tmp, variant: tuple[str, ...], world: int, out_floats: int):
    res = run(build("comm_api", *variant), tmp, world=world, inputs=inputs(world),
              outputs={(r, 0): 4 * out_floats for r in range(world)}, dims=(N,), symm_bytes=4 * N * (world + 1))
    assert res.returncode == 0, res.stderr
    return [floats(res.outputs[(r, 0)]) for r in range(world)]


@pytest.mark.parametrize("world", [2, 4])
@pytest.mark.parametrize("variant", [("GIN_AG",), ("CE_AG",), ("COLL_AG",), ("GIN_AG", "GIN_REUSE", "GIN_FLUSH")],
                         ids=["gin", "copy-engine", "coll", "gin-flush-then-reuse"])
def test_allgathers_are_exact(tmp_path, world, variant):
    expect = np.concatenate([inputs(world)[(r, 0)] for r in range(world)])
    for r, out in enumerate(launch(tmp_path, variant, world, N * world)):
        if "GIN_REUSE" in variant:  # the rank's own block is the source it overwrote after flushing
            expect_r = expect.copy()
            expect_r[r * N:(r + 1) * N] = -1.0
            assert out.tolist() == expect_r.tolist(), f"rank {r}"
        else:
            assert out.tolist() == expect.tolist(), f"rank {r}"


@pytest.mark.parametrize("variant", [("GIN_AG", "GIN_NO_WAIT"), ("CE_AG", "CE_NO_WAIT")], ids=["gin", "copy-engine"])
def test_a_missing_wait_reads_unlanded_data_every_time(tmp_path, variant):
    expect = np.concatenate([inputs(4)[(r, 0)] for r in range(4)])
    for k in range(5):
        outs = launch(tmp_path / str(k), variant, 4, N * 4)
        assert np.isnan(outs[0]).any(), "rank 0 read peers' data before it landed: must be the poison"
        assert not all(np.array_equal(o, expect) for o in outs)


def test_gin_source_reused_before_flush_delivers_the_new_bytes(tmp_path):
    outs = launch(tmp_path, ("GIN_AG", "GIN_REUSE"), 2, N * 2)
    assert (outs[0][N:] == -1.0).all(), "rank 1's put was delivered after it overwrote its source"


@pytest.mark.parametrize("world", [2, 4])
def test_multimem_and_library_reductions_sum_over_ranks(tmp_path, world):
    total = sum(inputs(world).values())
    for out in launch(tmp_path / "mm", ("MM_AR",), world, N):
        np.testing.assert_allclose(out, total)
    for out in launch(tmp_path / "ar", ("COLL_AR",), world, N):
        np.testing.assert_allclose(out, total)
    block = N // world
    for r, out in enumerate(launch(tmp_path / "rs", ("COLL_RS",), world, block)):
        np.testing.assert_allclose(out, total[r * block:(r + 1) * block])


@pytest.mark.parametrize("world", [2, 4])
def test_multimem_broadcast_and_point_to_point_moves(tmp_path, world):
    for out in launch(tmp_path / "bc", ("MM_BCAST",), world, N):
        assert out.tolist() == (2.0 * np.arange(N) + 1).tolist()
    ins, block = inputs(world), N // world
    for r, out in enumerate(launch(tmp_path / "a2a", ("COLL_A2A",), world, N)):
        expect = np.concatenate([ins[(p, 0)][r * block:(r + 1) * block] for p in range(world)])
        assert out.tolist() == expect.tolist()
    for r, out in enumerate(launch(tmp_path / "sr", ("COLL_SR",), world, N)):
        assert out.tolist() == ins[((r - 1) % world, 0)].tolist()


@pytest.mark.parametrize("backend", ["nccl", "symm"])
@pytest.mark.parametrize("variant", ["GIN_AG", "MM_AR", "COLL_A2A"])
def test_the_same_calls_build_for_gpus_with_nvcc(tmp_path, backend, variant):
    """GIN on ncclGin, multimem PTX (sm_90, bf16 pairs), NCCL host collectives: nvcc accepts them."""
    from evaluator import build, toolchain
    from tests.evaluator.shim_kernels.harness import KERNELS
    source = f"#define {variant}\n" + (KERNELS / "comm_api.cu").read_text()
    res = build.build(source, arch="sm_90", comm_backend=backend, dtype_code=2, tc=toolchain.toolchain(),
                      cache_dir=tmp_path / "cache", work_dir=tmp_path / "work", timeout_s=300)
    assert res.ok, res.log[-2000:]
