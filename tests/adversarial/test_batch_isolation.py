"""Issue #23, class 3: one candidate must never take down its batch. Hostile candidates (a module nested past
the inspection's bound, a compile bomb, a call counter) among honest ones, through the CLI as a user runs it:
the honest ones get their verdicts and speedups, the hostile ones their own statuses. And when the harness's
own code raises on one candidate (injected here), that candidate gets `error`; the others are untouched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.protocol.result import EvalResult, Status
from bench.paths import ROOT

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "kernels"
BATCH = [
    "honest_baseline_copy",
    "attack_deep_nesting",
    "honest_pallas_gemm",
    "attack_compile_bomb",
    "attack_rng_call_counter",
    "honest_baseline_copy",
]


def test_hostile_candidates_among_honest_ones_through_bench_evaluate() -> None:
    argv = [
        sys.executable,
        "-m",
        "bench.cli",
        "evaluate",
        "8p_GEMM",
        *[str(KERNELS / f"{k}.py") for k in BATCH],
        "--json",
        "--iters",
        "4",
        "--warmup",
        "1",
        "--seeds",
        "1",
    ]
    done = subprocess.run(
        argv, cwd=ROOT, capture_output=True, text=True, timeout=1500, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    rows = [
        EvalResult.model_validate({k: v for k, v in json.loads(line).items() if k != "kernel_file"})
        for line in done.stdout.splitlines()
        if line.startswith("{")
    ]
    assert len(rows) == len(BATCH), done.stdout[-2000:] + done.stderr[-2000:]
    by = dict(zip(range(len(BATCH)), rows, strict=True))
    for i, stem in enumerate(BATCH):
        r = by[i]
        if stem.startswith("honest"):
            assert r.status == Status.CORRECT and r.speedup_vs_baseline and r.speedup_vs_baseline > 0, r.reason
        else:
            assert r.status == Status.COMPILE_ERROR and r.reason.startswith("refused:"), r.reason
    assert done.returncode == 1  # not every kernel is correct


def test_a_harness_failure_on_one_candidate_is_that_candidate_s_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.harness.parent import evaluate as evaluate_module
    from bench.harness.parent import outcome
    from bench.harness.protocol.task import EvalTask

    real = outcome.decide

    def flaky(ctx, built, *args, **kwargs):
        if built.kernel.name == "honest_baseline_copy.py":
            raise ZeroDivisionError("injected: the decision's own code failed on this candidate")
        return real(ctx, built, *args, **kwargs)

    monkeypatch.setattr(outcome, "decide", flaky)
    task = EvalTask(
        workload="8p_GEMM",
        kernel_path=KERNELS / "honest_pallas_gemm.py",
        size="small",
        seeds=1,
        warmup=1,
        iters=4,
        blocks=2,
        timeout_s=180,
    )
    with evaluate_module.WarmRunner(task) as runner:
        first, second = runner.evaluate([KERNELS / "honest_baseline_copy.py", KERNELS / "honest_pallas_gemm.py"])
    assert first.status == Status.ERROR and "injected" in first.reason and first.traceback
    assert second.status == Status.CORRECT and second.speedup_vs_baseline, second.reason
