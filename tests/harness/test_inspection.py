"""The parent's inspection of exported programs (bench.harness.inspection): what it refuses, flags and counts."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import pallas as pl

from bench.harness.inspection import inspect_exports, is_large_constant, read_module

A = jax.ShapeDtypeStruct((256, 512), jnp.bfloat16)
B = jax.ShapeDtypeStruct((512, 384), jnp.bfloat16)


def _export(fn, *args, platforms=("cpu",)) -> bytes:
    return bytes(jax.export.export(jax.jit(fn), platforms=list(platforms))(*args).serialize())


def _add_one(x_ref, o_ref):
    o_ref[...] = x_ref[...] + 1


def _pallas(x):
    return pl.pallas_call(_add_one, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(2,),
                          in_specs=[pl.BlockSpec((128, 512), lambda i: (i, 0))],
                          out_specs=pl.BlockSpec((128, 512), lambda i: (i, 0)))(x)


def test_plain_program_passes_clean() -> None:
    r = inspect_exports(_export(jnp.dot, A, B), b"", "cpu")
    assert r.refused is None and r.flags == () and r.pallas_calls == 0 and r.pallas_source == "build_jaxpr"
    assert r.runnable.custom_calls == {} and r.runnable.in_avals == ("bfloat16[256,512]", "bfloat16[512,384]")
    assert r.runnable.output_bytes == 256 * 384 * 2 and r.runnable.input_bytes == (256 * 512 + 512 * 384) * 2


def test_mosaic_kernels_are_counted_from_the_tpu_export() -> None:
    from jax.experimental.pallas import tpu as pltpu

    with pltpu.force_tpu_interpret_mode(True):
        runnable = _export(_pallas, A)
    tpu = _export(_pallas, A, platforms=("tpu",))
    r = inspect_exports(runnable, tpu, "cpu")
    assert r.refused is None and r.runnable.custom_calls == {}  # interpret mode: plain HLO
    assert r.tpu.mosaic_calls == 1 and r.pallas_calls == 1 and r.pallas_source == "tpu_module"


def test_baked_in_answers_are_a_large_constant_in_total() -> None:
    answers = [np.random.default_rng(i).standard_normal((256, 384)).astype(np.float32) for i in range(4)]
    small_parts = [a[:40] for a in answers]  # each part under the per-constant floor, the total is not

    def baked(a, b):
        out = jnp.dot(a, b).astype(jnp.float32)
        for part in small_parts:
            out = out.at[:40].add(part * 0 + part)
        return out

    r = inspect_exports(_export(baked, A, B), b"", "cpu")
    assert "large_constant" in r.flags and r.runnable.largest_constant_bytes < 64 << 10 < r.runnable.constant_bytes
    splat = inspect_exports(_export(lambda a, b: jnp.dot(a, b) + jnp.full((256, 384), 2.0, jnp.bfloat16), A, B), b"", "cpu")
    assert splat.flags == ()  # a splat constant embeds one value


def test_smuggled_host_callback_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from jax._src.export import _export as export_impl

    monkeypatch.setattr(export_impl, "_check_lowering", lambda lowering: None)
    monkeypatch.setattr(export_impl, "_check_module", lambda mod, **kw: False)
    blob = _export(lambda a: jax.pure_callback(np.sin, jax.ShapeDtypeStruct(a.shape, a.dtype), a), A)
    r = inspect_exports(blob, b"", "cpu")
    assert r.refused and "callback" in r.refused and "host_callback" in r.flags


def test_garbage_and_wrong_platform_are_refused() -> None:
    assert "not a jax.export program" in inspect_exports(b"\x00garbage", b"", "cpu").refused
    tpu_only = _export(jnp.dot, A, B, platforms=("tpu",))
    assert "exported for ['tpu'], not cpu" in inspect_exports(tpu_only, b"", "cpu").refused
    assert read_module(tpu_only).platforms == ("tpu",)


def test_large_constant_rule() -> None:
    assert is_large_constant(2 << 20, 1 << 30, 1 << 30)
    assert not is_large_constant(32 << 10, 64 << 10, 64 << 10)
    assert is_large_constant(100 << 10, 1 << 30, 200 << 10)  # a quarter of the (smaller) output
    assert not is_large_constant(100 << 10, 100 << 20, 100 << 20)
