"""How the CPU emulator reports broken candidates: crashes name the rank and the buffer, code it
cannot emulate exits 6, errors from cuco_run exit 4, a bad manifest exits 5, a breach of the
contract (the runtime's signal-pad slots) exits 8. An endless loop that never yields cannot be
stopped from inside: the caller's timeout (the sandbox) kills it."""

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
    assert "0 bytes past the end of rank 0's output 0 of call 1" in res.stderr


def test_inputs_are_read_only(tmp_path):
    res = run(build("faults", "FAULT_INPUT"), tmp_path, world=1, inputs={(0, 0): np.zeros(16, np.float32)},
              outputs=outputs(1), dims=(16,))
    assert res.returncode == 2 and "write to read-only rank 0's input 0 of call 1" in res.stderr


def test_cooperative_launch_is_not_emulatable(tmp_path):
    res = run(build("faults", "FAULT_COOP"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 6, res.stderr
    assert "not emulatable: cudaLaunchCooperativeKernel" in res.stderr


def test_cuco_run_error_exits_4(tmp_path):
    res = run(build("faults", "FAULT_RETURN"), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 4 and "cuco_run returned 17" in res.stderr


def test_another_ranks_private_memory_faults_with_a_reason(tmp_path):
    # every rank maps its buffers at the same addresses, but only its own are backed: a peer's
    # input is reachable only through the comm API
    ins = {(r, 0): np.arange(16, dtype=np.float32) for r in range(2)}
    res = run(build("faults", "FAULT_PEER_INPUT"), tmp_path, world=2, inputs=ins, outputs=outputs(2), dims=(16,),
              symm_bytes=64)
    assert res.returncode == 2, res.stderr
    assert "rank 1 touched rank 0's input 0 of call 1: another rank's memory is reachable only through the comm API" \
        in res.stderr


def test_an_earlier_calls_output_is_not_readable(tmp_path):
    res = run(build("faults", "FAULT_OLD_OUTPUT"), tmp_path, world=1, outputs=outputs(1), dims=(16,), iterations=2)
    assert res.returncode == 2, res.stderr
    assert "rank 0's output 0 of call 1 is not accessible during another call" in res.stderr


@pytest.mark.parametrize("fault, reason", [
    ("FAULT_PAD_PAST_USER", "signal on signal-pad slot 32771, past the candidate's slots"),
    ("FAULT_GIN_NEGATIVE", "gin_wait on GIN slot -1"),
])
def test_signal_pad_slots_of_the_runtime_are_a_contract_rejection(fault, reason, tmp_path):
    # past the user slots lie cuco_barrier's flags and the GIN signals: a plain signal there, or a
    # GIN wait below slot 0, would be the runtime's synchronisation in disguise
    res = run(build("faults", fault), tmp_path, world=2, outputs=outputs(2), dims=(16,))
    assert res.returncode == 8, res.stderr
    assert "contract: rank 0, call 1: " + reason in res.stderr


def test_bad_manifest_exits_5(tmp_path):
    res = shim_build.run_emulator(build("faults", "FAULT_RETURN"), world=2, manifest="world 2\nbogus 1\n",
                                  timeout_s=30)
    assert res.returncode == 5 and "line 2: unknown key 'bogus'" in res.stderr
    res = shim_build.run_emulator(build("faults", "FAULT_RETURN"), world=2, timeout_s=30,
                                  manifest="world 2\niterations 1\nio 0 1 in 0 4096 16 8192\n")
    assert res.returncode == 5 and "I/O region" in res.stderr  # beyond the end of the evaluator's file


def test_endless_loop_is_killed_by_the_callers_timeout(tmp_path):
    start = time.monotonic()
    binary = build("faults", "FAULT_SPIN")
    res = run(binary, tmp_path, world=2, outputs=outputs(2), dims=(16,), timeout_s=2)
    assert res.timed_out and time.monotonic() - start < 10
    time.sleep(0.3)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(binary) not in ps  # no rank survives its process group


def test_thread_that_never_yields_is_reported_by_the_watchdog(tmp_path):
    res = run(build("faults", "FAULT_SPIN"), tmp_path, world=2, outputs=outputs(2), dims=(16,), runaway_seconds=1,
              timeout_s=30)
    assert res.returncode == 3, res.stderr
    assert "deadlock: rank 0 block (0,0,0) thread (0,0,0): ran 1 s without yielding" in res.stderr


def test_ranks_die_with_a_killed_parent(tmp_path):
    from evaluator import emulator_io
    binary = build("faults", "FAULT_SPIN")
    text = emulator_io.manifest_text(world=2, num_sms=1, calls=1, stall_seconds=3, dims=(16,), dtype_code=0,
                                     symm_bytes=0, workspace_bytes=0, slots=())
    with emulator_io.IoFiles(text, (), 0, {}) as io:
        proc = subprocess.Popen([str(binary), *map(str, io.fds)], start_new_session=False, pass_fds=io.fds)
        time.sleep(0.5)
        children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
        assert len(children) == 2
        proc.kill()  # only the parent: the ranks must not outlive it
        proc.wait()
        time.sleep(0.5)
    assert not [c for c in children if os.path.exists(f"/proc/{c}") and "zombie" not in open(f"/proc/{c}/status").read()]
    assert os.path.exists(binary)
