"""The public surface is typed: evaluation options are one model (EvalOptions) and an ingest is one request
(IngestRequest); the keyword forms of both still work, and the CLI quotes the models' defaults."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pydantic
import pytest

import bench
from bench.api import _task
from bench.dataset.ingest_request import IngestHooks, IngestRequest, request_of
from bench.harness.protocol.task import EvalOptions, EvalTask


def test_eval_options_are_every_task_field_but_what_and_which_kernel() -> None:
    assert set(EvalTask.model_fields) - set(EvalOptions.model_fields) == {"workload", "kernel_path"}
    assert bench.EvalOptions is EvalOptions


def test_evaluate_takes_the_model_or_keywords_and_keywords_override(tmp_path: Path) -> None:
    kernel = tmp_path / "k.py"
    kernel.write_text("def workload(x):\n    return x\n")
    by_model = _task("8p", kernel, EvalOptions(size="small", seeds=5), {})
    by_keywords = _task("8p", kernel, None, {"size": "small", "seeds": 5})
    assert by_model == by_keywords and by_model.workload == "8p_GEMM" and by_model.iters is None  # defaults kept
    assert _task("8p", kernel, EvalOptions(size="small", seeds=5), {"seeds": 2}).seeds == 2
    with pytest.raises(pydantic.ValidationError):
        _task("8p", kernel, None, {"seeds": 0})  # EvalTask's bounds hold for both forms
    with pytest.raises(pydantic.ValidationError):
        EvalOptions(seeds=0)


def test_ingest_request_keyword_form_and_unknown_keywords() -> None:
    seen: list[int] = []
    req, hooks = request_of(None, None, {"chip": "cpu", "workloads": {"8p_GEMM"}, "progress": seen.append})
    assert req == IngestRequest(chip="cpu", workloads=frozenset({"8p_GEMM"})) and hooks.progress == seen.append
    req2, _ = request_of(req, IngestHooks(), {"workers": 2})
    assert dataclasses.replace(req, workers=2) == req2
    with pytest.raises(TypeError, match="unexpected keyword"):
        request_of(None, None, {"worker": 2})


def test_the_ingest_cli_quotes_the_request_defaults() -> None:
    import typer.main

    from bench.dataset.commands import ingest

    params = {
        p.name: p
        for p in typer.main.get_command_from_info(
            typer.models.CommandInfo(callback=ingest), pretty_exceptions_short=True, rich_markup_mode=None
        ).params
    }
    for f in dataclasses.fields(IngestRequest):
        cli_name = "workload" if f.name == "workloads" else f.name
        if f.name != "workloads" and cli_name in params:
            assert params[cli_name].default == f.default, f.name
    assert {f.name for f in dataclasses.fields(IngestRequest)} - {"evaluator", "workloads"} <= set(params)
