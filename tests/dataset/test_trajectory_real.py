"""A v2 trajectory of real kernel sources through the real harness (tests/dataset/trajectory_fixture.py, 12p_RMSNorm):
every distinct source evaluated once, each sample classed as the paper does, the dishonest declaration measured."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench.dataset import schema, store
from bench.dataset.ingest import ingest
from bench.dataset.metrics import Metrics

pytestmark = pytest.mark.slow


def _fixture():
    spec = importlib.util.spec_from_file_location(
        "trajectory_fixture", Path(__file__).with_name("trajectory_fixture.py")
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_real_harness_measures_every_sample_of_a_dishonest_trajectory(tmp_path):
    fx = _fixture()
    subs, data = tmp_path / "subs", tmp_path / "data"
    fx.write(subs, "liar", dishonest=True, gemm=False)
    report = ingest(data_dir=data, submissions_dir=subs, chip="cpu", size="small", workers=1)
    assert not report.failed and report.samples == [("liar", fx.WORKLOAD, 6, 5)]
    rows = sorted(store.read_tables(data / "samples", schema.SAMPLES).to_pylist(), key=lambda r: r["sample_idx"])
    derived = Metrics(data, suite=[fx.WORKLOAD]).published_samples("cpu/small").to_pylist()
    assert [r["outcome"] for r in derived] == [
        "api_runtime_error",
        "wrong_output",
        "correct",
        "api_runtime_error",
        "correct",
        "correct",
    ]
    assert rows[2]["speedup"] == rows[5]["speedup"]  # identical sources: one measurement
    assert rows[4]["selected"] and rows[4]["speedup"] < 0.5  # declared 2.0x; the mean via a matmul is far slower
    m = Metrics(data, suite=[fx.WORKLOAD])
    kinds = {(r.sample_idx, r.kind) for r in m.sample_disagreements("cpu/small")}
    assert {(1, "outcome"), (4, "speedup")} <= kinds
    (lb,) = m.leaderboard("cpu/small")
    assert lb.samples == 6 and lb.fast1_final in (0.0, 1.0)  # decided by the measured baseline copy alone
