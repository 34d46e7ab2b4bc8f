"""22k_Conv2d_InstanceNorm_Divide: 3x3 VALID conv2d + bias, InstanceNorm, then / 2.0 (KernelBench L2 #17).

Upstream: JAXBench/benchmark/22k_Conv2d_InstanceNorm_Divide/baseline.py. x (N, Cin, H, W) ~ U[0,1) from
key(0); from split(key(0xBADC0DE), 2): weight (Cout, Cin, k, k) OIHW and conv_bias (Cout,), N(0,1)*0.02;
in_weight = ones(Cout), in_bias = zeros(Cout). InstanceNorm: per (sample, channel) over (H, W), biased
variance, eps 1e-5, then the affine. divide_by is a CONFIG constant. Output NCHW (N, Cout, H-k+1, W-k+1).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "17_Conv2d_InstanceNorm_Divide",
    "batch_size": 128,
    "in_channels": 64,
    "out_channels": 128,
    "kernel_size": 3,
    "divide_by": 2.0,
    # Not upstream CONFIG keys: upstream hard-codes H = W = 128 in create_inputs; listed so SMALL can shrink them.
    "height": 128,
    "width": 128,
}
# small: same channels and kernel, batch 2 and a 16x16 image (output 2x128x14x14).
SMALL = {"batch_size": 2, "height": 16, "width": 16}
META = {"family": "conv2d + InstanceNorm", "source": "KernelBench L2 #17"}
# audit (docs/audit.md): a correct f32 computation differs by up to 0.031 (bf16 ulp at |y| ~ 0.76).
TOLERANCE = {"atol": 0.05}

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = uniform(base_key(0, seed), (n, cin, cfg["height"], cfg["width"]), dtype)
    weight = normal(ka, (cout, cin, k, k), dtype) * 0.02
    conv_bias = normal(kb, (cout,), dtype) * 0.02
    in_weight = jnp.ones((cout,), dtype=dtype)
    in_bias = jnp.zeros((cout,), dtype=dtype)
    return x, weight, conv_bias, in_weight, in_bias


def workload(x, weight, conv_bias, in_weight, in_bias):
    y = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(weight, (2, 3, 1, 0)),
        window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jnp.transpose(y + conv_bias.reshape(1, 1, 1, -1), (0, 3, 1, 2))
    mean = jnp.mean(y, axis=(2, 3), keepdims=True)
    var = jnp.var(y, axis=(2, 3), keepdims=True)
    y = (y - mean) / jnp.sqrt(var + EPS)
    y = y * in_weight.reshape(1, -1, 1, 1) + in_bias.reshape(1, -1, 1, 1)
    return y / CONFIG["divide_by"]
