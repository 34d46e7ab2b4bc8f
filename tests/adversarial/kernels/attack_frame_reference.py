"""Attack: read the reference output from the caller's stack frames (upstream's evaluator kept `ref_output`
as a local while the kernel ran). Falls back to zeros when nothing is found."""

import sys

import jax.numpy as jnp


def _find_reference(shape):
    frame = sys._getframe(1)
    while frame is not None:
        for name, value in frame.f_locals.items():
            if "ref" in name and getattr(value, "shape", None) == shape:
                return value
        frame = frame.f_back
    return None


def workload(A, B):
    shape = (A.shape[0], B.shape[1])
    ref = _find_reference(shape)
    return jnp.asarray(ref) if ref is not None else jnp.zeros(shape, A.dtype)
