"""Discovery and loading of the workloads in `workloads/`.

A workload is a module `workloads/<id>.py` whose name does not start with `_`. Ids keep upstream's
spelling (`1p_Flash_Attention` ... `50k_Matmul_GELU_Softmax`) and sort by their leading integer, as upstream does.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from functools import lru_cache
from types import ModuleType
from typing import Any

from pathlib import Path

from bench.paths import WORKLOADS_DIR

_ID_RE = re.compile(r"^(\d+)([pk])_\w+$")


def _sort_key(workload_id: str) -> int:
    m = _ID_RE.match(workload_id)
    return int(m.group(1)) if m else 10**9


@lru_cache(maxsize=1)
def workload_ids() -> tuple[str, ...]:
    """All workload ids, in upstream order (1p ... 17p, 18k ... 50k)."""
    ids = [p.stem for p in WORKLOADS_DIR.glob("*.py") if not p.stem.startswith("_") and _ID_RE.match(p.stem)]
    return tuple(sorted(ids, key=_sort_key))


def resolve_id(name: str) -> str:
    """Accept a full id or its unique prefix ("8p", "8p_GEMM"); raise KeyError with the choices otherwise."""
    ids = workload_ids()
    if name in ids:
        return name
    matches = [i for i in ids if i.split("_", 1)[0] == name] or [i for i in ids if i.startswith(name)]
    if len(matches) == 1:
        return matches[0]
    raise KeyError(f"unknown workload {name!r}" + (f"; did you mean one of {matches}?" if matches else ""))


def workload_file(workload_id: str) -> Path:
    """The source file of a workload (the harness's baseline timer loads it as a kernel file)."""
    return WORKLOADS_DIR / f"{resolve_id(workload_id)}.py"


def load_workload(workload_id: str) -> ModuleType:
    """Import `workloads/<id>.py` (module names start with a digit, so no import statement can)."""
    return importlib.import_module(f"workloads.{resolve_id(workload_id)}")


@dataclass(frozen=True)
class WorkloadInfo:
    """What `bench list` and the site show about a workload, without creating its inputs."""

    id: str
    suite: str  # "priority" (1p-17p, MaxText-derived) or "kernelbench" (18k-50k)
    family: str
    source: str
    config: dict[str, Any]
    small_config: dict[str, Any]
    static_argnums: tuple[int, ...]


def info(workload_id: str) -> WorkloadInfo:
    mod = load_workload(workload_id)
    from workloads._common import sized_config

    meta = getattr(mod, "META", {})
    return WorkloadInfo(
        id=resolve_id(workload_id),
        suite="priority" if workload_id.split("_")[0].endswith("p") else "kernelbench",
        family=meta.get("family", ""),
        source=meta.get("source", ""),
        config=sized_config(mod.CONFIG, getattr(mod, "SMALL", {}), "full"),
        small_config=sized_config(mod.CONFIG, getattr(mod, "SMALL", {}), "small"),
        static_argnums=tuple(getattr(mod, "STATIC_ARGNUMS", ())),
    )
