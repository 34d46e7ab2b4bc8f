"""A bug of the harness itself is the candidate's Status.ERROR ("harness error: ..."), never a traceback on the
caller's screen and never a verdict on the kernel: the guard is inside WarmRunner.evaluate, so `evaluate`,
`evaluate_many`, the CLI and the dataset's warm batches all get it (no process is started here)."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench import evaluate_many
from bench.app import app
from bench.harness.parent import evaluate as harness_evaluate
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

KERNEL = Path(__file__).resolve().parent / "kernels" / "identical.py"


def _broken_batch(self: WarmRunner, kernels: list[Path]) -> list[object]:
    raise RuntimeError("boom in the harness")


def test_a_harness_exception_gives_every_candidate_of_the_batch_an_error_status(monkeypatch):
    monkeypatch.setattr(WarmRunner, "_stream", _broken_batch)
    with WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=KERNEL, size="small")) as runner:
        results = runner.evaluate([KERNEL, KERNEL])
    assert [r.status for r in results] == [Status.ERROR, Status.ERROR]
    assert results[0].reason == "harness error: RuntimeError: boom in the harness"
    assert "_broken_batch" in results[0].traceback
    assert [r.status for r in evaluate_many("8p", [KERNEL])] == [Status.ERROR]  # the API goes through the same guard


def test_a_build_step_that_raises_in_the_parent_fails_that_kernel_alone(monkeypatch):
    def raising(*args: object, **kwargs: object) -> None:
        raise OSError("no room for the sandbox")

    monkeypatch.setattr(harness_evaluate, "BuildProcess", raising)
    runner = WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=KERNEL, size="small"))
    try:
        built = runner._build_safely(KERNEL, Future(), Future())
    finally:
        runner.close()
    assert not built.artifact.ok and built.artifact.kind == Status.ERROR
    assert built.artifact.reason.startswith("harness error")
    assert "OSError: no room for the sandbox" in built.artifact.reason


def test_the_cli_prints_the_json_of_a_harness_error(monkeypatch):
    monkeypatch.setattr(WarmRunner, "_stream", _broken_batch)
    out = CliRunner().invoke(app, ["evaluate", "8p", str(KERNEL), "--json"])
    assert out.exit_code == 1, out.output
    result = json.loads(out.stdout)
    assert result["status"] == "error" and result["reason"].startswith("harness error: RuntimeError")
