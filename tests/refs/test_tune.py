"""`bench tune`: the grid, the table it writes, and its refusal to record a config that is not correct."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

import pallas_refs
from bench.cli import app  # all commands registered, as the `bench` script sees them
from bench.refs.tuning import Trial, grid, parse_space, table_entry, tune
from pallas_refs.tables import load_table, validate_table


def test_grid_is_exhaustive_and_respects_kernel_constraints():
    flash = pallas_refs.load("1p")
    configs = grid(
        {"block_q": (128,), "block_k_major": (128, 256), "block_k": (128, 256), "block_b": (1,)}, flash.constraints
    )
    assert [(c["block_k_major"], c["block_k"]) for c in configs] == [(128, 128), (256, 128), (256, 256)]
    assert len(grid(pallas_refs.load("8p").space)) == 27  # upstream tune_pallas.py GEMM space: 3 x 3 x 3


def test_parse_space_rejects_unknown_knobs():
    gemm = pallas_refs.load("8p")
    assert parse_space(["bk=256"], gemm, "small")["bk"] == (256,)
    with pytest.raises(ValueError, match="knob"):
        parse_space(["block_q=128"], gemm, "small")


def test_no_correct_config_means_no_entry():
    gemm = pallas_refs.load("8p")
    outcome = tune(
        gemm,
        {"bm": (128,), "bn": (128,), "bk": (256,)},
        "small",
        "cpu",
        lambda ref, params, size: Trial(params, False, None, "values differ"),
    )
    with pytest.raises(RuntimeError, match="no correct configuration"):
        table_entry(outcome, "inprocess")


def test_validate_table_catches_bad_entries():
    good = load_table("v6e")
    assert validate_table(good) == [] and len(good["entries"]) == 8
    bad = {"chip": "x", "default": "d", "entries": {"8p_GEMM": {"params": {"bm": 0}, "size": "full"}}}
    problems = validate_table(bad)
    assert any("positive ints" in p for p in problems) and any("provenance" in p for p in problems)


def test_bench_tune_writes_a_valid_table(tmp_path: Path):
    """The real command over a 2-config space, each config checked against the workload in interpret mode."""
    table = tmp_path / "cpu.yaml"
    result = CliRunner().invoke(
        app,
        [
            "tune",
            "8p",
            "--space",
            "bm=256",
            "--space",
            "bn=384",
            "--space",
            "bk=256,512",
            "--evaluator",
            "inprocess",
            "--table",
            str(table),
        ],
    )
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(table.read_text())
    assert validate_table(data) == []
    entry = data["entries"]["8p_GEMM"]
    assert entry["params"]["bm"] == 256 and entry["params"]["bk"] in (256, 512)
    assert entry["configs_tried"] == 2 and entry["configs_correct"] == 2
    assert entry["timings_meaningful"] is False and "not meaningful" in entry["provenance"]
    assert "inprocess evaluator" in entry["provenance"]
