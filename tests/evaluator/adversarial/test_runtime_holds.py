"""Defense in depth: escapes the guard would reject, run straight through the emulate stage (as
the cascade runs it after the guard), so the sandbox alone must hold. Where this machine's
sandbox lacks the isolation a check needs, the test is skipped, naming what is missing."""

import os
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from design_space.evaluation import Status
from evaluator import emulate
from tests.evaluator.adversarial import kernels as K

SECRET = f"planted-{uuid.uuid4().hex}"  # made at run time: nothing key-shaped lives in the repository


def run_emulate(ev, source, work):
    cases = [c for c in ev._cases if c.world == 2][:1]
    return emulate.emulate(source, spec=ev.spec, pattern=ev.pattern, cases=cases, work_dir=work,
                           cache_dir=ev.config.cache_dir / "emulator", settings=ev.config.emulation)


def need(isolation, feature, why):
    if isolation is None or not getattr(isolation, feature, False):
        have = isolation.describe() if isolation is not None and hasattr(isolation, "describe") else "no record"
        pytest.skip(f"the sandbox has no {feature} here ({have}): {why}")


def survivors(marker):
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [ln for ln in ps.splitlines() if marker in ln]


def test_api_key_in_the_callers_environment_never_reaches_logs_or_outputs(adv_evaluator, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    out = run_emulate(adv_evaluator, K.api_key("OPENAI_API_KEY"), tmp_path / "w")
    assert "leak:" in out.log  # the candidate ran and printed what it found
    assert SECRET not in out.log
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "w").rglob("*.bin"))


def test_api_key_in_an_ancestors_initial_environment_stays_hidden(isolation, tmp_path, shared_cache):
    # /proc/PID/environ shows a process's initial environment: only a pid namespace hides it
    need(isolation, "pid_namespace", "a candidate can read an ancestor's /proc/PID/environ")
    script = (
        "import sys; from pathlib import Path\n"
        "from cuco.spec_loader import load_spec\n"
        "from evaluator.cascade import Evaluator, EvaluatorConfig\n"
        "from tests.evaluator.adversarial import kernels as K\n"
        "from tests.evaluator.adversarial.test_runtime_holds import run_emulate\n"
        f"ev = Evaluator(load_spec(Path({str(K_EXAMPLE)!r})), EvaluatorConfig(cache_dir=Path({str(shared_cache)!r})))\n"
        "ev.prepare()\n"
        f"out = run_emulate(ev, K.api_key('OPENAI_API_KEY'), Path({str(tmp_path / 'w')!r}))\n"
        "sys.stdout.write(out.log)\n")
    env = {**os.environ, "OPENAI_API_KEY": SECRET}
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=300,
                         cwd=Path(__file__).resolve().parents[3])
    assert res.returncode == 0, res.stderr[-2000:]
    assert "leak:" in res.stdout and SECRET not in res.stdout
    assert not any(SECRET.encode() in p.read_bytes() for p in (tmp_path / "w").rglob("*.bin"))


def test_network_connection_to_a_local_server_gets_nowhere(adv_evaluator, isolation, tmp_path):
    need(isolation, "network", "a candidate could reach servers on this host")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        server.setblocking(False)
        out = run_emulate(adv_evaluator, K.network(server.getsockname()[1]), tmp_path / "w")
        assert out.network_isolated
        with pytest.raises(BlockingIOError):
            server.accept()


def test_write_outside_the_sandbox_lands_nowhere_on_the_host(adv_evaluator, isolation, tmp_path):
    target = tmp_path / "escaped.txt"  # outside the stage's workdir
    out = run_emulate(adv_evaluator, K.write_outside(str(target)), tmp_path / "w")
    if target.exists() and not (getattr(isolation, "readonly_fs", False) or getattr(isolation, "private_tmp", False)):
        need(isolation, "readonly_fs", "a candidate can write anywhere the evaluator can")
    assert not target.exists(), out.log


def test_fork_bomb_ends_in_bounded_time_with_no_surviving_process(hang_evaluator, isolation, tmp_path):
    work = tmp_path / "w"
    start = time.monotonic()
    out = run_emulate(hang_evaluator, K.fork_bomb(depth=7), work)
    assert time.monotonic() - start < 60
    assert out.status in (Status.TIMEOUT, Status.CRASHED), out.reason
    time.sleep(0.5)
    assert survivors(str(work)) == []


K_EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "allgather_gemm"


def test_the_reference_outputs_read_as_empty_inside_the_sandbox(adv_evaluator, isolation, tmp_path):
    # the harness owns the reference: a candidate that knows where its expected outputs are cached
    # and copies them instead of computing must still fail
    need(isolation, "readonly_fs", "without a mount namespace the reference files cannot be hidden")
    case = [c for c in adv_evaluator._cases if c.world == 2][0]
    answers = [str(rd.outputs[0].path) for rd in case.ranks]
    assert all(Path(p).stat().st_size > 0 for p in answers)  # the answers are there on the host
    out = emulate.emulate(K.copies_the_reference(answers), spec=adv_evaluator.spec, pattern=adv_evaluator.pattern,
                          cases=[case], work_dir=tmp_path / "w", cache_dir=adv_evaluator.config.cache_dir / "emulator",
                          settings=adv_evaluator.config.emulation)
    assert "cheat: rank 0 read 0 bytes" in out.log, out.log[-2000:]
    assert out.status is Status.WRONG_RESULT and "never written" in out.reason
