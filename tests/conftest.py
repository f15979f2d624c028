"""Suite-wide fixtures: one shared, content-keyed cache (builds, emulator runtime, reference data)
so tests do not redo the same nvcc builds and gloo reference runs, and never touch ~/.cache."""

import os
import pwd
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from tests import postgres_server

PG_ENV = "CUCO_TEST_POSTGRES_URL"

import kernels  # noqa: F401  (registers the built-in kernel templates for tests that render)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "allgather_gemm"


@pytest.fixture(scope="module", autouse=True)
def pattern_registry_restored():
    """A spec loaded in-process (a traced one registers its own pattern) stays out of later modules,
    which enumerate the registered families."""
    import design_space as ds

    before = set(ds.pattern_names())
    yield
    for name in set(ds.pattern_names()) - before:
        ds.unregister_pattern(name)


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


# PostgreSQL: one throwaway server per session (postgres_server.py), always stopped by a finalizer;
# CUCO_TEST_POSTGRES_URL (e.g. postgresql://postgres@127.0.0.1:5432/postgres) uses an existing
# server instead. Each test gets its own database on the server.
@pytest.fixture(scope="session")
def pg_server(request: pytest.FixtureRequest) -> str:
    """Admin URL of a PostgreSQL server for this test session (skips when none can be had)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg (PostgreSQL driver) not installed: pip install 'cuco-kernels[dev]'")
    if os.environ.get(PG_ENV):
        return os.environ[PG_ENV]
    bindir = postgres_server.pg_bindir()
    if bindir is None:
        pytest.skip(f"PostgreSQL binaries (initdb, pg_ctl) not found on PATH or in /usr/lib/postgresql; "
                    f"install postgresql or set {PG_ENV}")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to own a throwaway server")
    url, stop = postgres_server.start_server(bindir)
    request.addfinalizer(stop)
    return url


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server; dropped afterwards."""
    from sqlalchemy.engine import make_url

    name = f"cuco_test_{uuid.uuid4().hex[:10]}"
    postgres_server.admin_exec(pg_server, f'CREATE DATABASE "{name}"')
    yield make_url(pg_server).set(database=name).render_as_string(hide_password=False)
    postgres_server.admin_exec(pg_server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's store lives: a SQLite file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return str(tmp_path / "db" / "candidates.db")
    return request.getfixturevalue("pg_url")
