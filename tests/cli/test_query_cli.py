"""The reader's CLI (issue 43): `bench query` keeps or refuses a filter, never ignores it; help text reads like a
command line (no <bool>, no <list[str]>)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench.app import app

runner = CliRunner()


def test_query_keeps_only_the_asked_submission() -> None:
    out = runner.invoke(app, ["query", "per_kernel_table", "cpu/small", "--submission", "xla-baseline", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert rows and {r["submission"] for r in rows} == {"xla-baseline"}
    assert {r["speed_verdict"] for r in rows} == {"indistinguishable"}  # XLA against itself is never faster


def test_query_refuses_a_filter_its_query_ignores() -> None:
    out = runner.invoke(app, ["query", "fast_p", "cpu/small", "--submission", "xla-baseline"], terminal_width=200)
    assert out.exit_code == 2 and "does not filter by" in " ".join(out.output.split())


def test_the_xla_baseline_is_not_faster_than_xla_in_fast_p() -> None:
    out = runner.invoke(app, ["query", "fast_p", "cpu/small", "--json"])
    rows = [r for r in json.loads(out.output) if r["submission"] == "xla-baseline" and r["p"] >= 1]
    assert rows and all(r["n_fast"] == 0 for r in rows)


def test_help_shows_no_python_type_for_flags_and_repeatable_options() -> None:
    for command in (["ingest"], ["evaluate"], ["agent", "run"], ["validate"], ["query"]):
        text = runner.invoke(app, [*command, "--help"], terminal_width=200).output
        assert "<bool>" not in text and "<list[str]>" not in text, command
    assert "(repeatable)" in runner.invoke(app, ["ingest", "--help"], terminal_width=200).output
