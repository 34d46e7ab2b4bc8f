"""jaxpr inspection: Pallas calls, host callbacks and baked-in constants, at any nesting depth."""

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.experimental import pallas as pl

from bench.integrity.jaxpr_check import inspect_jaxpr, is_large_constant


def _trace(fn, *args):
    return jax.jit(fn).trace(*args).jaxpr


def _add_one(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


def test_pallas_call_is_counted_inside_nested_jit() -> None:
    inner = jax.jit(lambda x: pl.pallas_call(_add_one, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x))
    report = inspect_jaxpr(_trace(lambda x: inner(x) * 2, jnp.ones((8, 128))))
    assert report["pallas_calls"] == 1 and report["flags"] == []


def test_plain_xla_has_no_pallas() -> None:
    report = inspect_jaxpr(_trace(lambda a, b: a @ b, jnp.ones((8, 8)), jnp.ones((8, 8))))
    assert report["pallas_calls"] == 0 and report["host_callbacks"] == 0 and report["flags"] == []


def test_host_callbacks_flagged_even_inside_cond() -> None:
    def f(x):
        y = jax.lax.cond(x[0] > 0, lambda v: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(v.shape, v.dtype), v),
                         lambda v: v, x)
        io_callback(lambda v: None, None, y)
        return y

    report = inspect_jaxpr(_trace(f, jnp.ones(8)))
    assert report["host_callbacks"] == 2 and "host_callback" in report["flags"]


def test_debug_print_is_counted_not_flagged() -> None:
    def f(x):
        jax.debug.print("{}", x[0])
        return x + 1

    report = inspect_jaxpr(_trace(f, jnp.ones(8)))
    assert report["debug_prints"] == 1 and report["flags"] == []


def test_baked_in_answer_is_a_large_constant() -> None:
    answer = np.random.default_rng(0).standard_normal((256, 384)).astype(np.float32)
    report = inspect_jaxpr(_trace(lambda a: a * 0 + answer, jnp.ones((256, 384))))
    assert report["max_const_bytes"] >= answer.nbytes and "large_constant" in report["flags"]
    small = np.arange(128, dtype=np.float32)
    assert inspect_jaxpr(_trace(lambda a: a + small, jnp.ones((256, 128))))["flags"] == []


def test_large_constant_rule() -> None:
    assert is_large_constant(2 << 20, 1 << 30)
    assert not is_large_constant(32 << 10, 64 << 10)
    assert is_large_constant(100 << 10, 200 << 10)
    assert not is_large_constant(100 << 10, 100 << 20)
