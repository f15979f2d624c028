"""Building the CPU emulator: the cached runtime library, classifying g++ failures as
"not emulatable" or genuine, the manifest format, and compile times."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from design_space.errors import ToolchainError
from evaluator import shim_build
from tests.evaluator.shim_kernels.harness import KERNELS, RUNTIME_CACHE

needs_gxx = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")

GOOD = """#include "cuco_comm.h"
__global__ void k(float* p) { p[threadIdx.x] = 1.f; }
extern "C" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream) {
  k<<<1, 32, 0, stream>>>((float*)ctx->out[0]);
  return 0;
}
"""


def compile_snippet(tmp_path, body: str, *, head: str = "") -> shim_build.EmulatorBuild:
    src = head + GOOD.replace("p[threadIdx.x] = 1.f;", body)
    return shim_build.compile_emulator(src, tmp_path, dtype_code=0, cache_dir=RUNTIME_CACHE)


@needs_gxx
def test_runtime_library_is_built_once_and_reused(tmp_path):
    lib = shim_build.ensure_runtime(tmp_path)
    assert lib.parent == tmp_path and lib.name.startswith("libcuco_emu-") and lib.suffix == ".a"
    mtime = lib.stat().st_mtime_ns
    assert shim_build.ensure_runtime(tmp_path) == lib and lib.stat().st_mtime_ns == mtime
    assert [p.name for p in tmp_path.iterdir()] == [lib.name]  # no temp folders left behind


@needs_gxx
def test_concurrent_builders_agree(tmp_path):
    code = f"from pathlib import Path; from evaluator import shim_build; print(shim_build.ensure_runtime(Path({str(tmp_path)!r})))"
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                              cwd=Path(shim_build.__file__).parents[1]) for _ in range(2)]
    outs = [p.communicate(timeout=600)[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0] == outs[1] and Path(outs[0]).is_file()
    assert len(list(tmp_path.iterdir())) == 1


@needs_gxx
def test_good_candidate_compiles(tmp_path):
    res = compile_snippet(tmp_path, "p[threadIdx.x] = 1.f;")
    assert res.ok and res.binary.is_file() and not res.not_emulatable and res.seconds > 0


@needs_gxx
@pytest.mark.parametrize("body, head", [
    ('asm volatile("membar.gl;");', ""),
    ('unsigned v; asm("mov.u32 %0, %%laneid;" : "=r"(v)); p[0] = v;', ""),
    ("p[0] = 1.f;", "#include <mma.h>\n"),
    ("p[0] = 1.f;", "#include <cooperative_groups.h>\n"),
    ("p[0] = 1.f;", "#include <cuda/atomic>\n"),
    ("cudaLaunchKernelEx(nullptr, k, p);", ""),
    ("__shared__ float s[4] = {0}; p[0] = s[0];", ""),
], ids=["ptx", "ptx-operands", "wmma", "cooperative-groups", "libcu++", "launch-ex", "shared-initialiser"])
def test_unemulatable_code_is_classified(tmp_path, body, head):
    res = compile_snippet(tmp_path, body, head=head)
    assert not res.ok and res.not_emulatable, res.log


@needs_gxx
def test_genuine_compile_error_is_not_called_unemulatable(tmp_path):
    res = compile_snippet(tmp_path, "p[threadIdx.x] = undefined_thing;")
    assert not res.ok and not res.not_emulatable
    assert "candidate.cu:2:" in res.log and "undefined_thing" in res.log  # the candidate's own line


@needs_gxx
def test_unparseable_launch_is_not_emulatable(tmp_path):
    res = shim_build.compile_emulator(GOOD.replace(">>>((float*)ctx->out[0]);", ">>>;"), tmp_path,
                                      dtype_code=0, cache_dir=RUNTIME_CACHE)
    assert not res.ok and res.not_emulatable and "line 4" in res.log


def test_missing_gxx_is_a_toolchain_error(monkeypatch, tmp_path):
    monkeypatch.delenv("CUCO_CXX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolchainError) as info:
        shim_build.compile_emulator(GOOD, tmp_path, dtype_code=0, cache_dir=tmp_path)
    assert "g++ not found" in str(info.value) and "apt-get install g++" in info.value.fix


def test_classifier_reads_only_error_lines():
    assert shim_build.is_not_emulatable("x.cu:3:1: error: impossible constraint in 'asm'")
    assert shim_build.is_not_emulatable("x.cu: Assembler messages:\nx.cu:9: Error: no such instruction: `ld.acquire'")
    assert not shim_build.is_not_emulatable("x.cu:3: note: in a comment about mma\nx.cu:4: error: expected ';'")


def test_manifest_format_and_io_layout():
    from evaluator import emulator_io
    slots, size = emulator_io.layout([(0, 1, False, 0, 128), (1, 2, True, 1, 5000)])
    page = emulator_io.PAGE
    assert [(s.offset, s.region) for s in slots] == [(0, 2 * page), (2 * page, 3 * page)] and size == 5 * page
    assert slots[1].buffer_offset == 5 * page - 5008  # the buffer ends 16-byte aligned at its region's end
    text = emulator_io.manifest_text(world=2, num_sms=8, calls=2, stall_seconds=3, dims=(96, 64, 64), dtype_code=2,
                                     symm_bytes=24576, workspace_bytes=4096, slots=slots)
    assert text.splitlines() == [
        "world 2", "num_sms 8", "iterations 2", "stall_seconds 3", "dims 96 64 64", "dtype 2", "symm_bytes 24576",
        "workspace_bytes 4096", f"io 0 1 in 0 0 128 {2 * page}", f"io 1 2 out 1 {2 * page} 5000 {3 * page}"]
    with pytest.raises(ValueError):
        emulator_io.manifest_text(world=2, num_sms=1, calls=1, stall_seconds=1, dims=range(9), dtype_code=0,
                                  symm_bytes=0, workspace_bytes=0, slots=())


def test_io_files_are_sealed_and_outputs_arrive_poisoned():
    import fcntl
    from evaluator import emulator_io
    slots, size = emulator_io.layout([(0, 1, False, 0, 8), (0, 1, True, 0, 8)])
    with emulator_io.IoFiles("world 1\n", slots, size, {(0, 1, 0): b"abcdefgh"}) as io:
        assert io.output(0, 1, 0) == b"\xff" * 8 and io.red_zone_breach() == ""
        manifest_fd, io_fd = io.fds
        with pytest.raises(OSError):
            os.pwrite(manifest_fd, b"world 9\n", 0)  # sealed against writes
        with pytest.raises(OSError):
            os.ftruncate(io_fd, 0)  # its size is sealed
        assert fcntl.fcntl(io_fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_SEAL
        os.pwrite(io_fd, b"\x00", slots[1].buffer_offset + 8)  # one byte past the output
        assert io.red_zone_breach() == "out-of-bounds write 0 bytes past the end of rank 0's output 0 of call 1"


@needs_gxx
def test_compile_times(tmp_path):
    source = (KERNELS / "ag_gemm.cu").read_text()
    start = time.monotonic()
    first = shim_build.compile_emulator(source, tmp_path / "a", dtype_code=2, cache_dir=tmp_path / "cache")
    cold = time.monotonic() - start
    second = shim_build.compile_emulator(source, tmp_path / "b", dtype_code=2, cache_dir=tmp_path / "cache")
    assert first.ok and second.ok, first.log + second.log
    print(f"\ncompile {len(source.splitlines())}-line candidate: {cold:.2f} s with the runtime library, "
          f"{second.seconds:.2f} s cached")
    assert second.seconds < cold and second.seconds < 10


@needs_gxx
def test_candidates_compile_against_a_precompiled_header(tmp_path):
    res = shim_build.compile_emulator(GOOD, tmp_path / "c", dtype_code=0, cache_dir=tmp_path / "cache",
                                      extra_flags=("-H",))
    assert res.ok, res.log
    used = [ln for ln in res.log.splitlines() if ln.startswith("! ") and ln.endswith("cuco_comm.h.gch")]
    assert used, res.log[:2000]  # g++ -H marks a precompiled header it used with "!"
    assert list((tmp_path / "cache").glob("pch-*-d0/cuco_comm.h.gch")) and not list((tmp_path / "cache").rglob("*.tmp"))


@needs_gxx
def test_a_candidate_with_code_before_the_include_compiles_as_written(tmp_path):
    res = compile_snippet(tmp_path, "p[0] = PROBE_VALUE;", head="#define PROBE_VALUE 7.f\nstatic int before = 1;\n")
    assert res.ok and res.binary.is_file(), res.log  # g++ reads the real header when the PCH cannot apply
