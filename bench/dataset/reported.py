"""The paper's reported results (Tables 2-4) as a dataset of their own.

Source: data/reported/paper_tables.csv (per-kernel numbers of Tables 3 and 4) and
data/reported/paper_summaries.csv (aggregates reported without per-kernel numbers: Table 2, and the
Gemini 3 Flash geomeans on Table 4's subset), typed by hand from the paper. `build()` turns them into
Parquet under data/reported/ with the results schema, on tracks of their own
("v6e/full/paper-table3", ...) and provenance "reported in the paper, TPU v6e", so the same SQL ranks
them and they never mix with measured rows. The suite of each table (8 and 5 kernels) is its denominator.
"""

from __future__ import annotations

import csv
import datetime as _dt
import re
from pathlib import Path

import pyarrow as pa

from bench.dataset import schema, store
from bench.dataset.rows import ResultRow, SubmissionRow, SuiteRow, SummaryRow, table
from bench.paths import DATA_DIR

REPORTED_AT = _dt.datetime(2026, 7, 20, tzinfo=_dt.UTC)  # the arXiv date of 2607.20466
PAPER = "arXiv 2607.20466"


def track_of(table: str) -> str:
    return f"v6e/full/paper-table{table}"


def submission_of(table: str, method: str, model: str) -> str:
    """e.g. ("3", "Iterative + context", "Gemini 3 Flash") -> "paper-t3-iterative-context-gemini-3-flash"."""
    slug = re.sub(r"[^a-z0-9]+", "-", f"{method} {model}".lower()).strip("-")
    return f"paper-t{table}-{slug}"


def _num(text: str) -> float | None:
    return float(text) if text.strip() else None


def _result_row(r: dict[str, str]) -> ResultRow:
    speedup, xla_ms = _num(r["speedup"]), float(r["xla_ms"])
    hand_tuned = r["method"] == "Hand-tuned"
    kernel_ms = (_num(r["hand_tuned_ms"]) if hand_tuned else None) or (xla_ms / speedup if speedup else None)
    return ResultRow(
        track=track_of(r["table"]),
        chip="v6e",
        size="full",
        submission=submission_of(r["table"], r["method"], r["model"]),
        workload=r["workload"],
        status="correct" if speedup is not None else "incorrect",
        reason=f"{PAPER} Table {r['table']}, {r['benchmark']}" + ("" if speedup else ": no correct kernel (—)"),
        correct=speedup is not None,
        max_abs_err=None,
        rel_l2_err=None,
        baseline_ms=xla_ms,
        kernel_ms=kernel_ms,
        pallas_ref_ms=_num(r["hand_tuned_ms"]),
        speedup=speedup,
        speedup_ci_low=None,
        speedup_ci_high=None,
        timing_quality=None,
        timing_quality_reason=None,
        wall_speedup=None,
        speedup_vs_pallas=None,
        flops=None,
        bytes_accessed=None,
        operational_intensity=None,
        has_pallas=True,
        pallas_calls=None,
        flags=[],
        timing_method="device_profiler",
        backend="tpu",
        device_kind="TPU v6e",
        host_cpu=None,
        jax_version=None,
        jaxlib_version=None,
        libtpu_version=None,
        harness_version="paper",
        sandbox=None,
        interpret=None,
        tpu_lowering=None,
        pallas_coverage=None,
        readiness_check=None,
        content_hash=PAPER,
        freshness_key=None,
        compile_s_kernel=None,
        compile_s_baseline=None,
        block_order=None,
        block_ms_baseline=None,
        block_ms_kernel=None,
        block_ms_pallas_reference=None,
        runs=None,
        evaluated_at=REPORTED_AT,
        provenance=schema.REPORTED,
        result_json="",
    )


def _meta_row(table: str, method: str, model: str) -> SubmissionRow:
    kind = "hand-tuned" if method == "Hand-tuned" else "reported"
    return SubmissionRow(
        submission=submission_of(table, method, model),
        name=f"{method} ({model})" if kind == "reported" else "Hand-tuned Pallas (paper)",
        kind=kind,
        method=method,
        model=model,
        model_version=None,
        agent_framework=None,
        authors=None,
        contact=None,
        date=None,
        samples_per_workload=None,
        selection_rule="as reported",
        human_in_the_loop=kind == "hand-tuned",
        target_hardware="v6e",
        links=["https://arxiv.org/abs/2607.20466"],
        license=None,
        agent_calls=None,
        provenance=schema.REPORTED,
        recorded_at=REPORTED_AT,
    )


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def tables(source_dir: Path) -> dict[str, pa.Table]:
    """The four reported tables (results, suite, submissions, summary) built from the CSV sources."""
    per_kernel = _read_csv(source_dir / "paper_tables.csv")
    summaries = _read_csv(source_dir / "paper_summaries.csv")
    suite = sorted({(track_of(r["table"]), r["workload"]) for r in per_kernel})
    metas = {(r["table"], r["method"], r["model"]) for r in per_kernel + summaries}
    summary_rows = [
        SummaryRow(
            track=track_of(r["table"]),
            submission=submission_of(r["table"], r["method"], r["model"]),
            geomean=_num(r["geomean"]),
            mean=_num(r["mean"]),
            correct=int(r["correct"]) if r["correct"] else None,
            n_workloads=int(r["n_workloads"]),
            fast1_final=_num(r["fast1_final"]),
            fast1_note=r["fast1_note"],
            provenance=schema.REPORTED,
        )
        for r in summaries
    ]
    return {
        "results": table(ResultRow, [_result_row(r) for r in per_kernel]),
        "suite": table(SuiteRow, [SuiteRow(track=t, workload=w) for t, w in suite]),
        "submissions": table(SubmissionRow, [_meta_row(*m) for m in sorted(metas)]),
        "summary": table(SummaryRow, summary_rows),
    }


def build(data_dir: Path = DATA_DIR) -> dict[str, int]:
    """Regenerate data/reported/<name>/paper.parquet from the CSV sources; returns row counts."""
    source = data_dir / "reported"
    built = tables(source)
    for name, built_table in built.items():
        store.write_atomic(built_table, store.data_path(data_dir, "reported", name, "paper.parquet"))
    return {name: t.num_rows for name, t in built.items()}
