"""Discovery and loading of the workloads in `workloads/`, and the one reader of their contract.

A workload is a module `workloads/<id>.py` whose name does not start with `_`. Ids keep upstream's
spelling (`1p_Flash_Attention` ... `50k_Matmul_GELU_Softmax`) and sort by their leading integer, as upstream does.

The module contract (ARCHITECTURE.md: CONFIG, SMALL, META, TOLERANCE, STATIC_ARGNUMS, create_inputs, workload,
get_flops) is read here and only here, into a typed `WorkloadSpec`: every other part of the project (harness
workers, CLI, audit, site, tuning) asks the spec, so an optional attribute's default lives in one place.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.paths import WORKLOADS_DIR

_ID_RE = re.compile(r"^(\d+)([pk])_\w+$")
TOLERANCE_KEYS = frozenset({"atol", "rtol", "rel_l2"})


def _sort_key(workload_id: str) -> int:
    m = _ID_RE.match(workload_id)
    return int(m.group(1)) if m else 10**9


@lru_cache(maxsize=1)
def workload_ids() -> tuple[str, ...]:
    """All workload ids, in upstream order (1p ... 17p, 18k ... 50k)."""
    ids = [p.stem for p in WORKLOADS_DIR.glob("*.py") if not p.stem.startswith("_") and _ID_RE.match(p.stem)]
    return tuple(sorted(ids, key=_sort_key))


class UnknownWorkload(KeyError):
    """An id that names no workload (or more than one); `suggestions` are the closest ids."""

    def __init__(self, name: str, suggestions: list[str], ambiguous: bool = False) -> None:
        self.name, self.suggestions, self.ambiguous = name, suggestions, ambiguous
        what = "ambiguous workload" if ambiguous else "unknown workload"
        hint = f"; did you mean {', '.join(suggestions)}?" if suggestions else "; see `bench list`"
        super().__init__(f"{what} {name!r}{hint}")

    def __str__(self) -> str:
        return str(self.args[0])


def resolve_id(name: str) -> str:
    """Accept a full id, its number-and-letter prefix ("41k") or any unique prefix ("8p_GE"), case-insensitively.
    Raises UnknownWorkload (a KeyError) naming the near matches otherwise."""
    ids = workload_ids()
    if name in ids:
        return name
    low = name.lower()
    matches = [i for i in ids if i.split("_", 1)[0].lower() == low] or [i for i in ids if i.lower().startswith(low)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise UnknownWorkload(name, matches[:8], ambiguous=True)
    raise UnknownWorkload(name, near_ids(name, ids))


def near_ids(name: str, ids: Iterable[str]) -> list[str]:
    """Up to five ids close to a misspelt `name` (the "did you mean" of every command and of `bench validate`)."""
    low, by_low = name.lower(), {i.lower(): i for i in ids}
    near = difflib.get_close_matches(low, list(by_low), n=3, cutoff=0.5)
    near += [i for i in by_low if low in i and i not in near][:3]  # "gemm" -> every *_GEMM*
    return [by_low[n] for n in near][:5]


def workload_file(workload_id: str) -> Path:
    """The source file of a workload (the harness's baseline timer loads it as a kernel file)."""
    return WORKLOADS_DIR / f"{resolve_id(workload_id)}.py"


def load_workload(workload_id: str) -> ModuleType:
    """Import `workloads/<id>.py` (module names start with a digit, so no import statement can)."""
    return importlib.import_module(f"workloads.{resolve_id(workload_id)}")


@dataclass(frozen=True)
class Signature:
    """A workload's call signature without values: the shapes and dtypes of its array inputs, plus its static
    arguments (Python values, part of the program). The one definition: the build traces a candidate on it,
    the runner checks every exported program takes exactly it, and the FLOPs count, the agents' task spec,
    the audit and the site read it (WorkloadSpec.signature)."""

    arrays: tuple[Any, ...]  # jax.ShapeDtypeStruct per array input, in order
    static: dict[int, Any]  # position -> value of each static argument
    count: int  # total number of arguments

    def full_args(self, arrays: Sequence[Any]) -> list[Any]:
        """The workload's argument list from array inputs (abstract or concrete) and the static values."""
        it = iter(arrays)
        return [self.static[i] if i in self.static else next(it) for i in range(self.count)]

    def array_args(self, inputs: Sequence[Any]) -> list[Any]:
        """The array arguments of a full argument list (what create_inputs returns): static values left out."""
        return [x for i, x in enumerate(inputs) if i not in self.static]


def _full(size: str) -> bool:
    """Whether `size` is the full one; raises on anything but "full" or "small"."""
    if size not in ("full", "small"):
        raise ValueError(f"unknown size {size!r}; expected full or small")
    return size == "full"


@dataclass(frozen=True)
class WorkloadSpec:
    """A workload module's contract, read once: what every consumer uses instead of the module's attributes."""

    id: str
    suite: str  # "priority" (1p-17p, MaxText-derived) or "kernelbench" (18k-50k)
    family: str
    source: str
    config: dict[str, Any]  # full (production) size: upstream's CONFIG
    small_config: dict[str, Any]  # CONFIG with the SMALL overrides
    static_argnums: tuple[int, ...]
    tolerance: dict[str, float]  # the module's overrides only; harness protocol.correctness.Tolerance adds defaults
    # the small size's overrides: TOLERANCE with SMALL_TOLERANCE over it. A bound calibrated where honest code is
    # least accurate (bf16 sums over the full size's long contractions) would leave the small size's gate loose
    small_tolerance: dict[str, float]
    module: ModuleType = field(repr=False, compare=False)
    get_flops: Callable[[str], Any] | None = field(default=None, repr=False, compare=False)
    # why the correctness gate cannot tell the task's computation from a shortcut on upstream's inputs (the
    # trivial-solution certificate, bench/audit/certificate.py), or None: the workload is not degenerate
    degenerate: str | None = None

    @property
    def create_inputs(self) -> Callable[..., Any]:
        return self.module.create_inputs

    @property
    def workload(self) -> Callable[..., Any]:
        """The XLA baseline."""
        return self.module.workload

    def config_for(self, size: str) -> dict[str, Any]:
        return dict(self.config if _full(size) else self.small_config)

    def tolerance_for(self, size: str) -> dict[str, float]:
        """The module's tolerance overrides at `size` (harness protocol.correctness.Tolerance adds defaults)."""
        return dict(self.tolerance if _full(size) else self.small_tolerance)

    def signature(self, size: str) -> Signature:
        """The abstract signature at `size`: jax.eval_shape of create_inputs (bf16, as the harness draws them),
        traced, never drawn (no input value exists); static inputs captured as the values it returns."""
        import jax  # lazily: reading the registry (bench list, ingest planning) must not import jax
        import jax.numpy as jnp

        static: dict[int, Any] = {}
        count = [0]

        def draw() -> list[Any]:
            inputs = tuple(self.create_inputs(dtype=jnp.bfloat16, size=size, seed=None))
            count[0] = len(inputs)
            static.update({i: inputs[i] for i in self.static_argnums})
            return [x for i, x in enumerate(inputs) if i not in self.static_argnums]

        shapes = jax.eval_shape(draw)
        return Signature(tuple(jax.ShapeDtypeStruct(s.shape, s.dtype) for s in shapes), dict(static), count[0])

    def flops(self, size: str) -> tuple[float | None, str]:
        """FLOPs at `size` and where the number comes from: the ONE definition that `bench list`, the harness
        and the site share. The module's get_flops when it has one (upstream's, for 6p 7p 11p 12p), else XLA's
        cost analysis of the baseline lowered on the abstract signature (`signature`: static inputs captured
        as values). Lowered, not compiled: the count of the program as written, independent of the backend's
        fusion decisions, and no input is allocated."""
        if self.get_flops is not None:
            return float(self.get_flops(size)), "get_flops"
        with quiet_jax_backends():
            import jax  # lazily, as in signature()

            sig = self.signature(size)
            lowered = jax.jit(self.workload, static_argnums=self.static_argnums).lower(*sig.full_args(sig.arrays))
            cost = lowered.cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else (cost or {})
        return float(cost.get("flops", 0.0)) or None, "cost_analysis"


@contextlib.contextmanager
def quiet_jax_backends() -> Iterator[None]:
    """Silence JAX's backend probing while a count is lowered (`workload_flops` in a notebook printed
    "Unable to initialize backend 'tpu'" INFO lines and PjRt's C++ INFO lines): its Python logger is held at
    WARNING, and XLA's C++ logging at warnings (TF_CPP_MIN_LOG_LEVEL=2) when jax is not imported yet and the
    caller has not chosen a level."""
    if "jax" not in sys.modules:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logger = logging.getLogger("jax._src.xla_bridge")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


def _overrides(ns: dict[str, Any], name: str, wid: str) -> dict[str, float]:
    """A module's optional tolerance table (TOLERANCE or SMALL_TOLERANCE), its keys checked."""
    table = dict(ns.get(name) or {})
    unknown = set(table) - TOLERANCE_KEYS
    if unknown:
        raise ValueError(f"{wid}: {name} has unknown keys {sorted(unknown)}")
    return table


def spec_of(module: ModuleType, workload_id: str | None = None) -> WorkloadSpec:
    """Read a workload module's contract (the only place its optional attributes and their defaults are named)."""
    from workloads._common import sized_config

    wid = workload_id or module.__name__.rsplit(".", 1)[-1]
    ns = vars(module)
    meta, small = ns.get("META") or {}, ns.get("SMALL") or {}
    tolerance = _overrides(ns, "TOLERANCE", wid)
    small_tolerance = {**tolerance, **_overrides(ns, "SMALL_TOLERANCE", wid)}
    degenerate = ns.get("DEGENERATE")
    if degenerate is not None and (not isinstance(degenerate, str) or not degenerate.strip()):
        raise ValueError(f"{wid}: DEGENERATE must be a non-empty string (why the task is degenerate)")
    return WorkloadSpec(
        id=wid,
        suite="priority" if wid.split("_")[0].endswith("p") else "kernelbench",
        family=meta.get("family", ""),
        source=meta.get("source", ""),
        config=sized_config(module.CONFIG, small, "full"),
        small_config=sized_config(module.CONFIG, small, "small"),
        static_argnums=tuple(ns.get("STATIC_ARGNUMS") or ()),
        tolerance=tolerance,
        small_tolerance=small_tolerance,
        module=module,
        get_flops=ns.get("get_flops"),
        degenerate=degenerate,
    )


def spec(workload_id: str) -> WorkloadSpec:
    """The typed contract of a workload, by id or unique prefix."""
    wid = resolve_id(workload_id)
    return spec_of(load_workload(wid), wid)
