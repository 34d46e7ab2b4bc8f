"""Issue #23, class 5: weak tasks. Where docs/audit.md lists a shortcut that passes the gate on upstream's
inputs, the harness adds one correctness-only trial on the task's second input distribution
(bench.weak_tasks); the shortcut fails there, an honest kernel passes, and upstream's distribution stays
for the main trials and timing."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.audit.shortcuts import MORE_SHORTCUTS, SHORTCUTS
from bench.harness.parent.evaluate import WarmRunner
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask
from bench.paths import ROOT
from bench.registry import spec, workload_ids
from bench.weak_tasks import STRESS

pytestmark = pytest.mark.slow
WEAK = Path(__file__).parent / "weak_kernels"


#: The secret seed of the trials below (seeds derived from it, as in an official run): on a fresh random draw 24k's
#: second-order log-sum-exp failed upstream's own inputs by one element of 256 (a clean run, 2026-12-05), so the
#: second distribution was not what caught it. On these draws every shortcut passes the main trial.
SEED = 20261205


@pytest.mark.parametrize(
    "workload, shortcut, honest, caught_by",
    [
        (
            "36k_Matmul_Sigmoid_Sum",
            "weak_36k_gemv",
            ROOT / "submissions/template-search/kernels/36k_Matmul_Sigmoid_Sum.py",
            "second input distribution",
        ),
        # 4p's tolerance is calibrated by the trivial-solution certificate (issue 40): the shortcut already fails on
        # upstream's inputs, by its relative L2 error
        ("4p_Sparse_Attention", "weak_4p_running_mean", None, "relative L2 error"),
        ("16p_Mamba2_SSD", "weak_16p_banded", WEAK / "honest_16p_f32.py", "second input distribution"),
        # a red team's (2026-12-04), each with an honest kernel of a submission beside it
        (
            "5p_Flex_Attention",
            "weak_5p_linear",
            ROOT / "submissions/xla-baseline/kernels/5p_Flex_Attention.py",
            "second input distribution",
        ),
        (
            "13p_Cross_Entropy",
            "weak_13p_cumulant",
            ROOT / "submissions/xla-baseline/kernels/13p_Cross_Entropy.py",
            "second input distribution",
        ),
        (
            "3p_MLA_Attention",
            "weak_3p_prefix_mean",
            ROOT / "submissions/hand-tuned-pallas/kernels/3p_MLA_Attention.py",
            "relative L2 error",
        ),
        (
            "19k_Matmul_Subtract_Multiply_ReLU",
            "weak_19k_columns",
            ROOT / "submissions/jaxbench-team-pallas/kernels/19k_Matmul_Subtract_Multiply_ReLU.py",
            "second input distribution",
        ),
        (
            "24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish",
            "weak_24k_lse",
            ROOT / "submissions/jaxbench-team-pallas/kernels/24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish.py",
            "second input distribution",
        ),
    ],
)
def test_shortcuts_fail_the_second_distribution_and_honest_kernels_pass_it(
    workload: str, shortcut: str, honest: Path | None, caught_by: str
) -> None:
    kernels = [WEAK / f"{shortcut}.py"] + ([honest] if honest else [])
    task = EvalTask(
        workload=workload,
        kernel_path=kernels[0],
        size="small",
        seeds=1,
        warmup=1,
        iters=2,
        blocks=1,
        timeout_s=240,
        secret_seed=SEED,  # fixed draws: a shortcut that upstream's inputs pass on most draws fails some (24k did)
    )
    with WarmRunner(task) as runner:
        results = runner.evaluate(kernels)
    cheat = results[0]
    assert cheat.status == Status.INCORRECT and caught_by in cheat.reason, cheat.reason
    if honest:
        r = results[1]
        assert r.status == Status.CORRECT, r.reason
        assert r.integrity.details["second_distribution_trial"] is True


def test_every_approximate_shortcut_that_passes_has_a_second_distribution() -> None:
    """Exact rewrites are legitimate (no gate can refuse them); every other listed shortcut has one, but those
    specialised to inputs upstream never varies, whose workloads are labelled degenerate instead."""
    listed = [*SHORTCUTS.items(), *((k, sc) for k, more in MORE_SHORTCUTS.items() for sc in more)]
    approximate = {k for k, sc in listed if not sc.exact and not sc.specialised}
    assert approximate - set(STRESS) == set()
    specialised = {k for k, sc in listed if sc.specialised}
    labelled = {w.split("_")[0] for w in workload_ids() if spec(w).degenerate}
    assert specialised and specialised <= labelled


@pytest.mark.parametrize("workload", ["38k_Matmul_Dropout_Softmax", "43k_Gemm_BatchNorm_Scaling_Softmax"])
def test_the_softmax_rows_second_distribution_leaves_honest_bf16_kernels_room(workload: str) -> None:
    """An honest bf16 kernel must pass the second distribution with room to spare, not by luck: at x 8 jaxbench-team's
    43k used up to 0.995 of the elementwise tolerance and an ingest failed it by one element (bench/weak_tasks.py).
    On 4 fixed draws the honest kernel stays under half the tolerance; the uniform-rows shortcut fails every one."""
    import importlib.util

    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.experimental.pallas import tpu as pltpu

    from bench.harness.protocol.correctness import Tolerance, compare
    from bench.registry import load_workload, spec

    s, stress, tol = spec(workload), STRESS[workload.split("_")[0]], Tolerance.for_workload(spec(workload), "small")
    path = ROOT / f"submissions/jaxbench-team-pallas/kernels/{workload}.py"
    module = importlib.util.module_from_spec(importlib.util.spec_from_file_location("honest", path))  # type: ignore[arg-type]
    module.__loader__.exec_module(module)  # type: ignore[union-attr]
    shortcut = SHORTCUTS[workload.split("_")[0]]
    for seed in range(4):
        x = stress.transform(tuple(s.create_inputs(dtype=jnp.bfloat16, size="small", seed=2000 + seed)))
        ref = np.asarray(jax.jit(s.workload)(*x).astype(jnp.float32))
        with pltpu.force_tpu_interpret_mode(True):  # type: ignore[arg-type]  # HLO interpret mode
            out = np.asarray(jax.jit(module.workload)(*x).astype(jnp.float32))
        slack = np.abs(ref - out) / (tol.atol + tol.rtol * np.abs(ref))
        assert compare(ref, out, tol).correct and slack.max() < 0.5, f"seed {seed}: {slack.max():.3f} of the tolerance"
        cheap = np.asarray(jnp.asarray(shortcut.fn(load_workload(workload), *x)).astype(jnp.float32))
        assert not compare(ref, cheap, tol).correct
