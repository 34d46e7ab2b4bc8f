"""bench audit on a few workloads: the measurements detect what they claim to detect.

Small size on CPU; three workloads chosen for what they exercise: 38k (softmax rows of 1/C, where zeros
and a uniform shortcut pass upstream's gate), 26k (x and W provably unused: redrawing them must change
nothing, and the exact (in_bias + y) * y rewrite must pass), 41k (a plain GEMM epilogue: nothing weak).
"""

from __future__ import annotations

import json

import jax.numpy as jnp
import numpy as np
import pytest

from bench.audit.gates import new_gate, old_gate, rel_l2
from bench.audit.measure import audit_workload
from bench.audit.report import summary, to_json, to_markdown, verdict
from bench.harness.protocol.correctness import Tolerance
from bench.registry import load_workload


@pytest.fixture(scope="module")
def audits():
    return {w: audit_workload(w) for w in ("38k", "26k", "41k")}


def test_old_gate_is_relative_to_candidate():
    ref = np.array([1000.0], np.float32)
    assert old_gate(ref, np.array([1010.1], np.float32))  # 10.1 <= 0.01 + 0.01 * 1010.1, though > 0.01 + 0.01 * 1000
    assert not old_gate(ref, np.array([989.9], np.float32))  # 10.1 > 0.01 + 0.01 * 989.9
    assert rel_l2(np.ones(4), np.zeros(4)) == 1.0


def test_zeros_fail_new_gate(audits):
    for a in audits.values():
        assert a.error is None, a.error
        assert a.zeros_pass_new is False
    assert audits["38k"].zeros_pass_old is True  # the known upstream weakness, reproduced
    assert audits["41k"].zeros_pass_old is False


def test_correct_f32_implementation_passes(audits):
    for a in audits.values():
        assert a.f32_impl_passes_new is True
        assert a.f32_impl_rel_l2 < 0.02


def test_unused_inputs_detected_26k(audits):
    sens = {s.name: s for s in audits["26k"].inputs}
    for name in ("x", "bmm_weight", "bmm_bias"):
        assert sens[name].how == "redraw" and sens[name].rel_change == 0.0 and sens[name].passes_new_gate
    assert sens["y"].rel_change > 0.5 and not sens["y"].passes_new_gate
    sc = audits["26k"].shortcut
    assert sc.exact and sc.passes_new_gate and sc.rel_l2 == 0.0
    assert "redrawing x, bmm_weight, bmm_bias goes unnoticed" in verdict(audits["26k"])


def test_uniform_softmax_shortcut_38k(audits):
    sc = audits["38k"].shortcut
    assert sc.passes_old_gate and not sc.passes_new_gate
    assert audits["38k"].other_seed_passes_old and not audits["38k"].other_seed_passes_new
    sens = {s.name: s for s in audits["41k"].inputs}
    assert all(s.rel_change > 0.05 and not s.passes_new_gate for s in sens.values())


def test_gate_rejects_zeros_directly():
    mod = load_workload("50k")
    ref = jnp.full((4, 8192), 1 / 8192, jnp.bfloat16)
    assert old_gate(ref, jnp.zeros_like(ref)) and not new_gate(
        ref, jnp.zeros_like(ref), Tolerance.for_workload(mod, "small")
    )


def test_reports(audits, tmp_path):
    rows = list(audits.values())
    data = json.loads(to_json(rows))
    assert data["summary"]["zeros_pass_new_gate"] == 0 and len(data["workloads"]) == 3
    md = to_markdown(rows, "bench audit 38k 26k 41k")
    assert "| 38k_Matmul_Dropout_Softmax | pass/fail |" in md
    assert "1.22e-4 full" in md  # the size-dependent note for 38k
    assert summary(rows)["shortcut_passes_old_gate"] == 2


def test_baseline_program_checked_and_pinned(audits):
    for a in audits.values():
        assert a.formulation and a.fingerprint_pinned, a.workload
    md = to_markdown(list(audits.values()), "bench audit 38k 26k 41k")
    assert "| baseline vs original |" in md and "code, pinned" in md


def test_translation_choices_measured():
    """26k: the output provably ignores x and the GEMM (change exactly 0); 29k: the dropped Linear bias matters."""
    import re

    import jax

    from bench.audit.translation import translation_note

    notes = {}
    for wid in ("26k", "29k"):
        mod = load_workload(wid)
        fn = jax.jit(mod.workload)
        inputs, alt = tuple(mod.create_inputs(size="small")), tuple(mod.create_inputs(size="small", seed=1))
        notes[wid] = translation_note(wid, mod, fn, inputs, alt, fn(*inputs), Tolerance.for_workload(mod, "small"))
    assert "when x is redrawn: 0;" in notes["26k"] and "when bmm_weight is redrawn: 0;" in notes["26k"]
    assert "at most 0." in notes["26k"]  # (in_bias + y) * y without the GEMM is the baseline's output exactly
    assert float(re.search(r"relative L2 ([0-9.e-]+)", notes["29k"]).group(1)) > 0.01
    assert translation_note("41k", load_workload("41k"), None, (), (), None, Tolerance()) is None


def test_16p_banded_shortcut_fails_its_second_distribution_where_an_f32_implementation_passes():
    """16p's band of 16 is exact on upstream's inputs (decay ~0.018 per step) at every size; its second
    distribution (bench.weak_tasks: slow decay, positive scores) breaks it and keeps honest rounding inside."""
    shortcut = audit_workload("16p").shortcut
    assert shortcut is not None and shortcut.passes_new_gate  # the weakness the second distribution is for
    assert shortcut.stress is not None and not shortcut.stress_passes_new_gate and shortcut.stress_rel_l2 > 0.5
    assert shortcut.f32_impl_passes_stress
