"""A weight kept as ``nn.Linear`` keeps it, [out, in], and applied with ``F.linear`` is the family's
[in, out] operand transposed: the semantic check reads it so (and only when the outputs then agree),
the spec's adapter hands the user's code the transposed tensor, and ``cuco init`` says which input
the kernel takes in the family's layout."""

import shutil
from pathlib import Path

import pytest
import torch

from cuco.semantic_check import check_workload
from cuco.workload_adapter import Adapter, adapter_text

WORKLOADS = Path(__file__).resolve().parents[1] / "user_workloads"
USER = WORKLOADS / "linear_weight_layout.py"  # x [M/n, K], weight [N/n, K]: F.linear(all_gather(x), weight)

SQUARE = """
import torch
import torch.distributed as dist
import torch.nn.functional as F


def solution(x, weight):
    parts = [torch.empty_like(x) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, x.contiguous())
    return APPLY


def get_inputs():
    return [torch.randn(32 // dist.get_world_size(), 16), torch.randn(16, 16) / 4]
"""


def test_the_semantic_check_reads_an_nn_linear_weight_transposed():
    verdict = check_workload(USER, families=["allgather_gemm"])
    assert verdict.match is not None, verdict.diagnosis()
    m = verdict.match
    assert (m.family, m.order, m.transposed) == ("allgather_gemm", (0, 1, None), (1,))  # no bias
    assert m.variant == {"bias": 2}
    assert (m.dims["m"], m.dims["k"], m.dims["n"]) == (32, 64, 96)


def test_every_weight_of_an_mlp_in_linear_layout_is_read_transposed_and_the_activations_are_not():
    verdict = check_workload(WORKLOADS / "megatron_mlp_linear_layout.py", families=["tp_mlp"])
    assert verdict.match is not None, verdict.diagnosis()
    assert (verdict.match.transposed, verdict.match.variant) == ((1, 2, 3), {"act": 3})


@pytest.mark.parametrize("apply, transposed", [("F.linear(torch.cat(parts), weight)", (1,)),
                                               ("torch.cat(parts) @ weight", ())])
def test_a_square_weight_that_fits_both_ways_is_read_the_way_the_outputs_agree(apply, transposed, tmp_path):
    path = tmp_path / "square.py"  # weight [16, 16] per rank: K = 16 and N/n = 16 read either way
    path.write_text(SQUARE.replace("APPLY", apply))
    verdict = check_workload(path, families=["allgather_gemm"])
    assert verdict.match is not None, verdict.diagnosis()
    assert verdict.match.transposed == transposed
    assert (verdict.match.dims["k"], verdict.match.dims["n"]) == (16, "16*n")


def test_the_adapter_transposes_only_the_inputs_it_names(tmp_path):
    plain = adapter_text(family="allgather_gemm", order=(0, 1), reference=None, inputs=None)
    assert "transposed" not in plain
    text = adapter_text(family="allgather_gemm", order=(0, 1), reference="solution", inputs=None, transposed=(1,))
    assert text.count("transposed=(1,)") == 1
    compile(text, "cuco_workload.py", "exec")


def test_the_adapter_gives_the_users_code_its_weight_layout_and_gets_the_familys_result(tmp_path, one_rank):
    shutil.copyfile(USER, tmp_path / "reference.py")
    adapter = Adapter(str(tmp_path / "cuco_workload.py"), family="allgather_gemm", order=(0, 1),
                      reference=None, transposed=(1,))
    dims = {"m": 8, "n": 12, "k": 16}
    inputs = adapter.make_inputs(dims, 0, 1, torch.float32, torch.Generator().manual_seed(0))
    a, b = inputs["a"], inputs["b"]
    out = next(iter(adapter.reference(inputs, dims, one_rank).values()))
    torch.testing.assert_close(out, a @ b)  # F.linear(a, b.t()) is a @ b: the family's result
    untransposed = Adapter(str(tmp_path / "cuco_workload.py"), family="allgather_gemm", order=(0, 1),
                           reference=None)
    with pytest.raises(RuntimeError):  # F.linear of [8, 16] by a [16, 12] weight: shapes disagree
        untransposed.reference(inputs, dims, one_rank)
