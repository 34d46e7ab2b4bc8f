"""Attack: mutate the inputs in place. After the product is computed, a host callback finds the live input
arrays of the calling process (gc), and zeroes their buffers through raw pointers, so that a reference
computed afterwards from the same arrays (upstream's order) would be zeros too."""

import ctypes
import gc

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback


def _clobber(out, a):
    for obj in gc.get_objects():
        if isinstance(obj, jax.Array) and obj.shape == a.shape and obj.dtype == a.dtype and not obj.is_deleted():
            try:
                ctypes.memset(obj.unsafe_buffer_pointer(), 0, obj.nbytes)
            except Exception:
                pass
    return np.zeros((), np.int32)


def workload(A, B):
    out = jnp.dot(A, B)
    done = io_callback(_clobber, jax.ShapeDtypeStruct((), jnp.int32), out, A, ordered=True)
    return out + (done * 0).astype(out.dtype)
