"""The build sandbox itself, through `sandbox.wrap` + a subprocess: each must-show property, with a control run
that shows the same probe succeeds without the sandbox (so every test can fail)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.paths import DATA_DIR

needs_bwrap = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}"
)


DEFAULT_LIMITS = sandbox.Limits()


def pids_cgroup_available() -> bool:
    """Whether this host lets the harness create a pids cgroup (checked by creating and removing one)."""
    groups = sandbox.BuildCgroups.create(sandbox.PROCESS_LIMIT)
    groups.release()
    return groups.pids_bounded


def run_py(
    code: str,
    scratch: Path,
    mode: str,
    pass_fds: tuple[int, ...] = (),
    timeout: float = 60,
    limits: sandbox.Limits = DEFAULT_LIMITS,
    commands: list | None = None,
) -> subprocess.CompletedProcess:
    """`code` in the sandbox; `scratch` is bound read-only (the test's own folder: a path the build could see).
    With `commands`, the caller releases the command's pids cgroup (a survivor still lives in it)."""
    cmd = sandbox.wrap([sys.executable, "-c", textwrap.dedent(code)], mode, limits=limits, extra_ro=[str(scratch)])
    try:
        return subprocess.run(
            cmd.argv,
            env=cmd.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            pass_fds=(*pass_fds, *cmd.fds),
            preexec_fn=cmd.preexec(),
        )
    finally:
        cmd.close_fds()
        if commands is None:
            cmd.release()
        else:
            commands.append(cmd)


@needs_bwrap
def test_wrap_names_and_argv(tmp_path: Path) -> None:
    cmd = sandbox.wrap(["true"], "bwrap")
    cmd.release()
    assert cmd.name == "bwrap" and "bwrap" in cmd.argv and cmd.argv[-1] == "true"
    assert "prlimit" in cmd.argv[: cmd.argv.index("bwrap")]  # limits set before bubblewrap starts
    for opt in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind", "--size"):
        assert opt in cmd.argv
    assert ["--ro-bind", "/", "/"] != cmd.argv[1:4] and "/" not in [
        cmd.argv[i + 1] for i, a in enumerate(cmd.argv) if a == "--ro-bind"
    ]
    plain = sandbox.wrap(["true"], "none")
    plain.release()
    assert plain.argv[-1] == "true" and "bwrap" not in plain.argv and "prlimit" in plain.argv


@needs_bwrap
def test_only_what_the_build_needs_is_visible_and_nothing_is_writable(tmp_path: Path) -> None:
    from bench.paths import ROOT

    probe = DATA_DIR / f"sandbox_probe_{os.getpid()}"
    hidden = [
        p
        for p in (
            str(DATA_DIR),
            str(ROOT / "pyproject.toml"),
            "/etc/passwd",
            "/root/.bashrc",
            "/home",
            "/work/shared",
            "/var",
        )
        if os.path.exists(p)
    ]
    assert len(hidden) >= 3  # the control: these exist outside
    code = f"""
        import os
        seen = {{p: os.path.exists(p) for p in {hidden!r} + [{str(tmp_path)!r}]}}
        for name, target in (("write", {str(probe)!r}), ("write_bound", {str(tmp_path / "x")!r})):
            try:
                open(target, "w").write("x")
                seen[name] = "WROTE"
            except OSError as e:
                seen[name] = "DENIED"
        print(seen)
    """
    done = run_py(code, tmp_path, "bwrap")
    seen = eval(done.stdout.strip())
    assert seen == {**{p: False for p in hidden}, str(tmp_path): True, "write": "DENIED", "write_bound": "DENIED"}, (
        done.stdout + done.stderr
    )
    assert not probe.exists()


@needs_bwrap
def test_private_tmp_is_size_capped(tmp_path: Path) -> None:
    marker = Path("/tmp") / f"jaxbench_sandbox_tmp_{os.getpid()}"
    code = f"""
        open({str(marker)!r}, 'w').write('x')
        n = 0
        try:
            with open('/tmp/fill', 'wb') as f:
                for _ in range(256):
                    f.write(b'\\0' * (1 << 20)); n += 1
        except OSError as e:
            print('STOPPED', type(e).__name__)
        print('MIB', n)
    """
    done = run_py(code, tmp_path, "bwrap", limits=sandbox.Limits(memory_mb=4096, tmpfs_mb=32))
    assert "STOPPED" in done.stdout and "MIB 3" in done.stdout, done.stdout + done.stderr  # 32 MiB, not 256
    assert not marker.exists()  # written to the sandbox's own tmpfs, gone with it


def test_tmpfs_is_counted_against_the_memory_cap() -> None:
    limits = sandbox.Limits(memory_mb=8192, tmpfs_mb=256, dev_mb=16)
    assert limits.address_space_mb == 8192 - 256 - 16  # both tmpfs mounts (/tmp, /dev)


def test_process_count_is_limited(tmp_path: Path) -> None:
    if not pids_cgroup_available():
        pytest.skip("no writable pids cgroup on this host")
    code = """
        import subprocess, sys
        procs, error = [], None
        try:
            for _ in range(40):
                procs.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"]))
        except OSError as e:
            error = type(e).__name__
        print("STARTED", len(procs), error)
        for p in procs:
            p.kill()
    """
    done = run_py(code, tmp_path, "none", limits=sandbox.Limits(memory_mb=None, processes=8))
    started = int(done.stdout.split()[1])
    assert started < 8 and "BlockingIOError" in done.stdout, done.stdout + done.stderr


@needs_bwrap
def test_no_network_even_to_host_loopback(tmp_path: Path) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    port = server.getsockname()[1]
    code = f"""
        import socket
        try:
            socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
            print("CONNECTED")
        except OSError as e:
            print("REFUSED", type(e).__name__)
    """
    try:
        control = run_py(code, tmp_path, "none")
        sandboxed = run_py(code, tmp_path, "bwrap")
    finally:
        server.close()
    assert "CONNECTED" in control.stdout, control.stderr  # the port really is open outside
    assert "REFUSED" in sandboxed.stdout, sandboxed.stdout + sandboxed.stderr


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_harness_environment_is_not_visible(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret_for_test")
    monkeypatch.setenv("JAXBENCH_SECRET_SEED", "1234")
    code = "import os; print(sorted(k for k in os.environ if 'TOKEN' in k or 'SECRET' in k))"
    done = run_py(code, tmp_path, mode)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


BACKGROUND = """
    import os, subprocess, sys
    # a detached grandchild that would hold the pipe open for 60 s, in its own session
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], pass_fds=({fd},),
                         start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print("started", p.pid)
"""


def _survives(tmp_path: Path, mode: str, commands: list | None = None) -> bool:
    """Whether a background process started inside outlives the sandboxed command (watched via a pipe's EOF)."""
    r, w = os.pipe()
    try:
        done = run_py(BACKGROUND.format(fd=w), tmp_path, mode, pass_fds=(w,), commands=commands)
        assert "started" in done.stdout, done.stderr
        (tmp_path / "bg.pid").write_text(done.stdout.split()[-1])
        os.close(w)
        w = -1
        import select

        readable, _, _ = select.select([r], [], [], 5.0)
        return not readable  # EOF (readable) means every holder of the write end is dead
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)


@needs_bwrap
def test_background_process_dies_with_the_sandbox(tmp_path: Path) -> None:
    assert not _survives(tmp_path, "bwrap")


def test_background_process_survives_without_sandbox(tmp_path: Path) -> None:
    """Control: the same probe does detect a survivor when nothing contains it (then we clean it up)."""
    commands: list = []
    try:
        assert _survives(tmp_path, "none", commands)
    finally:
        pid = int((tmp_path / "bg.pid").read_text())
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        for cmd in commands:
            cmd.release()


def test_mode_bwrap_raises_when_unusable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.wrap(["true"], "bwrap")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.require_bwrap()
    sandbox._warn_once.cache_clear()  # it warns once per process
    cmd = sandbox.wrap(["true"], "auto")
    cmd.release()
    assert cmd.name == "none"  # auto falls back, says so once


def test_env_allow_list_keeps_what_jax_needs() -> None:
    env = sandbox.scrubbed_env(
        {"X_HARNESS": "1"},
        source={"PATH": "/bin", "PYTHONPATH": "/p", "AWS_SECRET_ACCESS_KEY": "k", "LIBTPU_INIT_ARGS": "--x"},
    )
    assert env == {"PATH": "/bin", "PYTHONPATH": "/p", "X_HARNESS": "1"}


def test_the_build_binds_only_harmless_device_nodes() -> None:
    args = sandbox.bwrap_args()
    bound = {args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"}
    assert bound == {f"/dev/{n}" for n in sandbox.DEV_NODES}  # the harmless nodes only, never an accelerator


@needs_bwrap
def test_the_sandbox_root_is_read_only_and_tmp_is_the_writable_place(tmp_path: Path) -> None:
    """bubblewrap's root is a tmpfs without a size of its own: a write there would escape the tmpfs cap."""
    code = """
        import os
        for path in ("/planted", "/tmp/ok"):
            try:
                open(path, "w").write("x")
                print(path, "written")
            except OSError as e:
                print(path, "refused", e.errno)
    """
    out = run_py(code, tmp_path, "bwrap").stdout
    assert "/tmp/ok written" in out and "/planted refused" in out, out


NESTED_NAMESPACE_ATTACK = """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWCGROUP = 0x10000000, 0x00020000, 0x02000000
    if libc.unshare(CLONE_NEWUSER) != 0:
        print("USERNS refused", os.strerror(ctypes.get_errno()))
    elif libc.unshare(CLONE_NEWNS | CLONE_NEWCGROUP) != 0:
        print("USERNS made; MOUNT NS refused", os.strerror(ctypes.get_errno()))
    else:
        os.makedirs("/tmp/cg", exist_ok=True)
        ok = libc.mount(b"none", b"/tmp/cg", b"cgroup", 0, b"cpuset") == 0
        print("USERNS made; CGROUP MOUNTED" if ok else "USERNS made; mount refused")
"""


@needs_bwrap
def test_a_build_cannot_make_a_user_namespace_to_rewrite_its_cgroups(tmp_path: Path) -> None:
    """Red team 8: in a user namespace of its own a build gained every capability, mounted the cgroup hierarchy
    and wrote its own cpuset, pids.max and memory limit. The sandbox is a user namespace in which it may make no
    other (`--disable-userns`). Control: outside the sandbox the same probe makes one (where this host lets
    anyone: else the control cannot show it and the test skips)."""
    control = run_py(NESTED_NAMESPACE_ATTACK, tmp_path, "none")
    if "USERNS made" not in control.stdout:
        pytest.skip(f"this host refuses user namespaces outside the sandbox too: {control.stdout}{control.stderr}")
    done = run_py(NESTED_NAMESPACE_ATTACK, tmp_path, "bwrap")
    assert done.stdout.startswith("USERNS refused"), done.stdout + done.stderr


SYSCTL_WRITE = """
    path = "/proc/sys/kernel/printk_ratelimit"  # written back with its own value: harmless where it succeeds
    try:
        value = open(path).read()
        with open(path, "w") as f:
            f.write(value)
        print("WROTE")
    except OSError as e:
        print("REFUSED", e.strerror)
"""


@needs_bwrap
def test_a_build_cannot_write_the_kernel_s_settings(tmp_path: Path) -> None:
    """Red team 9: a harness run as root runs its builds as host uid 0, and bubblewrap skipped its read-only cover
    of /proc/sys: a build wrote kernel.core_pattern (a program of its choosing run as host root at its next crash).
    Control: outside the sandbox the same write succeeds (as root; elsewhere nothing shows the cover is needed)."""
    control = run_py(SYSCTL_WRITE, tmp_path, "none")
    if "WROTE" not in control.stdout:
        pytest.skip(f"this user cannot write kernel settings anyway: {control.stdout}{control.stderr}")
    done = run_py(SYSCTL_WRITE, tmp_path, "bwrap")
    assert done.stdout.startswith("REFUSED"), done.stdout + done.stderr


@pytest.mark.parametrize("mode", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_a_package_on_the_harness_s_pythonpath_imports_in_the_build(tmp_path: Path, monkeypatch, mode: str) -> None:
    """A lent TPU VM's jax came from PYTHONPATH; the build's path was the project root alone, so every build failed
    with "No module named 'jax'" and every candidate read `crashed`. The harness's PYTHONPATH folders are on the
    build's path (and bound read-only under bubblewrap), except folders holding the repository or the home
    directory, or inside the repository (data/ and other submissions stay out of the build's sight)."""
    from bench.harness.parent.builder import _build_env
    from bench.paths import ROOT

    pkgs = tmp_path / "site"
    (pkgs / "jbprobe").mkdir(parents=True)
    (pkgs / "jbprobe" / "__init__.py").write_text("VALUE = 41\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pkgs), str(ROOT), str(ROOT.parent), str(DATA_DIR), "/"]))
    assert sandbox.inherited_import_paths() == [str(pkgs.resolve())]

    def build(code: str) -> subprocess.CompletedProcess:
        cmd = sandbox.wrap([sys.executable, "-c", code], mode, extra_env=_build_env())
        try:
            return subprocess.run(
                cmd.argv,
                env=cmd.env,
                capture_output=True,
                text=True,
                timeout=60,
                preexec_fn=cmd.preexec(),
                pass_fds=cmd.fds,
            )
        finally:
            cmd.release()

    done = build("import jbprobe; print(jbprobe.VALUE + 1)")
    assert done.stdout.strip() == "42", done.stderr
    monkeypatch.setenv("PYTHONPATH", "")  # the control: without it on the harness's path, the build cannot see it
    assert "No module named 'jbprobe'" in build("import jbprobe").stderr


KEYRING_ATTACK = """
    import ctypes, errno, os
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    NR = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    KEY_SPEC_USER_KEYRING = ctypes.c_long(-4)
    def call(*args):
        r = libc.syscall(*args)
        return "EPERM" if r == -1 and ctypes.get_errno() == errno.EPERM else f"ran ({r}, errno {ctypes.get_errno()})"
    print("keyctl", call(NR[1], 0, KEY_SPEC_USER_KEYRING, 0))  # KEYCTL_GET_KEYRING_ID of the uid's keyring
    print("add_key", call(NR[0], b"user", b"jaxbench_channel", b"x", 1, KEY_SPEC_USER_KEYRING))
    print("getppid", call(110 if NR[0] == 248 else 173))
    try:
        print("listed", len(open("/proc/keys").read()))
    except OSError as e:
        print("listed", "refused", e.errno)
"""


@needs_bwrap
@pytest.mark.skipif(sandbox.seccomp_program() is None, reason="no seccomp filter for this machine")
def test_a_build_cannot_reach_the_host_s_keyrings(tmp_path: Path) -> None:
    """Red team, stop 62: the kernel's keyrings are not namespaced, and a root harness's build is host uid 0: a
    build added keys to that uid's keyring that outlived it, that the next candidates' builds listed (a channel
    between candidates), and cleared it. The build's seccomp filter refuses the keyring calls, other calls run, and
    /proc/keys lists nothing; without the sandbox the same calls reach the keyring (the control)."""
    boxed = run_py(KEYRING_ATTACK, tmp_path, "bwrap")
    assert boxed.returncode == 0, boxed.stderr
    lines = boxed.stdout.splitlines()
    assert lines[:2] == ["keyctl EPERM", "add_key EPERM"] and lines[2].startswith("getppid ran"), boxed.stdout
    assert lines[3] in ("listed 0", "listed refused 13"), boxed.stdout  # /dev/null over it: empty or unreadable
    control = run_py(KEYRING_ATTACK.replace('b"x", 1', 'b"x", -1'), tmp_path, "none")  # (adds no key)
    assert control.stdout.splitlines()[0].startswith("keyctl ran"), control.stdout


def test_the_seccomp_filter_is_a_whole_program_for_each_known_machine() -> None:
    """Each instruction is 8 bytes; every jump lands on the EPERM return (the last), within the program."""
    import struct

    for machine in ("x86_64", "aarch64"):
        code = sandbox.seccomp_program(machine)
        assert code is not None and len(code) % 8 == 0
        insns = [struct.unpack("=HBBI", code[i : i + 8]) for i in range(0, len(code), 8)]
        last = len(insns) - 1
        assert insns[-1] == (0x06, 0, 0, 0x00050000 | 1) and insns[-2] == (0x06, 0, 0, 0x7FFF0000)
        for i, (op, jt, jf, _) in enumerate(insns):
            if op in (0x15, 0x35):
                assert {i + 1 + jt, i + 1 + jf} <= {i + 1, last}, (machine, i)
    assert sandbox.seccomp_program("riscv64") is None
