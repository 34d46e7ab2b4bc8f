"""`bench serve`: the warm entry for agents that need low latency (kernels in as JSON lines, results out).

Each line on the input is one request, a JSON object: {"workload": "8p_GEMM", "kernel": "my_kernel.py"},
optionally "options" (EvalTask's fields: size, seeds, timeout_s, ...) and "id" (echoed back). Each request gets one
JSON line on the output, as soon as its kernel is decided: the EvalResult's fields plus "kernel_file" (and "id"), or
{"status": "usage_error", "error": ...} for a request that cannot be evaluated (bad JSON, unknown workload, no such
file, an option EvalTask refuses). A warm runner (bench.harness.parent.evaluate.WarmRunner) is kept per workload and
options between requests, so only the first request of each pays the runner's start, its baseline and its inputs,
and the next request's build process is started once a request is answered (its jax import off the next request's
path); every candidate is still built in a sandboxed build process of its own and inspected before anything runs it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any, Protocol

from pydantic import BaseModel, ConfigDict, ValidationError

from bench.harness.protocol.result import EvalResult
from bench.harness.protocol.task import EvalTask
from bench.registry import resolve_id


class Request(BaseModel):
    """One line of `bench serve`'s input."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workload: str
    kernel: Path
    options: dict[str, Any] = {}
    id: str | int | None = None


class Runner(Protocol):
    """What serve needs of a warm runner (bench.harness.parent.evaluate.WarmRunner)."""

    def evaluate(self, kernels: list[Path]) -> list[EvalResult]: ...

    def close(self) -> None: ...


def warm_runner(template: EvalTask) -> Runner:
    from bench.harness.parent.evaluate import WarmRunner  # lazily: the harness's imports, once serving starts

    return WarmRunner(template, keep_build_ready=True)  # the next request's build process is started already


def serve(lines: Iterable[str], out: IO[str], open_runner: Callable[[EvalTask], Runner] = warm_runner) -> int:
    """Answer every request of `lines` on `out`, one JSON line each; the number answered. Runners are closed at
    the end (end of input)."""
    runners: dict[str, Runner] = {}
    answered = 0
    try:
        for line in lines:
            if not line.strip():
                continue
            out.write(json.dumps(_answer(line, runners, open_runner)) + "\n")
            out.flush()
            answered += 1
    finally:
        for runner in runners.values():
            runner.close()
    return answered


def _answer(line: str, runners: dict[str, Runner], open_runner: Callable[[EvalTask], Runner]) -> dict[str, Any]:
    """One request's answer: its result, or why it cannot be evaluated."""
    from bench.tracebacks import attribute  # lazily: with the harness

    request_id = None
    try:
        request = Request.model_validate_json(line)
        request_id = request.id
        if not request.kernel.is_file():
            raise ValueError(f"no such kernel file: {request.kernel}")
        task = EvalTask(workload=resolve_id(request.workload), kernel_path=request.kernel.resolve(), **request.options)
    except (ValidationError, ValueError, KeyError) as exc:
        return _with_id({"status": "usage_error", "error": str(exc).replace("\n", "; ")[:2000]}, request_id)
    key = task.model_copy(update={"kernel_path": Path(".")}).model_dump_json()
    if key not in runners:
        runners[key] = open_runner(task)
    [result] = runners[key].evaluate([task.kernel_path])
    answer = {"kernel_file": str(request.kernel), **attribute(result, request.kernel).model_dump(mode="json")}
    return _with_id(answer, request_id)


def _with_id(answer: dict[str, Any], request_id: str | int | None) -> dict[str, Any]:
    return answer if request_id is None else {"id": request_id, **answer}
