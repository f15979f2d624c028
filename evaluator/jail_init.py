"""The first process inside a sandbox's namespaces: pid 1 of its pid namespace when it has one.

Run as ``python -I -S jail_init.py SPEC_HEX -- argv...`` (stdlib only, imports nothing of ours, because
it starts in a fresh interpreter for every stage; jail.py writes the spec). In order it: joins the run's
cgroups (pids, memory), brings loopback up, then builds the stage's filesystem in its mount namespace:

- every host mount read-only, a fresh /proc, a minimal /dev (no raw disks), and private size-limited
  tmpfs at /tmp and /dev/shm;
- with a view, a fresh tmpfs root holding only the spec's ``binds`` (system dirs, a minimal /etc, the
  view) and ``links``, entered with pivot_root so the old root is gone; without one, the host tree;
- the workdir and ``writable`` paths bound writable, the other ``binds`` read-only (without a view only
  those a private /tmp would hide); with ``work_bytes`` the workdir is a tmpfs of that size seeded with a
  copy of the real directory's regular files, and only the ``collect`` paths go back, after the stage;
- host unix sockets, credentials and ``hidden`` files covered last.

It reports what it achieved on the status fd, forks the stage with rlimits, no capabilities and only
its ``pass_fds`` open, reaps, copies the collected files back, and writes the stage's exact exit status
(pid 1 cannot re-raise a signal on itself, so the status travels on the fd, not through our exit code).
Every step is best effort: a step that fails is recorded, never fatal.
"""

# Only cheap modules: this runs once per stage, and json, re, glob, socket or signal would double its
# start-up time. The spec comes as hex-encoded marshal (same interpreter on both sides), the reports go
# back as Python literals (the host reads them with ast.literal_eval).
import ctypes
import errno
import fcntl
import marshal
import os
import resource
import stat
import struct
import sys

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_RELATIME = 1024, 2048, 4096, 16384, 1 << 21
MNT_DETACH = 2
SIGKILL, AF_INET, SOCK_DGRAM = 9, 2, 2
_OPT_FLAGS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
              "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME}
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41, "ppc64le": 203, "s390x": 217}
# /proc parts a root-uid stage could use against the host (sysctls, sysrq) even without capabilities
_PROC_READONLY = ("sys", "sysrq-trigger", "bus", "fs", "irq")
_DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
_RLIMITS = {"cpu": resource.RLIMIT_CPU, "as": resource.RLIMIT_AS, "fsize": resource.RLIMIT_FSIZE,
            "nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC, "core": resource.RLIMIT_CORE}
PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 4, 24, 38, 47
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_ROOT = "/tmp"  # a view's root is built on a tmpfs mounted here (nothing is created on the host)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(src, target, fstype, flags, data=None):
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_libc.mount(enc(src), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


def _unescape(field):
    """mountinfo writes a space as \\040 (and so on, in octal)."""
    parts = field.split("\\")
    out = [parts[0]]
    for part in parts[1:]:
        code = part[:3]
        out.append(chr(int(code, 8)) + part[3:] if len(code) == 3 and code.isdigit() else "\\" + part)
    return "".join(out)


def _mounts():
    """(mount point, per-mount flags, read-only) for every line of our mountinfo."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            point = _unescape(fields[4])
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


def _kept_flags(path):
    """The per-mount flags a bind inherited: a user namespace may not clear them, and we never want to."""
    f = os.statvfs(path).f_flag
    pairs = ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
             (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME))
    return sum(ms for st, ms in pairs if f & st)


def _bind(src, target, readonly, extra=0):
    _mount(src, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | extra | _kept_flags(target) | (MS_RDONLY if readonly else 0)
    _mount(None, target, None, flags)


def _tmpfs(path, size, inodes, mode="1777", flags=MS_NOSUID | MS_NODEV, extra=""):
    _mount("tmpfs", path, "tmpfs", flags, f"mode={mode},size={int(size)},nr_inodes={int(inodes)}{extra}")


def _fresh_proc(target, errors):
    try:
        _mount("proc", target, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as e:
        errors.append(str(e))
        return False
    for part in _PROC_READONLY:
        p = f"{target}/{part}"
        if os.path.exists(p):
            try:
                _bind(p, p, True, MS_NOSUID | MS_NODEV | MS_NOEXEC)
            except OSError as e:
                errors.append(str(e))
    return True


def _minimal_dev(target, old_dev, errors):
    """tmpfs /dev holding only harmless nodes and the GPU's: a root uid may not open raw disks."""
    src = f"/proc/self/fd/{old_dev}/"
    names = [n for n in _DEV_NODES if os.path.exists(src + n)]
    names += sorted(n for n in os.listdir(src) if n.startswith("nvidia"))
    try:
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=755,size=64k")
        for name in names:
            if os.path.isdir(src + name):
                os.mkdir(f"{target}/{name}")
            else:
                open(f"{target}/{name}", "w").close()
            _bind(src + name, f"{target}/{name}", True, MS_NOSUID | MS_NOEXEC)
        for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                         ("stderr", "/proc/self/fd/2")):
            os.symlink(to, f"{target}/{name}")
        os.mkdir(f"{target}/shm")
        os.mkdir(f"{target}/pts")
        _mount(None, target, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        return True
    except OSError as e:
        errors.append(f"private /dev: {e}")
        return False


def _private_tmp(root, spec, errors):
    """Fresh size-limited /tmp and /dev/shm: other runs' files under the host's /tmp stay out of sight."""
    done = {}
    for key, path in (("tmp", "/tmp"), ("shm", "/dev/shm")):
        try:
            os.makedirs(root + path, exist_ok=True)
            _tmpfs(root + path, spec[f"{key}_bytes"], spec["inodes"])
            done[key] = True
        except OSError as e:
            done[key] = False
            errors.append(f"private {path}: {e}")
    return done


def _mask(root, paths, old_dev, errors):
    """Cover host unix sockets (a root uid could drive a daemon through them: tmux, docker, systemd),
    credential files and hidden files: network namespaces do not separate path-named sockets."""
    for path in paths:
        target = root + path
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                _mount("tmpfs", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k")
            elif os.path.lexists(target) and not os.path.islink(target):
                _mount(f"/proc/self/fd/{old_dev}/null", target, None, MS_BIND)
        except OSError as e:
            errors.append(f"mask {path}: {e}")


def _place(target, is_dir):
    """A mount point at ``target``: its parents are on a fresh tmpfs (a view's root or the private /tmp)."""
    if os.path.lexists(target):
        return
    os.makedirs(os.path.dirname(target), exist_ok=True)
    if is_dir:
        os.mkdir(target)
    else:
        open(target, "w").close()


def _bind_all(root, binds, fds, errors):
    """Bind each path (opened before anything covered it) at its own path; parents come first."""
    ok = True
    for path, mode in binds:
        fd = fds.get(path)
        if fd is None:
            continue
        try:
            _place(root + path, os.path.isdir(f"/proc/self/fd/{fd}"))
            _bind(f"/proc/self/fd/{fd}", root + path, mode == "ro", MS_NOSUID if mode == "ro" else 0)
        except OSError as e:
            ok = False
            errors.append(f"{'read-only' if mode == 'ro' else 'writable'} {path}: {e}")
    return ok


def _links(root, links, errors):
    for path, target in links:
        try:
            _place(root + os.path.dirname(path), True)
            os.symlink(target, root + path)
        except OSError as e:
            errors.append(f"link {path}: {e}")


def _pivot(root):
    """Make ``root`` the stage's / and detach the old one, so no path leads back to the host's tree."""
    nr = _SYS_PIVOT_ROOT.get(os.uname().machine)
    os.chdir(root)
    if nr is None:
        os.chroot(".")  # no capabilities survive to the stage, so it cannot chroot back out
        os.chdir("/")
        return "chroot"
    old = os.open("/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        _check(_libc.syscall(ctypes.c_long(nr), b".", b"."), "pivot_root")
        os.fchdir(old)  # the old root now sits on top of the new one: detach it, from inside it
        _check(_libc.umount2(b".", MNT_DETACH), "detach the old root")
    finally:
        os.close(old)
    os.chdir("/")
    return "pivot_root"


# ---- the workdir as a size-limited tmpfs: seeded from the real directory, only `collect` goes back


def _copy_file(src_fd, dst_dir, name, mode):
    """Copy an open regular file into ``dst_dir`` under ``name`` (a fresh file: nothing there is followed)."""
    tmp = f".cuco-copy-{os.urandom(6).hex()}"
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=dst_dir)
    try:
        while os.sendfile(out, src_fd, None, 1 << 24) > 0:
            pass
        os.fchmod(out, stat.S_IMODE(mode))
    finally:
        os.close(out)
    os.rename(tmp, name, src_dir_fd=dst_dir, dst_dir_fd=dst_dir)


def _seed(src_dir, dst_dir, skip, prefix, errors):
    """Copy regular files and folders (never symlinks or special files) from the real workdir."""
    with os.scandir(src_dir) as it:
        entries = list(it)
    for entry in entries:
        rel = prefix + entry.name
        if rel in skip:
            continue
        try:
            st = os.stat(entry.name, dir_fd=src_dir, follow_symlinks=False)
            if stat.S_ISDIR(st.st_mode):
                os.mkdir(entry.name, stat.S_IMODE(st.st_mode) | 0o700, dir_fd=dst_dir)
                a = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=src_dir)
                b = os.open(entry.name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=dst_dir)
                try:
                    _seed(a, b, skip, rel + "/", errors)
                finally:
                    os.close(a)
                    os.close(b)
            elif stat.S_ISREG(st.st_mode):
                fd = os.open(entry.name, os.O_RDONLY | _NOFOLLOW, dir_fd=src_dir)
                try:
                    _copy_file(fd, dst_dir, entry.name, st.st_mode)
                finally:
                    os.close(fd)
        except OSError as e:
            errors.append(f"seed workdir {rel}: {e}")


def _work_tmpfs(root, spec, errors):
    """Cover the (already bound) workdir with a tmpfs; (real dir fd, tmpfs fd) for the collection."""
    target = root + spec["workdir"]
    real = None
    try:
        real = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        st = os.fstat(real)
        _tmpfs(target, spec["work_bytes"], spec["inodes"], mode=f"{stat.S_IMODE(st.st_mode):o}",
               extra=f",uid={st.st_uid},gid={st.st_gid}")
        work = os.open(target, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        if real is not None:
            os.close(real)
        errors.append(f"workdir tmpfs: {e}")
        return None
    prefix = spec["workdir"].rstrip("/") + "/"
    skip = {h[len(prefix):] for h in spec["hidden"] if h.startswith(prefix)}
    _seed(real, work, skip, "", errors)
    return real, work


def _walk(top, parts, create):
    """The folder ``parts`` names under ``top``, never following a symlink; None when it is not one."""
    fd = os.dup(top)
    for part in parts:
        try:
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                os.close(fd)
                return None
            os.mkdir(part, 0o755, dir_fd=fd)
            nxt = os.open(part, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW, dir_fd=fd)
        except OSError:
            os.close(fd)
            return None
        os.close(fd)
        fd = nxt
    return fd


def _collect_one(real, work, rel, max_bytes):
    """Copy one stage file back; None when copied, else why not."""
    parts = rel.split("/")
    src_dir = _walk(work, parts[:-1], create=False)
    if src_dir is None:
        return "missing"
    try:
        try:  # O_NONBLOCK: a FIFO planted under the name must not hang us
            fd = os.open(parts[-1], os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW, dir_fd=src_dir)
        except FileNotFoundError:
            return "missing"
        except OSError as e:
            return "not a regular file" if e.errno == errno.ELOOP else f"unreadable: {e.strerror}"  # a symlink
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return "not a regular file"
            if st.st_size > max_bytes:
                return f"too large ({st.st_size} bytes > {max_bytes})"
            dst_dir = _walk(real, parts[:-1], create=True)
            if dst_dir is None:
                return "its folder on the host is not a plain folder"
            try:
                _copy_file(fd, dst_dir, parts[-1], st.st_mode)
            finally:
                os.close(dst_dir)
            return None
        finally:
            os.close(fd)
    finally:
        os.close(src_dir)


def _collect(work_fds, spec):
    """After the stage: its leftover processes die first, so nothing changes a file while it is copied."""
    if os.getpid() == 1:
        try:
            os.kill(-1, SIGKILL)
        except OSError:
            pass
        while True:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break
    real, work = work_fds
    collected, refused = [], {}
    for rel in spec["collect"]:
        try:
            why = _collect_one(real, work, rel, spec["collect_bytes"])
        except OSError as e:
            why = f"copy failed: {e}"
        if why is None:
            collected.append(rel)
        else:
            refused[rel] = why
            _drop_stale(real, rel)
    return {"collected": collected, "refused": refused}


def _drop_stale(real, rel):
    """A collected name the stage did not produce must not show an older file from before the run."""
    parts = rel.split("/")
    d = _walk(real, parts[:-1], create=False)
    if d is not None:
        try:
            os.unlink(parts[-1], dir_fd=d)
        except OSError:
            pass
        os.close(d)


# ---- the whole filesystem setup


def _open_binds(binds, errors):
    fds = {}
    for path, _ in binds:
        try:
            fds[path] = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError as e:
            errors.append(f"open {path}: {e}")
    return fds


def _setup_mounts(spec, errors):
    view = spec["view"]
    root = _NEW_ROOT if view else ""
    fds = _open_binds(spec["binds"], errors)
    old_dev = os.open("/dev", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    result = {"readonly_fs": _remount_all_readonly(errors)}
    if view:
        _tmpfs(root, 1 << 20, 4096, mode="755")  # the new root: folders and mount points only
        _links(root, spec["links"], errors)
        os.makedirs(root + "/proc")
        os.makedirs(root + "/dev")
    proc = _fresh_proc(root + "/proc", errors) if spec["pid_namespace"] else not view
    result["private_dev"] = _minimal_dev(root + "/dev", old_dev, errors)
    tmp = _private_tmp(root, spec, errors)
    result.update(private_tmp=tmp["tmp"], private_shm=tmp["shm"])
    kept = _bind_all(root, spec["binds"], fds, errors)
    for fd in fds.values():
        os.close(fd)
    work_fds = _work_tmpfs(root, spec, errors) if spec["work_bytes"] else None
    result["work_tmpfs"] = work_fds is not None
    _mask(root, spec["mask"], old_dev, errors)
    os.close(old_dev)
    result["readonly_fs"] = result["readonly_fs"] and kept and proc
    if view:
        result.update(_enter_view(root, errors))
        result["readonly_fs"] = result["readonly_fs"] and result["fs_view"]
    return result, work_fds


def _enter_view(root, errors):
    try:
        _mount(None, root, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        return {"fs_view": True, "view_how": _pivot(root)}
    except OSError as e:
        errors.append(f"view: {e}")
        return {"fs_view": False}


def _loopback_up():
    s = _libc.socket(AF_INET, SOCK_DGRAM, 0)
    if s < 0:
        _check(-1, "socket")
    try:
        got = fcntl.ioctl(s, 0x8913, struct.pack("16sH22x", b"lo", 0))  # SIOCGIFFLAGS
        flags = struct.unpack("16sH", got[:18])[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH22x", b"lo", flags | 1))  # SIOCSIFFLAGS |= IFF_UP
    finally:
        os.close(s)


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


def _close_other_fds(keep):
    """Only stdio and the passed fds reach the stage (ours are close-on-exec; this covers the rest)."""
    low = 3
    for fd in sorted(f for f in keep if f >= 3):
        os.set_inheritable(fd, True)
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, 1 << 20)


def _execvp(argv):
    """os.execvp without its lazy `import warnings`: after pivot_root our interpreter's files are gone."""
    if "/" in argv[0]:
        os.execv(argv[0], argv)
    first = None
    for folder in os.environ.get("PATH", "/usr/bin:/bin").split(":"):
        try:
            os.execv(os.path.join(folder or ".", argv[0]), argv)
        except OSError as e:
            first = e if first is None or (first.errno == errno.ENOENT and e.errno != errno.ENOENT) else first
    raise first or FileNotFoundError(errno.ENOENT, "not found on PATH")


def _exec_stage(spec, argv):
    try:
        try:  # the stage, not the init, is what the OOM killer should pick when the memory cgroup is full
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("500")
        except OSError:
            pass
        for name, value in spec["rlimits"].items():
            resource.setrlimit(_RLIMITS[name], (value, value))
        os.chdir(spec["workdir"])
        _close_other_fds(spec["pass_fds"])
        _execvp(argv)
    except OSError as e:
        os.write(2, f"sandbox: cannot start {argv[0]}: {e}\n".encode())
    os._exit(127)


def _setup(spec, errors):
    report = {"pid_namespace": os.getpid() == 1, "cgroups": [], "loopback": False}
    for path in spec["cgroups"]:
        try:
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write("0")  # ourselves, before anything of the stage runs
            report["cgroups"].append(path)
        except OSError as e:
            errors.append(f"cgroup {path}: {e}")
    if spec["network"]:
        try:
            _loopback_up()
            report["loopback"] = True
        except OSError as e:
            errors.append(f"loopback: {e}")
    work_fds = None
    if spec["mount_namespace"]:
        try:
            mounts, work_fds = _setup_mounts(spec, errors)
            report.update(mounts)
        except Exception as e:  # noqa: BLE001 - half a jail still runs the stage; the record says so
            errors.append(f"mounts: {e!r}")
    return report, work_fds


def main():
    sep = sys.argv.index("--")
    spec, argv = marshal.loads(bytes.fromhex(sys.argv[1])), sys.argv[sep + 1:]
    status = spec["status_fd"]
    os.set_inheritable(status, False)
    errors = []
    report, work_fds = _setup(spec, errors)
    # dropped here, in the init, so nothing forked later can hold a capability; the init needs none now
    try:
        report["caps_dropped"] = bool(spec["drop_caps"]) and _drop_privileges()
    except Exception as e:  # noqa: BLE001
        report["caps_dropped"] = False
        errors.append(f"capabilities: {e!r}")
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # the stage may not open our fds through /proc
    # the host reads the status pipe only after we exit: keep the report well under its 64 KiB buffer
    report["errors"] = [e[:300] for e in errors[:40]]
    os.write(status, (repr(report) + "\n").encode())
    child = os.fork()
    if child == 0:
        _exec_stage(spec, argv)
    while True:  # as pid 1 we also reap orphans; leaving kills whatever of the stage is left
        pid, st = os.waitpid(-1, 0)
        if pid == child:
            break
    if work_fds is not None and spec["collect"]:
        os.write(status, ("collect " + repr(_collect(work_fds, spec)) + "\n").encode())
    sig = os.WTERMSIG(st) if os.WIFSIGNALED(st) else 0
    os.write(status, (f"signal {sig}\n" if sig else f"exit {os.WEXITSTATUS(st)}\n").encode())
    os._exit(128 + sig if sig else os.WEXITSTATUS(st))


if __name__ == "__main__":
    main()
