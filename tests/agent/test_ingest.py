"""A submission written by `bench agent run` ingests: its kernels become result rows, every sample of its trajectory
is measured (the fake evaluator stands in for the harness on both sides)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from bench.agent.run import RunSpec, run
from bench.agent.template_search import TemplateSearchGenerator
from bench.dataset import schema, store
from bench.dataset.ingest import ingest

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("agent_fakes", HERE / "fakes.py")
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)
W = "41k_Gemm_Add_ReLU"


def test_agent_submission_ingests_with_its_samples(tmp_path):
    subs = tmp_path / "submissions"
    run(
        RunSpec(
            out=subs / "ts",
            method="iterative",
            chains=1,
            turns=3,
            workloads=[W],
            generator=TemplateSearchGenerator(),
            journal_dir=tmp_path / "journal",
            evaluator=fakes.fake_evaluator,
            meta={"date": "2026-12-01", "name": "ingest test"},
        )
    )
    report = ingest(
        data_dir=tmp_path / "data",
        submissions_dir=subs,
        chip="cpu",
        size="small",
        evaluator=f"{HERE / 'fakes.py'}:evaluate_task",
    )
    rows = store.read_tables(tmp_path / "data" / "results", schema.RESULTS).to_pylist()
    assert [(r["submission"], r["workload"]) for r in rows] == [("ts", W)]
    samples = store.current_samples(tmp_path / "data", "cpu", "small", "ts", W)
    assert len(samples) == 3 and not getattr(report, "skipped", None)
