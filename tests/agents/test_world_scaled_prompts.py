"""The agents' prompt context shows a dim of the world size as written (``k=64*n``) and says that
the code reads its value from ctx.dims; an int-only spec's text is unchanged."""

from pathlib import Path

import design_space as ds
from agents.fast_path.analysis import analyse
from agents.slow_path.context import spec_text
from cuco.spec_loader import load_spec
from design_space.dim_expr import WORLD_NOTE

ROOT = Path(__file__).resolve().parents[2]


def _specs():
    spec = load_spec(ROOT / "examples" / "gemm_reducescatter")
    data = {**spec.model_dump(), "primary_shape": None,
            "shapes": [{"name": "user", "dims": {"m": 64, "n": 48, "k": "64*n"}}],
            "emulation_shapes": [{"name": "emu", "dims": {"m": 8, "n": 16, "k": "4*n"}}]}
    return spec, ds.KernelSpec.model_validate(data)


def test_prompts_show_the_expression_and_where_its_value_lives():
    fixed, scaled = _specs()
    pattern = ds.get_pattern(scaled.pattern)
    text = spec_text(scaled, pattern)
    assert "user: m=64, n=48, k=64*n" in text and WORLD_NOTE in text
    assert "'k': '4*n'" in analyse(scaled, pattern, None) and WORLD_NOTE in analyse(scaled, pattern, None)
    assert WORLD_NOTE not in spec_text(fixed, pattern) + analyse(fixed, pattern, None)
    assert "prefill-m4096: m=4096, n=8192, k=28672" in spec_text(fixed, pattern)
