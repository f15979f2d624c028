"""Bad input gets one line that names the fix, never a traceback, and writes nothing."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CUCO = str(Path(sys.executable).parent / "cuco")
EXAMPLE = str(ROOT / "examples" / "allgather_gemm")


def _cuco(args, tmp_path, env=None):
    res = subprocess.run([CUCO, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, **(env or {})})
    return res.returncode, res.stdout, res.stderr


def _assert_one_line(rc, err, *needles):
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and "-- fix: " in lines[0]
    assert "Traceback" not in err
    for n in needles:
        assert n in lines[0]


def test_missing_spec(tmp_path):
    rc, _, err = _cuco(["evolve", "no/such/spec"], tmp_path)
    _assert_one_line(rc, err, "no spec at", "spec.py")


def _write_spec(folder, pattern="allgather_gemm", reference="r:f", shape="{'m': 8, 'n': 8, 'k': 8}"):
    (folder / "spec.py").write_text(
        "from design_space import KernelSpec, ShapeCase\n"
        f"SPEC = KernelSpec(name='x', pattern='{pattern}', reference='{reference}', inputs='r:g',\n"
        f"    shapes=[ShapeCase(name='odd', dims={shape})],\n"
        "    emulation_shapes=[ShapeCase(name='e', dims={'m': 8, 'n': 8, 'k': 8})])\n")


def test_invalid_spec_names_the_field(tmp_path):
    _write_spec(tmp_path, reference="nocolon")
    rc, _, err = _cuco(["evolve", str(tmp_path)], tmp_path)
    _assert_one_line(rc, err, "invalid spec", "reference")


def test_spec_that_does_not_fit_its_world_sizes(tmp_path):
    _write_spec(tmp_path, shape="{'m': 12, 'n': 8, 'k': 8}")
    rc, _, err = _cuco(["evolve", str(tmp_path)], tmp_path)
    _assert_one_line(rc, err, "odd", "not divisible by world size 8")


def test_spec_file_that_raises(tmp_path):
    (tmp_path / "spec.py").write_text("raise RuntimeError('boom')\n")
    rc, _, err = _cuco(["evolve", str(tmp_path)], tmp_path)
    _assert_one_line(rc, err, "boom")


def test_unknown_pattern(tmp_path):
    _write_spec(tmp_path, pattern="teleport")
    rc, _, err = _cuco(["evolve", str(tmp_path)], tmp_path)
    _assert_one_line(rc, err, "unknown pattern", "allgather_gemm")


@pytest.mark.parametrize("point, needle", [
    ("lsa/fused_persistent/global_barrier/warp/64K/8", "fused_persistent_needs_fine_signals"),
    ("lsa/fused_persistent/per_tile_signal/warp/64K/7", "comm_ctas"),
    ("multimem/fused", "cannot parse"),
    ("host_nccl/sequential/global_barrier/cta/4K/1", "family excludes host_nccl/sequential/global_barrier/cta/4K/1: a sequential library all-gather"),
])
def test_invalid_design_point(tmp_path, point, needle):
    rc, _, err = _cuco(["evolve", EXAMPLE, "--point", point], tmp_path)
    _assert_one_line(rc, err, needle)
    assert not (tmp_path / "runs").exists()


def _bin_without(tmp_path, keep):
    """A PATH holding only the named tools (and none of the rest)."""
    b = tmp_path / "bin"
    b.mkdir()
    for tool in keep:
        found = shutil.which(tool)
        if found:
            (b / tool).symlink_to(found)
    return str(b)


def test_missing_nvcc_names_the_pip_wheels(tmp_path):
    env = {"PATH": _bin_without(tmp_path, ["g++", "gcc"]), "CUDA_HOME": "", "CUCO_NVCC": ""}
    rc, _, err = _cuco(["evolve", EXAMPLE], tmp_path, env)
    _assert_one_line(rc, err, "nvcc", "nvidia-cuda-nvcc")
    assert not (tmp_path / "runs").exists()


def test_missing_gxx_names_the_package(tmp_path):
    env = {"PATH": _bin_without(tmp_path, ["nvcc"]), "CUCO_CXX": ""}
    rc, _, err = _cuco(["evolve", EXAMPLE], tmp_path, env)
    _assert_one_line(rc, err, "g++", "apt-get install g++")


def test_leaderboard_of_a_missing_run(tmp_path):
    rc, _, err = _cuco(["leaderboard", str(tmp_path / "nothing")], tmp_path)
    _assert_one_line(rc, err, "no run database")
