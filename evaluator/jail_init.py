"""The first process inside a sandbox's namespaces: pid 1 of its pid namespace when it has one.

Run as ``python -I -S jail_init.py SPEC_JSON -- argv...`` (stdlib only, imports nothing of ours, because
it starts in a fresh interpreter for every stage). In order it: joins the per-run pids cgroup, brings
loopback up, makes every mount read-only except the workdir and the ``writable`` paths, gives the stage
a fresh /proc, a minimal /dev (no raw disks) with a private /dev/shm, and a private /tmp when the workdir
is not under it; reports what it achieved on the status fd; then forks the stage with rlimits and no
capabilities, reaps, and writes the stage's exact exit status (pid 1 cannot re-raise a signal on
itself, so the status travels on the fd, not through our own exit code).
Every step is best effort: a step that fails is recorded, never fatal.
"""

import ctypes
import fcntl
import glob
import json
import os
import re
import resource
import socket
import struct
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 21
_OPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
# /proc parts a root-uid stage could use against the host (sysctls, sysrq) even without capabilities
_PROC_READONLY = ("sys", "sysrq-trigger", "bus", "fs", "irq")
_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
_RLIMITS = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS, "fsize": resource.RLIMIT_FSIZE,
            "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC, "core": resource.RLIMIT_CORE}
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 4, 24, 38, 47

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]


def _mount(src, target, fstype, flags, data=None):
    enc = (lambda s: s.encode() if s is not None else None)
    if _libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def _mounts():
    """(mount point, per-mount flags, read-only) for every line of our mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040 is a space
            opts = fields[5].split(",")
            flags = sum(_OPT_FLAGS.get(o, 0) for o in opts)
            out.append((point, flags, "ro" in opts))
    return out


def _is_readonly(path):
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return True  # hidden or gone: nothing writable through it


def _remount_all_readonly(errors):
    ok = True
    for point, flags, ro in _mounts():
        if ro:
            continue
        try:
            _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as e:
            if not _is_readonly(point):  # a mount hidden under another fails harmlessly
                ok = False
                errors.append(str(e))
    return ok


def _bind(src, target, readonly, extra=0):
    _mount(src, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | extra | (MS_RDONLY if readonly else 0)
    _mount(None, target, None, flags)


def _fresh_proc(errors):
    try:
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as e:
        errors.append(str(e))
        return False
    for part in _PROC_READONLY:
        p = "/proc/" + part
        if os.path.exists(p):
            try:
                _bind(p, p, True, MS_NOSUID | MS_NODEV | MS_NOEXEC)
            except OSError as e:
                errors.append(str(e))
    return True


def _mask(paths, old_dev, errors):
    """Cover host unix sockets (a root uid could drive a daemon through them: tmux, docker, systemd) and
    credential files with /dev/null; network namespaces do not separate path-named sockets."""
    masked = 0
    for path in paths:
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k")
            elif os.path.lexists(path) and not os.path.islink(path):
                _mount(f"/proc/self/fd/{old_dev}/null", path, None, MS_BIND)
            masked += 1
        except OSError as e:
            errors.append(f"mask {path}: {e}")
    return masked


def _minimal_dev(old_dev, errors):
    """tmpfs /dev holding only harmless nodes and the GPU's: a root uid may not open raw disks."""
    src = f"/proc/self/fd/{old_dev}/"
    names = [n for n in _DEV_NODES if os.path.exists(src + n)]
    names += sorted(os.path.basename(p) for p in glob.glob(src + "nvidia*"))
    try:
        _mount("tmpfs", "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k")
        for name in names:
            if os.path.isdir(src + name):
                os.mkdir("/dev/" + name)
            else:
                open("/dev/" + name, "w").close()
            _bind(src + name, "/dev/" + name, True, MS_NOSUID | MS_NOEXEC)
        for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
            os.symlink(to, "/dev/" + name)
        os.mkdir("/dev/shm")
        os.mkdir("/dev/pts")
        _mount(None, "/dev", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        return True
    except OSError as e:
        errors.append(f"private /dev: {e}")
        return False


def _private_tmpfs(path, errors):
    try:
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
        return True
    except OSError as e:
        errors.append(str(e))
        return False


def _rebind_writable(fds, errors):
    """Bind each kept path (opened before anything covered it) back onto its own path, writable."""
    ok = True
    for path, fd in fds.items():
        try:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(path, exist_ok=True)  # needed when a fresh tmpfs now covers its parent
            _bind(f"/proc/self/fd/{fd}", path, False)
        except OSError as e:
            ok = False
            errors.append(f"writable {path}: {e}")
        os.close(fd)
    return ok


def _setup_mounts(spec, errors):
    keep = [spec["workdir"], *spec["writable"]]
    fds = {p: os.open(p, os.O_PATH) for p in keep if os.path.exists(p)}
    old_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY)
    ro = _remount_all_readonly(errors)
    _mask(spec.get("mask", ()), old_dev, errors)
    proc = _fresh_proc(errors) if spec["pid_namespace"] else True
    dev = _minimal_dev(old_dev, errors)
    shm = _private_tmpfs("/dev/shm", errors)
    under_tmp = any(p == "/tmp" or p.startswith("/tmp/") for p in keep)
    # a workdir under /tmp keeps the host's /tmp visible (read-only): the stage may read inputs there
    tmp = under_tmp or _private_tmpfs("/tmp", errors)
    kept = _rebind_writable(fds, errors)
    os.close(old_dev)
    return {"readonly_fs": ro and kept and proc, "private_dev": dev, "private_shm": shm,
            "private_tmp": shm and tmp, "tmp": "host, read-only" if under_tmp else "private"}


def _loopback_up():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        got = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))  # SIOCGIFFLAGS
        flags = struct.unpack("16sH", got[:18])[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS |= IFF_UP


def _drop_privileges():
    """No capabilities survive exec: a root stage cannot remount, re-join cgroups or ptrace the init."""
    _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    _libc.capset(header, data)
    with open("/proc/self/status") as f:
        caps = dict(ln.split(":", 1) for ln in f if ln.startswith("Cap"))
    # a non-root uid gains nothing at exec (no_new_privs blocks setuid files) even with a full bounding set
    return int(caps["CapPrm"], 16) == 0 and (int(caps["CapBnd"], 16) == 0 or os.getuid() != 0)


def _exec_stage(spec, argv):
    try:
        for name, value in spec["rlimits"].items():
            resource.setrlimit(_RLIMITS[name], (value, value))
        os.chdir(spec["workdir"])
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, f"sandbox: cannot start {argv[0]}: {e}\n".encode())
    os._exit(127)


def _setup(spec, errors):
    report = {"pid_namespace": os.getpid() == 1, "cgroup": False, "loopback": False}
    if spec["cgroup"]:
        try:
            with open(os.path.join(spec["cgroup"], "cgroup.procs"), "w") as f:
                f.write("0")  # ourselves, before anything of the stage runs
            report["cgroup"] = True
        except OSError as e:
            errors.append(f"cgroup: {e}")
    if spec["network"]:
        try:
            _loopback_up()
            report["loopback"] = True
        except OSError as e:
            errors.append(f"loopback: {e}")
    if spec["mount_namespace"]:
        try:
            report.update(_setup_mounts(spec, errors))
        except Exception as e:  # noqa: BLE001 - half a jail still runs the stage; the record says so
            errors.append(f"mounts: {e!r}")
    return report


def main():
    sep = sys.argv.index("--")
    spec, argv = json.loads(sys.argv[1]), sys.argv[sep + 1:]
    status = spec["status_fd"]
    os.set_inheritable(status, False)
    errors = []
    report = _setup(spec, errors)
    # dropped here, in the init, so nothing forked later can hold a capability; the init needs none now
    try:
        report["caps_dropped"] = bool(spec["drop_caps"]) and _drop_privileges()
    except Exception as e:  # noqa: BLE001
        report["caps_dropped"] = False
        errors.append(f"capabilities: {e!r}")
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the stage may not open our fds through /proc
    report["errors"] = errors
    os.write(status, (json.dumps(report) + "\n").encode())
    child = os.fork()
    if child == 0:
        _exec_stage(spec, argv)
    while True:  # as pid 1 we also reap orphans; leaving kills whatever of the stage is left
        pid, st = os.waitpid(-1, 0)
        if pid == child:
            break
    sig = os.WTERMSIG(st) if os.WIFSIGNALED(st) else 0
    os.write(status, (f"signal {sig}\n" if sig else f"exit {os.WEXITSTATUS(st)}\n").encode())
    os._exit(128 + sig if sig else os.WEXITSTATUS(st))


if __name__ == "__main__":
    main()
