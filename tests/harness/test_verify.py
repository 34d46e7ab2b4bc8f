"""The check of every timed output (bench.harness.runner.verify): bit for bit against the checked output, by its
bytes in host memory (CPU) or by a device digest (TPU/GPU; forced here on the CPU backend)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bench.harness.runner import verify


@pytest.fixture(params=["bytes", "digest"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "digest":
        monkeypatch.setattr(verify, "in_host_memory", lambda outputs: False)
    return str(request.param)


def _outputs() -> list[jax.Array]:
    x = jax.random.normal(jax.random.key(0), (64, 96), jnp.bfloat16)
    return [x, jnp.arange(7, dtype=jnp.int32), jnp.float32(3.5)]


def test_the_same_bits_match_whatever_the_buffer(mode: str) -> None:
    expected = verify.Expected(_outputs(), multiplier=2654435761)
    assert (expected.exact) == (mode == "bytes")
    assert expected.matches([jnp.copy(o) for o in _outputs()])


@pytest.mark.parametrize("where", [0, 1, 2])
def test_one_flipped_bit_anywhere_does_not_match(mode: str, where: int) -> None:
    expected = verify.Expected(_outputs(), multiplier=2654435761)
    outs = _outputs()
    host = np.array(outs[where])
    flat = host.reshape(-1).view(np.uint8) if host.ndim else host.reshape(1).view(np.uint8)
    flat[len(flat) // 2] ^= 1
    outs[where] = jnp.asarray(host)
    assert not expected.matches(outs)


def test_a_zero_where_a_negative_zero_was_does_not_match(mode: str) -> None:
    """Bit for bit, not by value: -0.0 == 0.0 numerically, but a program that changes its bits between calls is not
    the program that was checked."""
    expected = verify.Expected([jnp.array([-0.0, 1.0], jnp.float32)], multiplier=12345)
    assert not expected.matches([jnp.array([0.0, 1.0], jnp.float32)])


def test_another_shape_or_dtype_with_the_same_bytes_does_not_match(mode: str) -> None:
    x = jnp.arange(12, dtype=jnp.int32)
    expected = verify.Expected([x.reshape(3, 4)], multiplier=12345)
    assert not expected.matches([x.reshape(4, 3)])
    assert not expected.matches([jax.lax.bitcast_convert_type(x, jnp.float32).reshape(3, 4)])


def test_cpu_outputs_are_compared_by_their_bytes() -> None:
    assert verify.in_host_memory(_outputs())


def test_in_place_comparison_reads_the_buffer_of_its_size_only() -> None:
    a = jnp.arange(16, dtype=jnp.uint8)
    assert verify.same_bytes(a, bytes(range(16))) and not verify.same_bytes(a, bytes(range(15)))
    assert not verify.same_bytes(a, bytes(range(1, 17)))
    assert verify.same_bytes(jnp.zeros((0,), jnp.uint8), b"")


def test_packed_sub_byte_outputs_are_not_read_in_place() -> None:
    """XLA may pack int4 two to a byte: its buffer need not be `nbytes` long, so it is never read as if it were."""
    assert not verify.in_host_memory([jnp.zeros((8,), jnp.int4)])
    assert verify.in_host_memory([jnp.zeros((8,), jnp.int8), jnp.zeros((2,), jnp.bool_)])
