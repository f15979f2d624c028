"""Defence in depth: escapes the guard and the object check would refuse, run straight through the
emulate stage with the object check bypassed (``check_object=False``, which only these tests pass),
so the sandbox and the emulator alone must hold. Where this machine's sandbox lacks the isolation a
check needs, the test is skipped, naming what is missing."""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from design_space.evaluation import Status
from evaluator import candidate_object, emulate
from tests.evaluator.adversarial import escape_kernels as X, hostile_kernels as K

SECRET = f"planted-{uuid.uuid4().hex}"  # made at run time: nothing key-shaped lives in the repository
ROOT = Path(__file__).resolve().parents[3]


def world2_cases(ev):
    """Both calls of the first world-2 shape this evaluator meets."""
    cases = [c for c in ev.cases_for("runtime-holds") if c.world == 2]
    return [c for c in cases if c.shape.name == cases[0].shape.name]


def run_emulate(ev, source, work, *, canary=None):
    # the object checks would refuse these candidates before they run: skip them to show the sandbox holds alone
    return emulate.emulate(source, spec=ev.spec, pattern=ev.pattern, cases=world2_cases(ev), work_dir=work,
                           cache_dir=ev.config.cache_dir / "emulator", settings=ev.config.emulation,
                           canary=canary, check_object=False)


def need(isolation, feature, why):
    if isolation is None or not getattr(isolation, feature, False):
        have = isolation.describe() if isolation is not None and hasattr(isolation, "describe") else "no record"
        pytest.skip(f"the sandbox has no {feature} here ({have}): {why}")


def survivors(marker):
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in ps.splitlines() if marker in ln]


def test_api_key_in_the_callers_environment_never_reaches_logs_or_outputs(adv_evaluator, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = run_emulate(adv_evaluator, X.api_key("OPENAI_API_KEY"), tmp_path / "w")
    assert "leak:" in out.log  # the candidate ran and printed what it found
    assert SECRET not in out.log
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "w").rglob("*") if p.is_file())


def test_api_key_in_an_ancestors_initial_environment_stays_hidden(isolation, tmp_path, shared_cache):
    # /proc/PID/environ shows a process's initial environment: only a pid namespace hides it
    need(isolation, "pid_namespace", "a candidate can read an ancestor's /proc/PID/environ")
    script = (
        "import sys; from pathlib import Path\n"
        "from evaluator.cascade import Evaluator, EvaluatorConfig\n"
        "from tests.evaluator.adversarial import honest_kernels as H, escape_kernels as X\n"
        "from tests.evaluator.adversarial.test_runtime_holds import run_emulate\n"
        f"ev = Evaluator(H.ALLGATHER_GEMM.spec(), EvaluatorConfig(cache_dir=Path({str(shared_cache)!r})))\n"
        "ev.prepare()\n"
        f"out = run_emulate(ev, X.api_key('OPENAI_API_KEY'), Path({str(tmp_path / 'w')!r}))\n"
        "sys.stdout.write(out.log)\n")
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "leak:" in res.stdout and SECRET not in res.stdout


def test_network_connection_to_a_local_server_gets_nowhere(adv_evaluator, isolation, tmp_path):
    need(isolation, "network", "a candidate could reach servers on this host")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.setblocking(False)
        out = run_emulate(adv_evaluator, X.network(server.getsockname()[1]), tmp_path / "w")
        assert out.network_isolated
        with pytest.raises(BlockingIOError):
            server.accept()


def test_write_outside_the_sandbox_lands_nowhere_on_the_host(adv_evaluator, isolation, tmp_path):
    target = tmp_path / "escaped.txt"  # outside the stage's workdir
    out = run_emulate(adv_evaluator, X.write_outside(str(target)), tmp_path / "w")
    if target.exists() and not (getattr(isolation, "readonly_fs", False) or getattr(isolation, "private_tmp", False)):
        need(isolation, "readonly_fs", "a candidate can write anywhere the evaluator can")
    assert not target.exists(), out.log


def test_fork_bomb_ends_in_bounded_time_with_no_surviving_process(hang_evaluator, tmp_path):
    work = tmp_path / "w"
    start = time.monotonic()
    out = run_emulate(hang_evaluator, X.fork_bomb(depth=7), work)
    assert time.monotonic() - start < 60
    assert out.status in (Status.TIMEOUT, Status.CRASHED), out.reason
    time.sleep(0.5)
    assert survivors(str(work)) == []


def test_the_reference_outputs_are_out_of_the_candidates_sight(adv_evaluator, isolation, tmp_path):
    # the harness owns the reference: a candidate that knows where its expected outputs are cached
    # and copies them instead of computing must still fail
    need(isolation, "readonly_fs", "without a mount namespace the reference files are in sight")
    cases = world2_cases(adv_evaluator)
    answers = [str(rd.outputs[0].path) for rd in cases[0].ranks]
    assert all(Path(p).stat().st_size > 0 for p in answers)  # the answers are there on the host
    out = run_emulate(adv_evaluator, X.copies_the_reference(answers), tmp_path / "w")
    assert "cheat: rank 0 read 0 bytes" in out.log, out.log[-2000:]
    assert out.status is Status.WRONG_RESULT and "never written" in out.reason


def test_writes_through_proc_self_fd_never_reach_the_verdict(adv_evaluator, tmp_path):
    # a rank's own descriptors hold nothing of the evaluator's: it closed the I/O file after mapping
    out = run_emulate(adv_evaluator, X.writes_through_the_parents_descriptors(), tmp_path / "w")
    reached = [ln for ln in out.log.splitlines() if ln.startswith("reached:") and "/proc/self/fd/" in ln]
    assert all(ln.endswith(("fd/0 wrote 6", "wrote -1")) for ln in reached), reached  # /dev/null, or refused
    assert out.status is Status.WRONG_RESULT and "never written" in out.reason


def test_a_rank_cannot_reach_other_ranks_inputs_through_the_emulators_descriptors(adv_evaluator, tmp_path):
    out = run_emulate(adv_evaluator, X.gathers_through_the_parents_descriptor(), tmp_path / "w")
    assert "gathered through" not in out.log, out.log[-1500:]
    assert out.status is not Status.OK


SLOW = pytest.mark.slow


@pytest.mark.parametrize("source, symbol", [
    pytest.param(X.exits_with_the_harness_code, "_Exit", id="_Exit"),
    pytest.param(lambda: X.exits_with_a_code(3, K.AG), "exit", id="exit"),
    pytest.param(X.fork_bomb, "fork", id="fork"),
    pytest.param(X.writes_through_the_parents_descriptors, "open", id="open"),
    pytest.param(lambda: X.network(9), "socket", id="socket", marks=SLOW),
    pytest.param(lambda: X.api_key("OPENAI_API_KEY"), "getenv", id="getenv", marks=SLOW),
    pytest.param(X.fills_the_disk, "fopen", id="fopen", marks=SLOW),
    pytest.param(K.symlinks_the_manifest, "symlink", id="symlink", marks=SLOW),
    pytest.param(lambda: K.denylisted("memfd_create"), "memfd_create", id="memfd_create", marks=SLOW),
])
def test_the_object_check_alone_refuses_what_the_guard_refuses(adv_evaluator, tmp_path, source, symbol):
    # the second layer, without the guard: every call into the C library outside the allowlist
    out = candidate_object.compile_candidate_object(source(), tmp_path, dtype_code=adv_evaluator.spec.dtype.code,
                                                    cache_dir=adv_evaluator.config.cache_dir / "emulator")
    assert not out.ok and out.object is None
    assert any(f.rule == "undefined_symbol" and f"uses {symbol}" in f.reason for f in out.findings), out.findings
