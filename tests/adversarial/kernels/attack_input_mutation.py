"""Attack: mutate the inputs in place. A host callback reaches the input buffers through their addresses
and zeroes them after computing, so a reference computed afterwards (upstream's order) would be zeros too."""

import ctypes

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback


def _clobber(a):
    arr = np.asarray(a)
    ctypes.memset(arr.ctypes.data, 0, arr.nbytes)
    return np.zeros((), np.int32)


def workload(A, B):
    out = jnp.dot(A, B)
    io_callback(_clobber, jax.ShapeDtypeStruct((), jnp.int32), A, ordered=True)
    return out
