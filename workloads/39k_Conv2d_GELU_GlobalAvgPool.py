"""39k_Conv2d_GELU_GlobalAvgPool: VALID 3x3 conv + bias, GELU, then the mean over all output pixels.

Upstream: KernelBench L2 #67. x (N, C_in, H, W) NCHW ~ U[0, 1) from key(0); weight (C_out, C_in, k, k)
OIHW and bias ~ N(0, 1) * 0.02 from key(0xBADC0DE) split 2. Computed as upstream does: NCHW -> NHWC,
HWIO kernel, VALID stride 1, + bias, GELU, mean over (H, W); output (N, C_out).
Degeneracy (docs/audit.md): the mean over 254^2 i.i.d. pixels makes out[n, c] nearly a function of c alone
(variation across n about 1e-3), so computing one batch element and broadcasting it passes a loose
gate. The variation across n shrinks as 1/sqrt(H*W), so it is larger at the small size.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "67_Conv2d_GELU_GlobalAvgPool",
    "batch_size": 128,
    "in_channels": 8,
    "out_channels": 64,
    "kernel_size": 3,
    # Not upstream CONFIG keys: upstream hard-codes H = W = 256 in create_inputs; listed so SMALL can shrink them.
    "height": 256,
    "width": 256,
}
# small: same channels and kernel, batch 4 and 32x32 pixels (x is 64 KiB).
SMALL = {"batch_size": 4, "height": 32, "width": 32}
META = {"family": "conv2d + global average pool", "source": "KernelBench L2 #67"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (batch mean, one row broadcast, subsampled batch, audit shortcut: batch element 0 broadcast to the
# batch) / honest code failed (none). Honest implementations (float32 inputs, bf16-accumulating; small size, seeds
# None, 11, 12) reach rel L2 0.0011 and need atol 4.7e-07: both bounds are set to 3x that (rel L2 at least half a
# bfloat16 epsilon).
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.004}
# the trivial-solution certificate cannot be closed at the full size on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    "At the full size (254 x 254 pixels per image) the pooled outputs barely vary across the batch: the batch mean "
    "(rel L2 0.0034) and every 2nd element copied (0.0031) are within 3x of an honest float32 implementation "
    "(0.0012), so no tolerance with the project's 3x margin rejects them (closed at the small size); what is left "
    "is the stress trial (x x 8), shown at the small size to fail element 0 broadcast to the batch."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    kw, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    k = cfg["kernel_size"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_channels"], cfg["height"], cfg["width"]), dtype=dtype)
    weight = jax.random.normal(kw, (cfg["out_channels"], cfg["in_channels"], k, k), dtype=dtype) * 0.02
    bias = jax.random.normal(kb, (cfg["out_channels"],), dtype=dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(weight, (2, 3, 1, 0)),
        window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.gelu(y + bias.reshape(1, 1, 1, -1))
    return jnp.mean(y, axis=(1, 2))
