"""Synthetic datasets with the real schema: for the speed benchmark and for building the site offline.

The numbers are random (a seeded numpy generator) and every row says so: submissions are named
"synthetic-NNN" and their model is "synthetic". Never ingest this into the real data/ folder.
"""

from __future__ import annotations

import datetime as _dt
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.dataset import schema, store

FLAGS = ("host_callback", "static:frame_inspection", "no_pallas", "below_physics_floor")


def workload_names(n: int) -> list[str]:
    """The registry's ids first (real names make the synthetic site readable), padded to n."""
    from bench.registry import workload_ids

    ids = list(workload_ids())[:n]
    return ids + [f"{len(ids) + i + 1}s_Synthetic_{i + 1}" for i in range(n - len(ids))]


def _results(
    rng: np.random.Generator, sub: str, kind: str, workloads: list[str], chip: str, size: str, now: _dt.datetime
) -> pa.Table:
    n = len(workloads)
    baseline = rng.lognormal(0.0, 1.0, n)
    if kind == "baseline":
        speed, status, has_pallas = np.ones(n), np.array(["correct"] * n), np.zeros(n, bool)
    else:
        speed = rng.lognormal(0.1, 0.5, n)
        status = rng.choice(["correct", "incorrect", "compile_error", "runtime_error"], n, p=[0.6, 0.2, 0.15, 0.05])
        has_pallas = rng.random(n) < 0.9
    flags = [[str(rng.choice(FLAGS))] if rng.random() < 0.03 else [] for _ in range(n)]
    ok = status == "correct"
    width = rng.uniform(0.01, 0.15, n)  # half-width of the speedup's 95% interval, relative
    coverage = np.where(has_pallas, rng.uniform(0.2, 1.0, n), 0.0)
    flops = rng.lognormal(22, 2, n)
    cols = {
        "schema_version": [schema.SCHEMA_VERSION] * n,
        "track": [schema.track_id(chip, size)] * n,
        "chip": [chip] * n,
        "size": [size] * n,
        "submission": [sub] * n,
        "workload": workloads,
        "status": status.tolist(),
        "reason": ["synthetic"] * n,
        "correct": ok.tolist(),
        "max_abs_err": rng.random(n).tolist(),
        "rel_l2_err": (rng.random(n) * 0.1).tolist(),
        "baseline_ms": baseline.tolist(),
        "kernel_ms": np.where(ok, baseline / speed, np.nan).tolist(),
        "pallas_ref_ms": (baseline / rng.lognormal(0.3, 0.4, n)).tolist(),
        "speedup": np.where(ok, speed, np.nan).tolist(),
        "speedup_ci_low": np.where(ok, speed * (1 - width), np.nan).tolist(),
        "speedup_ci_high": np.where(ok, speed * (1 + width), np.nan).tolist(),
        "timing_quality": [("noisy" if w > 0.12 else "ok") if k else None for k, w in zip(ok, width, strict=True)],
        "timing_quality_reason": [
            "synthetic: wide interval" if k and w > 0.12 else None for k, w in zip(ok, width, strict=True)
        ],
        "wall_speedup": np.where(ok, speed * 0.9, np.nan).tolist(),
        "speedup_vs_pallas": [None] * n,
        "flops": flops.tolist(),
        "bytes_accessed": (flops / rng.lognormal(4, 1.5, n)).tolist(),
        "operational_intensity": rng.lognormal(4, 1.5, n).tolist(),
        "has_pallas": has_pallas.tolist(),
        "pallas_calls": has_pallas.astype(int).tolist(),
        "flags": flags,
        "timing_method": ["cpu_profiler_ops"] * n,
        "backend": ["cpu"] * n,
        "device_kind": ["cpu"] * n,
        "host_cpu": ["synthetic"] * n,
        "jax_version": ["synthetic"] * n,
        "jaxlib_version": ["synthetic"] * n,
        "libtpu_version": [None] * n,
        "harness_version": ["synthetic"] * n,
        "sandbox": ["none"] * n,
        "interpret": [True] * n,
        "tpu_lowering": (lowering := [_lowering(rng, o, p) for o, p in zip(ok, has_pallas, strict=True)]),
        "pallas_coverage": [float(c) if low == "ok" else None for c, low in zip(coverage, lowering, strict=True)],
        "readiness_check": [
            ("verified" if rng.random() < 0.8 else "unverified") if low == "ok" else None for low in lowering
        ],
        "content_hash": [f"synthetic-{sub}-{w}" for w in workloads],
        "freshness_key": [f"synthetic-{sub}-{w}" for w in workloads],
        **_timing_detail(sub, baseline, np.where(ok, baseline / speed, np.nan), ok),
        "runs": [1] * n,
        "evaluated_at": [now] * n,
        "provenance": ["synthetic"] * n,
        "result_json": [""] * n,
    }
    table = pa.table(cols)
    return pa.Table.from_arrays([table[f.name].cast(f.type) for f in schema.RESULTS], schema=schema.RESULTS)


def _timing_detail(sub: str, baseline: np.ndarray, kernel: np.ndarray, ok: np.ndarray) -> dict[str, list]:
    """Compile times (about 1 in 6 candidates past 10x XLA's) and 8 ABBA timing blocks per timed row. From a
    generator of their own (seeded by the submission), so the other columns' draws stay as they were."""
    rng = np.random.default_rng(zlib.crc32(sub.encode()))
    n = len(baseline)
    base_s = rng.lognormal(0.0, 0.3, n)
    order = ["baseline", "kernel", "kernel", "baseline"] * 4

    def blocks(ms: float) -> list[float]:
        return [float(ms * b) for b in rng.lognormal(0.0, 0.03, 8)]

    return {
        "compile_s_kernel": np.where(ok, base_s * rng.lognormal(1.0, 1.2, n), np.nan).tolist(),
        "compile_s_baseline": base_s.tolist(),
        "block_order": [order if k else None for k in ok],
        "block_ms_baseline": [blocks(b) if k else None for b, k in zip(baseline, ok, strict=True)],
        "block_ms_kernel": [blocks(m) if k else None for m, k in zip(kernel, ok, strict=True)],
        "block_ms_pallas_reference": [None] * n,
    }


def _lowering(rng: np.random.Generator, ok: bool, has_pallas: bool) -> str | None:
    """A TPU-lowering outcome for a synthetic row: unknown for incorrect ones, mostly "ok" otherwise."""
    if not (ok and has_pallas):
        return None
    return "ok" if rng.random() < 0.7 else str(rng.choice(["Mosaic: unsupported op", "Mosaic: block shape"]))


STATUS_OF = {
    "api_runtime_error": "compile_error",
    "wrong_output": "incorrect",
    "correct": "correct",
    schema.INTEGRITY_EXCLUDED: "correct",
}


def _samples(
    rng: np.random.Generator, sub: str, workloads: list[str], n_samples: int, track: str, now: _dt.datetime
) -> pa.Table:
    """Measured samples of every workload, shaped like ingest's v2 rows: chains x turns, source hashes with repeats,
    the selected sample (the first correct one), declared values of which about 1% disagree with the measurement."""
    n = len(workloads) * n_samples
    skill = rng.uniform(0.02, 0.5)
    p = [(1 - skill) * 0.78, (1 - skill) * 0.2, skill * 0.98, (1 - skill) * 0.02 + skill * 0.02]
    outcome = rng.choice(list(schema.MEASURED_OUTCOMES), n, p=p)
    speed = rng.lognormal(-0.5, 0.5, n)
    correct = outcome == "correct"
    idx = np.tile(np.arange(n_samples, dtype=np.int32), len(workloads))
    turns = 8 if n_samples % 8 == 0 else 1
    cols = {
        "schema_version": np.full(n, schema.SCHEMA_VERSION, np.int32),
        "track": [track] * n,
        "submission": [sub] * n,
        "workload": np.repeat(workloads, n_samples),
        "sample_idx": idx,
        "latency_ms": rng.lognormal(0, 1, n),
        "speedup": np.where(correct, speed, np.nan),
        "speedup_ci_low": np.where(correct, speed * 0.95, np.nan),
        "speedup_ci_high": np.where(correct, speed * 1.05, np.nan),
        "provenance": ["synthetic"] * n,
        "content_hash": [f"synthetic-{sub}"] * n,
        "recorded_at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
    }
    first_correct = np.zeros(n, bool)
    for w in range(len(workloads)):  # the submitted kernel: the first correct sample of each workload
        hits = np.flatnonzero(correct[w * n_samples : (w + 1) * n_samples])
        if hits.size:
            first_correct[w * n_samples + hits[0]] = True
    lie = rng.random(n) < 0.01  # a few declarations disagree with the measurement
    cols.update(
        chain=idx // turns,
        turn=idx % turns,
        status=[STATUS_OF[o] for o in outcome],
        reason=np.where(correct, "ok", "synthetic failure"),
        baseline_ms=rng.lognormal(0, 1, n),
        flags=[["host_callback"] if o == schema.INTEGRITY_EXCLUDED else [] for o in outcome],
        source_hash=[f"synthetic-{sub}-{i % 97}" for i in range(n)],
        selected=first_correct,
        declared_outcome=np.where(lie, "correct", np.where(outcome == schema.INTEGRITY_EXCLUDED, "correct", outcome)),
        declared_speedup=np.where(lie | correct, speed * np.where(lie, 4.0, 1.0), np.nan),
        tokens_in=rng.integers(1000, 9000, n),
        tokens_out=rng.integers(200, 2000, n),
        harness_version=["synthetic"] * n,
        host_cpu=["synthetic"] * n,
        sandbox=["none"] * n,
    )
    table = pa.table(cols)
    return pa.Table.from_arrays(
        [table[f.name].cast(f.type) if f.name in cols else pa.nulls(n, f.type) for f in schema.SAMPLES],
        schema=schema.SAMPLES,
    )


def _meta(sub: str, kind: str, now: _dt.datetime, n_samples: int) -> pa.Table:
    row = {
        "schema_version": schema.SCHEMA_VERSION,
        "submission": sub,
        "name": sub.replace("-", " ").title(),
        "kind": kind,
        "method": "synthetic",
        "model": "synthetic",
        "model_version": "0",
        "agent_framework": "synthetic",
        "authors": ["synthetic"],
        "contact": "nobody@example.invalid",
        "date": now.date().isoformat(),
        "samples_per_workload": n_samples,
        "selection_rule": "best",
        "human_in_the_loop": False,
        "target_hardware": "cpu",
        "links": [],
        "license": "CC0-1.0",
        "provenance": "synthetic",
        "recorded_at": now,
    }
    return pa.Table.from_pylist([row], schema=schema.SUBMISSIONS)


def generate(
    data_dir: Path,
    n_submissions: int = 100,
    n_workloads: int = 50,
    n_samples: int = 144,
    chip: str = "cpu",
    size: str = "small",
    seed: int = 0,
) -> None:
    """Write a synthetic dataset under data_dir: an XLA baseline, a hand-tuned set and `n_submissions` agent
    submissions, each with a measured trajectory of `n_samples` samples per workload (v2: what ingest stores).

    One batch file per submission (not per evaluation) so that generating 100 x 50 x 144 rows stays quick. Every
    tenth agent submission also carries a declared trajectory.csv: its measured outcomes as declared, with the
    rare declaration that disagrees (as in `_samples`).
    """
    rng = np.random.default_rng(seed)
    now = _dt.datetime(2026, 1, 1, tzinfo=_dt.UTC)
    workloads = workload_names(n_workloads)
    track = schema.track_id(chip, size)
    for i in range(n_submissions + 2):
        kind = "baseline" if i == 0 else "hand-tuned" if i == 1 else "agent"
        named = {"baseline": "xla-baseline", "hand-tuned": "hand-tuned-pallas"}  # the listed ids (reserved.py)
        sub = named.get(kind, f"synthetic-{i:03d}")
        batch = store.data_path(data_dir, "results", chip, size, sub, "batch.parquet")
        store.write_atomic(_results(rng, sub, kind, workloads, chip, size, now), batch)
        store.write_atomic(_meta(sub, kind, now, n_samples), store.submission_meta_path(data_dir, sub))
        if kind != "agent":
            continue
        samples = _samples(rng, sub, workloads, n_samples, track, now)
        store.write_atomic(samples, store.samples_path(data_dir, chip, size, sub, "batch"))
        if i % 10 == 3:
            store.write_atomic(_declared(samples), store.declared_path(data_dir, chip, size, sub))


def _declared(measured: pa.Table) -> pa.Table:
    """A trajectory.csv's rows: the declared outcome and speedup of each measured sample, nothing measured."""
    n = measured.num_rows
    keep = {"schema_version", "track", "submission", "workload", "sample_idx", "content_hash", "recorded_at"}
    cols = [measured[f.name] if f.name in keep else pa.nulls(n, f.type) for f in schema.SAMPLES]
    table = pa.Table.from_arrays(cols, schema=schema.SAMPLES)
    table = table.set_column(schema.SAMPLES.get_field_index("outcome"), "outcome", measured["declared_outcome"])
    table = table.set_column(schema.SAMPLES.get_field_index("speedup"), "speedup", measured["declared_speedup"])
    return table.set_column(
        schema.SAMPLES.get_field_index("provenance"), "provenance", pa.array([schema.DECLARED] * n, pa.string())
    )
