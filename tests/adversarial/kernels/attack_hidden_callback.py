"""Attack (hidden time): v6 allowed 0.5 s of time per block that the candidate's worker did not report. Here
the real work runs in numpy on the host inside a callback (invisible on a device profile), smuggled past
jax.export's own refusal of host callbacks by patching its check in the build process. The parent's
inspection of the exported module must refuse it: the runner never runs a host callback."""

import jax
import numpy as np
from jax._src.export import _export

_export._check_lowering = lambda lowering: None
_export._check_module = lambda mod, **kw: False


def _host_dot(a, b):
    return (np.asarray(a, np.float32) @ np.asarray(b, np.float32)).astype(a.dtype)


def workload(A, B):
    return jax.pure_callback(_host_dot, jax.ShapeDtypeStruct((A.shape[0], B.shape[1]), A.dtype), A, B)
