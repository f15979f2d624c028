"""A family whose canonical reference names an ``OPTIONAL_BATCH_DIM`` (the DeepSpeed-Ulysses
all-to-alls: ``b``) takes a user's workload written without that leading axis as batch 1: the
semantic check matches it with the batch pinned like a flag, and the spec's adapter drops the axis
before the user's code and puts it back after. Specs of other workloads are written as before."""

import shutil
from pathlib import Path

import pytest
import torch

from cuco.semantic_check import check_workload
from cuco.workload_adapter import Adapter, adapter_text
from design_space.errors import SpecError

USER = Path(__file__).resolve().parents[1] / "user_workloads" / "ulysses_all_to_all.py"  # x [S/n, H, D]


def test_the_adapter_names_unbatched_only_when_it_is_set():
    plain = adapter_text(family="allgather_gemm", order=(0, 1), reference=None, inputs=None)
    assert "unbatched" not in plain and plain.endswith("inputs=None)\nmake_inputs, reference = _A.make_inputs, "
                                                      "_A.reference\n")
    text = adapter_text(family="ulysses_seq_to_head", order=(0,), reference=None, inputs=None, unbatched=True)
    assert "order=(0,), reference=None, inputs=None, unbatched=True)" in text
    compile(text, "cuco_workload.py", "exec")


def test_the_semantic_check_reads_a_workload_without_the_batch_axis_as_batch_one():
    verdict = check_workload(USER, families=["ulysses_seq_to_head"])
    assert verdict.match is not None, verdict.diagnosis()
    m = verdict.match
    assert (m.family, m.unbatched, m.variant, m.order) == ("ulysses_seq_to_head", True, {"b": 1}, (0,))
    assert m.dims == {"b": 1, "s": 32, "h": 8, "d": 8}


def test_the_adapter_hands_the_user_code_its_own_layout(tmp_path, one_rank):
    shutil.copyfile(USER, tmp_path / "reference.py")
    adapter = Adapter(str(tmp_path / "cuco_workload.py"), family="ulysses_seq_to_head", order=(0,), unbatched=True)
    dims = {"b": 1, "s": 8, "h": 2, "d": 4}
    inputs = adapter.make_inputs(dims, 0, 1, torch.float32, torch.Generator().manual_seed(0))
    assert tuple(inputs["x"].shape) == (1, 8, 2, 4)
    out = adapter.reference(inputs, dims, one_rank)["y"]
    assert torch.equal(out, inputs["x"])  # one rank: the exchange is the identity, batch axis restored
    batched = adapter.make_inputs({**dims, "b": 2}, 0, 1, torch.float32, torch.Generator().manual_seed(0))
    with pytest.raises(SpecError, match="takes no batch axis"):
        adapter.reference(batched, {**dims, "b": 2}, one_rank)
