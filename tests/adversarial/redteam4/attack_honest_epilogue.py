"""Red team 4, control for attack_credit_reread_bytes.py (R = 0: no re-reads). Coverage inflation through BYTES,
within harness 18's FLOP cap. Read: parent/outcome.py
(credit_bound: a site's credited time is max(FLOPs / peak, bytes / bandwidth) of min(static, ran), then the time cap
and `_flop_share`, which caps FLOPs only), inspection/work.py (Coverage.kernel: a kernel's bytes are each operand
it reads, once), runner/executed.py (_flops, instruction_costs: a computing instruction's bytes are its operands'
and results').

47k: XLA does the GEMM (y = x @ W in f32, the task's dominant work); a Pallas kernel does the epilogue honestly in
one pass AND receives y again as R more operands, which it sums and adds times 0.0. Each extra operand costs one
add per element (FLOPs inside the room the FLOP cap leaves: twice the task's FLOPs less the XLA side's, i.e. twice
the epilogue) but 4 bytes read per element, and the kernel's credited time is its BYTES time: re-reading the same
array R times is credited as the task's work, up to the time cap (the baseline's unfused epilogue, ~10 passes).
Compare attack_honest_epilogue.py (R = 0): the same kernel without the re-reads."""

import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

R = 0


def _kernel(y_ref, b_ref, *refs):
    *extra, o_ref = refs
    z = y_ref[...] + b_ref[...]
    z = z * jax.nn.sigmoid(z)
    z = jnp.clip(jax.nn.gelu(jnp.tanh(z)), -1.0, 1.0)
    if extra:
        s = extra[0][...]
        for e in extra[1:]:
            s = s + e[...]
        z = z + 0.0 * s
    o_ref[...] = z.astype(o_ref.dtype)


def _epilogue(y, b, dtype, r):
    m, n = y.shape
    blk = pl.BlockSpec((128, 128), lambda i, j: (i, j))
    return pl.pallas_call(
        _kernel,
        out_shape=jax.ShapeDtypeStruct((m, n), dtype),
        grid=(m // 128, n // 128),
        in_specs=[blk, pl.BlockSpec((1, 128), lambda i, j: (0, j))] + [blk] * r,
        out_specs=blk,
    )(y, b, *([y] * r))


def workload(x, weight, bias, add_value):
    y = jnp.dot(x, weight, preferred_element_type=jnp.float32)
    b = (bias.astype(jnp.float32) + add_value.astype(jnp.float32))[None, :]
    return _epilogue(y, b, x.dtype, R)
