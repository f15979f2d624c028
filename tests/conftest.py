"""Suite-wide fixtures: one shared, content-keyed cache (builds, emulator runtime, reference data)
so tests do not redo the same nvcc builds and gloo reference runs, and never touch ~/.cache."""

import os
from pathlib import Path

import pytest

import kernels  # noqa: F401  (registers the built-in kernel templates for tests that render)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "allgather_gemm"


@pytest.fixture(scope="session", autouse=True)
def shared_cache(tmp_path_factory):
    path = Path(os.environ.get("CUCO_TEST_CACHE") or tmp_path_factory.mktemp("cuco-cache"))
    old = os.environ.get("CUCO_CACHE_DIR")
    os.environ["CUCO_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("CUCO_CACHE_DIR", None)
    else:
        os.environ["CUCO_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def example_spec():
    from cuco.spec_loader import load_spec
    return load_spec(EXAMPLE)


@pytest.fixture(scope="session")
def example_evaluator(example_spec, shared_cache):
    from evaluator.cascade import Evaluator, EvaluatorConfig
    from evaluator.emulate import EmulationSettings
    ev = Evaluator(example_spec, EvaluatorConfig(cache_dir=shared_cache, emulation=EmulationSettings(timeout_s=20)))
    ev.prepare()
    return ev


@pytest.fixture(scope="session")
def has_cuda_gpu():
    return _has_cuda_gpu()


def _has_cuda_gpu() -> bool:
    """Computed once: no /dev/nvidia* means no GPU without importing torch."""
    global _CUDA
    if _CUDA is None:
        import glob
        _CUDA = False
        if glob.glob("/dev/nvidia[0-9]*"):
            import torch
            _CUDA = bool(torch.cuda.is_available())
    return _CUDA


_CUDA = None


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not _has_cuda_gpu():
        skip = pytest.mark.skip(reason="needs a CUDA GPU (none found)")
        for item in gpu_items:
            item.add_marker(skip)
