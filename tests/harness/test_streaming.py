"""A batch streams: each kernel's result is given (by WarmRunner.stream, bench.evaluate_many and `bench evaluate`)
as soon as that kernel is decided, not when the whole batch is. The runner here is a stand-in that holds the
second candidate until the first result has been received, so a batch that waited for all would never release it
(the failure is an error status, not a hang); nothing depends on the machine's speed."""

from __future__ import annotations

import builtins
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bench import api, commands
from bench.app import app
from bench.harness.parent import evaluate as ev
from bench.harness.parent import outcome
from bench.harness.parent.builder import BuildArtifact
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask

KERNELS = Path(__file__).parent / "kernels"
FIRST, SECOND = KERNELS / "identical.py", KERNELS / "twice.py"
#: how long the stand-in runner waits for the first result to be received before it gives up (a failure, never a
#: pass: a streaming batch releases it at once)
PATIENCE_S = 60


class StandInBuild:
    """A build process that builds nothing (the stand-in runner below decides every candidate)."""

    cpus = None  # no cpuset: no timing beside it

    def __init__(self, *args: object) -> None:
        pass

    def run(self, *args: object) -> BuildArtifact:
        return BuildArtifact(ok=True, runnable=b"stand-in")

    def close(self) -> None:
        pass


def stand_in_runner(monkeypatch: pytest.MonkeyPatch, received: threading.Event) -> list[str]:
    """No runner process, no inspection: SECOND's run waits for `received` (set by the test once it holds FIRST's
    result). Returns the log of events."""
    events: list[str] = []

    def run(self: ev.WarmRunner, ctx: Any, built: Any) -> EvalResult:
        if built.kernel.name == SECOND.name:
            events.append("second is running")
            if not received.wait(PATIENCE_S):
                raise AssertionError("the first result was not given while the second candidate ran")
        events.append(f"decided {built.kernel.name}")
        return outcome.harness_error(self.task, built, f"stand-in result of {built.kernel.name}", 0.0)

    monkeypatch.setattr(ev, "BuildProcess", StandInBuild)
    monkeypatch.setattr(ev.Inspector, "warm", lambda self: None)
    monkeypatch.setattr(ev.Inspector, "inspect", lambda self, *args: None)
    monkeypatch.setattr(ev.WarmRunner, "_load_baseline", lambda self, *args: (None, b""))
    monkeypatch.setattr(ev.WarmRunner, "_ready", lambda self, *args: "stand-in context")
    monkeypatch.setattr(ev.WarmRunner, "_run", run)
    return events


def test_the_warm_runner_gives_each_result_as_soon_as_it_is_decided(monkeypatch: pytest.MonkeyPatch) -> None:
    received = threading.Event()
    events = stand_in_runner(monkeypatch, received)
    with ev.WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=FIRST, size="small", sandbox="none")) as runner:
        stream = runner.stream([FIRST, SECOND])
        first = next(stream)
        events.append("first received")
        received.set()
        second = next(stream)
    assert first.reason == "stand-in result of identical.py" and second.reason == "stand-in result of twice.py"
    assert events.index("first received") < events.index("decided twice.py")


def test_evaluate_many_yields_each_result_as_soon_as_it_is_decided(monkeypatch: pytest.MonkeyPatch) -> None:
    received = threading.Event()
    events = stand_in_runner(monkeypatch, received)
    results = api.evaluate_many("8p_GEMM", [FIRST, SECOND], size="small", sandbox="none")
    first = next(results)
    events.append("first received")
    received.set()
    assert [r.status for r in (first, *results)] == [Status.ERROR, Status.ERROR]
    assert events.index("first received") < events.index("decided twice.py")


def test_bench_evaluate_prints_each_kernel_s_line_as_soon_as_it_is_decided(monkeypatch: pytest.MonkeyPatch) -> None:
    received = threading.Event()
    events = stand_in_runner(monkeypatch, received)

    def printed(*args: object, **kwargs: Any) -> None:
        builtins.print(*args, **kwargs)
        events.append("a line printed")
        received.set()

    monkeypatch.setattr(commands, "print", printed, raising=False)
    out = CliRunner().invoke(
        app, ["evaluate", "8p", str(FIRST), str(SECOND), "--json", "--size", "small", "--sandbox", "none"]
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["kernel_file"] for line in lines] == [str(FIRST), str(SECOND)], out.output
    assert lines[1]["reason"] == "stand-in result of twice.py"
    assert events.index("a line printed") < events.index("decided twice.py")


def test_a_runner_that_keeps_a_build_ready_leaves_one_started_for_the_next_batch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received = threading.Event()
    received.set()
    stand_in_runner(monkeypatch, received)
    started: list[object] = []
    closed: list[object] = []

    class Counted(StandInBuild):
        def __init__(self, *args: object) -> None:
            started.append(self)

        def close(self) -> None:
            closed.append(self)

    monkeypatch.setattr(ev, "BuildProcess", Counted)
    task = EvalTask(workload="8p_GEMM", kernel_path=FIRST, size="small", sandbox="none")
    with ev.WarmRunner(task) as one_off:
        one_off.evaluate([FIRST])
        assert len(started) == 1 and closed == started  # nothing left started: a one-off pays for no spare build
    started.clear()
    closed.clear()
    runner = ev.WarmRunner(task, keep_build_ready=True)
    try:
        runner.evaluate([FIRST])
        assert len(started) == 2 and closed == started[:1]  # FIRST's build, and one ready for the next batch
        runner.evaluate([SECOND])
        assert len(started) == 3 and closed == started[:2]  # the next batch built in it; another one waits
    finally:
        runner.close()
    assert closed == started  # closing the runner ends the one that waited
