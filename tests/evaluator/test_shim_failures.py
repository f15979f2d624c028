"""How the CPU emulator reports broken candidates: crashes name the rank and the buffer, code it
cannot emulate exits 6, errors from cuco_run exit 4, a bad manifest exits 5. An endless loop
that never yields cannot be stopped from inside: the caller's timeout (the sandbox) kills it."""

import os
import shutil
import subprocess
import time

import numpy as np
import pytest

from evaluator import shim_build
from tests.evaluator.shim_kernels.harness import build, run

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="the CPU emulator needs g++")


def outputs(world, n=16):
    return {(r, 0): 4 * n for r in range(world)}


def test_null_pointer_write_names_the_rank(tmp_path):
    res = run(build("faults", "FAULT_NULL"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 2, res.stderr
    assert "crash: rank 1 block (1,0,0) thread (3,0,0): SIGSEGV" in res.stderr and "(null pointer)" in res.stderr
    assert "emu: failed code=2: rank 1 crashed" in res.stdout


def test_write_one_past_an_output_hits_the_guard_page(tmp_path):
    res = run(build("faults", "FAULT_PAST_END"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 2, res.stderr
    assert "crash: rank 0 block (1,0,0) thread (3,0,0): SIGSEGV" in res.stderr
    assert "0 bytes past the end of rank 0 output 0" in res.stderr


def test_inputs_are_read_only(tmp_path):
    res = run(build("faults", "FAULT_INPUT"), tmp_path, world=1, inputs={(0, 0): np.zeros(16, np.float32)},
              outputs=outputs(1), dims=(16,))
    assert res.returncode == 2 and "write to read-only rank 0 input 0" in res.stderr


def test_cooperative_launch_is_not_emulatable(tmp_path):
    res = run(build("faults", "FAULT_COOP"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 6, res.stderr
    assert "not emulatable: cudaLaunchCooperativeKernel" in res.stderr


def test_cuco_run_error_exits_4(tmp_path):
    res = run(build("faults", "FAULT_RETURN"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 4 and "cuco_run returned 17" in res.stderr


def test_bad_manifest_exits_5(tmp_path):
    manifest = tmp_path / "m.txt"
    manifest.write_text("world 2\nbogus 1\n")
    res = shim_build.run_emulator(build("faults", "FAULT_RETURN"), manifest, timeout_s=30)
    assert res.returncode == 5 and "line 2: unknown key 'bogus'" in res.stderr
    manifest.write_text("world 2\ninput 0 0 16 /nonexistent/in.bin\n")
    res = shim_build.run_emulator(build("faults", "FAULT_RETURN"), manifest, timeout_s=30)
    assert res.returncode == 5 and "cannot read 16 bytes" in res.stderr


def test_endless_loop_is_killed_by_the_callers_timeout(tmp_path):
    start = time.monotonic()
    res = run(build("faults", "FAULT_SPIN"), tmp_path, world=2, outputs=outputs(2), dims=(16,), timeout_s=2)
    assert res.timed_out and time.monotonic() - start < 10
    time.sleep(0.3)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(tmp_path / "manifest.txt") not in ps  # no rank survives its process group


def test_thread_that_never_yields_is_reported_by_the_watchdog(tmp_path):
    res = run(build("faults", "FAULT_SPIN"), tmp_path, world=2, outputs=outputs(2), dims=(16,), runaway_seconds=1,
              timeout_s=30)
    assert res.returncode == 3, res.stderr
    assert "deadlock: rank 0 block (0,0,0) thread (0,0,0): ran 1 s without yielding" in res.stderr


def test_ranks_die_with_a_killed_parent(tmp_path):
    binary = build("faults", "FAULT_SPIN")
    manifest = shim_build.write_manifest(tmp_path / "m.txt", world=2, num_sms=1, iterations=1, stall_seconds=3,
                                         dims=(16,), dtype_code=0, symm_bytes=0, workspace_bytes=0, inputs=[],
                                         outputs=[])
    proc = subprocess.Popen([str(binary), str(manifest)], start_new_session=False)
    time.sleep(0.5)
    proc.kill()  # only the parent: the ranks must not outlive it
    proc.wait()
    time.sleep(0.5)
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    assert str(manifest) not in ps, ps
    assert os.path.exists(binary)
