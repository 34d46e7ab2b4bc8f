"""Attack: return a lazy, non-array object whose value is only computed when the checker converts it."""

import jax.numpy as jnp


class LazyProduct:
    def __init__(self, a, b):
        self.a, self.b = a, b
        self.shape = (a.shape[0], b.shape[1])
        self.dtype = a.dtype

    def __array__(self, dtype=None, copy=None):
        return jnp.dot(self.a, self.b).__array__(dtype)


def workload(A, B):
    return LazyProduct(A, B)
