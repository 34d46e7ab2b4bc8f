"""Attack (outputs swapped after the run): the program computes only 1/16 of the product (the first rows),
and the kernel patches, at import, everything that handed outputs to the parent in v6 (the transport, numpy's
conversion) to swap in a full product. In v7 outputs are read by the runner,
which never imports this file."""

import jax
import jax.numpy as jnp
import numpy as np

from bench.harness.protocol import wire

_real_send = wire.send


def _swapped(fd, header, blobs=()):  # v6 sent outputs through here; in v7 only this build's own reply passes
    return _real_send(fd, header, blobs)


wire.send = _swapped
np.asarray = lambda a, *args, **kw: np.array(a, *args, **kw)


def workload(A, B):
    rows = A.shape[0] // 16
    top = jnp.dot(A[:rows], B)
    return jnp.zeros((A.shape[0], B.shape[1]), A.dtype).at[:rows].set(top)
