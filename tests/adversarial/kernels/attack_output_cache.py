"""Attack: output caching keyed on the inputs. A host callback fingerprints the inputs and returns a cached
product when it has seen them before, so repeated timed calls on the same inputs skip the work."""

import hashlib

import jax
import numpy as np
from jax.experimental import io_callback

_CACHE = {}


def _cached_dot(a, b):
    key = hashlib.sha1(np.asarray(a).tobytes()[:4096]).hexdigest()
    if key not in _CACHE:
        _CACHE[key] = (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(a.dtype)
    return _CACHE[key]


def workload(A, B):
    out = jax.ShapeDtypeStruct((A.shape[0], B.shape[1]), A.dtype)
    return io_callback(_cached_dot, out, A, B)
