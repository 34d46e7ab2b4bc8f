"""Helpers shared by the workload modules: size presets and seeded keys.

Kept tiny on purpose: a workload module must stay readable on its own, as upstream's baseline.py files are.
"""

from __future__ import annotations

import math
from typing import Any

import jax

SIZES = ("full", "small")


def sized_config(config: dict[str, Any], small: dict[str, Any], size: str) -> dict[str, Any]:
    """CONFIG for `size`: the upstream CONFIG itself for "full", CONFIG with the SMALL overrides for "small"."""
    if size == "full":
        return dict(config)
    if size == "small":
        unknown = set(small) - set(config)
        if unknown:
            raise KeyError(f"SMALL overrides keys that CONFIG lacks: {sorted(unknown)}")
        return {**config, **small}
    raise ValueError(f"unknown size {size!r}; expected one of {SIZES}")


def base_key(upstream_seed: int, seed: int | None) -> jax.Array:
    """The upstream key (`jax.random.key(upstream_seed)`) when seed is None, else a fresh key derived from it.

    seed=None reproduces the original JAXBench inputs bit for bit; any other seed draws new inputs
    from the same distributions (the harness uses this for multi-seed and secret-seed correctness trials).
    """
    key = jax.random.key(upstream_seed)
    return key if seed is None else jax.random.fold_in(key, seed)


def uniform(key: jax.Array, shape: tuple[int, ...], dtype) -> jax.Array:
    """`jax.random.uniform(key, shape, dtype)` bit for bit, drawn flat and reshaped.

    Why: threefry's counter for an element is its row-major index in both of JAX's schemes (partitionable
    or not), so a flat draw has the same bits; but XLA:CPU compiles a rank-4/5 draw in ~10 s where the
    rank-1 draw takes ~1 s, and the CPU track and the tests draw conv inputs (N, C, D, H, W) in fresh processes.
    """
    return jax.random.uniform(key, (math.prod(shape),), dtype=dtype).reshape(shape)


def normal(key: jax.Array, shape: tuple[int, ...], dtype) -> jax.Array:
    """`jax.random.normal(key, shape, dtype)` bit for bit, drawn flat and reshaped (see `uniform` for why)."""
    return jax.random.normal(key, (math.prod(shape),), dtype=dtype).reshape(shape)
