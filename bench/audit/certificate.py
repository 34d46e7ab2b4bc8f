"""The trivial-solution certificate: which cheap outputs the correctness gate accepts, per workload and size.

Why: a second input distribution cannot stop a kernel that tells it apart from upstream's, so the question that
matters is whether the gate itself, on upstream's own inputs, rejects every output that is not the task's
computation. For each workload we build candidate outputs with trusted code (never a kernel file) and put each
through the harness's own gate (`bench.harness.protocol.correctness.compare` with the workload's Tolerance) on
upstream's inputs (seed None) and on fresh seeds; a candidate passes only if it passes on every input set.

Candidates and what they stand for:
- shortcuts (must fail): zeros; a constant (another draw's output mean: a number fixed in advance); the
  reference's own mean (the best constant); the mean over the batch axis (a network evaluated on the batch's mean
  row); one row broadcast (one batch element computed); a subsampled batch (every 2nd element computed, the
  others copied from their neighbour); a truncated reduction (every sum and contraction of the baseline program
  over the first half of its axis, every convolution over half its input channels, doubled); the input passed
  through (where one has the output's shape); the
  audit's own shortcut for the workload (bench/audit/shortcuts.py; its exact algebraic rewrites are legitimate);
- honest implementations (must pass): the baseline's math from float32 inputs, and the baseline program with
  every contraction accumulated the way a tiled bf16 kernel does (partial products in float32 per 128-wide tile
  of the contracted axis, the running sum rounded to bfloat16 after each tile; `n/a` where no contraction is
  longer than one tile).
The rewritten programs come from re-interpreting the baseline's jaxpr (`_Rewrite`), loop bodies (scan, while,
cond) included. Candidates that equal the output by construction (the mean
of a scalar output, one row of a one-row output) are `n/a`.

A workload whose certificate still shows a shortcut passing is `degenerate` (its DEGENERATE note in the module:
bench.registry's WorkloadSpec.degenerate), labelled wherever it is shown and left out of the leaderboard's
"without degenerate workloads" geomean (bench/sql/geomean_nondegenerate.sql).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend import core as jcore
from pydantic import BaseModel, Field

from bench.audit.shortcuts import shortcuts_for
from bench.harness.protocol.correctness import JUDGING_BYTES, Tolerance, _cores, _leaves, compare, finite_norm
from bench.harness.protocol.result import Correctness
from bench.harness.protocol.wire import OUT_OF_MEMORY_MARKERS
from bench.registry import WorkloadSpec, load_workload, resolve_id, spec_of

SEEDS: tuple[int | None, ...] = (None, 11, 12)  # upstream's own inputs, then two fresh draws
CONSTANT_SEED = 97  # the draw whose output mean is the "constant" candidate
TILE = 128  # the contraction tile of the bf16-accumulating implementation
f32, bf16 = jnp.float32, jnp.bfloat16

HONEST = ("float32 inputs", "bf16-accumulating")


class Verdict(BaseModel):
    """One candidate on every input set: passes only if the gate accepts it on all of them."""

    candidate: str
    honest: bool  # an honest implementation (must pass) vs a shortcut (must fail)
    exact: bool = False  # an exact algebraic rewrite (the audit's shortcut for 21k, 23k, 26k): passing is legitimate
    status: str  # "pass" | "fail" | "n/a" (equal to the output by construction) | "error"
    rel_l2: float | None = None  # the worst over the input sets
    # the smallest atol the elementwise check would need with the workload's rtol (worst over the input sets):
    # what calibrating a tolerance on honest implementations reads
    atol_needed: float | None = None
    reason: str = ""  # the gate's reason on the first input set it fails (or why n/a / error)
    seconds: float = 0.0  # building and judging this candidate on every input set (where a certificate's time goes)

    @property
    def ok(self) -> bool:
        """As it should be: honest passes, a shortcut fails (an exact rewrite may pass; n/a is no finding)."""
        if self.status == "n/a":
            return True
        if self.honest:
            return self.status == "pass"
        return self.status == "fail" or (self.exact and self.status == "pass")


class Certificate(BaseModel):
    workload: str
    size: str
    tolerance: dict[str, float] = Field(default_factory=dict)
    output_dtype: str = ""  # of the (first) output: sets the calibration's floor (one rounding step)
    seeds: list[int | None] = Field(default_factory=lambda: list(SEEDS))
    verdicts: list[Verdict] = Field(default_factory=list)
    degenerate: str | None = None  # the workload's declared label, if any
    error: str | None = None  # not computed, and why (e.g. out of memory, timeout at full size on this host)
    device: str = ""  # where it was computed (device_name): the gate's reference is that backend's XLA output
    seconds: float = 0.0
    # every program ran on this many slices of the batch (axis 0) and the outputs were joined (`_in_slices`): how
    # a full size that no machine holds whole is computed, for workloads whose batch elements are independent
    slices: int = 1

    @property
    def passing_shortcuts(self) -> list[str]:
        return [v.candidate for v in self.verdicts if not v.honest and not v.exact and v.status == "pass"]

    @property
    def failing_honest(self) -> list[str]:
        return [v.candidate for v in self.verdicts if v.honest and v.status not in ("pass", "n/a")]

    @property
    def closed(self) -> bool:
        """All shortcuts red and honest code green: the gate alone tells the task's computation apart."""
        return self.error is None and not self.passing_shortcuts and not self.failing_honest


# -- calibrating a tolerance on honest implementations ---------------------------------------------------------
MARGIN = 3.0  # a calibrated bound leaves the honest implementations' worst error this factor of room


def _up(x: float) -> float:
    """`x` rounded up to two significant digits (a tolerance a reader can quote)."""
    if x <= 0:
        return 0.0
    scale = 10.0 ** (np.floor(np.log10(x)) - 1)
    return float(np.ceil(x / scale - 1e-9) * scale)


def calibrated(c: Certificate, margin: float = MARGIN) -> tuple[dict[str, float], list[str]]:
    """The tolerance this certificate calls for, and the shortcuts that would still pass under it.

    The elementwise atol is raised to `margin` x the most an honest implementation needs (never lowered), and the
    relative L2 bound set to `margin` x the honest implementations' worst: honest code keeps `margin`x room on
    both, and a shortcut fails unless it is within `margin`x of honest code's error on both. Applied (in the
    workload's TOLERANCE, with these numbers in a comment) where the certificate is not all-red/all-green, and to
    the atol alone where honest code needs more than 2/3 of it: a margin under 1.5x on a bound one element decides
    (1p's hand-tuned kernel failed a margin of 1.2x on a TPU by one element)."""
    honest = [v for v in c.verdicts if v.honest and v.status != "n/a"]
    atol = max([c.tolerance["atol"], *[_up(margin * v.atol_needed) for v in honest if v.atol_needed is not None]])
    worst = max([v.rel_l2 for v in honest if v.rel_l2 is not None], default=0.0)
    # never below half the output dtype's epsilon: a kernel that only sums in another order moves outputs by a
    # rounding step (two implementations that agree bit for bit here do not bound every honest kernel)
    floor = float(jnp.finfo(c.output_dtype or "float32").eps) / 2
    rel = max(_up(margin * worst), _up(floor))
    passing = [
        v.candidate
        for v in c.verdicts
        if not v.honest
        and not v.exact
        and v.status != "n/a"
        and v.atol_needed is not None
        and v.atol_needed <= atol
        and (v.rel_l2 or 0.0) <= rel
    ]
    return {"atol": atol, "rtol": c.tolerance["rtol"], "rel_l2": rel}, passing


# -- re-interpreting the baseline's program --------------------------------------------------------------------
Rule = Callable[[jcore.JaxprEqn, list[Any]], Any]  # the rewritten op's output, or None: not applicable here


class _Rewrite:
    """Evaluate a jaxpr with some primitives replaced (`rules`), recursing into nested calls. A call returns None
    when no rule applied anywhere (the program is the baseline's: no candidate of its own)."""

    CALLS = {
        "pjit": "jaxpr",
        "jit": "jaxpr",
        "closed_call": "call_jaxpr",
        "core_call": "call_jaxpr",
        "custom_jvp_call": "call_jaxpr",
        "custom_vjp_call": "call_jaxpr",
        "remat": "jaxpr",
        "checkpoint": "jaxpr",
    }

    def __init__(self, rules: dict[str, Rule]) -> None:
        self.rules = rules
        self.applied = 0  # rule applications in the last trace
        # one compiled program per (function, static arguments, input types): the seeds of a certificate share it
        # (a fresh jit per seed recompiled the rewritten program every time: most of a full-size certificate)
        self._compiled: dict[Any, tuple[Callable[..., Any], Any, int]] = {}

    def __call__(self, fn: Callable[..., Any], static_argnums: Sequence[int], *args: Any) -> Any:
        static = set(static_argnums)
        dyn = [a for i, a in enumerate(args) if i not in static]
        key = (fn, tuple((i, args[i]) for i in sorted(static)), tuple((a.shape, str(a.dtype)) for a in dyn))
        if key in self._compiled:
            jitted, out_tree, applied = self._compiled[key]
            return jax.tree_util.tree_unflatten(out_tree, jitted(*dyn)) if applied else None

        def full(*d: Any) -> Any:
            it = iter(d)
            return fn(*[args[i] if i in static else next(it) for i in range(len(args))])

        closed = jax.make_jaxpr(full)(*dyn)
        out_tree = jax.tree_util.tree_structure(jax.eval_shape(full, *dyn))
        self.applied = 0
        jitted = jax.jit(lambda *d: self.run(closed.jaxpr, closed.consts, list(d)))
        flat = jitted(*dyn)
        self._compiled[key] = (jitted, out_tree, self.applied)
        return jax.tree_util.tree_unflatten(out_tree, flat) if self.applied else None

    def run(self, jaxpr: jcore.Jaxpr, consts: Sequence[Any], args: Sequence[Any]) -> list[Any]:
        env: dict[Any, Any] = {}

        def read(v: Any) -> Any:
            return v.val if isinstance(v, jcore.Literal) else env[v]

        env.update(zip(jaxpr.constvars, consts, strict=True))
        env.update(zip(jaxpr.invars, args, strict=True))
        for eqn in jaxpr.eqns:
            invals = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            key = self.CALLS.get(name)
            outs = self.rules[name](eqn, invals) if name in self.rules else None
            if outs is not None:
                self.applied += 1
            elif key is not None and key in eqn.params:
                sub = eqn.params[key]
                inner, sub_consts = (sub.jaxpr, sub.consts) if isinstance(sub, jcore.ClosedJaxpr) else (sub, ())
                outs = self.run(inner, sub_consts, invals)
            else:
                outs = eqn.primitive.bind(*invals, **self._rewritten_bodies(eqn.params))
            outs = outs if eqn.primitive.multiple_results or isinstance(outs, list) else [outs]
            for v, x in zip(eqn.outvars, outs, strict=True):
                if not isinstance(v, jcore.DropVar):
                    env[v] = x
        return [read(v) for v in jaxpr.outvars]

    def _rewritten_bodies(self, params: dict[str, Any]) -> dict[str, Any]:
        """A loop's (scan, while, cond) bodies rewritten too: each closed jaxpr re-traced through the rules, with
        the same input and output types (the rules keep every output's shape and dtype)."""
        out = dict(params)
        for name, value in params.items():
            if isinstance(value, jcore.ClosedJaxpr):
                out[name] = self._retrace(value)
            elif isinstance(value, tuple) and value and all(isinstance(v, jcore.ClosedJaxpr) for v in value):
                out[name] = tuple(self._retrace(v) for v in value)
        return out

    def _retrace(self, closed: jcore.ClosedJaxpr) -> jcore.ClosedJaxpr:
        avals = [jax.ShapeDtypeStruct(v.aval.shape, v.aval.dtype) for v in closed.jaxpr.invars]  # type: ignore[attr-defined]
        before = self.applied
        new = jax.make_jaxpr(lambda *a: self.run(closed.jaxpr, closed.consts, list(a)))(*avals)
        if self.applied == before or new.consts:
            self.applied = before
            return closed  # nothing rewritten, or a body that would need constants of its own: the baseline's
        return new


def _dot_bf16_acc(eqn: jcore.JaxprEqn, invals: list[Any]) -> Any:
    """A tiled kernel's contraction: float32 products per TILE of the (first) contracted axis, bf16 running sum."""
    lhs, rhs = invals
    (lc, rc), _ = eqn.params["dimension_numbers"]
    out_dtype = eqn.outvars[0].aval.dtype  # type: ignore[attr-defined]
    if not lc or lhs.shape[lc[0]] <= TILE:
        return None  # one tile: the float32 accumulation of the baseline
    k = lhs.shape[lc[0]]
    params = {**eqn.params, "preferred_element_type": f32}

    def add_tile(acc: Any, start: Any, size: int) -> Any:
        # bf16 x bf16 products are exact in float32: casting first is the tile's float32 accumulation (and the
        # CPU backend has no bf16 x bf16 -> f32 dot in every context)
        part = eqn.primitive.bind(
            jax.lax.dynamic_slice_in_dim(lhs, start, size, axis=lc[0]).astype(f32),
            jax.lax.dynamic_slice_in_dim(rhs, start, size, axis=rc[0]).astype(f32),
            **params,
        )
        return (acc.astype(f32) + part).astype(bf16)

    # a loop, not one dot per tile unrolled: XLA kept the unrolled tiles' products alive at once (31k at the full
    # size asked for 30 GB); the loop holds one tile's product beside the running sum, as a kernel does
    acc = jnp.zeros(eqn.outvars[0].aval.shape, bf16)  # type: ignore[attr-defined]
    acc = jax.lax.fori_loop(0, k // TILE, lambda i, a: add_tile(a, i * TILE, TILE), acc)
    if k % TILE:
        acc = add_tile(acc, k - k % TILE, k % TILE)
    return acc.astype(out_dtype)


def _dot_truncated(eqn: jcore.JaxprEqn, invals: list[Any]) -> Any:
    """A contraction over the first half of its (first) contracted axis, doubled."""
    lhs, rhs = invals
    (lc, rc), _ = eqn.params["dimension_numbers"]
    if not lc or lhs.shape[lc[0]] < 2:
        return None
    half = lhs.shape[lc[0]] // 2
    out = eqn.primitive.bind(
        jax.lax.slice_in_dim(lhs, 0, half, axis=lc[0]), jax.lax.slice_in_dim(rhs, 0, half, axis=rc[0]), **eqn.params
    )
    return (out * (lhs.shape[lc[0]] / half)).astype(out.dtype)


def _sum_truncated(eqn: jcore.JaxprEqn, invals: list[Any]) -> Any:
    """A sum over the first half of its first reduced axis, scaled to the whole."""
    (x,) = invals
    axes = tuple(eqn.params["axes"])
    if not axes or x.shape[axes[0]] < 2:
        return None
    n = x.shape[axes[0]]
    out = eqn.primitive.bind(jax.lax.slice_in_dim(x, 0, n // 2, axis=axes[0]), **eqn.params)
    return (out * (n / (n // 2))).astype(out.dtype)


def _conv_truncated(eqn: jcore.JaxprEqn, invals: list[Any]) -> Any:
    """A convolution over the first half of its input channels, doubled."""
    lhs, rhs = invals
    dn = eqn.params["dimension_numbers"]
    lf, rf = dn.lhs_spec[1], dn.rhs_spec[1]  # the input-feature axes of the image and of the kernel
    if eqn.params["feature_group_count"] != 1 or eqn.params["batch_group_count"] != 1 or lhs.shape[lf] < 2:
        return None
    half = lhs.shape[lf] // 2
    out = eqn.primitive.bind(
        jax.lax.slice_in_dim(lhs, 0, half, axis=lf), jax.lax.slice_in_dim(rhs, 0, half, axis=rf), **eqn.params
    )
    return (out * (lhs.shape[lf] / half)).astype(out.dtype)


BF16_ACCUMULATING = _Rewrite({"dot_general": _dot_bf16_acc})
TRUNCATED = _Rewrite(
    {"dot_general": _dot_truncated, "reduce_sum": _sum_truncated, "conv_general_dilated": _conv_truncated}
)


# -- candidates built from the reference output (what a kernel that skips that much work could return) ----------
def _batch_axis(ref: Any) -> int | None:
    """The first axis longer than 1 (the batch, or the axis a kernel would compute one element of)."""
    return next((i for i, n in enumerate(np.shape(ref)) if n > 1), None)


def _like(values: Any, ref: Any) -> np.ndarray[Any, Any]:
    """Built on the host, where it is judged: a full-size output sent to the device and back for nothing was most
    of a cheap candidate's time on a TPU host."""
    return np.broadcast_to(np.asarray(values, np.float32), np.shape(ref)).astype(ref.dtype)


def _from_ref(kind: str, ref: Any, other: Any) -> Any | None:
    """The candidate `kind` for one output array; None where it is the output itself by construction."""
    r = np.asarray(ref, np.float32)
    if kind == "zeros":
        return np.zeros_like(ref)
    if kind == "constant":
        return _like(np.mean(np.asarray(other, np.float32)), ref)
    if kind == "reference mean":
        return None if r.size <= 1 else _like(np.mean(r), ref)
    axis = _batch_axis(ref)
    if axis is None:
        return None
    if kind == "batch mean":
        return _like(np.mean(r, axis=axis, keepdims=True), ref)
    if kind == "one row broadcast":
        return _like(np.take(r, [0], axis=axis), ref)
    if kind == "subsampled batch":
        idx = np.arange(r.shape[axis]) // 2 * 2
        return _like(np.take(r, idx, axis=axis), ref)
    raise ValueError(kind)


FROM_REF = ("zeros", "constant", "reference mean", "batch mean", "one row broadcast", "subsampled batch")


def _leafwise(kind: str, ref: Any, other: Any) -> Any | None:
    if isinstance(ref, (tuple, list)):
        parts = [_from_ref(kind, r, o) for r, o in zip(ref, other, strict=True)]
        return (
            None
            if all(p is None for p in parts)
            else type(ref)(p if p is not None else r for p, r in zip(parts, ref, strict=True))
        )
    return _from_ref(kind, ref, other)


def _passthrough(inputs: Sequence[Any], ref: Any) -> Any | None:
    if isinstance(ref, (tuple, list)):
        return None
    for x in inputs:
        if hasattr(x, "shape") and tuple(x.shape) == tuple(ref.shape):
            return np.asarray(x).astype(ref.dtype)
    return None


def _float32(base: Callable[..., Any], inputs: Sequence[Any]) -> Any:
    """The baseline from float32 inputs at full float32 matmul precision: a TPU's default multiplies float32 in
    one bfloat16 pass (about three digits), which is the bf16 program again, not a float32 implementation; on a
    CPU it changes nothing."""
    with jax.default_matmul_precision("highest"):
        return base(*[_to_f32(a) for a in inputs])


def _to_f32(a: Any) -> Any:
    return a.astype(f32) if hasattr(a, "dtype") and jnp.issubdtype(a.dtype, jnp.floating) else a


def _cast_like(out: Any, ref: Any) -> Any:
    if isinstance(ref, (tuple, list)):
        return type(ref)(_cast_like(o, r) for o, r in zip(out, ref, strict=True))
    if isinstance(out, np.ndarray):  # built on the host: stays there (numpy rounds to bfloat16 as XLA does)
        return out.astype(ref.dtype, copy=False)
    return jnp.asarray(out).astype(ref.dtype)


# -- one workload --------------------------------------------------------------------------------------------
def certify(workload_id: str, size: str = "small", seeds: Sequence[int | None] = SEEDS, slices: int = 1) -> Certificate:
    """The certificate of one workload at `size`; an exception becomes `error` (the rest of the run goes on).
    `slices` > 1: every program runs on that many slices of the batch, checked first to give the whole batch's
    outputs bit for bit (`check_slicing`)."""
    wid = resolve_id(workload_id)
    t0 = time.perf_counter()
    mod = load_workload(wid)
    spec = spec_of(mod, wid)
    tol = Tolerance.for_workload(spec, size)
    cert = Certificate(
        workload=wid,
        size=size,
        tolerance=vars(tol).copy(),
        seeds=list(seeds),
        degenerate=spec.degenerate,
        device=device_name(),
        slices=slices,
    )
    try:
        batched = check_slicing(mod, spec, slices) if slices > 1 else []
        cert.verdicts, cert.output_dtype = _verdicts(mod, spec.static_argnums, wid, size, tol, seeds, slices, batched)
    except Exception as exc:  # noqa: BLE001 - reported per workload
        cert.error = f"{type(exc).__name__}: {exc}"[:300]
    cert.error = cert.error or _honest_out_of_memory(cert.verdicts)
    cert.seconds = round(time.perf_counter() - t0, 2)
    return cert


def _honest_out_of_memory(verdicts: Sequence[Verdict]) -> str | None:
    """An honest implementation the device cannot hold leaves the workload undecided on it, not failed: a device
    with more memory decides it (the verdicts stay, for what they show)."""
    for v in verdicts:
        if v.honest and v.status == "error" and any(m in v.reason for m in _OUT_OF_MEMORY):
            return f"{v.candidate}: {v.reason}"[:300]
    return None


def device_name() -> str:
    """The backend the certificate's outputs came from, e.g. "TPU v5 lite (jax 0.10.2)"."""
    return f"{jax.devices()[0].device_kind} (jax {jax.__version__})"


def _from_reference(kind: str, other_ref: Any) -> Callable[[tuple[Any, ...], Any], Any]:
    return lambda inputs, ref: _leafwise(kind, ref, other_ref)


def _sliced_builder(
    program: Callable[..., Any], slices: int, batched: Sequence[bool]
) -> Callable[[tuple[Any, ...], Any], Any]:
    return lambda inputs, ref: _in_slices(program, inputs, slices, batched)


def _programs(mod: Any, static: tuple[int, ...], wid: str) -> dict[str, tuple[bool, Callable[..., Any]]]:
    """The candidates that run a program on the inputs, by name: (exact rewrite, the program). The baseline is
    "reference"."""
    base = jax.jit(mod.workload, static_argnums=static)
    programs: dict[str, tuple[bool, Callable[..., Any]]] = {
        "reference": (False, base),
        "truncated reduction": (False, lambda *inp: TRUNCATED(mod.workload, static, *inp)),
    }
    for sc in shortcuts_for(wid):
        run = jax.jit(lambda *a, fn=sc.fn: fn(mod, *a), static_argnums=static)
        programs[f"audit shortcut: {sc.description}"] = (sc.exact, run)
    programs["float32 inputs"] = (False, lambda *inp: _float32(base, inp))
    programs["bf16-accumulating"] = (False, lambda *inp: BF16_ACCUMULATING(mod.workload, static, *inp))
    return programs


def _in_slices(program: Callable[..., Any], inputs: Sequence[Any], slices: int, batched: Sequence[bool] = ()) -> Any:
    """`program`'s output on `inputs`, computed on `slices` equal slices of the batch (axis 0 of each input that
    `batched` marks) and joined on the host; None where the program has no candidate of its own."""
    if slices == 1:
        return program(*inputs)
    batch = next(x.shape[0] for x, b in zip(inputs, batched, strict=True) if b)
    if batch % slices:
        raise ValueError(f"a batch of {batch} does not split into {slices} slices")
    step, parts = batch // slices, []
    for i in range(slices):
        out = program(*[x[i * step : (i + 1) * step] if b else x for x, b in zip(inputs, batched, strict=True)])
        if out is None:
            return None
        parts.append(_to_host(out))
    return jax.tree_util.tree_map(lambda *leaves: np.concatenate(leaves, axis=0), *parts)


def batched_inputs(spec: WorkloadSpec) -> list[bool]:
    """Which of the workload's inputs carry the batch: at the full size, the arrays whose first axis is the first
    array's (5p's bias of shape (heads, S, S) does not; its heads are 64 and its batch 4)."""
    sig = spec.signature("full")
    batch = sig.arrays[0].shape[0]
    return [hasattr(x, "shape") and len(x.shape) > 0 and x.shape[0] == batch for x in sig.full_args(sig.arrays)]


def check_slicing(mod: Any, spec: WorkloadSpec, slices: int) -> list[bool]:
    """The batched inputs (`batched_inputs`), once the baseline gave, on a batch of `slices` small-size draws, bit
    for bit its outputs on each draw alone: the batch elements are independent, so a reference computed in slices
    is the whole batch's. Raises otherwise. The candidates then run per slice too: an implementation that computes
    each batch element on its own is as honest (or as much a shortcut) as the whole-batch one."""
    batched = batched_inputs(spec)
    draws = [tuple(mod.create_inputs(size="small", seed=1000 + i)) for i in range(slices)]
    joined = [
        jnp.concatenate([d[j] for d in draws]) if b else x
        for j, (x, b) in enumerate(zip(draws[0], batched, strict=True))
    ]
    base = jax.jit(mod.workload, static_argnums=spec.static_argnums)
    whole, parts = _to_host(base(*joined)), _in_slices(base, joined, slices, batched)
    for w, p in zip(_leaves(whole), _leaves(parts), strict=True):
        if w.shape != p.shape or not np.array_equal(w, p, equal_nan=True):
            raise ValueError(f"the baseline on a batch of {slices} is not its {slices} slices' (outputs differ)")
    return batched


def _verdicts(
    mod: Any,
    static: tuple[int, ...],
    wid: str,
    size: str,
    tol: Tolerance,
    seeds: Sequence[int | None],
    slices: int = 1,
    batched: Sequence[bool] = (),
) -> tuple[list[Verdict], str]:
    programs = _programs(mod, static, wid)
    base = programs.pop("reference")[1]
    other_ref = _in_slices(base, mod.create_inputs(size=size, seed=CONSTANT_SEED), slices, batched)
    builders: dict[str, tuple[bool, bool, Callable[[tuple[Any, ...], Any], Any]]] = {
        **{k: (False, False, _from_reference(k, other_ref)) for k in FROM_REF},
        "truncated reduction": (False, False, _sliced_builder(programs.pop("truncated reduction")[1], slices, batched)),
        "input passed through": (False, False, lambda inp, ref: _passthrough(inp, ref)),
    }
    for name, (exact, program) in programs.items():  # the audit's shortcuts, then the honest implementations
        builders[name] = (name in HONEST, exact, _sliced_builder(program, slices, batched))

    results: dict[str, list[Run]] = {k: [] for k in builders}
    spent = dict.fromkeys(builders, 0.0)  # seconds per candidate (building its output and judging it), all seeds
    for seed in seeds:
        _step(f"seed {seed}: the reference")
        inputs = tuple(mod.create_inputs(size=size, seed=seed))
        # judged on the host once: every candidate's comparison reads it
        ref = _to_host(_in_slices(base, inputs, slices, batched))
        norms = _norms(ref)
        # the device builds each output in turn while host threads judge the ones built (numpy releases the GIL:
        # at full size the judging, not the device, was most of a certificate's time)
        judges = _judges()
        threads = _share(judges)
        with ThreadPoolExecutor(judges) as pool:
            pending: list[tuple[str, Future[tuple[Run, float]]]] = []
            for name, (_, _, build) in builders.items():
                _step(f"seed {seed}: {name}")
                t0 = time.perf_counter()
                out, run = _built(build, inputs, ref)
                spent[name] += time.perf_counter() - t0
                if run is None:
                    pending.append((name, pool.submit(_timed_assess, ref, out, norms, tol, threads)))
                else:
                    results[name].append(run)
            _step(f"seed {seed}: judging")
            for name, future in pending:
                run, seconds = future.result()
                results[name].append(run)
                spent[name] += seconds
    verdicts = [
        _combine(name, honest, exact, results[name], generic=not name.startswith("audit shortcut")).model_copy(
            update={"seconds": round(spent[name], 2)}
        )
        for name, (honest, exact, _) in builders.items()
    ]
    return verdicts, str(jax.tree_util.tree_leaves(other_ref)[0].dtype)


def _step(what: str) -> None:
    """Where a certificate is, for the isolated child's parent: a workload past its deadline is recorded with the
    last step it reached (on a TPU a full size took minutes, and which candidate took them is the finding)."""
    if _STEPS:
        print(f"STEP {what}", flush=True)


_STEPS = False  # True in the isolated child (its stdout is the parent's protocol)


def _to_host(tree: Any) -> Any:
    """Device arrays as host numpy arrays (dtype kept), tuples and lists kept."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_to_host(t) for t in tree)
    return np.asarray(jax.block_until_ready(tree))


def _built(build: Callable[[tuple[Any, ...], Any], Any], inputs: tuple[Any, ...], ref: Any) -> tuple[Any, Run | None]:
    """One candidate's output on one input set, on the host; or, instead, the run it ends with (an exception
    building it is its verdict; None from the builder is n/a)."""
    try:
        out = build(inputs, ref)
        out = None if out is None else _to_host(_cast_like(out, ref))
    except Exception as exc:  # noqa: BLE001 - one candidate's failure to build is its verdict
        return None, ("error", None, f"{type(exc).__name__}: {exc}"[:200], None)
    if out is None:
        return None, ("n/a", None, "equal to the output by construction, or no input of its shape", None)
    return out, None


def _timed_assess(ref: Any, out: Any, norms: list[float], tol: Tolerance, threads: int) -> tuple[Run, float]:
    t0 = time.perf_counter()
    return _assess(ref, out, norms, tol, threads), time.perf_counter() - t0


def _assess(ref: Any, out: Any, norms: list[float], tol: Tolerance, threads: int | None = None) -> Run:
    """The gate's verdict (`compare`, the harness's own) and, from the same comparison of each output array, the
    relative L2 error over all of them and the smallest atol the elementwise check would need with the workload's
    rtol (the worst element's excess): no second pass over the arrays."""
    c = compare(ref, out, tol, threads)
    pairs = list(zip(_leaves(ref), _leaves(out), strict=True))
    per = [c] if len(pairs) == 1 else [compare(r, o, tol, threads) for r, o in pairs]
    return (
        "pass" if c.correct else "fail",
        _joint_rel_l2(per, norms),
        c.reason,
        max(_atol_of(p, tol.rtol) for p in per),
    )


def _norms(ref: Any) -> list[float]:
    """||ref|| of each output array over its finite elements (as `compare` measures it)."""
    return [finite_norm(r) for r in _leaves(ref)]


def _joint_rel_l2(per: Sequence[Correctness], norms: Sequence[float]) -> float:
    """||ref - out|| / ||ref|| over every output array, from each array's own relative error and norm."""
    err2 = den = 0.0
    for p, n in zip(per, norms, strict=True):
        rel = float("inf") if p.rel_l2_err is None else p.rel_l2_err
        err2 += (rel * n) ** 2 if n > 0 else (0.0 if rel == 0 else float("inf"))
        den += n * n
    if den == 0.0:
        return 0.0 if err2 == 0.0 else float("inf")
    return float(np.sqrt(err2 / den))


def _atol_of(p: Correctness, rtol: float) -> float:
    """The atol one array's elementwise check needs: its worst element's |ref - out| - rtol * |ref| (0 at least;
    inf where the output is not finite where the reference is)."""
    if p.rel_l2_err is None:
        return float("inf")
    if p.worst_ref is None or p.worst_out is None:
        return 0.0
    r, o = np.float32(p.worst_ref), np.float32(p.worst_out)
    return max(0.0, float(np.abs(r - o) - np.float32(rtol) * np.abs(r)))


def _share(judges: int) -> int:
    """Threads for each of `judges` comparisons judged side by side: their share of the cores this process may run
    on, counted as `compare` counts them (each would otherwise start one thread per core, judges x cores in all)."""
    return max(1, _cores() // judges)


def _judges() -> int:
    """Host threads judging at once: the cores, as many as the free memory holds (`compare` holds a bounded
    JUDGING_BYTES of temporaries, whatever the output's size), at most 8."""
    import os

    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        free = 0
    return max(1, min(os.cpu_count() or 1, 8, free // JUDGING_BYTES))


Run = tuple[str, float | None, str, float | None]  # status, rel_l2, reason, atol needed


def _combine(name: str, honest: bool, exact: bool, runs: list[Run], generic: bool = True) -> Verdict:
    """One verdict from the runs on every input set. `generic`: a candidate of the certificate's own (the audit's
    shortcuts declare whether they are exact; a band that is bit-exact on upstream's inputs is still a shortcut)."""
    statuses = [r[0] for r in runs]
    errs = [r for r in runs if r[0] == "error"]
    fails = [r for r in runs if r[0] == "fail"]
    status = "error" if errs else "n/a" if all(s == "n/a" for s in statuses) else "fail" if fails else "pass"
    rels = [r[1] for r in runs if r[1] is not None]
    atols = [r[3] for r in runs if r[3] is not None]
    reason = (errs or fails)[0][2] if status in ("error", "fail") else (runs[0][2] if status == "n/a" else "")
    # a shortcut whose output is the reference bit for bit on every input set skips work that never reaches the
    # output (26k's GEMM under a 1x1 InstanceNorm): exact, like an algebraic rewrite
    exact = exact or (generic and not honest and status == "pass" and bool(rels) and max(rels) == 0.0)
    return Verdict(
        candidate=name,
        honest=honest,
        exact=exact,
        status=status,
        rel_l2=max(rels) if rels else None,
        atol_needed=max(atols) if atols else None,
        reason=reason,
    )


# -- workloads in a child process (full size: bounded memory and time) ------------------------------------------
_OUT_OF_MEMORY = ("MemoryError", *OUT_OF_MEMORY_MARKERS)  # the harness's rule (bench.harness.protocol.messages)
_CHILD = (
    "import resource, sys\n"
    "limit = int(sys.argv[2])\n"
    "if limit: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
    "from bench.audit import certificate\n"
    "certificate._STEPS = True\n"
    "for wid in sys.argv[4:]:\n"
    "    print('START ' + wid, flush=True)\n"
    "    cert = certificate.certify(wid, sys.argv[1], slices=int(sys.argv[3]))\n"
    "    print('CERT ' + cert.model_dump_json(), flush=True)\n"
)


def certify_isolated(
    workload_ids: Sequence[str], size: str, memory_gb: float | None, timeout_s: float, slices: int = 1
) -> Iterator[Certificate]:
    """`certify` for each workload in a child process with an address-space limit and a deadline per workload,
    so that a size this host cannot hold is recorded as not computed (with the reason) instead of taking the
    machine down or being guessed. One child computes workloads in turn (an accelerator is opened once: about
    10 s on a TPU); a workload past its deadline or a crash ends that child, is recorded as not computed, and the
    next workload gets a fresh one. `memory_gb` None: no address-space limit (an accelerator's runtime maps far
    more address space than it uses; its memory is the bound and running out comes back as an error)."""
    pending = [resolve_id(w) for w in workload_ids]
    while pending:
        for cert in _run_child(pending, size, memory_gb, timeout_s, slices):
            yield cert  # as soon as it is computed: a run stopped later keeps it (--jsonl)
            pending = pending[1:]


def _run_child(
    ids: list[str], size: str, memory_gb: float | None, timeout_s: float, slices: int = 1
) -> Iterator[Certificate]:
    """Certificates from one child, in order, each as soon as it comes; where the child ends early, last, the
    not-computed certificate of the workload it ended on."""
    import queue
    import subprocess
    import sys
    import threading

    limit = int(memory_gb * 2**30) if memory_gb else 0
    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, size, str(limit), str(slices), *ids],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def read_stdout() -> None:
        for line in proc.stdout or ():
            lines.put(line)
        lines.put(None)

    err: list[str] = []
    threading.Thread(target=read_stdout, daemon=True).start()
    threading.Thread(target=lambda: err.extend(proc.stderr or ()), daemon=True).start()
    done = 0
    device = ""  # the device the child's certificates name (the parent never opens a backend itself)
    step = ""  # the last step the child reached in the current workload
    t0 = t_step = time.perf_counter()
    try:
        while done < len(ids):
            try:
                line = lines.get(timeout=max(0.0, t0 + timeout_s - time.perf_counter()))
            except queue.Empty:
                where = f" (at {step}, from {t_step - t0:.0f} s)" if step else ""
                why = f"over {timeout_s:g} s on this host{where}"
                yield _not_computed(ids[done], size, why, t0, device, slices)
                return
            if line is None:  # the child ended before the workload's certificate
                proc.wait()
                yield _not_computed(ids[done], size, _crash(proc.returncode, err, memory_gb), t0, device, slices)
                return
            if line.startswith("START "):
                t0, step = time.perf_counter(), ""
            elif line.startswith("STEP "):
                step, t_step = line[5:].strip(), time.perf_counter()
                print(f"{ids[done]}: {step} ({t_step - t0:.1f} s)", file=sys.stderr, flush=True)
            elif line.startswith("CERT "):
                cert = _memory_named(Certificate.model_validate_json(line[5:]), memory_gb)
                device, done = cert.device, done + 1
                yield cert
    finally:
        proc.kill()
        proc.wait()


def _memory_named(cert: Certificate, memory_gb: float | None) -> Certificate:
    """A certificate that ran out of memory says which memory: the limit set here, or the device's own."""
    if cert.error and any(m in cert.error for m in _OUT_OF_MEMORY):
        where = f"out of {cert.device}'s memory"
        if memory_gb:
            where = f"over the {memory_gb:g} GB memory limit on this host"
        cert.error = f"not computed: {where} ({cert.error[:120]})"
    return cert


def _crash(returncode: int | None, stderr: list[str], memory_gb: float | None) -> str:
    text = "".join(stderr)
    if any(m in text for m in _OUT_OF_MEMORY):
        return f"over the {memory_gb:g} GB memory limit on this host" if memory_gb else "out of memory on this host"
    last = text.strip().splitlines()[-1:] or [""]
    return f"exit {returncode}: {last[0]}"[:300]


def _not_computed(wid: str, size: str, why: str, t0: float, device: str, slices: int = 1) -> Certificate:
    """`device`: the one the child's earlier certificates name, if any (on a TPU host the child holds the chip)."""
    return Certificate(
        workload=wid,
        size=size,
        degenerate=spec_of(load_workload(wid), wid).degenerate,
        error=f"not computed: {why}",
        device=device,
        seconds=round(time.perf_counter() - t0, 2),
        slices=slices,
    )
