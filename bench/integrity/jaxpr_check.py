"""Inspection of a candidate's jaxpr. PLACEHOLDER until the integrity work lands: same signature."""

from typing import Any


def inspect_jaxpr(closed_jaxpr: Any) -> dict:
    return {"pallas_calls": 0, "host_callbacks": 0, "max_const_bytes": 0}
