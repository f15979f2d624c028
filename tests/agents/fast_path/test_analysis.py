"""The fast path's analyze step: a host-driven seed or the spec's reference, summarised."""

from pathlib import Path

from design_space import get_pattern
from agents.fast_path.analysis import analyse, reference_file

ROOT = Path(__file__).resolve().parents[3]
SEED = ROOT / "examples" / "seeds" / "allgather_gemm_host.cu"


def test_the_allgather_gemm_seed_shows_its_collective_buffers_and_the_kernel_that_depends_on_them(example_spec):
    text = analyse(example_spec, get_pattern(example_spec.pattern), SEED.read_text())
    assert "collectives in order: ncclAllGather (line 60, stream streams[r], grouped)" in text
    assert "kernels launched: naive_gemm" in text
    assert "device buffers allocated: a_shard, a_full, b, c" in text
    assert "ncclAllGather (line 60) moves a_shard -> a_full; later read by the kernel(s) naive_gemm" in text
    assert "ctx.in = [a, b, bias]; ctx.out = [c]" in text


def test_without_a_seed_the_references_torch_distributed_calls_are_read(example_spec):
    assert reference_file(example_spec).name == "reference.py"
    text = analyse(example_spec, get_pattern(example_spec.pattern), None)
    assert "torch.distributed calls in reference and its helpers: all_gather (allgather, line" in text


def test_a_reference_off_the_search_path_is_said_not_found(example_spec):
    spec = example_spec.model_copy(update={"search_path": ("/nonexistent",)})
    text = analyse(spec, get_pattern(spec.pattern), None)
    assert "source not found on the spec's search path" in text
