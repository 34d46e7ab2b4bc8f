"""Where the runner starts with the builds (CPU, GPU: the interleaved plan), the runner reads the exports itself
(bench.harness.inspection.report.answer): no inspection worker, a third process importing jax, is started; a runner
that dies while reading a program is replaced (and re-prepared on the same seeds), and the program is blamed only
when a fresh runner dies on it too; the rest of the batch goes on."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import pytest

from bench.harness.parent import inspecting as inspection
from bench.harness.parent import session
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.parent.session import RunnerProcess
from bench.harness.protocol.messages import InspectRequest
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

KERNELS = Path(__file__).parent / "kernels"
pytestmark = pytest.mark.slow


def _task(kernel: str) -> EvalTask:
    return EvalTask(workload="8p_GEMM", kernel_path=KERNELS / f"{kernel}.py", size="small", seeds=1, iters=2,
                    warmup=1, blocks=1, timeout_s=60)


def test_the_runner_reads_the_exports_and_no_inspection_worker_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_worker(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an inspection worker was started")

    monkeypatch.setattr(inspection.WorkerProcess, "__init__", no_worker)
    task = _task("pallas_gemm")
    with WarmRunner(task) as runner:
        assert runner.plan.builds_overlap_runner
        (r,) = runner.evaluate([task.kernel_path])
        assert r.status == Status.CORRECT, r.reason
        assert r.tpu_lowering == "ok" and r.pallas_coverage == 1.0 and r.readiness_check == "verified"
        assert r.integrity.details["inspection"]["tpu"]["mosaic_calls"] == 1
        assert runner.inspector.starts == 1 and runner.session.starts == 1  # one process did it all


def _kills_the_runner(times: list[int]) -> Any:
    """RunnerProcess.request, but an inspection request finds the runner killed by SIGSEGV (as a crash of its reader
    would) `times[0]` times."""
    original = RunnerProcess.request

    def request(self: RunnerProcess, message: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(message, InspectRequest) and times[0] > 0:
            times[0] -= 1
            os.kill(self.pid, signal.SIGSEGV)
            self.proc.wait(timeout=30)
        return original(self, message, *args, **kwargs)

    return request


def test_a_runner_that_dies_reading_is_replaced_and_blamed_on_the_program_only_twice(
        monkeypatch: pytest.MonkeyPatch) -> None:
    task = _task("identical")
    monkeypatch.setattr(RunnerProcess, "request", _kills_the_runner([1]))
    with WarmRunner(task) as runner:
        (once,) = runner.evaluate([task.kernel_path])  # the first runner died reading; a fresh one read it, ran it
        assert once.status == Status.CORRECT, once.reason
        assert runner.session.starts == 2
    monkeypatch.setattr(RunnerProcess, "request", _kills_the_runner([2]))
    with WarmRunner(task) as runner:
        results = runner.evaluate([task.kernel_path, task.kernel_path])
        refused = [r for r in results if r.status != Status.CORRECT]
        assert len(refused) == 1, [(r.status, r.reason) for r in results]  # whichever build was read first
        assert refused[0].status == Status.COMPILE_ERROR and "twice" in refused[0].reason
        assert "died by signal SIGSEGV" in refused[0].reason and "oversized_program" in refused[0].integrity.flags
        assert runner.session.starts == 3  # the other candidate ran in a third runner, prepared on the same seeds


def test_reading_an_honest_program_barely_grows_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    grew: list[float] = []
    original = RunnerProcess.request

    def request(self: RunnerProcess, message: Any, *args: Any, **kwargs: Any) -> Any:
        header, blobs = original(self, message, *args, **kwargs)
        if isinstance(message, InspectRequest):
            grew.append(header["grew_mb"])
        return header, blobs

    monkeypatch.setattr(RunnerProcess, "request", request)
    task = _task("pallas_gemm")
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([task.kernel_path])
        assert r.status == Status.CORRECT, r.reason
        assert runner.session.starts == 1  # not replaced
    assert len(grew) == 1 and grew[0] < session.INSPECTION_GROWTH_MB / 4, grew


def test_a_runner_that_reading_grew_is_replaced_before_anything_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session, "INSPECTION_GROWTH_MB", -1.0)  # every reading "grew" the runner too much
    task = _task("identical")
    with WarmRunner(task) as runner:
        (r,) = runner.evaluate([task.kernel_path])
        assert r.status == Status.CORRECT, r.reason  # read, then run in a fresh runner prepared on the same seeds
        assert runner.session.starts == 2


def test_the_growth_of_several_readings_adds_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many programs each just under the bound cannot together keep the runner's address space grown: the runner
    reports what its readings grew it by in all (runner.server.cmd_inspect), which the parent compares."""
    from bench.harness.runner import server

    # VmSize before each of two readings, after its young collection, after the full one that growth calls for
    sizes = iter([1000.0, 1250.0, 1200.0, 1200.0, 1450.0, 1400.0])
    monkeypatch.setattr(server, "_address_space_mb", lambda: next(sizes))
    monkeypatch.setattr(server, "answer", lambda req, blobs: {"report": {}})
    state = server.State.__new__(server.State)
    state.read_growth_mb = 0.0
    request = InspectRequest(platform="cpu", bounds={})
    first, _ = server.cmd_inspect(state, request, [])
    second, _ = server.cmd_inspect(state, request, [])
    assert first["grew_mb"] == 200.0 < session.INSPECTION_GROWTH_MB < second["grew_mb"] == 400.0


def test_a_reading_pays_for_a_full_collection_only_when_the_runner_looks_grown(monkeypatch: pytest.MonkeyPatch) -> None:
    """A full collection costs 65-80 ms in a process holding jax (most of a reading's cost in a warm batch): an
    honest reading, which leaves the address space as it was, gets the young generations' collection only; growth
    is measured again after a full one, so garbage it frees is not counted against the runner."""
    from bench.harness.runner import server

    collected: list[int] = []
    monkeypatch.setattr(server.gc, "collect", lambda generation=2: collected.append(generation) or 0)
    sizes = iter([1000.0, 1000.0])
    monkeypatch.setattr(server, "_address_space_mb", lambda: next(sizes))
    assert server._grown_since(next(sizes)) == 0.0 and collected == [1]
    collected.clear()
    sizes = iter([1000.0, 1300.0, 1100.0])
    monkeypatch.setattr(server, "_address_space_mb", lambda: next(sizes))
    assert server._grown_since(next(sizes)) == 100.0 and collected == [1, 2]
