"""3p_MLA_Attention: DeepSeek-V3 MLA with the attention core on the Pallas flash-attention kernel.

The projections and RoPE stay in XLA and follow the workload's math (cos/sin cast to the input dtype,
rotate-half on the rope dims, k_rope shared by all heads). The q/k head dim (nope + rope = 192) and the
v head dim (128) are zero-padded to one common multiple of 128 (256 at full size) for the kernel, as upstream's
optimized kernel did; zero padding changes no dot product. The output is sliced back before o_proj.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax.numpy as jnp

from pallas_refs.flash_attention import REFERENCE as FLASH
from pallas_refs.flash_attention import causal_flash
from pallas_refs.reference import Reference

ROPE_THETA = 10000.0


def _pad_last(x, to: int):
    pad = to - x.shape[-1]
    return x if pad == 0 else jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(0, pad)])


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return jnp.concatenate([x1 * cos - x2 * sin, x2 * cos + x1 * sin], axis=-1)


def _build(params: Mapping[str, int]):
    def workload(x, q_down, q_up, kv_down, k_up, v_up, o_proj):
        b, s, _ = x.shape
        kv_rank = k_up.shape[0]
        rope = kv_down.shape[1] - kv_rank
        heads = (q_up.shape[1] - k_up.shape[1]) // rope
        nope, vd = k_up.shape[1] // heads, v_up.shape[1] // heads
        q = ((x @ q_down) @ q_up).reshape(b, s, heads, nope + rope)
        kv = x @ kv_down
        latent, k_rope = kv[..., :kv_rank], kv[..., kv_rank:]
        k_nope = (latent @ k_up).reshape(b, s, heads, nope)
        v = (latent @ v_up).reshape(b, s, heads, vd)
        freqs = 1.0 / (ROPE_THETA ** (jnp.arange(0, rope, 2, dtype=jnp.float32) / rope))
        angles = jnp.outer(jnp.arange(s, dtype=jnp.float32), freqs)
        cos, sin = jnp.cos(angles).astype(x.dtype)[None, :, None, :], jnp.sin(angles).astype(x.dtype)[None, :, None, :]
        q_full = jnp.concatenate([q[..., :nope], _rope(q[..., nope:], cos, sin)], axis=-1)
        k_rot = jnp.broadcast_to(_rope(k_rope[:, :, None, :], cos, sin), (b, s, heads, rope))
        k_full = jnp.concatenate([k_nope, k_rot], axis=-1)
        # the kernel wants one head dim for q, k and v: the larger one rounded up to a lane multiple (256 at full size)
        pad = -(-max(nope + rope, vd) // 128) * 128

        def to_bhsd(t):
            return _pad_last(t, pad).transpose(0, 2, 1, 3)

        out = causal_flash(to_bhsd(q_full), to_bhsd(k_full), to_bhsd(v),
                           (nope + rope) ** -0.5, params)
        out = out[..., :vd].transpose(0, 2, 1, 3).reshape(b, s, heads * vd)
        return out @ o_proj
    return workload


REFERENCE = Reference(
    workload="3p_MLA_Attention",
    kernel="jax.experimental.pallas.ops.tpu.flash_attention.flash_attention (head dim padded to 256)",
    defaults=dict(FLASH.defaults), space=FLASH.space, small_space=FLASH.small_space,
    build=_build, constraints=FLASH.constraints,
)


def workload(*inputs):
    """The workload's signature, with the current chip's tuned block sizes."""
    return REFERENCE(*inputs)
