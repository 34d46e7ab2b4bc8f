"""46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp: conv, GroupNorm, tanh, hardswish,
residual add of the conv output, then logsumexp over channels; output (N, 1, H-2, W-2).

Upstream: KernelBench L2 #92. x (N, C_in, H, W) ~ U[0, 1) from key(0); conv_weight (C_out, C_in, k, k)
and conv_bias ~ N(0, 1) * 0.02 from key(42) split 2; gn_weight ones, gn_bias zeros. GroupNorm over
(C/G, H, W) with `groups` groups (biased variance, eps 1e-5). hardswish(t) = t * min(max(t + 3, 0), 6) / 6.
Note: the conv output is small (std about 0.1), so the output is about log(C_out) = 4.16 plus a
per-pixel term of order 0.1.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp",
    "batch_size": 128,
    "in_channels": 8,
    "out_channels": 64,
    "kernel_size": 3,
    "groups": 16,
    # Not upstream CONFIG keys: upstream hard-codes H = W = 128 in create_inputs; listed so SMALL can shrink them.
    "height": 128,
    "width": 128,
}
# small: same channels, kernel and groups, batch 4 and 32x32 pixels (x is 64 KiB).
SMALL = {"batch_size": 4, "height": 32, "width": 32}
META = {"family": "conv2d + GroupNorm + channel logsumexp", "source": "KernelBench L2 #92"}
EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    ka, kb = jax.random.split(base_key(42, seed), 2)
    k, c_out = cfg["kernel_size"], cfg["out_channels"]
    x = jax.random.uniform(base_key(0, seed), (cfg["batch_size"], cfg["in_channels"], cfg["height"], cfg["width"]), dtype=dtype)
    conv_weight = jax.random.normal(ka, (c_out, cfg["in_channels"], k, k), dtype=dtype) * 0.02
    conv_bias = jax.random.normal(kb, (c_out,), dtype=dtype) * 0.02
    gn_weight = jnp.ones((c_out,), dtype=dtype)
    gn_bias = jnp.zeros((c_out,), dtype=dtype)
    return x, conv_weight, conv_bias, gn_weight, gn_bias


def workload(x, conv_weight, conv_bias, gn_weight, gn_bias):
    xc = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(conv_weight, (2, 3, 1, 0)),
        window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    xc = jnp.transpose(xc + conv_bias.reshape(1, 1, 1, -1), (0, 3, 1, 2))
    n, c, h, w = xc.shape
    groups = CONFIG["groups"]
    g = xc.reshape(n, groups, c // groups, h, w)
    mean = jnp.mean(g, axis=(2, 3, 4), keepdims=True)
    var = jnp.var(g, axis=(2, 3, 4), keepdims=True)
    y = ((g - mean) / jnp.sqrt(var + EPS)).reshape(n, c, h, w)
    y = y * gn_weight.reshape(1, -1, 1, 1) + gn_bias.reshape(1, -1, 1, 1)
    t = jnp.tanh(y)
    hs = t * jnp.minimum(jnp.maximum(t + 3, 0), 6) / 6
    return jax.scipy.special.logsumexp(xc + hs, axis=1, keepdims=True)
