"""Translation choices of the original JAXBench that we keep for comparability, measured (issue #17).

An independent PyTorch oracle of KernelBench level 2 agrees with our translations on 31 of 33; the two others are
the original JAXBench's choices, kept so that our numbers compare with the paper's:
- 26k: "InstanceNorm2d" runs over a 1x1 map, so each value is normalized against itself (mean = value, var = 0):
  the output is (in_bias + y) * y whatever x and the GEMM weight are. A kernel may skip the GEMM and be correct.
- 29k: KernelBench's nn.Linear has a bias; the translation drops it (only the extra `bias` is added after swish).
Here we measure what each choice does to the output, at the audited size, with the baseline itself.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from bench.audit.gates import new_gate, old_gate, rel_l2
from bench.harness.protocol.correctness import Tolerance


def _max_abs(a: Any, b: Any) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def _26k(mod: ModuleType, fn: Callable, inputs: tuple, alt: tuple, ref: Any, tol: Tolerance) -> str:  # noqa: ARG001
    x, y, w, b, in_w, in_b = inputs
    dx = _max_abs(ref, fn(alt[0], y, w, b, in_w, in_b))
    dw = _max_abs(ref, fn(x, y, alt[2], b, in_w, in_b))
    dxwb = _max_abs(ref, fn(alt[0], y, alt[2], alt[3], in_w, in_b))
    direct = _max_abs(ref, jax.jit(lambda b_, y_: (b_ + y_) * y_)(in_b, y))
    return (
        f"InstanceNorm over a 1x1 map: the output does not depend on x or the GEMM. Max |change| of the output "
        f"when x is redrawn: {dx:.3g}; when bmm_weight is redrawn: {dw:.3g}; x, bmm_weight and bmm_bias all "
        f"redrawn: {dxwb:.3g}; (in_bias + y) * y computed without the GEMM differs from the baseline by at most "
        f"{direct:.3g}. The original JAXBench's translation, kept for comparability "
        f"with the paper: a kernel may legitimately skip the GEMM."
    )


def _29k(mod: ModuleType, fn: Callable, inputs: tuple, alt: tuple, ref: Any, tol: Tolerance) -> str:
    x, w, bias, gn_w, gn_b = inputs
    # The Linear bias KernelBench's model has, drawn like the translation's other biases (N(0, 1) * 0.02):
    # x @ W + b_lin computed by the baseline itself as [x, 1] @ [W; b_lin] (exact: 1 * b_lin).
    b_lin = (jax.random.normal(jax.random.key(29), (w.shape[1],), jnp.float32) * 0.02).astype(w.dtype)
    x1 = jnp.concatenate([x, jnp.ones((x.shape[0], 1), x.dtype)], axis=1)
    w1 = jnp.concatenate([w, b_lin[None, :]], axis=0)
    with_bias = jax.jit(mod.workload)(x1, w1, bias, gn_w, gn_b)
    return (
        f"The Linear layer's bias is dropped, as in the original JAXBench's translation (kept for "
        f"comparability). With a Linear bias drawn N(0, 1) * 0.02 the output changes by relative L2 "
        f"{rel_l2(ref, with_bias):.3g}, max |change| {_max_abs(ref, with_bias):.3g} (output mean |y| "
        f"{float(np.mean(np.abs(np.asarray(ref, np.float64)))):.3g}); our gate "
        f"{'accepts' if new_gate(ref, with_bias, tol) else 'rejects'} that output, upstream's "
        f"{'accepts' if old_gate(ref, with_bias) else 'rejects'} it."
    )


MEASURES: dict[str, Callable[..., str]] = {"26k": _26k, "29k": _29k}


def translation_note(
    workload_id: str, mod: ModuleType, fn: Callable, inputs: tuple, alt: tuple, ref: Any, tol: Tolerance
) -> str | None:
    """The measured note for a workload whose translation is the original's deliberate choice, else None."""
    measure = MEASURES.get(workload_id.split("_", 1)[0])
    return measure(mod, fn, inputs, alt, ref, tol) if measure else None
