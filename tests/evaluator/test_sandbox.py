"""The sandbox: process groups die with the timeout, secrets never reach a stage."""

import os
import sys
import time

from evaluator import sandbox


def test_timeout_kills_the_whole_process_group(tmp_path):
    # the child spawns a grandchild that would outlive a plain kill of the child
    # a duration no other process uses, so a stray `sleep 300` elsewhere on the machine cannot fail this
    marker = f"sleep {300 + os.getpid() % 1000 / 1000:.3f}"
    script = f"import subprocess, time; subprocess.Popen({marker.split()!r}); time.sleep(300)"
    start = time.monotonic()
    res = sandbox.run([sys.executable, "-c", script], workdir=tmp_path, limits=sandbox.Limits(wall_s=1.5))
    assert res.timed_out and time.monotonic() - start < 15
    time.sleep(0.2)
    assert marker not in os.popen("ps -eo args").read()


def test_environment_is_scrubbed_and_home_is_the_workdir(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    code = "import os, json; print(json.dumps(dict(os.environ))); print(os.getcwd())"
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path)
    assert res.returncode == 0
    assert "sk-secret" not in res.stdout and "aws-secret" not in res.stdout
    assert f'"HOME": "{tmp_path}"' in res.stdout and res.stdout.strip().endswith(str(tmp_path))


def test_crash_is_reported_with_its_signal(tmp_path):
    res = sandbox.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"],
                      workdir=tmp_path)
    assert res.signal_name == "SIGSEGV" and not res.timed_out


def test_file_size_limit_applies(tmp_path):
    code = "open('big', 'wb').write(b'x' * (8 << 20))"
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path,
                      limits=sandbox.Limits(file_size_bytes=1 << 20))
    assert res.returncode != 0
    assert (tmp_path / "big").stat().st_size <= 1 << 20


def test_network_is_unreachable_when_the_os_allows_a_namespace(tmp_path):
    code = ("import socket\ntry:\n    socket.create_connection(('127.0.0.1', 9), timeout=2); print('connected')\n"
            "except OSError as e:\n    print('blocked', e.errno)")
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path)
    if res.network_isolated:
        assert "connected" not in res.stdout
