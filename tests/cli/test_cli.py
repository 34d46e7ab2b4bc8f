"""The CLI for people and for agents: readable lists, JSON errors, id prefixes, attributed tracebacks, one FLOPs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

import bench.cli  # noqa: F401  registers every command
from bench import commands
from bench.app import app
from bench.registry import workload_ids

KERNELS = Path(__file__).parents[1] / "harness" / "kernels"
runner = CliRunner()


def test_list_piped_prints_whole_cells_one_row_per_workload():
    out = runner.invoke(app, ["list", "--size", "small"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0].split("\t")[:2] == ["id", "GFLOP (small)"]
    assert [line.split("\t")[0] for line in lines[1:]] == list(workload_ids())
    assert "…" not in out.output and all(len(line.split("\t")) == 5 for line in lines)


def test_list_in_an_80_column_terminal_fits_and_never_cuts_an_id(monkeypatch):
    monkeypatch.setattr(commands, "console", Console(force_terminal=True, width=80, color_system=None))
    out = runner.invoke(app, ["list", "--size", "small"])
    assert out.exit_code == 0, out.output
    assert max(len(line) for line in out.output.splitlines()) <= 80
    assert "…" not in out.output and all(wid in out.output for wid in workload_ids())
    assert "left out" in out.output  # says which columns it dropped


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["evaluate", "gemm", str(KERNELS / "identical.py"), "--json"], "unknown workload 'gemm'"),
        (["evaluate", "8p", str(KERNELS / "identical.py"), "--json", "--bogus"], "No such option: --bogus"),
        (["evaluate", "8p", "/no/such/kernel.py", "--json"], "does not exist"),
        (["evaluate", "8p", str(KERNELS / "identical.py"), "--json", "--seeds", "0"], "seeds"),
        (["list", "--json", "--size", "tiny"], "expected full or small"),
        (["run", "zzz", "--json"], "unknown workload 'zzz'"),
        (["audit", "zzz", "--json"], "unknown workload 'zzz'"),
    ],
)
def test_usage_errors_under_json_are_one_json_object_on_stdout(argv, needle):
    out = runner.invoke(app, argv)
    assert out.exit_code == 2, out.output
    error = json.loads(out.stdout)
    assert error["status"] == "usage_error" and needle in error["error"] and error["exit_code"] == 2


def test_unknown_workload_gets_near_matches_and_a_prefix_resolves():
    error = json.loads(runner.invoke(app, ["evaluate", "gemm", str(KERNELS / "identical.py"), "--json"]).stdout)
    assert "8p_GEMM" in error["suggestions"]
    typo = json.loads(runner.invoke(app, ["evaluate", "8p_GEM_", str(KERNELS / "identical.py"), "--json"]).stdout)
    assert typo["suggestions"][0] == "8p_GEMM"
    human = runner.invoke(app, ["evaluate", "gemm", str(KERNELS / "identical.py")])
    assert human.exit_code == 2 and "did you mean" in human.output and not human.stdout.startswith("{")


@pytest.mark.parametrize(
    "argv", [["ingest", "--workload", "zzz", "--data-dir", "unused"], ["tune", "zzz", "--dry-run"], ["prompt", "zzz"]]
)
def test_every_command_taking_a_workload_fails_as_a_usage_error(argv):
    out = runner.invoke(app, argv)
    assert out.exit_code == 2 and "zzz" in out.output and "Traceback" not in out.output


def test_info_says_which_checkout_runs():
    data = json.loads(runner.invoke(app, ["info", "--json"]).output)
    where = data["checkout"]
    assert Path(where["package_root"]) == Path(bench.cli.__file__).resolve().parents[1]
    assert where["root"] and "warning" in where


@pytest.mark.slow
def test_evaluate_several_kernels_json_lines_attributed_tracebacks_and_one_flops(tmp_path):
    failing = tmp_path / "my_kernel.py"
    failing.write_text(
        'def helper(x):\n    raise ValueError("boom in my kernel")\n\n\ndef workload(a, b):\n    return helper(a) @ b\n'
    )
    out = runner.invoke(
        app,
        [
            "evaluate",
            "8p",
            str(failing),
            str(KERNELS / "identical.py"),
            "--json",
            "--seeds",
            "1",
            "--iters",
            "4",
            "--blocks",
            "2",
            "--warmup",
            "1",
        ],
    )
    assert out.exit_code == 1, out.output  # one kernel failed
    bad, good = (json.loads(line) for line in out.stdout.splitlines())
    assert bad["kernel_file"] == str(failing) and bad["status"] == "compile_error"
    tb = bad["traceback"]
    assert f'File "{failing}", line 2, in helper' in tb and "eval_" not in tb and "bench/harness" not in tb
    assert "boom in my kernel" not in bad["candidate_log"]  # the traceback appears once
    assert good["status"] == "correct" and good["kernel_file"] == str(KERNELS / "identical.py")
    assert good["timing_meaning"].startswith("CPU") and good["correctness"]["rel_l2"] == 0.05
    listed = {r["name"]: r for r in json.loads(runner.invoke(app, ["list", "--json", "--size", "small"]).output)}
    assert good["flops"] == listed["8p_GEMM"]["flops"] and good["flops_source"] == listed["8p_GEMM"]["flops_source"]
