"""The warm build (bench.harness.sandbox.zygote): every candidate forked from one zygote is as isolated as a build
process of its own. A planter candidate leaves a file, an environment change, in-memory and on-disk cache entries,
SysV and POSIX IPC, an abstract socket and lingering processes; a later candidate of the same zygote looks for each
(and the planter, looking right after planting, finds each: the control that shows every probe can succeed)."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.harness.protocol.messages import BuildRequest
from bench.paths import EVAL_DIR

needs_bwrap = pytest.mark.skipif(sandbox.bwrap_problem() is not None,
                                 reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}")

MARK = f"jaxbench_planted_{os.getpid()}"
REQUEST = BuildRequest(kernel_path=str(EVAL_DIR / "runner_zygote_test" / "eval_candidate" / "kernel.py"),
                       workload="8p_GEMM", size="small", platforms=["cpu"], interpret=True)

LOOK = f'''
import ctypes, os, socket, sys
MARK = {MARK!r}

def look():
    """Every trace a planter could have left, as a list of what was found."""
    found = []
    for path in ("/tmp/" + MARK, "/" + MARK, "/dev/shm/" + MARK, "/dev/" + MARK, "/var/tmp/" + MARK,
                 os.path.expanduser("~/.cache/" + MARK)):
        if os.path.exists(path):
            found.append("file " + path)
    if os.environ.get(MARK):
        found.append("environment")
    if MARK in sys.modules:
        found.append("sys.modules entry")
    import jax.numpy as jnp
    if getattr(jnp, MARK, None):
        found.append("attribute set on jax.numpy")
    import jax
    if jax.config.jax_enable_x64:
        found.append("jax config changed")
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.shmget(0x4A42, 0, 0) != -1:
        found.append("SysV shared memory segment")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect("\\0" + MARK)
        found.append("abstract socket")
    except OSError:
        pass
    finally:
        s.close()
    alive = []
    for pid in range(2, 200):  # processes of this PID namespace other than ourselves (we are PID 1)
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
        except PermissionError:
            alive.append(pid)
    if alive:
        found.append(f"processes {{alive}}")
    if [p for p in os.listdir("/proc") if p.isdigit()]:
        found.append("processes listed in /proc")
    return found
'''

PLANTER = LOOK + '''
import subprocess, threading, time
with open("/tmp/" + MARK, "w") as fh:
    fh.write("x")
for path in ("/" + MARK, "/dev/shm/" + MARK, "/dev/" + MARK, "/var/tmp/" + MARK):
    try:
        with open(path, "w") as fh:
            fh.write("x")
    except OSError:
        pass
os.makedirs(os.path.expanduser("~/.cache"), exist_ok=True)
open(os.path.expanduser("~/.cache/" + MARK), "w").close()
os.environ[MARK] = "1"
sys.modules[MARK] = sys
import jax, jax.numpy as jnp
setattr(jnp, MARK, True)
jax.config.update("jax_enable_x64", True)
libc = ctypes.CDLL(None, use_errno=True)
libc.shmget(0x4A42, 4096, 0o1666)  # IPC_CREAT | 0666
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind("\\0" + MARK)
server.listen(1)
subprocess.Popen(["sleep", "300"], start_new_session=True)  # a daemon
if os.fork() == 0:
    os.setsid()
    time.sleep(300)
    os._exit(0)
threading.Thread(target=time.sleep, args=(300,), daemon=False).start()
print("PLANTER SAW " + json.dumps(look()), flush=True)

def workload(a, b):
    return a @ b
'''.replace("import subprocess", "import json, subprocess")

LOOKER = LOOK + '''
found = look()
if found:
    raise RuntimeError("LOOKER FOUND " + repr(found))

def workload(a, b):
    return a @ b
'''


@pytest.fixture(scope="module")
def zygote(tmp_path_factory, zygote_started):
    yield from zygote_started(REQUEST, sandbox.Limits(memory_mb=8192), tmp_path_factory.mktemp("zygote") / "zygote.log")


def _host_processes_with(marker: str) -> list[int]:
    """Host processes whose command line or environment mentions `marker` (the planter's leftovers)."""
    out = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes() + (proc / "environ").read_bytes():
                    out.append(int(proc.name))
            except OSError:
                continue
    return out


@needs_bwrap
def test_nothing_of_one_candidate_is_visible_to_the_next(zygote):
    planted = zygote.build(PLANTER.encode(), REQUEST, 120)
    assert planted.ok, planted.log
    saw = json.loads(planted.log.split("PLANTER SAW ", 1)[1].splitlines()[0])
    # the control: right after planting, the planter itself finds every trace it can leave (it cannot write to
    # /, /dev or /var/tmp: read-only or absent in its sandbox)
    assert {"environment", "sys.modules entry", "attribute set on jax.numpy", "jax config changed",
            "SysV shared memory segment", "abstract socket"} <= set(saw)
    assert f"file /tmp/{MARK}" in saw and any(s.startswith("file") and ".cache" in s for s in saw)
    assert any(s.startswith("processes [") for s in saw)
    assert not any(s in saw for s in (f"file /{MARK}", f"file /dev/shm/{MARK}", f"file /dev/{MARK}"))
    assert planted.survivors == 0 and not _host_processes_with(MARK)  # its daemons died with its namespace
    looked = zygote.build(LOOKER.encode(), REQUEST, 120)
    assert looked.ok, looked.reason + looked.log
    assert looked.details["zygote"]["pid"] == planted.details["zygote"]["pid"]  # the same zygote, warm


CAPS = '''
import ctypes, os
class Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
data = (Data * 2)()
ctypes.CDLL(None).capget(ctypes.byref(Header(0x20080522, 0)), data)
libc = ctypes.CDLL(None, use_errno=True)
remount = libc.mount(None, b"/tmp", None, 0x20 | 0x1, None)  # MS_REMOUNT | MS_RDONLY: needs CAP_SYS_ADMIN
unmount = libc.umount2(b"/proc", 0)
try:
    open(__file__, "a").close()
    kernel_writable = "yes"
except OSError:
    kernel_writable = "no"
print("KERNEL", __file__, kernel_writable, flush=True)
print("STATE", os.getuid(), data[0].effective, data[0].permitted, data[1].effective, remount, unmount,
      sorted(os.listdir("/proc")), flush=True)

def workload(a, b):
    return a @ b
'''


@needs_bwrap
def test_a_candidate_has_no_capability_and_cannot_undo_its_mounts(zygote):
    built = zygote.build(CAPS.encode(), REQUEST, 120)
    assert built.ok, built.log
    uid, eff, perm, eff_hi, remount, unmount, procs = built.log.split("STATE ", 1)[1].split(" ", 6)
    assert (eff, perm, eff_hi) == ("0", "0", "0")
    assert remount == "-1" and unmount == "-1" and procs.strip() == "[]"
    path, writable = built.log.split("KERNEL ", 1)[1].split()[:2]
    assert (path, writable) == (REQUEST.kernel_path, "no")  # where a build process sees it, read-only


@needs_bwrap
def test_a_hanging_candidate_times_out_and_the_zygote_builds_the_next_one(zygote):
    hang = b"import time\ntime.sleep(600)\ndef workload(a, b):\n    return a @ b\n"
    out = zygote.build(hang, REQUEST, 5)
    assert not out.ok and out.kind == "timeout" and out.survivors == 0
    after = zygote.build(textwrap.dedent(LOOKER).encode(), REQUEST, 120)
    assert after.ok, after.log


KEPT = '''
import os
FOLDER = {folder!r}
with open(os.path.join(FOLDER, "data.txt")) as fh:
    content = fh.read()
try:
    open(os.path.join(FOLDER, "planted.txt"), "w").close()
    wrote = "yes"
except OSError:
    wrote = "no"
print("KEPT", content, wrote, __file__, flush=True)

def workload(a, b):
    return a @ b
'''


@needs_bwrap
def test_a_project_under_tmp_stays_readable_below_each_candidates_fresh_tmp(tmp_path_factory):
    """A checkout (or CI clone) under /tmp: every candidate mounts a fresh /tmp, which covered the project, Python
    and the kernel root, and the zygote was unusable there. Now what a build must read under /tmp is bound back
    read-only from the zygote's view (zygote._keep) and the kernel root is made in the fresh /tmp: here a folder
    under /tmp stands in for the project, and the kernel root is under /tmp too."""
    from bench.harness.parent.warm import BuildZygote, ZygoteUnavailable

    base = tmp_path_factory.mktemp("under_tmp")
    assert str(base).startswith("/tmp/")
    folder = base / "project"
    folder.mkdir(mode=0o755)
    (folder / "data.txt").write_text("readable")
    (folder / "data.txt").chmod(0o644)
    root = base / "eval"
    root.mkdir()
    request = REQUEST.model_copy(update={"kernel_path": str(root / "eval_candidate" / "kernel.py")})
    z = BuildZygote(request, sandbox.Limits(memory_mb=8192), base / "zygote.log", 300, kernel_root=root,
                    extra_ro=[str(folder)])
    try:
        try:
            z.ready()
        except ZygoteUnavailable as exc:
            pytest.fail(f"the zygote is unusable with its kernel root and a folder under /tmp: {exc}")
        built = z.build(KEPT.replace("{folder!r}", repr(str(folder))).encode(), request, 120)
        assert built.ok, built.reason + built.log
        content, wrote, path = built.log.split("KEPT ", 1)[1].split()[:3]
        assert (content, wrote, path) == ("readable", "no", request.kernel_path)
        assert not (folder / "planted.txt").exists()
    finally:
        z.close()
