"""The private /tmp must not hide the project or its Python environment (a CI clone may live under /tmp)."""

from bench.harness.sandbox import _under_tmp, bwrap_args


def test_paths_under_tmp_are_bound_back_outermost_first():
    paths = ["/tmp/ci/clone", "/tmp/ci/clone/.venv", "/usr", "/tmp/other/venv", "/tmpfoo"]
    assert _under_tmp(paths) == ["/tmp/ci/clone", "/tmp/other/venv"]


def test_bind_back_comes_after_the_tmpfs_and_before_the_writable_scratch(tmp_path, monkeypatch):
    monkeypatch.setattr("bench.harness.sandbox._needed_paths", lambda: ["/tmp/ci/clone", "/usr"])
    args = bwrap_args(tmp_path / "scratch")
    tmpfs = args.index("--tmpfs")
    bound = args.index("/tmp/ci/clone")
    scratch = args.index(str((tmp_path / "scratch").resolve()))
    assert args[bound - 1] == "--ro-bind" and tmpfs < bound < scratch
    assert "/usr" not in args[tmpfs:scratch]
