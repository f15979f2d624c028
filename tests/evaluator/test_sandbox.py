"""The sandbox: process groups die with the timeout, secrets never reach a stage."""

import json
import os
import socket
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

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
    planted = [f"planted-{uuid.uuid4().hex}" for _ in range(2)]  # made at run time: nothing key-shaped is committed
    monkeypatch.setenv("OPENAI_API_KEY", planted[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", planted[1])
    code = "import os, json; print(json.dumps(dict(os.environ))); print(os.getcwd())"
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path)
    assert res.returncode == 0
    assert all(value not in res.stdout for value in planted)
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


# ---- hardening: each test skips, with the reason the Isolation record gives, where a feature is missing


@pytest.fixture(scope="module")
def isolation(tmp_path_factory):
    return sandbox.run(["true"], workdir=tmp_path_factory.mktemp("probe")).isolation


def _need(isolation, feature: str):
    if not getattr(isolation, feature):
        pytest.skip(f"this machine gives no {feature} (sandbox isolation: {isolation.describe()})")


def _survivors(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_a_fork_bomb_is_contained_and_nothing_of_it_survives(tmp_path, isolation):
    _need(isolation, "process_limit")
    marker = f"bomb-{uuid.uuid4().hex}"
    code = f"import os, time  # {marker}\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)"
    start = time.monotonic()
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path, limits=sandbox.Limits(wall_s=3, processes=64))
    assert res.timed_out and time.monotonic() - start < 20
    time.sleep(0.2)
    assert _survivors(marker) == []


@pytest.mark.parametrize("parent_hangs", [False, True])
def test_a_setsid_grandchild_dies_with_the_stage(tmp_path, isolation, parent_hangs):
    if not (isolation.pid_namespace or isolation.process_limit_how == "cgroup"):
        pytest.skip(f"no pid namespace and no cgroup to find escapees (sandbox isolation: {isolation.describe()})")
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    code = (f"import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'], start_new_session=True)\n"
            f"time.sleep(0.3)\n{'time.sleep(300)' if parent_hangs else ''}")
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path, limits=sandbox.Limits(wall_s=3))
    assert res.timed_out == parent_hangs and res.wall_s < 20
    time.sleep(0.2)
    assert _survivors(marker) == []


def test_only_the_workdir_and_writable_paths_can_be_written(tmp_path, isolation):
    _need(isolation, "readonly_fs")
    work, outside, extra = tmp_path / "work", tmp_path / "outside", tmp_path / "extra"
    outside.mkdir()
    extra.mkdir()
    in_tmp = Path("/tmp") / f"cuco-sbx-{uuid.uuid4().hex}"  # lands in the stage's private /tmp, if anywhere
    in_repo = Path(__file__).parent / f"cuco-sbx-{uuid.uuid4().hex}"  # outside /tmp: read-only
    code = ("import sys\nfor p in sys.argv[1:]:\n    try:\n        open(p, 'w').write('x'); print('wrote', p)\n"
            "    except OSError as e:\n        print('refused', p, e.errno)")
    targets = [outside / "f", in_tmp, in_repo, work / "inside", extra / "f"]
    res = sandbox.run([sys.executable, "-c", code, *map(str, targets)], workdir=work, writable=[extra])
    assert res.returncode == 0, res.output
    # EROFS; a checkout under /tmp is hidden by the private /tmp instead (ENOENT)
    errno = 2 if in_repo.is_relative_to("/tmp") else 30
    assert f"refused {outside / 'f'}" in res.stdout and f"refused {in_repo} {errno}" in res.stdout
    assert not (outside / "f").exists() and not in_tmp.exists() and not in_repo.exists()
    assert (work / "inside").read_text() == "x" and (extra / "f").read_text() == "x"


def test_dev_shm_is_private(tmp_path, isolation):
    _need(isolation, "private_tmp")
    name = f"/dev/shm/cuco-sbx-{uuid.uuid4().hex}"
    code = f"open({name!r}, 'w').write('x'); import os; print('inside', os.path.exists({name!r}))"
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path)
    assert "inside True" in res.stdout, res.output
    assert not os.path.exists(name)


def _host_server():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(3)
    got = []

    def serve():
        try:
            conn, _ = srv.accept()
            got.append(conn.recv(100))
            conn.close()
        except OSError:
            pass

    thread = threading.Thread(target=serve)
    thread.start()
    return srv, thread, got


_CONNECT = ("import socket, sys\ntry:\n    s = socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=2)\n"
            "    s.sendall(b'leak'); print('connected')\nexcept OSError as e:\n    print('blocked', e.errno)")


def test_the_host_loopback_is_unreachable(tmp_path, isolation):
    _need(isolation, "network")
    srv, thread, got = _host_server()
    try:
        res = sandbox.run([sys.executable, "-c", _CONNECT, str(srv.getsockname()[1])], workdir=tmp_path)
    finally:
        thread.join()
        srv.close()
    assert "blocked" in res.stdout and "connected" not in res.stdout, res.output
    assert got == []


def test_without_network_isolation_the_host_loopback_is_reachable(tmp_path):
    srv, thread, got = _host_server()
    try:
        res = sandbox.run([sys.executable, "-c", _CONNECT, str(srv.getsockname()[1])], workdir=tmp_path,
                          isolate_network=False)
    finally:
        thread.join()
        srv.close()
    assert "connected" in res.stdout and got == [b"leak"] and not res.isolation.network


def test_host_unix_sockets_are_unreachable(tmp_path, isolation):
    # a network namespace does not hide path-named sockets; a root stage could drive a host daemon through one
    _need(isolation, "readonly_fs")
    (tmp_path / "host").mkdir()
    path = str(tmp_path / "host" / "daemon.sock")
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(3)
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect(sys.argv[1]); s.sendall(b'x');"
            " print('connected')\nexcept OSError as e:\n    print('blocked', e.errno)")
    try:
        res = sandbox.run([sys.executable, "-c", code, path], workdir=tmp_path / "work")
        with pytest.raises(socket.timeout):
            srv.accept()
    finally:
        srv.close()
    assert "blocked" in res.stdout, res.output


def test_processes_inside_can_talk_over_loopback(tmp_path, isolation):
    _need(isolation, "network")
    code = ("import os, socket\nsrv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)\n"
            "port = srv.getsockname()[1]\nif os.fork() == 0:\n"
            "    socket.create_connection(('127.0.0.1', port), timeout=5).sendall(b'ping'); os._exit(0)\n"
            "conn, _ = srv.accept(); print('got', conn.recv(10).decode()); os.wait()")
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path, limits=sandbox.Limits(wall_s=20))
    assert "got ping" in res.stdout, res.output


def test_the_isolation_record_matches_what_the_stage_sees(tmp_path, isolation):
    code = ("import os, json\nst = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
            "print(json.dumps({'net': os.readlink('/proc/self/ns/net'), 'ppid': os.getppid(),"
            " 'ro': bool(os.statvfs('/').f_flag & os.ST_RDONLY), 'shm': os.listdir('/dev/shm'),"
            " 'cap': int(st['CapEff'], 16), 'cgroup': open('/proc/self/cgroup').read()}))")
    probe = Path("/dev/shm") / f"cuco-sbx-{uuid.uuid4().hex}"
    probe.write_text("host")
    try:
        res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path)
    finally:
        probe.unlink()
    seen, iso = json.loads(res.stdout), res.isolation
    assert iso == isolation  # the same machine gives every run the same isolation
    assert iso.network == (seen["net"] != os.readlink("/proc/self/ns/net"))
    assert iso.pid_namespace == (seen["ppid"] == 1)  # the jail's init is pid 1 of a fresh namespace
    assert iso.readonly_fs == seen["ro"]
    assert iso.private_tmp == (probe.name not in seen["shm"])
    assert iso.no_capabilities == (seen["cap"] == 0)
    lines = seen["cgroup"].splitlines()
    in_pids = any("cuco-sandbox" in ln for ln in lines if ":pids:" in ln or ln.startswith("0::"))
    assert (iso.process_limit_how == "cgroup") == in_pids
    memory_v1 = [ln for ln in lines if ":memory:" in ln]  # on v2 one cgroup holds both: pids says it all
    if memory_v1:
        assert (iso.memory_limit_how == "cgroup") == ("cuco-sandbox" in memory_v1[0])
    text = iso.describe()
    assert ("net=private" in text) == iso.network and ("pid=ns" in text) == iso.pid_namespace
    assert res.network_isolated == iso.network


def test_no_process_limit_when_none_is_asked(tmp_path):
    res = sandbox.run(["true"], workdir=tmp_path, limits=sandbox.Limits(processes=None))
    assert res.returncode == 0 and res.isolation.process_limit is None
    assert "procs=unlimited" in res.isolation.describe()


def test_a_huge_allocation_fails_under_the_address_space_limit(tmp_path):
    code = "b = bytearray(4 << 30); print('allocated')"
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path,
                      limits=sandbox.Limits(address_space_bytes=1 << 30))
    assert res.returncode != 0 and "MemoryError" in res.stderr and "allocated" not in res.stdout


def test_the_process_limit_refuses_one_process_too_many(tmp_path, isolation):
    _need(isolation, "process_limit")
    code = ("import os, signal\nkids = []\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n"
            "        break\n    if pid == 0:\n        signal.pause()\n    kids.append(pid)\n"
            "print('forked', len(kids))\nfor k in kids:\n    os.kill(k, 9)")
    res = sandbox.run([sys.executable, "-c", code], workdir=tmp_path, limits=sandbox.Limits(processes=8, wall_s=20))
    forked = int(res.stdout.split()[-1])
    if res.isolation.process_limit_how == "cgroup":
        assert forked == 7  # the stage itself plus 7 children make 8
    else:  # RLIMIT_NPROC counts every process of the user, not only ours
        assert forked < 8


def test_hidden_files_read_as_empty_inside_and_stay_intact_outside(tmp_path, isolation):
    _need(isolation, "readonly_fs")
    answer = tmp_path / "cache" / "expected.bin"
    answer.parent.mkdir()
    answer.write_bytes(b"the expected output")
    code = f"print(repr(open({str(answer)!r}, 'rb').read()))"
    work = tmp_path / "w"
    hidden = sandbox.run([sys.executable, "-c", code], workdir=work, hidden=[answer])
    shown = sandbox.run([sys.executable, "-c", code], workdir=work, readable=[answer.parent])
    assert hidden.returncode == 0 and hidden.stdout.strip() == "b''", hidden.output
    assert "the expected output" in shown.stdout
    assert answer.read_bytes() == b"the expected output"


def test_a_stage_dies_with_the_process_that_started_it(tmp_path, isolation):
    # a killed evaluator (SIGKILL: no cleanup code runs) must not leave its stages running
    _need(isolation, "pid_namespace")
    marker = f"sleep {400 + os.getpid() % 1000 / 1000:.3f}"
    script = (f"import sys; sys.path.insert(0, {str(Path(sandbox.__file__).parents[1])!r})\n"
              "from pathlib import Path\nfrom evaluator import sandbox\n"
              f"sandbox.run({marker.split()!r}, workdir=Path({str(tmp_path / 'w')!r}), "
              "limits=sandbox.Limits(wall_s=600))\n")
    import subprocess
    parent = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 30
    while marker not in os.popen("ps -eo args").read() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker in os.popen("ps -eo args").read()
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while marker in os.popen("ps -eo args").read() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker not in os.popen("ps -eo args").read()
