"""Messages (a JSON header and raw blobs) survive the trip; a malformed or oversized reply is refused."""

import os
import threading

import numpy as np
import pytest

from bench.harness.protocol import wire


def test_message_round_trip_and_limits():
    r, w = os.pipe()
    blob = np.arange(6, dtype=np.float32).tobytes()
    threading.Thread(target=wire.send, args=(w, {"ok": True, "n": 6}, [blob, b""])).start()
    header, got = wire.recv(r, deadline=None)
    assert header == {"ok": True, "n": 6} and got == [blob, b""]
    wire.send(w, {"x": 1}, [b"\0" * 100])
    with pytest.raises(wire.ChannelViolation):
        wire.recv(r, deadline=None, max_bytes=10)
    os.close(w)
    os.close(r)


def test_closed_and_silent_peers():
    import time

    r, w = os.pipe()
    with pytest.raises(wire.ChannelTimeout):
        wire.recv(r, deadline=time.monotonic() + 0.05)
    os.close(w)
    with pytest.raises(wire.ChannelClosed):
        wire.recv(r, deadline=time.monotonic() + 1)
    os.close(r)
