"""The team's fused-epilogue Pallas matmul: generated files in sync, and each kernel correct in TPU interpret mode."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import jax
import pytest

from bench.harness.protocol.correctness import Tolerance, compare
from bench.paths import ROOT
from bench.refs.interpret import interpret_context
from bench.registry import load_workload

TEAM = ROOT / "submissions" / "jaxbench-team-pallas"


def _generator():
    spec = importlib.util.spec_from_file_location("team_generate", TEAM / "source" / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


EXPECTED = _generator().expected_files()


def test_generated_kernels_are_up_to_date():
    on_disk = {p: p.read_text() for p in (TEAM / "kernels").glob("*.py")}
    assert set(on_disk) == set(EXPECTED), "run submissions/jaxbench-team-pallas/source/generate.py"
    stale = [p.name for p, text in EXPECTED.items() if on_disk[p] != text]
    assert not stale, f"stale kernels {stale}: run submissions/jaxbench-team-pallas/source/generate.py"


def _load_kernel(path: Path):
    spec = importlib.util.spec_from_file_location(f"team_{path.stem.split('_')[0]}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("path", sorted(EXPECTED), ids=lambda p: p.stem.split("_")[0])
def test_kernel_matches_workload_in_interpret_mode(path: Path):
    workload = load_workload(path.stem)
    inputs = workload.create_inputs(size="small", seed=3)
    expected = jax.jit(workload.workload)(*inputs)
    with interpret_context("cpu"):
        kernel = _load_kernel(path)
        jitted = jax.jit(kernel.workload)
        assert "pallas_call" in str(jitted.trace(*inputs).jaxpr)
        out = jitted(*inputs)
    verdict = compare(expected, out, Tolerance.for_workload(workload, "small"))
    assert verdict.correct, verdict.reason
