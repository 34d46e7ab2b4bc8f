"""What one task is, at one size: the facts an agent needs and the paper's prompt lacks.

Input shapes and dtypes, output shape and dtype and the full tolerance (atol, rtol and the relative-L2 limit)
are derived from the workload module itself (abstract evaluation, nothing is allocated), so they can never
disagree with what the harness draws and checks.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bench.harness.protocol.correctness import Tolerance
from bench.registry import resolve_id, workload_file
from bench.registry import spec as workload_spec

#: The harness draws every workload's inputs in this dtype (bench.harness.runner.server), so the prompt says so.
INPUT_DTYPE = "bfloat16"


@dataclass(frozen=True)
class ArraySpec:
    name: str
    shape: tuple[int, ...] | None  # None: a static (non-array) argument
    dtype: str
    value: Any = None  # the value of a static argument

    def describe(self) -> str:
        if self.shape is None:
            return f"{self.name}: static {self.dtype} = {self.value!r}"
        return f"{self.name}: {self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class TaskSpec:
    workload: str
    size: str
    suite: str
    family: str
    origin: str  # META["source"]: the model or KernelBench problem it comes from
    config: dict[str, Any]
    source: str  # the workload module's full text (the JAX reference)
    inputs: tuple[ArraySpec, ...]
    outputs: tuple[ArraySpec, ...]
    tolerance: dict[str, float] = field(default_factory=dict)
    static_argnums: tuple[int, ...] = ()


def _dtype(x: Any) -> str:
    return str(getattr(x, "dtype", type(x).__name__))


@cache
def task_spec(workload: str, size: str = "small") -> TaskSpec:
    """The spec of `workload` at `size`, from abstract evaluation of create_inputs and workload."""
    import jax

    wid = resolve_id(workload)
    meta = workload_spec(wid)
    static_argnums = meta.static_argnums
    sig = meta.signature(size)
    full = sig.full_args(sig.arrays)
    out = jax.eval_shape(lambda *a: meta.workload(*sig.full_args(a)), *sig.arrays)
    names = list(inspect.signature(meta.workload).parameters)
    names += [f"arg{i}" for i in range(len(names), len(full))]
    inputs = tuple(
        ArraySpec(names[i], None, type(x).__name__, x)
        if i in static_argnums
        else ArraySpec(names[i], tuple(x.shape), _dtype(x))
        for i, x in enumerate(full)
    )
    leaves = jax.tree_util.tree_leaves(out)
    outputs = tuple(
        ArraySpec("out" if len(leaves) == 1 else f"out{i}", tuple(o.shape), _dtype(o)) for i, o in enumerate(leaves)
    )
    tol = Tolerance.for_workload(meta, size)
    return TaskSpec(
        workload=wid,
        size=size,
        suite=meta.suite,
        family=meta.family,
        origin=meta.source,
        config=meta.small_config if size == "small" else meta.config,
        source=workload_file(wid).read_text(),
        inputs=inputs,
        outputs=outputs,
        tolerance={"atol": tol.atol, "rtol": tol.rtol, "rel_l2": tol.rel_l2},
        static_argnums=static_argnums,
    )
