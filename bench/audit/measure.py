"""Task-quality measurements for one workload: measured, not asserted.

For a workload at a size we measure, with trusted code only (the baseline, zeros, perturbed inputs,
shortcut kernels):
- whether an all-zeros output passes the old (upstream) and the new gate;
- the output's scale (mean |y|, std) and its spread across 3 seeds, and whether another seed's
  output passes as this seed's (a nearly input-independent task);
- the sensitivity to each input: the relative change of the output when that input alone is redrawn
  (or, for constant inputs such as norm weights, perturbed by 10 % noise), and whether the gate
  notices;
- whether a different but correct implementation (the same workload computed from float32 inputs,
  cast back to the output dtype) passes the new gate: hardening must not reject correct kernels;
- for the suspect workloads (docs/audit.md), whether their shortcut kernel passes the old and the new gate;
- whether the baseline program was checked against the original's formulation (bench/audit/formulation.py) and
  still compiles to its pinned fingerprint; for 26k and 29k, what the original's translation choices that we keep
  do to the output (bench/audit/translation.py).
"""

from __future__ import annotations

import inspect
import time
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import BaseModel, Field

from bench.audit.fingerprint import diff as fingerprint_diff
from bench.audit.fingerprint import fingerprint, load_stored
from bench.audit.formulation import formulation_check
from bench.audit.gates import new_gate, old_gate, rel_l2
from bench.audit.shortcuts import shortcut_for
from bench.audit.size_notes import size_note
from bench.audit.translation import translation_note
from bench.harness.protocol.correctness import Tolerance
from bench.registry import load_workload, resolve_id, spec_of
from bench.weak_tasks import stress_for

AUDIT_SEEDS = (1, 2, 3)
NOISE_FRACTION = 0.1  # relative noise for inputs that a new seed does not change (ones/zeros inits)


class InputSensitivity(BaseModel):
    name: str
    how: str  # "redraw" | "noise" | "fixed" (not perturbable: Python values, fixed integer tables)
    rel_change: float | None = None  # ||y' - y|| / ||y||
    passes_new_gate: bool | None = None  # the perturbed output still passes as the reference: input barely matters


class ShortcutResult(BaseModel):
    description: str
    exact: bool
    rel_l2: float
    passes_old_gate: bool
    passes_new_gate: bool
    # on the workload's second input distribution (bench.weak_tasks), the harness's extra correctness trial:
    # None where the workload has none (exact rewrites, see bench/weak_tasks.py)
    stress: str | None = None
    stress_rel_l2: float | None = None
    stress_passes_new_gate: bool | None = None
    f32_impl_passes_stress: bool | None = None  # an honest float32 implementation still passes there


class WorkloadAudit(BaseModel):
    workload: str
    size: str
    output_shape: list[int] = Field(default_factory=list)
    output_dtype: str = ""
    tolerance: dict[str, float] = Field(default_factory=dict)
    mean_abs: float | None = None
    std: float | None = None
    zeros_pass_old: bool | None = None
    zeros_pass_new: bool | None = None
    seed_rel_std: float | None = None  # mean over elements of std across seeds, / mean |y|
    other_seed_passes_old: bool | None = None  # seed 2's output accepted as seed 1's by the old gate
    other_seed_passes_new: bool | None = None
    input_independent: bool | None = None  # another seed's output passes either gate: a fixed output would do
    inputs: list[InputSensitivity] = Field(default_factory=list)
    f32_impl_rel_l2: float | None = None
    f32_impl_passes_new: bool | None = None
    f32_impl_passes_old: bool | None = None
    shortcut: ShortcutResult | None = None
    size_note: str | None = None
    formulation: str | None = None  # how the baseline program was checked against the original's (None: never)
    formulation_note: str = ""  # what differed and was changed, or the deliberate difference
    # the compiled baseline still matches tests/workloads/baseline_fingerprints.json
    fingerprint_pinned: bool | None = None
    translation_note: str | None = None  # 26k, 29k: the original's translation choice we keep, measured
    seconds: float = 0.0
    error: str | None = None


def _jit(mod: ModuleType):
    return jax.jit(mod.workload, static_argnums=spec_of(mod).static_argnums)


def _is_array(a: Any) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype")


def _same(a: Any, b: Any) -> bool:
    if not (_is_array(a) and _is_array(b)):
        return a == b
    return a.shape == b.shape and bool(np.array_equal(np.asarray(a), np.asarray(b)))


def _perturb(base: Any, other_seed: Any, key: jax.Array) -> tuple[str, Any]:
    """Redraw the input from another seed when that changes it, else add noise to float arrays."""
    if _is_array(base) and not _same(base, other_seed):
        return "redraw", other_seed
    if _is_array(base) and jnp.issubdtype(base.dtype, jnp.floating):
        scale = float(jnp.sqrt(jnp.mean(jnp.square(base.astype(jnp.float32))))) or 1.0
        noise = jax.random.normal(key, base.shape, jnp.float32) * NOISE_FRACTION * scale
        return "noise", (base.astype(jnp.float32) + noise).astype(base.dtype)
    return "fixed", base


def _to_f32(a: Any) -> Any:
    if _is_array(a) and jnp.issubdtype(a.dtype, jnp.floating):
        return a.astype(jnp.float32)
    return a


def _cast_like(out: Any, ref: Any) -> Any:
    if isinstance(ref, (tuple, list)):
        return type(ref)(_cast_like(o, r) for o, r in zip(out, ref, strict=False))
    return jnp.asarray(out).astype(ref.dtype)


def _seed_spread(outs: list[np.ndarray]) -> float:
    stack = np.stack([o.astype(np.float64) for o in outs])
    denom = float(np.mean(np.abs(stack)))
    return float(np.mean(np.std(stack, axis=0)) / denom) if denom else 0.0


def _sensitivities(mod, fn, inputs, alt_inputs, ref, tol: Tolerance) -> list[InputSensitivity]:
    names = list(inspect.signature(mod.workload).parameters)
    key = jax.random.key(1234)
    rows = []
    for i, (base, other) in enumerate(zip(inputs, alt_inputs, strict=False)):
        how, new = _perturb(base, other, jax.random.fold_in(key, i))
        if how == "fixed":
            rows.append(InputSensitivity(name=names[i], how=how))
            continue
        out = fn(*inputs[:i], new, *inputs[i + 1 :])
        rows.append(
            InputSensitivity(
                name=names[i], how=how, rel_change=rel_l2(ref, out), passes_new_gate=new_gate(ref, out, tol)
            )
        )
    return rows


def _shortcut(mod, workload_id, inputs, ref, size: str, tol: Tolerance) -> ShortcutResult | None:
    sc = shortcut_for(workload_id)
    if sc is None:
        return None
    run = jax.jit(lambda *a: sc.fn(mod, *a), static_argnums=spec_of(mod).static_argnums)
    out = _cast_like(run(*inputs), ref)
    result = ShortcutResult(
        description=sc.description,
        exact=sc.exact,
        rel_l2=rel_l2(ref, out),
        passes_old_gate=old_gate(ref, out),
        passes_new_gate=new_gate(ref, out, tol),
    )
    stress = stress_for(workload_id)
    if stress is None:
        return result
    stressed = stress.transform(tuple(mod.create_inputs(size=size, seed=AUDIT_SEEDS[0])))
    s_ref = jax.block_until_ready(_jit(mod)(*stressed))
    s_out = _cast_like(run(*stressed), s_ref)
    s_f32 = _cast_like(_jit(mod)(*[_to_f32(a) for a in stressed]), s_ref)
    return result.model_copy(
        update={
            "stress": stress.description,
            "stress_rel_l2": rel_l2(s_ref, s_out),
            "stress_passes_new_gate": new_gate(s_ref, s_out, tol),
            "f32_impl_passes_stress": new_gate(s_ref, s_f32, tol),
        }
    )


def audit_workload(workload_id: str, size: str = "small") -> WorkloadAudit:
    """All measurements for one workload; an exception becomes `error` so one bad module cannot stop the audit."""
    wid = resolve_id(workload_id)
    t0 = time.perf_counter()
    result = WorkloadAudit(workload=wid, size=size, size_note=size_note(wid))
    checked = formulation_check(wid)
    if checked:
        result.formulation, result.formulation_note = checked
    try:
        _measure(wid, size, result)
    except Exception as exc:  # noqa: BLE001 - reported per workload, the audit goes on
        result.error = f"{type(exc).__name__}: {exc}"[:300]
    result.seconds = round(time.perf_counter() - t0, 2)
    return result


def _measure(wid: str, size: str, r: WorkloadAudit) -> None:
    mod = load_workload(wid)
    tol = Tolerance.for_workload(mod, size)
    r.tolerance = {"atol": tol.atol, "rtol": tol.rtol, "rel_l2": tol.rel_l2}
    fn = _jit(mod)
    inputs = tuple(mod.create_inputs(size=size))
    ref = jax.block_until_ready(fn(*inputs))
    ref_np = np.asarray(ref, np.float64)
    r.output_shape, r.output_dtype = list(np.shape(ref)), str(ref.dtype)
    r.mean_abs, r.std = float(np.mean(np.abs(ref_np))), float(np.std(ref_np))

    zeros = jnp.zeros_like(ref)
    r.zeros_pass_old, r.zeros_pass_new = old_gate(ref, zeros), new_gate(ref, zeros, tol)

    seeded = [tuple(mod.create_inputs(size=size, seed=s)) for s in AUDIT_SEEDS]
    outs = [fn(*inp) for inp in seeded]
    r.seed_rel_std = _seed_spread([np.asarray(o, np.float64) for o in outs])
    r.other_seed_passes_old = old_gate(outs[0], outs[1])
    r.other_seed_passes_new = new_gate(outs[0], outs[1], tol)
    r.input_independent = r.other_seed_passes_old or r.other_seed_passes_new

    r.inputs = _sensitivities(mod, fn, inputs, seeded[0], ref, tol)

    f32_out = _cast_like(_jit(mod)(*[_to_f32(a) for a in inputs]), ref)
    r.f32_impl_rel_l2 = rel_l2(ref, f32_out)
    r.f32_impl_passes_new = new_gate(ref, f32_out, tol)
    r.f32_impl_passes_old = old_gate(ref, f32_out)
    r.shortcut = _shortcut(mod, wid, inputs, ref, size, tol)
    r.translation_note = translation_note(wid, mod, fn, inputs, seeded[0], ref, tol)
    stored = load_stored()["workloads"].get(wid)
    r.fingerprint_pinned = stored is not None and not fingerprint_diff(stored, fingerprint(wid))
