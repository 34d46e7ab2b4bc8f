"""The sandbox itself, through `sandbox.wrap` + a subprocess: each must-show property, with a control run
that shows the same probe succeeds without the sandbox (so every test can fail)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bench.harness import sandbox
from bench.paths import DATA_DIR

needs_bwrap = pytest.mark.skipif(sandbox.bwrap_problem() is not None, reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}")


def run_py(code: str, scratch: Path, mode: str, pass_fds: tuple[int, ...] = (), timeout: float = 60) -> subprocess.CompletedProcess:
    cmd = sandbox.wrap([sys.executable, "-c", textwrap.dedent(code)], scratch, mode)
    return subprocess.run(cmd.argv, env=cmd.env, capture_output=True, text=True, timeout=timeout, pass_fds=pass_fds)


@needs_bwrap
def test_wrap_names_and_argv(tmp_path: Path) -> None:
    cmd = sandbox.wrap(["true"], tmp_path, "bwrap")
    assert cmd.name == "bwrap" and cmd.argv[0] == "bwrap" and cmd.argv[-1] == "true"
    for opt in ("--unshare-net", "--unshare-pid", "--die-with-parent", "--ro-bind"):
        assert opt in cmd.argv
    assert sandbox.wrap(["true"], tmp_path, "none").argv == ["true"]


@needs_bwrap
def test_write_to_data_fails_and_scratch_is_writable(tmp_path: Path) -> None:
    probe = DATA_DIR / f"sandbox_probe_{os.getpid()}"
    code = f"""
        import pathlib
        (pathlib.Path({str(tmp_path)!r}) / "ok").write_text("scratch is writable")
        try:
            open({str(probe)!r}, "w").write("x")
            print("WROTE")
        except OSError as e:
            print("DENIED", e.errno)
    """
    done = run_py(code, tmp_path, "bwrap")
    assert "DENIED" in done.stdout, done.stdout + done.stderr
    assert not probe.exists()
    assert (tmp_path / "ok").read_text() == "scratch is writable"


@needs_bwrap
def test_private_tmp(tmp_path: Path) -> None:
    marker = Path("/tmp") / f"jaxbench_sandbox_tmp_{os.getpid()}"
    done = run_py(f"open({str(marker)!r}, 'w').write('x'); print('ok')", tmp_path, "bwrap")
    assert "ok" in done.stdout, done.stderr
    assert not marker.exists()  # written to the sandbox's own tmpfs, gone with it


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
    open(os.path.join({scratch!r}, "bg.pid"), "w").write(str(p.pid))
    print("started")
"""


def _survives(tmp_path: Path, mode: str) -> bool:
    """Whether a background process started inside outlives the sandboxed command (watched via a pipe's EOF)."""
    r, w = os.pipe()
    try:
        done = run_py(BACKGROUND.format(fd=w, scratch=str(tmp_path)), tmp_path, mode, pass_fds=(w,))
        assert "started" in done.stdout, done.stderr
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
    try:
        assert _survives(tmp_path, "none")
    finally:
        pid = int((tmp_path / "bg.pid").read_text())
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        time.sleep(0.05)


def test_mode_bwrap_raises_when_unusable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "bwrap_problem", lambda: "bubblewrap (bwrap) is not installed")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.wrap(["true"], tmp_path, "bwrap")
    with pytest.raises(sandbox.SandboxUnavailable):
        sandbox.require_bwrap()
    monkeypatch.setattr(sandbox, "_warned", False)
    assert sandbox.wrap(["true"], tmp_path, "auto").name == "none"  # auto falls back, says so once


def test_env_allow_list_keeps_what_jax_needs() -> None:
    env = sandbox.scrubbed_env({"X_HARNESS": "1"}, source={"PATH": "/bin", "JAX_PLATFORMS": "cpu", "AWS_SECRET_ACCESS_KEY": "k",
                                                           "XLA_FLAGS": "--x"})
    assert env == {"PATH": "/bin", "JAX_PLATFORMS": "cpu", "XLA_FLAGS": "--x", "X_HARNESS": "1"}


def test_device_nodes_only_accelerators(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = {"/dev/accel*": ["/dev/accel0", "/dev/accel1"], "/dev/vfio": ["/dev/vfio"], "/dev/nvidia*": [], "/dev/nvidia-caps": []}
    monkeypatch.setattr(sandbox.glob, "glob", lambda pattern: fake.get(pattern, []))
    assert sandbox.device_nodes() == ["/dev/accel0", "/dev/accel1", "/dev/vfio"]
    args = sandbox.bwrap_args(Path("/tmp"), sandbox.device_nodes())
    assert args.count("--dev-bind") == 3


def test_startup_cost_is_measured() -> None:
    plain, boxed = sandbox.startup_cost_ms(repeats=1)
    assert plain > 0
    assert (boxed is None) == (sandbox.bwrap_problem() is not None)
