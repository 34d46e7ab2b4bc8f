"""Tuned block-size tables, one YAML file per chip generation in `pallas_refs/tuned/<chip>.yaml`.

Format (checked by `validate_table`):
    chip: v6e
    default: <sentence: what is used when a workload has no entry>
    entries:
      8p_GEMM:
        params: {bm: 1024, bn: 2048, bk: 1024}
        size: full                       # the workload size it was tuned at
        provenance: <how it was obtained>  # "upstream TUNED_PARAMS ..." or "measured by bench tune on <chip> at <date>"
        median_ms: 5.59                  # optional; null when not measured here
        timings_meaningful: true         # false for CPU interpret-mode runs
        configs_tried: 27                # optional
The default when no entry exists: the reference's `defaults` (the library's own default block sizes),
fitted to the problem dims by `pallas_refs.reference.fit_block`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import jax
import yaml

TUNED_DIR = Path(__file__).resolve().parent / "tuned"
DEFAULT_RULE = ("no entry for this workload: the reference's library-default block sizes, "
                "each fitted to the problem dims (largest halving that divides the dim)")


def current_chip() -> str:
    """Normalized chip name of device 0 ("v6e", "v5e", ..., "cpu"), as the table files are named. In a build,
    whose jax sees only a CPU while it lowers for a TPU host's chip, the chip the harness named (JAXBENCH_CHIP)."""
    from bench.hardware import normalize_chip  # the harness's one mapping of device kinds

    if named := os.environ.get("JAXBENCH_CHIP"):
        return named

    return normalize_chip(jax.devices()[0].device_kind)


def table_path(chip: str) -> Path:
    return TUNED_DIR / f"{chip}.yaml"


def load_table(chip: str, path: Path | None = None) -> dict[str, Any]:
    """The chip's table, or an empty one (no entries) if the file does not exist."""
    p = path or table_path(chip)
    if not p.exists():
        return {"chip": chip, "default": DEFAULT_RULE, "entries": {}}
    data = yaml.safe_load(p.read_text()) or {}
    errors = validate_table(data)
    if errors:
        raise ValueError(f"{p}: invalid tuned table: {'; '.join(errors)}")
    return data


def lookup(workload: str, chip: str) -> dict[str, Any] | None:
    return load_table(chip)["entries"].get(workload)


def validate_table(data: Any) -> list[str]:
    """Problems with a table's structure; empty when valid."""
    if not isinstance(data, dict):
        return ["top level is not a mapping"]
    errors = [f"missing key {k!r}" for k in ("chip", "default", "entries") if k not in data]
    for wid, entry in (data.get("entries") or {}).items():
        if not isinstance(entry, dict):
            errors.append(f"{wid}: entry is not a mapping")
            continue
        params = entry.get("params")
        if not isinstance(params, dict) or not params or not all(isinstance(v, int) and v > 0 for v in params.values()):
            errors.append(f"{wid}: params must map knob names to positive ints")
        for key in ("size", "provenance"):
            if not isinstance(entry.get(key), str) or not entry.get(key):
                errors.append(f"{wid}: missing {key}")
        if not isinstance(entry.get("timings_meaningful"), bool):
            errors.append(f"{wid}: timings_meaningful must be true or false")
    return errors


def write_entry(chip: str, workload: str, entry: dict[str, Any], path: Path | None = None) -> Path:
    """Insert or replace one workload's entry, keeping the others; the result is validated before writing."""
    p = path or table_path(chip)
    table = load_table(chip, p)
    table["entries"][workload] = entry
    errors = validate_table(table)
    if errors:
        raise ValueError(f"refusing to write an invalid table: {'; '.join(errors)}")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(yaml.safe_dump(table, sort_keys=False, width=120))
    return p
