"""Issue 39 ("Done when") and issue 40 section 3: one build floods the host with busy processes, each in a session
of its own, and never replies, between honest kernels of the same batch. Its cgroups bound its CPU to one weight and
one core and its processes to pids.max (or the result names the weaker bound the host allowed), and every process in
them is killed at its deadline. What is asserted are statuses, reasons, the recorded bounds and the processes left
alive, never a wall-clock figure: the verdict cannot depend on this machine's speed or load."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalTask

pytestmark = pytest.mark.slow
KERNELS = Path(__file__).parent / "kernels"
BATCH = ["honest_baseline_copy", "attack_session_flood", "honest_pallas_gemm", "honest_baseline_copy"]
MARKER = "jaxbench-session-flood"


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def batch() -> tuple[list[EvalResult], list[int]]:
    task = EvalTask(
        workload="8p_GEMM",
        kernel_path=KERNELS / f"{BATCH[0]}.py",
        size="small",
        seeds=1,
        warmup=1,
        iters=6,
        blocks=2,
        timeout_s=40,
    )
    try:
        with WarmRunner(task) as runner:
            rows = list(runner.evaluate([KERNELS / f"{k}.py" for k in BATCH]))
        survivors = _processes_with(MARKER)  # once the batch has returned: nothing of the flood may be left
    finally:
        for pid in _processes_with(MARKER):
            os.kill(pid, 9)
    return rows, survivors


def test_the_honest_verdicts_and_intervals_are_unchanged_by_the_flood(batch) -> None:
    rows, _ = batch
    for stem, r in zip(BATCH, rows, strict=True):
        if not stem.startswith("honest"):
            continue
        assert r.status == Status.CORRECT, f"{stem}: {r.status.value}: {r.reason}"
        lo, hi = r.speedup_ci
        assert 0 < lo <= r.speedup_vs_baseline <= hi and math.isfinite(hi), (stem, r.speedup_ci)


def test_the_flooding_build_says_why_it_ended(batch) -> None:
    rows, _ = batch
    r = rows[BATCH.index("attack_session_flood")]
    bounds = r.integrity.details["build"]["bounds"]
    assert r.status == Status.TIMEOUT and "time limit of 40 s" in r.reason, (r.reason, bounds)
    assert "FLOOD begins" in r.candidate_log, r.candidate_log[-500:]  # its code ran (its sessions: the log says)
    if any(b.startswith("pids.max") for b in bounds["applied"]):
        assert bounds["forks_refused"] == 0 or "process bound" in r.reason
    else:  # the host refused the cgroup: the result says so, and which weaker bound applied
        assert any("pids cgroup refused" in why for why in bounds["refused"])
    if not any(b.startswith("cpu.") for b in bounds["applied"]):
        assert any("cpu cgroup refused" in why for why in bounds["refused"])
        assert any(b.startswith("nice") for b in bounds["applied"])


def test_none_of_the_flood_survives_the_batch(batch) -> None:
    rows, survivors = batch
    assert survivors == [], f"{len(survivors)} processes of the flooding build outlived the batch"
