"""Adversarial suite: every attack kernel in kernels/ is caught by the real pipeline, the honest ones pass clean.

"Caught" means the row cannot reach the ranking: a status other than correct, or an excluding flag
(bench.integrity.flags), or, for the no-Pallas rewrite, the `no_pallas` label. Each case also names the
specific signals its defense must produce, so a defense that silently stops working fails its own test.

All evaluations run once per session, a few at a time (each is two worker processes that mostly wait on
jax start-up), on 8p_GEMM at small size with 2 seeds and a handful of timed iterations.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.harness.evaluate import evaluate
from bench.harness.result import EvalResult, Status
from bench.harness.task import EvalTask
from bench.integrity.flags import LABEL_FLAGS, NO_PALLAS, excluding
from bench.paths import DATA_DIR

KERNELS = Path(__file__).parent / "kernels"
WORKLOAD = "8p_GEMM"

# kernel file stem -> (allowed statuses, flags that must all be present)
ATTACKS: dict[str, tuple[set[Status], set[str]]] = {
    "attack_output_cache": ({Status.CORRECT}, {"host_callback", "static:host_callback", "static:mutable_state"}),
    "attack_precompute_import": ({Status.INCORRECT}, {"static:workload_import"}),
    "attack_frame_reference": ({Status.INCORRECT}, {"static:frame_inspection"}),
    "attack_timer_patch": ({Status.CORRECT}, {"runtime:patched", "static:timer_patch"}),
    "attack_harness_patch": ({Status.INCORRECT}, {"static:harness_import", "static:monkeypatch"}),
    "attack_trace_count": ({Status.CORRECT}, {"trace_unstable", "static:mutable_state"}),
    "attack_input_mutation": ({Status.INCORRECT}, {"host_callback", "static:native_memory", "static:introspection"}),
    "attack_host_compute": ({Status.CORRECT}, {"host_callback", "static:host_callback"}),
    "attack_lazy_output": ({Status.COMPILE_ERROR}, set()),
    "attack_jax_config": ({Status.CORRECT}, {"runtime:jax_config_changed", "static:jax_config"}),
    "attack_fake_profiler": ({Status.CORRECT}, {"runtime:patched", "timing_inconsistent", "static:introspection"}),
    "attack_exit_early": ({Status.CRASHED}, {"static:exit"}),
    "attack_no_pallas": ({Status.CORRECT}, {NO_PALLAS}),
    "attack_thread": ({Status.CORRECT}, {"runtime:threads", "static:threads"}),
    "attack_background_process": ({Status.CORRECT}, {"runtime:processes", "static:subprocess"}),
    "attack_file_reference": ({Status.CORRECT}, {"static:file_access"}),
}
HONEST = ("honest_pallas_gemm", "honest_baseline_copy")


def _evaluate(stem: str) -> EvalResult:
    task = EvalTask(workload=WORKLOAD, kernel_path=KERNELS / f"{stem}.py", size="small", seeds=2, warmup=1, iters=6,
                    blocks=2, timeout_s=180)
    return evaluate(task)


@pytest.fixture(scope="module")
def results() -> dict[str, EvalResult]:
    stems = list(HONEST) + list(ATTACKS)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(stems, pool.map(_evaluate, stems)))


def _describe(r: EvalResult) -> str:
    return f"{r.status.value}: {r.reason} flags={r.integrity.flags} log={r.candidate_log[-800:]}"


def test_every_attack_kernel_is_covered() -> None:
    files = {p.stem for p in KERNELS.glob("*.py")}
    assert files == set(ATTACKS) | set(HONEST)
    assert len(ATTACKS) >= 12


@pytest.mark.parametrize("stem", HONEST)
def test_honest_kernels_pass_untouched(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    assert r.status == Status.CORRECT, _describe(r)
    assert excluding(r.integrity.flags) == [], _describe(r)
    assert set(r.integrity.flags) <= LABEL_FLAGS


def test_honest_pallas_kernel_is_recognised(results: dict[str, EvalResult]) -> None:
    r = results["honest_pallas_gemm"]
    assert r.integrity.has_pallas and r.integrity.pallas_calls >= 1 and NO_PALLAS not in r.integrity.flags


@pytest.mark.parametrize("stem", sorted(ATTACKS))
def test_attack_is_caught(results: dict[str, EvalResult], stem: str) -> None:
    r = results[stem]
    statuses, must_flag = ATTACKS[stem]
    caught = r.status != Status.CORRECT or excluding(r.integrity.flags) or NO_PALLAS in r.integrity.flags
    assert caught, _describe(r)
    assert r.status in statuses, _describe(r)
    assert must_flag <= set(r.integrity.flags), f"missing {sorted(must_flag - set(r.integrity.flags))}: {_describe(r)}"


def test_exit_early_cannot_forge_a_result(results: dict[str, EvalResult]) -> None:
    """What the candidate prints is its log, never a result: the printed JSON 'correct' changes nothing."""
    r = results["attack_exit_early"]
    assert '"status": "correct"' in r.candidate_log and r.status == Status.CRASHED and r.kernel is None


def test_planted_file_never_reaches_the_project(results: dict[str, EvalResult]) -> None:
    if results["attack_file_reference"].env.sandbox != "bwrap":
        pytest.skip("no bubblewrap here: the plain worker can write the project")
    assert not (DATA_DIR / "planted_by_kernel.txt").exists()
