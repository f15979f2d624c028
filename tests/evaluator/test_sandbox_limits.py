"""The sandbox's resource bounds: output, memory, the tmpfs workdir and what comes back from it, the
private /tmp and /dev/shm, passed fds. Each test skips, with the reason the Isolation record gives,
only where this machine lacks the feature it needs."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from evaluator import sandbox

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def isolation(tmp_path_factory):
    return sandbox.run(["true"], workdir=tmp_path_factory.mktemp("probe")).isolation


def _need(isolation, feature: str, what: str):
    if not getattr(isolation, feature):
        pytest.skip(f"this machine gives no {what} (sandbox isolation: {isolation.describe()})")


def _py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


# ---- output


_FLOOD = ("import sys\nout = sys.stdout.buffer\nout.write(b'FIRST-LINE\\n')\nblock = b'y' * (1 << 20)\n"
          "for _ in range(1024):\n    out.write(block)\nout.write(b'\\nLAST-LINE\\n')\nout.flush()\n"
          "sys.stderr.write('done\\n')")

_DRIVER = ("import json, sys\nfrom pathlib import Path\nfrom evaluator import sandbox\n"
           "res = sandbox.run([sys.executable, '-c', sys.argv[2]], workdir=Path(sys.argv[1]))\n"
           "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
           "print(json.dumps({'hwm_kib': int(hwm), 'dropped': res.dropped_bytes, 'rc': res.returncode,"
           " 'head': res.stdout[:11], 'tail': res.stdout[-11:], 'len': len(res.stdout), 'stderr': res.stderr,"
           " 'marker': f'[... {res.dropped_bytes} bytes of output dropped ...]' in res.stdout}))")


def test_a_gigabyte_of_output_keeps_head_and_tail_and_the_evaluator_small(tmp_path):
    # measured in a fresh interpreter: its peak RSS is the evaluator's cost of one flooding stage
    proc = subprocess.run([sys.executable, "-c", _DRIVER, str(tmp_path), _FLOOD], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    assert got["rc"] == 0 and got["marker"]
    assert got["head"] == "FIRST-LINE\n" and got["tail"] == "\nLAST-LINE\n"
    assert got["dropped"] >= (1 << 30) - (128 << 10) and got["len"] < 200 << 10
    assert got["stderr"] == "done\n"  # the other stream is kept whole, unmarked
    assert got["hwm_kib"] < 200 << 10, f"the evaluator grew to {got['hwm_kib']} KiB"


def test_output_stays_bounded_when_the_stage_floods_until_its_timeout(tmp_path):
    code = "import sys\nblock = b'z' * 65536\nwhile True:\n    sys.stdout.buffer.write(block)"
    res = sandbox.run(_py(code), workdir=tmp_path, limits=sandbox.Limits(wall_s=2, output_bytes=1000))
    assert res.timed_out and res.dropped_bytes > 0
    assert len(res.stdout) < 2100 and "bytes of output dropped" in res.stdout


def test_a_grandchild_holding_the_pipe_does_not_hold_the_run(tmp_path):
    # it escapes the process group; a pid namespace or the cgroup ends it, else the pipe is given up
    marker = f"{300 + uuid.uuid4().int % 1000 / 1000:.3f}"
    code = f"import subprocess\nsubprocess.Popen(['sleep', '{marker}'], start_new_session=True)\nprint('parent done')"
    start = time.monotonic()
    res = sandbox.run(_py(code), workdir=tmp_path, limits=sandbox.Limits(wall_s=30))
    assert time.monotonic() - start < 10 and not res.timed_out
    assert res.returncode == 0 and "parent done" in res.stdout


# ---- passed fds


def test_a_passed_memfd_is_shared_and_no_other_fd_reaches_the_stage(tmp_path):
    memfd = os.memfd_create("cuco-test")
    stray_r, stray_w = os.pipe()
    os.set_inheritable(stray_r, True)  # inheritable, yet not passed: it must not arrive
    code = ("import os, sys\nfd = int(sys.argv[1])\nos.write(fd, b'from the stage')\n"
            "names = [int(f) for f in os.listdir('/proc/self/fd')]\nalive = []\nfor f in names:\n"
            "    try:\n        os.fstat(f); alive.append(f)\n    except OSError:\n        pass\nprint(sorted(alive))")
    try:
        res = sandbox.run([*_py(code), str(memfd)], workdir=tmp_path, pass_fds=[memfd])
        assert res.returncode == 0, res.output
        assert os.pread(memfd, 100, 0) == b"from the stage"
        assert res.stdout.strip() == str([0, 1, 2, memfd])
    finally:
        for fd in (memfd, stray_r, stray_w):
            os.close(fd)


# ---- memory


def test_a_stage_using_three_times_its_memory_limit_is_killed(tmp_path, isolation):
    _need(isolation, "memory_limit", "memory cgroup")
    code = ("b = bytearray(768 << 20)\nfor i in range(0, len(b), 4096):\n    b[i] = 1\nprint('survived')")
    res = sandbox.run(_py(code), workdir=tmp_path, limits=sandbox.Limits(memory_bytes=256 << 20))
    assert res.signal_name == "SIGKILL" and "survived" not in res.stdout, res.output
    assert "memory<=256M(cgroup)" in res.isolation.describe()
    after = sandbox.run(_py("print('fine')"), workdir=tmp_path)  # the evaluator and the next run are unharmed
    assert after.returncode == 0 and after.stdout.strip() == "fine"


def test_tmpfs_pages_count_against_the_memory_limit(tmp_path, isolation):
    _need(isolation, "memory_limit", "memory cgroup")
    _need(isolation, "private_tmp", "private /tmp")
    code = ("b = b'x' * (1 << 20)\nwith open('/tmp/fill', 'wb') as f:\n    for _ in range(384):\n        f.write(b)\n"
            "print('wrote it all')")
    res = sandbox.run(_py(code), workdir=tmp_path,
                      limits=sandbox.Limits(memory_bytes=128 << 20, tmp_bytes=1 << 30))
    assert res.returncode != 0 and "wrote it all" not in res.stdout, res.output


def test_without_a_memory_limit_the_record_says_rlimit_only(tmp_path):
    res = sandbox.run(["true"], workdir=tmp_path, limits=sandbox.Limits(memory_bytes=None))
    assert res.isolation.memory_limit is None and "memory=rlimit-only" in res.isolation.describe()


# ---- private /tmp and /dev/shm


def test_siblings_of_the_workdir_under_tmp_are_invisible(tmp_path, isolation):
    _need(isolation, "private_tmp", "private /tmp")
    sibling = tmp_path / "other-evaluation"
    sibling.mkdir()
    (sibling / "candidate.cu").write_text("someone else's candidate")
    # named in the environment, not in argv: absolute paths in argv are the stage's inputs and stay readable
    code = ("import os\nfor p in os.environ['PROBE'].split(':'):\n    print(p, os.path.exists(p))")
    res = sandbox.run(_py(code), workdir=tmp_path / "work",
                      env={"PROBE": f"{sibling / 'candidate.cu'}:{tmp_path / 'work'}"})
    assert f"{sibling / 'candidate.cu'} False" in res.stdout, res.output
    assert f"{tmp_path / 'work'} True" in res.stdout
    assert "tmp<=64M(tmpfs)" in res.isolation.describe() and "shm<=64M(tmpfs)" in res.isolation.describe()


def test_inputs_named_in_argv_or_readable_stay_visible_under_the_private_tmp(tmp_path, isolation):
    _need(isolation, "private_tmp", "private /tmp")
    data = tmp_path / "inputs" / "data.txt"
    data.parent.mkdir()
    data.write_text("the input")
    code = ("import os, sys\np = sys.argv[1] if len(sys.argv) > 1 else os.environ['PROBE']\n"
            "print(open(p).read() if os.path.exists(p) else 'absent')")
    work, env = tmp_path / "w", {"PROBE": str(data)}
    unnamed = sandbox.run(_py(code), workdir=work, env=env)
    listed = sandbox.run(_py(code), workdir=work, env=env, readable=[data.parent])
    in_argv = sandbox.run([*_py(code), str(data)], workdir=work)
    assert unnamed.stdout.strip() == "absent", unnamed.output
    assert listed.stdout.strip() == "the input" and in_argv.stdout.strip() == "the input"


@pytest.mark.parametrize("where", ["/dev/shm", "/tmp"])
def test_writes_beyond_the_private_tmpfs_size_fail(tmp_path, isolation, where):
    _need(isolation, "private_tmp", "private /dev/shm and /tmp")
    code = (f"b = b'x' * (1 << 20)\nn = 0\ntry:\n    with open('{where}/fill', 'wb') as f:\n"
            "        for _ in range(64):\n            f.write(b); n += 1\nexcept OSError as e:\n"
            "    print('refused after', n, 'MiB, errno', e.errno)")
    res = sandbox.run(_py(code), workdir=tmp_path, limits=sandbox.Limits(shm_bytes=16 << 20, tmp_bytes=16 << 20))
    assert "errno 28" in res.stdout and int(res.stdout.split()[2]) <= 16, res.output  # ENOSPC


# ---- the tmpfs workdir and what comes back


_FILL = ("import os\nprint('input:', open('input.txt').read())\nopen('result.bin', 'w').write('the result')\n"
         "os.makedirs('sub', exist_ok=True)\nopen('sub/deep.bin', 'w').write('deep')\n"
         "block, written = b'x' * (256 << 10), 0\ntry:\n    for i in range(10**6):\n"
         "        with open(f'junk{i}', 'wb') as f:\n            f.write(block); written += len(block)\n"
         "except OSError as e:\n    print('stopped by errno', e.errno, 'after', written)")


def test_the_tmpfs_workdir_is_bounded_and_only_collected_files_come_back(tmp_path, isolation):
    _need(isolation, "readonly_fs", "mount namespace")
    (tmp_path / "input.txt").write_text("seeded")
    limit = 16 << 20
    res = sandbox.run(_py(_FILL), workdir=tmp_path, limits=sandbox.Limits(work_bytes=limit),
                      collect=["result.bin", "sub/deep.bin", "never-written.bin"])
    assert res.isolation.work_limit == limit and "work<=16M(tmpfs)" in res.isolation.describe()
    assert "input: seeded" in res.stdout and "stopped by errno 28" in res.stdout, res.output  # ENOSPC
    assert int(res.stdout.split()[-1]) <= limit  # it tried 2x and more, and got no further than the limit
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep.bin", "input.txt", "result.bin", "sub"]
    assert (tmp_path / "result.bin").read_text() == "the result" and (tmp_path / "sub/deep.bin").read_text() == "deep"
    assert res.collected == ("result.bin", "sub/deep.bin") and res.not_collected == {"never-written.bin": "missing"}


def test_the_inode_limit_stops_a_flood_of_empty_files(tmp_path, isolation):
    _need(isolation, "readonly_fs", "mount namespace")
    code = ("n = 0\ntry:\n    for i in range(10**6):\n        open(f'e{i}', 'w').close(); n += 1\n"
            "except OSError as e:\n    print('stopped by errno', e.errno, 'after', n)")
    res = sandbox.run(_py(code), workdir=tmp_path, limits=sandbox.Limits(work_bytes=64 << 20, work_inodes=1000))
    assert "stopped by errno 28" in res.stdout and int(res.stdout.split()[-1]) < 1000, res.output
    assert list(tmp_path.iterdir()) == []


def test_a_planted_symlink_or_fifo_or_oversized_file_is_never_collected(tmp_path, isolation):
    _need(isolation, "readonly_fs", "mount namespace")
    secret = tmp_path.parent / f"secret-{uuid.uuid4().hex}"
    secret.write_text("host secret")
    (tmp_path / "out.bin").write_text("stale, from an earlier run")
    code = (f"import os\nos.remove('out.bin')\nos.symlink({str(secret)!r}, 'out.bin')\nos.mkfifo('pipe.bin')\n"
            "open('big.bin', 'wb').write(b'x' * (2 << 20))\nos.symlink('/', 'dir')")
    try:
        limits = sandbox.Limits(work_bytes=16 << 20, collect_bytes=1 << 20)
        res = sandbox.run(_py(code), workdir=tmp_path, limits=limits,
                          collect=["out.bin", "pipe.bin", "big.bin", f"dir/{secret.relative_to('/')}"])
        assert res.returncode == 0, res.output
        assert res.collected == ()
        assert res.not_collected["out.bin"] == "not a regular file"
        assert res.not_collected["pipe.bin"] == "not a regular file"
        assert res.not_collected["big.bin"].startswith("too large")
        assert not (tmp_path / "out.bin").exists()  # not the stale copy either: it is not this run's
        assert sorted(os.listdir(tmp_path)) == [] and secret.read_text() == "host secret"
    finally:
        secret.unlink()


def test_collect_on_a_disk_workdir_removes_what_is_not_a_regular_file(tmp_path):
    code = "import os\nos.symlink('/etc/passwd', 'out.bin')\nopen('log.txt', 'w').write('ok')"
    res = sandbox.run(_py(code), workdir=tmp_path, collect=["out.bin", "log.txt"])
    assert res.collected == ("log.txt",) and res.not_collected == {"out.bin": "not a regular file"}
    assert not os.path.lexists(tmp_path / "out.bin") and (tmp_path / "log.txt").read_text() == "ok"
    assert "work=disk" in res.isolation.describe()


def test_a_collect_path_outside_the_workdir_is_refused(tmp_path):
    from design_space.errors import InfrastructureError
    with pytest.raises(InfrastructureError, match="relative to the workdir"):
        sandbox.run(["true"], workdir=tmp_path, collect=["../escape"])


def test_output_capture_gives_up_a_pipe_held_by_an_escaped_process(tmp_path):
    # no namespace and no cgroup here (a bare plan): only the capture's own grace bounds the wait
    from evaluator import jail
    # the stage exits only once its child has left the group (so ending the group cannot kill it)
    escape = ("import os, time\nr, w = os.pipe()\nif os.fork() == 0:\n"
              "    os.setsid(); os.write(1, b'%d\\n' % os.getpid()); os.write(w, b'x'); time.sleep(60)\n"
              "else:\n    os.read(r, 1)\n")
    proc = subprocess.Popen([sys.executable, "-c", escape], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    start = time.monotonic()
    streams, timed_out, lost = sandbox._capture(proc, jail.Plan([], {}, {}, False, None), start + 60, 1024)
    took = time.monotonic() - start
    os.kill(int(streams[0].text().split()[0]), 9)  # the sleeper printed its pid before we gave up
    assert lost, "the capture should report that output was still held open when it gave up"
    assert not timed_out and proc.returncode == 0  # the stage itself ended on its own
    # it gave up after its short grace, far from the 60 s deadline and the sleeper's 60 s (a loaded
    # CI machine can take seconds to start Python, so the bound is loose)
    assert took < 30, took


def test_setting_stop_ends_a_running_stage_promptly(tmp_path):
    import threading
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    start = time.monotonic()
    res = sandbox.run(["sleep", "60"], workdir=tmp_path, limits=sandbox.Limits(wall_s=60), stop=stop)
    assert res.timed_out and res.returncode != 0
    assert time.monotonic() - start < 10
