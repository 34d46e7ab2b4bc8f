"""What a workload page states about the program itself: its inputs, its output, its FLOPs and its tolerance.

Why abstract shapes: the pages must state the exact contract a kernel is checked against (argument order,
shapes and dtypes at both sizes, output, tolerance) without allocating the production-size inputs, so the
inputs are traced with jax.eval_shape, the output with jax.eval_shape of the XLA baseline on them. FLOPs
come from the workload's spec (bench.registry), the one definition `bench list` and the harness use.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from bench.registry import WorkloadSpec

SIZES = ("full", "small")


@dataclass(frozen=True)
class Arg:
    """One input or output: its name and its type at each size ("bf16[256, 512]", or "static: 4")."""

    position: int
    name: str
    by_size: dict[str, str]


@dataclass(frozen=True)
class ProgramFacts:
    inputs: list[Arg] = field(default_factory=list)
    outputs: list[Arg] = field(default_factory=list)
    flops: dict[str, float | None] = field(default_factory=dict)  # size -> FLOPs
    flops_source: str = ""  # "get_flops" (the module's own count) or "cost_analysis" (XLA's, of the baseline)
    # size -> {atol, rtol, rel_l2} (defaults + the module's TOLERANCE, and SMALL_TOLERANCE at the small size)
    tolerance: dict[str, dict[str, float]] = field(default_factory=dict)
    error: str = ""  # why some facts are missing (a module that does not trace abstractly)


def _type(x: Any) -> str:
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        return f"static: {x!r}"[:60]
    short = {
        "bfloat16": "bf16",
        "float32": "f32",
        "float16": "f16",
        "int32": "i32",
        "int64": "i64",
        "bool": "bool",
        "float64": "f64",
        "int8": "i8",
        "uint8": "u8",
    }.get(str(dtype), str(dtype))
    return f"{short}[{', '.join(str(d) for d in shape)}]"


def _abstract(spec: WorkloadSpec, size: str) -> tuple[list[Any], list[Any]]:
    """(inputs, output leaves) of the workload at `size`, as ShapeDtypeStructs (static inputs as values)."""
    import jax

    sig = spec.signature(size)
    out = jax.eval_shape(lambda *a: spec.workload(*sig.full_args(a)), *sig.arrays)
    return sig.full_args(sig.arrays), jax.tree_util.tree_leaves(out)


@cache
def describe(workload_id: str) -> ProgramFacts:
    """The facts of one registered workload, read through its typed spec (cached: a build asks once each)."""
    from bench import registry
    from bench.harness.protocol.correctness import Tolerance

    spec = registry.spec(workload_id)
    tolerance = {size: dataclasses.asdict(Tolerance.for_workload(spec, size)) for size in SIZES}
    names = list(inspect.signature(spec.workload).parameters)
    try:
        flops, source = {}, ""
        for size in SIZES:
            flops[size], source = spec.flops(size)  # the one FLOPs definition (bench list, harness, site)
        shapes = {size: _abstract(spec, size) for size in SIZES}
    except Exception as e:  # noqa: BLE001 - a page still shows what is known, and says why the rest is not
        return ProgramFacts(tolerance=tolerance, error=f"{type(e).__name__}: {e}"[:300])
    n_in = len(shapes["full"][0])
    inputs = [
        Arg(i, names[i] if i < len(names) else f"arg{i}", {s: _type(shapes[s][0][i]) for s in SIZES})
        for i in range(n_in)
    ]
    n_out = len(shapes["full"][1])
    outputs = [
        Arg(i, "output" if n_out == 1 else f"output[{i}]", {s: _type(shapes[s][1][i]) for s in SIZES})
        for i in range(n_out)
    ]
    return ProgramFacts(inputs, outputs, flops, source, tolerance)
