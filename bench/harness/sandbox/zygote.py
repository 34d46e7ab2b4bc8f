"""The warm build: a sandboxed zygote that has imported jax forks one fresh, namespaced child per candidate.

Why: a build is a Python start plus `import jax` (about 1.5 s of CPU) before the candidate's trace and export
(tens of milliseconds). A warm batch paid that per candidate, 10x its own timed work. The zygote pays it once
per warm runner; each candidate then costs a fork, its namespaces and its own trace and export.

Isolation per candidate (the argument in docs/threat-model.md, "The warm build"), as for a build of its own:
- the zygote runs under the same bubblewrap sandbox as a build (read-only binds of /usr, Python, the venv and
  the project's code; no network; its own PID namespace; no capabilities), but with NO writable place at all
  (its /tmp and /dev are read-only) and without any kernel file: candidate code never runs in it;
- per candidate it forks a warden, which enters fresh namespaces (user, mount, PID, network, IPC, UTS, cgroup)
  and forks the candidate's process: PID 1 of its own PID namespace (every process it starts dies with it), a
  fresh private tmpfs /tmp of the build's size (its only writable place; gone with its mount namespace), the kernel
  file at the path of the parent's copy on a read-only tmpfs of its own (as a build process sees it), /proc
  hidden under an empty read-only mount (it would show the zygote's PID namespace), every capability dropped
  after the mounts (so none can be undone), no_new_privs, the zygote's resource limits and cgroups inherited;
- nothing of one candidate reaches a later one: the zygote's memory is copied on fork and never written by a
  candidate (no shared mapping exists: checked before every fork), the zygote is not dumpable (no /proc/<pid>/mem,
  environ or fd access from the candidates' user namespace), no file descriptor but the candidate's own reply
  pipe and log survive into it, its environment changes, files, SysV/POSIX IPC, sockets, hostname and processes
  live and die in its own namespaces; the zygote is single-threaded when it forks (checked) and never imports
  candidate code. The parent checks after every candidate that only the zygote's own processes remain in the
  zygote's pids cgroup, as for a build process.

Protocol (parent <-> zygote, a Unix socket; transport framing): the zygote says hello once it is warm and its
self-test (one empty child through the namespaces) passed; then, one candidate at a time: "build" (the
BuildRequest, the kernel's bytes, and two file descriptors passed with SCM_RIGHTS: the reply pipe and the log
pipe) -> "started"; the parent reads the candidate's reply (bench.harness.sandbox.child's) from its own pipe, then
"end" -> the zygote kills what is left of that candidate and reaps it -> "ended".
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import socket
import sys
from typing import Any

from bench.harness.parent.sandboxing import BUILD_GID, BUILD_UID
from bench.harness.protocol import transport
from bench.harness.protocol.messages import BuildRequest
from bench.harness.protocol.process import wait_exit
from bench.registry import spec

CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x02000000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
NAMESPACES = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_REC, MS_PRIVATE = 0x1, 0x2, 0x4, 0x8, 0x20, 0x4000, 1 << 18
MS_BIND = 0x1000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
EXIT_SETUP_FAILED = 121  # the candidate's process could not enter its sandbox (never the candidate's fault)

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)),
           f"prctl({option})")


def _enc(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = _enc
    _check(_libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _last_capability() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as fh:
        return int(fh.read())


CAP_LAST = _last_capability()  # read at import: the candidate's /proc is hidden before it drops its capabilities


def _drop_capabilities() -> None:
    """No capability left, in any set, and none to regain (the bounding set emptied, no_new_privs)."""
    for cap in range(CAP_LAST + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clear ambient capabilities")
    header, data = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0), (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)


def threads() -> int:
    return len(os.listdir("/proc/self/task"))


def shared_writable_mappings() -> list[str]:
    """Memory a forked child could write and the zygote (hence a later child) would see: must be none."""
    with open("/proc/self/maps") as fh:
        return [line.strip() for line in fh if len(line.split()) > 1 and line.split()[1][1] == "w"
                and line.split()[1][3] == "s"]


# ---------------------------------------------------------------- inside the sandbox: the zygote itself


def warm(workload: str, size: str, interpret: bool) -> Any:
    """Everything a candidate's build would import or compute first, done once: jax, its export and MLIR
    dialects, Pallas (TPU), the workload's abstract signature. No backend is created (its thread pools would
    make fork unsafe): each child creates its own."""
    import jax  # noqa: F401
    import jax.export  # noqa: F401
    import jax.numpy  # noqa: F401
    import jaxlib.mlir.dialects.mhlo  # noqa: F401  (imported lazily by the first lowering: ~0.2 s)
    from jax._src.interpreters import mlir  # lazily, as every import here: the parent imports this module

    mlir.make_ir_context()
    if interpret:
        from jax.experimental import pallas  # noqa: F401
        from jax.experimental.pallas import tpu  # noqa: F401

    from bench.harness.sandbox import child  # noqa: F401  (the candidate's build step; never in the parent)

    return spec(workload).signature(size)


def _send(sock: socket.socket, header: dict[str, Any]) -> None:
    transport.send(sock.fileno(), header)


def _receive(sock: socket.socket) -> tuple[dict[str, Any], list[bytes], list[int]]:
    """One command: a marker byte carrying any file descriptors, then the framed message."""
    marker, fds, _, _ = socket.recv_fds(sock, 1, 2)
    if not marker:
        raise EOFError
    header, blobs = transport.recv(sock.fileno())
    return header, blobs, fds


def _keep(kept: list[tuple[str, int]]) -> None:
    """Bind back, read-only, what the candidate's fresh /tmp covered but a build must read: the project and
    Python when they live under /tmp (a checkout or CI clone there). Each is bound from a handle opened before the
    fresh /tmp was mounted (/proc/self/fd, before /proc is hidden); the zygote's binds were read-only already."""
    for path, fd in kept:
        os.makedirs(path, exist_ok=True)
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)


def _candidate(header: dict[str, Any], source: bytes, reply_fd: int) -> None:
    """PID 1 of a fresh PID namespace, in fresh user/mount/network/IPC/UTS namespaces: make the sandbox, then
    run the ordinary build step on the kernel (bench.harness.sandbox.child.serve, which exits)."""
    try:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        kept = [(path, os.open(path, os.O_PATH | os.O_DIRECTORY)) for path in header.get("keep", [])]
        _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={int(header['tmpfs_mb'])}m,mode=1777")
        _keep(kept)
        # /proc shows the zygote's PID namespace (a new procfs cannot be mounted below bubblewrap's): hidden, so
        # that no process outside this candidate's namespaces can be reached by path (/proc/<pid>/mem, ...)
        _mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=555")
        os.chdir("/tmp")
        # the kernel at the very path of the parent's copy (a build process sees it there, bound read-only): a
        # small tmpfs of its own on the kernel root (an empty folder of the zygote's sandbox), read-only once written
        root, kernel = os.path.normpath(header["kernel_root"]), os.path.normpath(header["kernel_path"])
        if not kernel.startswith(root + os.sep):
            raise ValueError(f"the kernel path {kernel} is not below {root}")
        os.makedirs(root, exist_ok=True)  # (gone with the zygote's /tmp when the project lives under /tmp)
        _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, f"size={len(source) // 1024 + 64}k,mode=755")
        os.makedirs(os.path.dirname(kernel))
        with open(kernel, "wb") as fh:
            fh.write(source)
        _mount(None, root, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        _drop_capabilities()  # after the mounts: without CAP_SYS_ADMIN none of them can be undone
        if header.get("selftest"):
            os._exit(0)
        from bench.harness.sandbox import child  # the build step (imports jax): never in the parent

        request = BuildRequest.model_validate({**header["request"], "kernel_path": kernel})
    except BaseException as exc:  # noqa: BLE001  the sandbox could not be made: say so, run nothing
        print(f"jaxbench zygote: the candidate's sandbox could not be set up: {exc}", file=sys.stderr, flush=True)
        os._exit(EXIT_SETUP_FAILED)
    sys.argv = [child.__file__, "--reply-fd", str(reply_fd)]  # what a build process of its own has
    child.serve(request, reply_fd)  # candidate code runs from here on; it exits


def _warden(header: dict[str, Any], source: bytes, reply_fd: int, log_fd: int, pid_w: int) -> None:
    """Between the zygote and the candidate: enters the new namespaces, forks the candidate (who becomes PID 1
    of the new PID namespace), tells the zygote its pid, waits for it and exits."""
    code = EXIT_SETUP_FAILED
    try:
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        keep = {0, 1, 2, reply_fd, pid_w}
        for fd in map(int, os.listdir("/proc/self/fd")):
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        os.setgroups([])
        os.setresgid(BUILD_GID, BUILD_GID, BUILD_GID)
        os.setresuid(BUILD_UID, BUILD_UID, BUILD_UID)  # every capability in the zygote's namespace is gone
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # (a change of credentials clears it: set after)
        _prctl(PR_SET_DUMPABLE, 1)  # so that this process may write its own id maps below
        _check(_libc.unshare(NAMESPACES | int(header.get("cgroup_ns", 0))), "unshare")
        for name, text in (("setgroups", "deny"), ("uid_map", f"0 {BUILD_UID} 1"), ("gid_map", f"0 {BUILD_GID} 1")):
            with open(f"/proc/self/{name}", "w") as fh:
                fh.write(text)
        _prctl(PR_SET_DUMPABLE, 0)
        pid = os.fork()
        if pid == 0:
            os.close(pid_w)
            _candidate(header, source, reply_fd)
            os._exit(EXIT_SETUP_FAILED)
        os.close(reply_fd)
        os.write(pid_w, str(pid).encode())
        os.close(pid_w)
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) & 0xFF
    except BaseException as exc:  # noqa: BLE001
        print(f"jaxbench zygote: entering the namespaces failed: {exc}", file=sys.stderr, flush=True)
    os._exit(code)


class _Job:
    def __init__(self, warden: int, candidate: int | None) -> None:
        self.warden, self.candidate = warden, candidate


def _start(header: dict[str, Any], source: bytes, fds: list[int]) -> _Job:
    if threads() != 1:
        raise RuntimeError(f"the zygote has {threads()} threads: forking it is not safe")
    if shared := shared_writable_mappings():
        raise RuntimeError(f"the zygote has shared writable memory a candidate could reach: {shared[:2]}")
    reply_fd, log_fd = fds
    pid_r, pid_w = os.pipe()
    warden = os.fork()
    if warden == 0:
        os.close(pid_r)
        _warden(header, source, reply_fd, log_fd, pid_w)
    os.close(pid_w)
    for fd in fds:
        os.close(fd)
    data = b""
    while chunk := os.read(pid_r, 32):
        data += chunk
    os.close(pid_r)
    return _Job(warden, int(data) if data else None)


def _end(job: _Job, grace_s: float = 2.0) -> int:
    """Kill what is left of the job and reap its warden; returns the warden's exit status (the candidate's).
    The candidate is PID 1 of its namespace: everything in it dies with it, and the warden, which reaps it,
    exits only once the whole namespace is gone."""
    pid, status = os.waitpid(job.warden, os.WNOHANG)
    if pid:
        return os.waitstatus_to_exitcode(status)
    if job.candidate is not None:
        try:
            os.kill(job.candidate, signal.SIGKILL)
        except ProcessLookupError:
            pass
    exited = wait_exit(job.warden, grace_s, 0.002)
    if exited is not None:
        return exited[0]
    os.kill(job.warden, signal.SIGKILL)
    return os.waitstatus_to_exitcode(os.waitpid(job.warden, 0)[1])


def _self_test(header: dict[str, Any]) -> str | None:
    """One child through the whole sandbox setup, running nothing: None when it works here, else why not."""
    reply_r, reply_w = os.pipe()
    log_r, log_w = os.pipe()
    probe = {**header, "job": "selftest", "selftest": True,
             "kernel_path": f"{header['kernel_root']}/selftest/kernel.py"}
    job = _start(probe, b"", [reply_w, log_w])
    status = _end_when_exited(job)
    os.close(reply_r)
    os.set_blocking(log_r, False)
    try:
        log = os.read(log_r, 4096).decode(errors="replace")
    except BlockingIOError:
        log = ""
    os.close(log_r)
    return None if status == 0 else (log.strip() or f"exit status {status}")


def _end_when_exited(job: _Job, timeout_s: float = 10.0) -> int:
    exited = wait_exit(job.warden, timeout_s, 0.005)
    return exited[0] if exited is not None else _end(job)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--control-fd", type=int, required=True)
    parser.add_argument("--workload", required=True)
    parser.add_argument("--size", required=True)
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--tmpfs-mb", type=int, required=True)
    parser.add_argument("--kernel-root", required=True, help="an empty folder of the sandbox the kernels go below")
    parser.add_argument("--keep", nargs="*", default=[], help="read-only folders under /tmp a candidate still sees")
    args = parser.parse_args()
    sock = socket.socket(fileno=args.control_fd)
    _prctl(PR_SET_DUMPABLE, 0)  # no /proc/<pid>/mem, environ or fd of the zygote for anyone without privileges
    try:
        warm(args.workload, args.size, args.interpret)
        base = {"tmpfs_mb": args.tmpfs_mb, "cgroup_ns": CLONE_NEWCGROUP, "kernel_root": args.kernel_root,
                "keep": args.keep}
        problem = _self_test(base)
        if problem is not None:
            base["cgroup_ns"] = 0  # a kernel without cgroup namespaces
            problem = _self_test(base)
    except Exception as exc:  # noqa: BLE001
        problem = f"{type(exc).__name__}: {exc}"
    _send(sock, {"ok": problem is None, "error": problem, "pid": os.getpid(), "threads": threads()})
    if problem is not None:
        return
    job: _Job | None = None
    while True:
        try:
            header, blobs, fds = _receive(sock)
        except (EOFError, ConnectionError, OSError):
            break
        try:
            if header.get("cmd") == "build" and job is None and len(fds) == 2 and len(blobs) == 1:
                job = _start({**base, **header, "kernel_path": header["request"]["kernel_path"]}, blobs[0], fds)
                _send(sock, {"ok": True, "event": "started"})
            elif header.get("cmd") == "end" and job is not None:
                status, job = _end(job), None
                _send(sock, {"ok": True, "event": "ended", "status": status})
            else:
                for fd in fds:
                    os.close(fd)
                _send(sock, {"ok": False, "error": f"unexpected command {header.get('cmd')!r}"})
        except Exception as exc:  # noqa: BLE001  reported; the parent replaces this zygote
            _send(sock, {"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    if job is not None:
        _end(job)


if __name__ == "__main__":
    main()
