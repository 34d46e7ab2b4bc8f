"""`bench serve` (bench/serve.py): kernels in as JSON lines, one result line out per kernel, the warm runner kept
between requests of one workload and options; a request that cannot be evaluated gets a usage_error line."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.serve import serve

KERNELS = Path(__file__).parent / "kernels"
GOOD = KERNELS / "identical.py"


class FakeRunner:
    """Records what it was asked; its results say which kernel they are for."""

    def __init__(self, template: EvalTask) -> None:
        self.template, self.kernels, self.closed = template, list[Path](), False

    def evaluate(self, kernels: list[Path]) -> list[EvalResult]:
        self.kernels += kernels
        return [
            EvalResult(
                workload=self.template.workload,
                status=Status.COMPILE_ERROR,
                size="small",
                tpu="unknown",
                reason=f"fake result for {k.name}",
            )
            for k in kernels
        ]

    def close(self) -> None:
        self.closed = True


def _serve(lines: list[str]) -> tuple[list[dict[str, object]], list[FakeRunner]]:
    opened: list[FakeRunner] = []

    def open_runner(template: EvalTask) -> FakeRunner:
        opened.append(FakeRunner(template))
        return opened[-1]

    out = io.StringIO()
    assert serve(lines, out, open_runner) == len([line for line in lines if line.strip()])
    return [json.loads(line) for line in out.getvalue().splitlines()], opened


def test_one_warm_runner_serves_every_request_of_a_workload_and_options() -> None:
    same = json.dumps({"workload": "8p", "kernel": str(GOOD), "options": {"size": "small"}})
    other = json.dumps({"workload": "8p_GEMM", "kernel": str(GOOD), "options": {"size": "small", "seeds": 2}, "id": 7})
    answers, opened = _serve([same, "", same, other])
    assert [a["status"] for a in answers] == ["compile_error"] * 3
    assert answers[2] == {"id": 7, "kernel_file": str(GOOD), **answers[2]} and "id" not in answers[0]
    assert [len(r.kernels) for r in opened] == [2, 1] and all(r.closed for r in opened)
    assert opened[1].template.seeds == 2


@pytest.mark.parametrize(
    "line, why",
    [
        ("not json", "Invalid JSON"),
        (json.dumps({"workload": "no_such_workload", "kernel": str(GOOD)}), "no_such_workload"),
        (json.dumps({"workload": "8p", "kernel": "missing.py", "id": "a"}), "no such kernel file"),
        (json.dumps({"workload": "8p", "kernel": str(GOOD), "options": {"seeds": 0}}), "seeds"),
        (json.dumps({"workload": "8p", "kernel": str(GOOD), "kernal": "typo"}), "kernal"),
    ],
)
def test_a_request_that_cannot_be_evaluated_gets_a_usage_error_line(line: str, why: str) -> None:
    answers, opened = _serve([line, json.dumps({"workload": "8p", "kernel": str(GOOD)})])
    assert answers[0]["status"] == "usage_error" and why in str(answers[0]["error"]), answers[0]
    assert answers[1]["status"] == "compile_error" and len(opened) == 1  # the next request is served


def test_each_answer_is_written_before_the_next_request_is_read() -> None:
    out = io.StringIO()
    request = json.dumps({"workload": "8p", "kernel": str(GOOD)})

    def lines() -> Iterator[str]:
        for n in range(3):
            assert len(out.getvalue().splitlines()) == n  # every earlier request was answered
            yield request

    assert serve(lines(), out, FakeRunner) == 3


@pytest.mark.slow
def test_serve_keeps_the_real_warm_runner_between_requests() -> None:
    from bench.harness.parent.evaluate import WarmRunner

    opened: list[WarmRunner] = []

    def open_runner(template: EvalTask) -> WarmRunner:
        opened.append(WarmRunner(template))
        return opened[-1]

    options = {"size": "small", "seeds": 1, "iters": 4, "blocks": 2, "timeout_s": 120}
    lines = [
        json.dumps({"workload": "8p_GEMM", "kernel": str(KERNELS / k), "options": options})
        for k in ("identical.py", "twice.py")
    ]
    out = io.StringIO()
    serve(lines, out, open_runner)
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [a["status"] for a in answers] == ["correct", "correct"], answers
    assert len(opened) == 1 and opened[0].session.starts == 1 and opened[0].batches == 2
