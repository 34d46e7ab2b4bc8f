"""The workload's abstract signature (bench.registry.WorkloadSpec.signature) is what the build traces a candidate
on and what the runner checks every export against: arrays abstract, static arguments as values, in order."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bench.harness.protocol.signature import aval_text, export_program
from bench.registry import spec


def test_static_arguments_are_values_and_rejoin_in_place():
    sig = spec("11p_Megablox_GMM").signature("small")
    assert sig.count == 4 and set(sig.static) == {3} and isinstance(sig.static[3], int)
    assert all(isinstance(a, jax.ShapeDtypeStruct) for a in sig.arrays) and len(sig.arrays) == 3
    full = sig.full_args(["a", "b", "c"])
    assert full == ["a", "b", "c", sig.static[3]] and sig.array_args(full) == ["a", "b", "c"]


def test_the_signature_matches_the_drawn_inputs_and_the_export_takes_exactly_it():
    gemm = spec("8p_GEMM")
    sig = gemm.signature("small")
    drawn = gemm.create_inputs(dtype=jnp.bfloat16, size="small", seed=1)
    assert [aval_text(a) for a in sig.arrays] == [aval_text(a) for a in sig.array_args(drawn)]
    exported = export_program(gemm.workload, "baseline_program", sig, ["cpu"])
    assert [aval_text(a) for a in exported.in_avals] == [aval_text(a) for a in sig.arrays]
