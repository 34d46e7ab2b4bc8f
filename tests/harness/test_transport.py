"""Arrays (bf16 included) and messages survive the trip; a malformed or oversized reply is refused."""

import os
import threading

import jax.numpy as jnp
import numpy as np
import pytest

from bench.harness import transport


def test_bf16_arrays_round_trip_and_static_arguments_rejoin():
    a = jnp.arange(12, dtype=jnp.bfloat16).reshape(3, 4) / 3
    b = np.arange(5, dtype=np.int32)
    meta, blobs = transport.encode_arrays([a, b])
    arrays = transport.decode_arrays(meta, blobs)
    assert arrays[0].dtype == jnp.bfloat16 and np.array_equal(np.asarray(a), arrays[0])
    assert np.array_equal(arrays[1], b)
    split, static = transport.split_static([a, b, 7], [2])
    assert static == {2: 7} and transport.join_static(split, static, 3)[2] == 7


def test_message_round_trip_and_limits():
    r, w = os.pipe()
    meta, blobs = transport.encode_arrays([np.ones((2, 3), np.float32)])
    threading.Thread(target=transport.send, args=(w, {"ok": True, "meta": meta}, blobs)).start()
    header, got = transport.recv(r, deadline=None)
    assert header["ok"] and transport.decode_arrays(header["meta"], got)[0].shape == (2, 3)
    transport.send(w, {"x": 1}, [b"\0" * 100])
    with pytest.raises(transport.ChannelViolation):
        transport.recv(r, deadline=None, max_bytes=10)
    os.close(w)
    os.close(r)


def test_closed_and_silent_peers():
    import time

    r, w = os.pipe()
    with pytest.raises(transport.ChannelTimeout):
        transport.recv(r, deadline=time.monotonic() + 0.05)
    os.close(w)
    with pytest.raises(transport.ChannelClosed):
        transport.recv(r, deadline=time.monotonic() + 1)
    os.close(r)


def test_decode_rejects_mismatched_sizes():
    with pytest.raises(transport.ChannelViolation):
        transport.decode_arrays([{"shape": [4], "dtype": "float32"}], [b"\0" * 8])
