"""What the build sandbox binds: only what it needs, read-only, bound after the private /tmp (a CI clone or
venv may live under /tmp), and a kernel file by itself."""

from pathlib import Path

from bench.harness.parent import sandboxing as sandbox
from bench.harness.parent.sandboxing import bwrap_args, readable_paths


def test_readable_paths_are_python_and_the_importable_project_code_only():
    from bench.paths import ROOT

    paths = readable_paths()
    assert str((Path(ROOT) / "bench").resolve()) in paths and str((Path(ROOT) / "workloads").resolve()) in paths
    assert str(Path(ROOT).resolve()) not in paths  # not the checkout: no data/, no build/, no submissions/
    assert all(not any(p != q and p.startswith(q + "/") for q in paths) for p in paths)  # outermost only


def test_binds_come_after_the_tmpfs_and_the_kernel_is_bound_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox, "readable_paths", lambda: ["/tmp/ci/clone/bench", "/opt/venv"])
    kernel = tmp_path / "k.py"
    kernel.write_text("")
    args = bwrap_args(kernel)
    tmpfs = args.index("--tmpfs")
    assert args[tmpfs - 2] == "--size" and args[tmpfs + 1] == "/tmp"
    for p in ("/tmp/ci/clone/bench", "/opt/venv", str(kernel.resolve())):
        i = args.index(p)
        assert args[i - 1] == "--ro-bind" and i > tmpfs
    assert "--bind" not in args  # nothing writable but the tmpfs
