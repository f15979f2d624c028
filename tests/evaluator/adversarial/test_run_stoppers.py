"""Candidates that try to stop or swamp the evaluator rather than cheat it: ending the emulator with
the harness's own exit codes, printing gigabytes, filling the work folder and /dev/shm. Each must
end as the candidate's own failure, with the evaluator's process and the host unharmed."""

import json
import os
import shutil
import subprocess
import sys

import pytest

import design_space as ds

from design_space.errors import InfrastructureError
from design_space.evaluation import LOG_LIMIT, Status
from tests.evaluator.adversarial import escape_kernels as X, hostile_kernels as K
from tests.evaluator.adversarial.test_runtime_holds import ROOT, run_emulate, world2_cases

GIB = 1 << 30


def canary_of(ev, work):
    cases = world2_cases(ev)
    return lambda: ev.canary_passes(cases, work / "canary", ev.config.emulation)


def test_exit_with_the_harness_code_is_the_candidates_crash_when_the_canary_passes(adv_evaluator, tmp_path):
    # the object check refuses exit(); past it, code 5 still cannot pass for a harness fault
    out = run_emulate(adv_evaluator, X.exits_with_a_code(5, K.AG), tmp_path / "w",
                      canary=canary_of(adv_evaluator, tmp_path))
    assert out.status is Status.CRASHED, out.reason
    assert "harness stopped with its error code" in out.reason and "canary passed" in out.reason


def test_exit_with_the_harness_code_is_an_infrastructure_error_when_the_canary_fails_too(adv_evaluator, tmp_path):
    with pytest.raises(InfrastructureError, match="known-good canary failed"):
        run_emulate(adv_evaluator, X.exits_with_a_code(5, K.AG), tmp_path / "w", canary=lambda: False)


@pytest.mark.parametrize("code, status, words", [
    (0, Status.CRASHED, "exited before finishing"),
    (3, Status.TIMEOUT, "deadlock"),
    (7, Status.CRASHED, "memory violation"),
    (42, Status.CRASHED, "exit code 42"),
])
def test_any_exit_code_a_rank_picks_is_its_own_failure(adv_evaluator, tmp_path, code, status, words):
    out = run_emulate(adv_evaluator, X.exits_with_a_code(code, K.AG), tmp_path / "w",
                      canary=canary_of(adv_evaluator, tmp_path))
    assert (out.status, words in out.reason) == (status, True), out.reason


def test_filling_the_work_folder_dev_shm_and_tmp_ends_in_enospc_inside_the_sandbox(adv_evaluator, isolation,
                                                                                   tmp_path):
    if isolation is None or not (isolation.private_tmp and isolation.tmp_limit):
        pytest.skip("no private size-limited /tmp and /dev/shm here")
    host_shm = set(os.listdir("/dev/shm"))
    free = shutil.disk_usage(tmp_path).free
    out = run_emulate(adv_evaluator, X.fills_the_disk(), tmp_path / "w")
    fills = {ln.split()[1]: ln.split() for ln in out.log.splitlines() if ln.startswith("fill: ")}
    assert set(fills) == {".", "/dev/shm", "/tmp"}, out.log[-2000:]
    for where, words in fills.items():
        assert words[-1] == "28" and int(words[2]) <= 64, words  # ENOSPC at the 64 MiB tmpfs limits
    assert out.status is Status.WRONG_RESULT  # it did no work, and the evaluator went on
    assert not list((tmp_path / "w").rglob("filler*.bin"))  # nothing reached the host's folder
    assert set(os.listdir("/dev/shm")) == host_shm
    assert shutil.disk_usage(tmp_path).free > free - (64 << 20)


_FLOOD_DRIVER = """
import json, sys, time
from pathlib import Path
import design_space as ds
from evaluator.cascade import Evaluator, EvaluatorConfig
from evaluator.emulate import EmulationSettings
from tests.evaluator.adversarial import escape_kernels as X, honest_kernels as H

def hwm():
    return next(int(ln.split()[1]) * 1024 for ln in open("/proc/self/status") if ln.startswith("VmHWM:"))

ev = Evaluator(H.ALLGATHER_GEMM.spec(), EvaluatorConfig(cache_dir=Path(sys.argv[1]),
               emulation=EmulationSettings(timeout_s=120)))
ev.prepare()
cand = ds.Candidate(origin=ds.Origin(kind="manual"), source=X.floods_stdout(int(sys.argv[2])))
ev.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=H.honest()))  # everything imported and warm
before, start = hwm(), time.monotonic()
result = ev.evaluate(cand)
print(json.dumps({"before": before, "after": hwm(), "seconds": time.monotonic() - start,
                  "status": result.status.value, "reason": result.reason, "logs": result.logs}))
"""


@pytest.mark.slow
def test_two_gib_on_stdout_cost_the_evaluator_no_memory(shared_cache):
    # a subprocess, so the peak resident size measured is the evaluator's alone
    res = subprocess.run([sys.executable, "-c", _FLOOD_DRIVER, str(shared_cache), "2048"], capture_output=True,
                         text=True, cwd=ROOT, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    assert got["after"] - got["before"] < GIB, got
    assert got["status"] == Status.WRONG_RESULT.value and "never written" in got["reason"]
    assert len(got["logs"]) <= LOG_LIMIT + 200 and "flooded 2048 MiB" in got["logs"]  # all of it went out


def test_a_reason_quoting_the_candidates_output_stays_short(adv_evaluator):
    result = adv_evaluator.evaluate(ds.Candidate(origin=ds.Origin(kind="manual"), source=X.long_crash_reason()))
    assert result.status is Status.CRASHED
    assert len(result.reason) <= 1000, f"a reason of {len(result.reason)} characters"


def test_a_source_that_is_not_valid_unicode_is_judged_not_raised(adv_evaluator):
    # a lone surrogate (json.loads of a "\\ud800" escape in an LLM reply) becomes U+FFFD: the candidate can be
    # hashed and stored, and the build judges what is left (in a comment, nothing changes)
    source = K.AG.render(prelude="// a lone surrogate: \udcff")
    cand = ds.Candidate(origin=ds.Origin(kind="manual"), source=source)
    assert "\udcff" not in cand.source and "\ufffd" in cand.source and cand.content_hash
    result = adv_evaluator.evaluate(cand)
    assert result.status is Status.OK, result.reason


_GUARD_DRIVER = """
import sys, time
from evaluator import guard
from tests.evaluator.adversarial import escape_kernels as X
source = X.many_asm_statements(int(sys.argv[1]))
start = time.monotonic()
guard.check(source)
print(f"{len(source)} bytes in {time.monotonic() - start:.1f} s")
"""


@pytest.mark.slow
def test_the_guard_checks_hundreds_of_asm_statements_in_bounded_time():
    # in a subprocess, so the test itself ends at its own timeout
    try:
        res = subprocess.run([sys.executable, "-c", _GUARD_DRIVER, "400"], capture_output=True, text=True, cwd=ROOT,
                             timeout=20, env={**os.environ, "PYTHONPATH": str(ROOT)})
    except subprocess.TimeoutExpired:
        pytest.fail("the guard took more than 20 s over a 30 KB candidate")
    assert res.returncode == 0, res.stderr[-2000:]
