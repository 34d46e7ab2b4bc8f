"""Every workload's compiled XLA baseline (small size, CPU) is pinned to the fingerprint stored in the repository.

Why: speedups are relative to these programs, and the paper's are relative to the original JAXBench's. A change
that keeps the values can still change the program (issue #19: 11p's hoisted iota made the baseline 2.2x slower
than the original's), so a change to any baseline program must be deliberate and reviewed. The fingerprint
(bench/audit/fingerprint.py) is the multiset of HLO opcodes of the optimized module plus the shapes carried by
each while loop; compile only, on abstract inputs (all 50 take ~15 s on 2 busy cores).

After a reviewed change to a baseline program: `python -m bench.audit.fingerprint --write <ids>` and commit the
diff of tests/workloads/baseline_fingerprints.json with the change.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from bench.audit.fingerprint import FINGERPRINT_FILE, diff, fingerprint, hlo_fingerprint, load_stored
from bench.registry import workload_ids

STORED = load_stored()
IDS = list(workload_ids())


def test_every_workload_is_pinned():
    assert sorted(STORED["workloads"]) == sorted(IDS), (
        f"{FINGERPRINT_FILE.name} must hold exactly the {len(IDS)} workloads; run {STORED['regenerate']}"
    )


@pytest.mark.parametrize("workload_id", IDS)
def test_compiled_baseline_matches_stored_fingerprint(workload_id):
    lines = diff(STORED["workloads"][workload_id], fingerprint(workload_id))
    env = STORED["environment"]
    assert not lines, (
        f"{workload_id}: the compiled baseline program changed (stored with jax {env['jax']}, now {jax.__version__}):\n"
        + "\n".join(lines)
        + f"\nIf the change is intended and reviewed against the original's formulation: {STORED['regenerate']}"
    )


def _scan_with_iota(hoisted: bool):
    """The 11p pattern in miniature: a row-index iota built inside the scan body, or once outside it."""

    def f(x, counts):
        outside = jax.lax.broadcasted_iota(jnp.int32, x.shape, 0)

        def body(acc, c):
            rows = outside if hoisted else jax.lax.broadcasted_iota(jnp.int32, x.shape, 0)
            return acc + jnp.where(rows < c, x, 0.0), None

        return jax.lax.scan(body, jnp.zeros_like(x), counts)[0]

    return f


def test_fingerprint_sees_a_hoisted_loop_constant():
    """The fingerprint tells apart two formulations with the same values (so the pinning test can fail)."""
    x, counts = jnp.ones((64, 128), jnp.float32), jnp.arange(4, dtype=jnp.int32)
    inside, hoisted = (
        hlo_fingerprint(jax.jit(_scan_with_iota(h)).lower(x, counts).compile().as_text()) for h in (False, True)
    )
    assert jnp.array_equal(jax.jit(_scan_with_iota(False))(x, counts), jax.jit(_scan_with_iota(True))(x, counts))
    assert inside != hoisted
    assert any("s32[64,128]" in loop for loop in hoisted["loops"])
    assert not any("s32[64,128]" in loop for loop in inside["loops"])
    assert diff(inside, hoisted)


def test_fingerprint_ignores_names_and_layouts():
    text = """HloModule jit_f, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%body.12 (p: (s32[], f32[4])) -> (s32[], f32[4]) {
  %p = (s32[], /*index=1*/f32[4]{0}) parameter(0)
  ROOT %t.3 = (s32[], f32[4]{0}) tuple(%a, %b)
}

ENTRY %main.7 (x.1: f32[4]) -> f32[4] {
  %x.1 = f32[4]{0} parameter(0), metadata={op_name="x"}
  %w.9 = (s32[], f32[4]{0}) while(%init), condition=%cond, body=%body.12
  ROOT %add_fusion.2 = f32[4]{0} fusion(%x.1), kind=kLoop, calls=%fused_computation
}
"""
    renamed = text.replace(".12", ".99").replace("add_fusion.2", "fusion.17").replace("{0}", "{0:T(8)}")
    assert (
        hlo_fingerprint(text)
        == hlo_fingerprint(renamed)
        == {"ops": {"fusion": 1, "parameter": 2, "tuple": 1, "while": 1}, "loops": ["(s32[],f32[4])"]}
    )
