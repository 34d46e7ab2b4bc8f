"""Each hand-tuned reference against its workload's XLA baseline at small size, in TPU interpret mode on CPU."""

from __future__ import annotations

from pathlib import Path

import jax
import pytest

import pallas_refs
from bench.harness.protocol.correctness import Tolerance, compare
from bench.refs.evaluators import inprocess_evaluator
from bench.refs.interpret import interpret_context, reset_after_error
from bench.registry import load_workload
from pallas_refs import ragged_paged_attention as rpa_ref

RUNNABLE = [w for w in pallas_refs.MODULES if pallas_refs.load(w).interpret_ok]


def test_registry_covers_the_eight_priority_kernels():
    assert sorted(pallas_refs.MODULES, key=lambda w: int(w.split("p_")[0])) == [
        "1p_Flash_Attention",
        "2p_GQA_Attention",
        "3p_MLA_Attention",
        "4p_Sparse_Attention",
        "6p_Paged_Attention",
        "7p_Ragged_Paged_Attention",
        "8p_GEMM",
        "11p_Megablox_GMM",
    ]
    assert RUNNABLE == [w for w in pallas_refs.MODULES if w != "7p_Ragged_Paged_Attention"]


@pytest.mark.parametrize("workload", RUNNABLE)
def test_reference_matches_workload_in_interpret_mode(workload):
    ref = pallas_refs.load(workload)
    trial = inprocess_evaluator(iters=0, seed=1)(ref, ref.params("cpu"), "small")
    assert trial.correct, trial.reason


def test_7p_adapter_matches_workload_with_the_library_jnp_reference():
    """What is checked instead of the 7p kernel: our adapter around the library's pure-JAX RPA reference."""
    mod = load_workload("7p_Ragged_Paged_Attention")
    inputs = mod.create_inputs(size="small", seed=2)
    expected = jax.jit(mod.workload)(*inputs)
    # eager: the library reference loops over num_seqs in Python, so it cannot be jitted
    got = rpa_ref.adapter(rpa_ref.rpa.ref_ragged_paged_attention, None)(*inputs)
    verdict = compare(expected, got, Tolerance.for_workload(mod, "small"))
    assert verdict.correct, verdict.reason


def test_7p_kernel_still_fails_in_interpret_mode_as_documented():
    """If jax's interpreter learns ref.reshape, this fails: then mark 7p runnable and test it like the others."""
    mod = load_workload("7p_Ragged_Paged_Attention")
    inputs = mod.create_inputs(size="small", seed=0)
    ref = pallas_refs.load("7p")
    with pytest.raises(Exception, match="ReshapeTransform"):
        try:
            with interpret_context("cpu"):
                jax.block_until_ready(jax.jit(ref.build(ref.params("cpu")))(*inputs))
        finally:
            reset_after_error()


def test_8p_reference_is_correct_through_the_harness(tmp_path: Path):
    from bench.harness.parent.evaluate import evaluate
    from bench.harness.protocol.result import Status
    from bench.harness.protocol.task import EvalTask
    from bench.paths import PALLAS_REFS_DIR

    result = evaluate(
        EvalTask(
            workload="8p_GEMM",
            kernel_path=PALLAS_REFS_DIR / "8p_GEMM.py",
            size="small",
            seeds=1,
            warmup=0,
            iters=1,
            blocks=1,
        )
    )
    assert result.status == Status.CORRECT, (result.reason, result.error)
    assert result.integrity.pallas_calls >= 1
