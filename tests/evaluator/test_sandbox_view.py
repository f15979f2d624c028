"""A filesystem view: the stage's root holds only the system folders, the listed paths and its own
folders. Compilers still work in it; everything else on the host is absent."""

import shutil
import sys
from pathlib import Path

import pytest

from evaluator import sandbox, toolchain

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def view_isolation(tmp_path_factory):
    res = sandbox.run(["true"], workdir=tmp_path_factory.mktemp("probe"), view=sandbox.system_view())
    if not res.isolation.fs_view:
        pytest.skip(f"this machine gives no filesystem view (sandbox isolation: {res.isolation.describe()}; "
                    f"{'; '.join(res.notes) or 'no mount namespace'})")
    return res.isolation


def test_the_record_says_fs_view(view_isolation):
    assert "fs=view" in view_isolation.describe() and view_isolation.readonly_fs


def test_gxx_compiles_standard_headers_in_a_bare_view(tmp_path, view_isolation):
    if not shutil.which("g++"):
        pytest.skip("g++ is not installed")
    (tmp_path / "a.cpp").write_text("#include <cstdio>\n#include <cmath>\n"
                                    "int f(double x) { std::printf(\"%f\", std::sqrt(x)); return 0; }\n")
    res = sandbox.run(["g++", "-c", "a.cpp", "-o", "a.o"], workdir=tmp_path, view=sandbox.system_view())
    assert res.returncode == 0, res.output
    assert (tmp_path / "a.o").stat().st_size > 0 and res.isolation.fs_view


def test_nvcc_builds_a_cubin_with_its_install_root_in_the_view(tmp_path, view_isolation):
    try:
        nvcc = toolchain.find_nvcc()
    except Exception as e:  # noqa: BLE001 - whatever the reason, there is no nvcc to run
        pytest.skip(f"nvcc is not available: {e}")
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }\n")
    view = (*sandbox.system_view(), *sandbox.toolchain_view(nvcc))
    res = sandbox.run([str(nvcc), "-cubin", "-arch=sm_90", "k.cu", "-o", "k.cubin"], workdir=tmp_path, view=view,
                      limits=sandbox.Limits(wall_s=180))
    assert res.returncode == 0, res.output
    assert (tmp_path / "k.cubin").read_bytes()[:4] == b"\x7fELF"


def test_toolchain_view_sees_through_a_wrapper_script(tmp_path):
    real = tmp_path / "cuda-x" / "bin" / "nvcc"
    real.parent.mkdir(parents=True)
    real.write_text("#!/bin/sh\necho real\n")
    real.chmod(0o755)
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    assert sandbox.toolchain_view(wrapper) == (wrapper, real, tmp_path / "cuda-x")


def test_paths_outside_the_view_are_absent(tmp_path, view_isolation):
    planted = tmp_path / "beside" / "secret.txt"  # a folder of the host that is not in the view
    planted.parent.mkdir()
    planted.write_text("host secret")
    repo_file = ROOT / "README.md"
    home = Path.home()
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "input.txt").write_text("an input")
    script = (f"cat {planted} {repo_file} 2>/dev/null && echo LEAKED; ls -A {home} 2>/dev/null && echo LISTED;"
              f" cat {listed / 'input.txt'}; echo; ls /")
    res = sandbox.run(["sh", "-c", script], workdir=tmp_path / "work", view=(*sandbox.system_view(), listed),
                      env={"PATH": "/usr/bin:/bin"})
    assert "LEAKED" not in res.stdout and "host secret" not in res.stdout, res.output
    assert "LISTED" not in res.stdout
    assert "an input" in res.stdout  # a listed path is there, read-only
    top = set(res.stdout.split("an input", 1)[1].split())  # the workdir and `listed` are under /tmp here
    assert top <= {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "dev", "proc", "tmp"}, top


def test_the_view_is_read_only_but_the_workdir(tmp_path, view_isolation):
    listed = tmp_path / "listed"
    listed.mkdir()
    script = (f"touch {listed}/x 2>/dev/null && echo WROTE-LISTED; touch /usr/x 2>/dev/null && echo WROTE-USR;"
              " touch /newfile 2>/dev/null && echo WROTE-ROOT; touch inside && echo WROTE-WORK")
    res = sandbox.run(["sh", "-c", script], workdir=tmp_path / "work", view=(*sandbox.system_view(), listed),
                      env={"PATH": "/usr/bin:/bin"})
    assert res.stdout.split() == ["WROTE-WORK"], res.output
    assert (tmp_path / "work" / "inside").exists() and not (listed / "x").exists()


def test_a_view_with_a_tmpfs_workdir_collects_its_output(tmp_path, view_isolation):
    (tmp_path / "in.txt").write_text("seed")
    script = "cat in.txt > out.txt; echo more >> out.txt; echo scratch > scratch.txt"
    res = sandbox.run(["sh", "-c", script], workdir=tmp_path, view=sandbox.system_view(),
                      limits=sandbox.Limits(work_bytes=8 << 20), collect=["out.txt"], env={"PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.output
    assert (tmp_path / "out.txt").read_text() == "seedmore\n" and not (tmp_path / "scratch.txt").exists()
    assert "fs=view" in res.isolation.describe() and "work<=8M(tmpfs)" in res.isolation.describe()


def test_a_program_outside_the_view_cannot_start(tmp_path, view_isolation):
    res = sandbox.run([sys.executable, "-c", "print('ran')"], workdir=tmp_path, view=sandbox.system_view())
    if Path(sys.executable).resolve().is_relative_to("/usr"):
        pytest.skip("this interpreter lives under /usr, which every view holds")
    assert res.returncode == 127 and "ran" not in res.stdout, res.output


def test_a_hidden_file_inside_the_view_reads_as_empty(tmp_path, view_isolation):
    listed = tmp_path / "cache"
    listed.mkdir()
    (listed / "expected.bin").write_bytes(b"the answer")
    (listed / "input.bin").write_bytes(b"the input")
    script = f"cat {listed}/input.bin; echo; cat {listed}/expected.bin; echo END"
    res = sandbox.run(["sh", "-c", script], workdir=tmp_path / "w", view=(*sandbox.system_view(), listed),
                      hidden=[listed / "expected.bin"], env={"PATH": "/usr/bin:/bin"})
    assert res.stdout.split() == ["the", "input", "END"], res.output
    assert (listed / "expected.bin").read_bytes() == b"the answer"
