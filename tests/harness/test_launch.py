"""The runner spawned early by the `bench` script (bench.harness.parent.launch): adopted by the evaluation that
would have spawned the same runner, never by another one (which spawns its own and kills the early one)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.parent import launch
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

KERNELS = Path(__file__).parent / "kernels"


def test_the_early_runner_has_the_default_tasks_memory_cap() -> None:
    assert launch.EARLY_MEMORY_MB == EvalTask.model_fields["memory_limit_mb"].default


@pytest.mark.parametrize("argv", [[], ["ingest"], ["list"], ["evaluate", "--help"],
                                  ["evaluate", "8p_GEMM", "k.py", "--schedule", "interleaved"]])
def test_only_an_evaluation_with_the_default_schedule_starts_a_runner_early(argv: list[str]) -> None:
    assert launch.start_early(argv) is False and launch._early is None


def _task(**kw: object) -> EvalTask:
    opts: dict = dict(workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small", seeds=1, warmup=1,
                      iters=2, blocks=1, timeout_s=60)
    return EvalTask(**{**opts, **kw})


@pytest.mark.slow
def test_an_evaluation_adopts_the_early_runner_it_would_have_spawned() -> None:
    assert launch.start_early(["evaluate", "8p_GEMM", "identical.py"]) is True
    early = launch._early
    assert early is not None
    task = _task()
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([task.kernel_path])
        assert r.status == Status.CORRECT, r.reason
        proc = runner.session.proc
        assert proc is not None and proc.adopted and proc.pid == early.popen.pid
        assert proc.log_path.parent == runner.folder and not early.log_path.name.startswith("runner_early_")
    assert launch._early is None


@pytest.mark.slow
def test_an_evaluation_with_other_settings_kills_the_early_runner_and_spawns_its_own() -> None:
    assert launch.start_early(["evaluate", "8p_GEMM", "identical.py", "--memory-mb", "4096"]) is True
    early = launch._early
    assert early is not None
    task = _task(memory_limit_mb=4096)
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([task.kernel_path])
        assert r.status == Status.CORRECT, r.reason
        proc = runner.session.proc
        assert proc is not None and not proc.adopted and proc.pid != early.popen.pid
        assert early.popen.returncode is not None and not early.log_path.exists()  # killed, reaped, log removed
    assert launch._early is None


@pytest.mark.slow
def test_an_early_runner_never_adopted_is_gone_when_the_script_exits(tmp_path: Path) -> None:
    """`bench evaluate` that fails before it evaluates (an unknown workload) leaves no runner behind."""
    code = ("import sys; from bench.harness.runner import launch; "
            "assert launch.start_early(['evaluate', 'nope', 'k.py']); "
            "print(launch._early.popen.pid, launch._early.log_path, flush=True); sys.exit(2)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr[-2000:]
    pid, log = out.stdout.split()
    assert not Path(log).exists()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid), 0)


@pytest.mark.slow
def test_the_bench_script_ends_an_evaluation_quickly_with_all_its_output_and_no_runner(tmp_path: Path) -> None:
    """`bench evaluate` ends with os._exit after its output is flushed and the exit handlers ran (bench.cli.exit_now):
    the whole JSON arrives through a pipe, the exit code follows the status, and no runner is left."""
    import json

    bench = Path(sys.executable).parent / "bench"
    out = subprocess.run([str(bench), "evaluate", "8p_GEMM", str(KERNELS / "identical.py"), "--json", "--seeds", "1",
                          "--iters", "4", "--blocks", "2", "--warmup", "1"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout)
    assert result["status"] == "correct"
    with pytest.raises(ProcessLookupError):
        os.kill(result["runner"]["pid"], 0)


def test_only_an_evaluation_with_no_thread_left_running_exits_quickly() -> None:
    import threading

    from bench import cli

    assert cli.quick_exit_allowed(["evaluate", "8p_GEMM", "k.py"], 0)
    assert cli.quick_exit_allowed(["evaluate", "8p_GEMM", "k.py"], None)
    assert not cli.quick_exit_allowed(["ingest"], 0) and not cli.quick_exit_allowed([], 0)
    assert not cli.quick_exit_allowed(["evaluate", "x"], "a message to print")  # normal exit prints it
    release = threading.Event()
    busy = threading.Thread(target=release.wait, daemon=False)
    busy.start()
    try:
        assert not cli.quick_exit_allowed(["evaluate", "8p_GEMM", "k.py"], 0)  # normal exit would wait for it
    finally:
        release.set()
        busy.join()
