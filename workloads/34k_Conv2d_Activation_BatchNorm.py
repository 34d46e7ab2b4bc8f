"""34k_Conv2d_Activation_BatchNorm: 3x3 VALID conv2d + bias, Mish, training-mode BatchNorm2d (KB L2 #52).

Upstream: JAXBench/benchmark/34k_Conv2d_Activation_BatchNorm/baseline.py. No rand_key: split(key(0), 3) gives
x (N, Cin, H, W) ~ U[0,1), conv_weight (Cout, Cin, k, k) ~ N(0,1) and conv_bias (Cout,) ~ N(0,1), both
**unscaled**; bn_weight = ones(Cout), bn_bias = zeros(Cout). Mish as tanh(jax.nn.softplus(y)) * y; BatchNorm
uses the batch statistics over (N, H, W), biased variance, eps 1e-5. Output NCHW (N, Cout, H-k+1, W-k+1).
"""

import jax
import jax.numpy as jnp
from jax import lax

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "52_Conv2d_Activation_BatchNorm",
    "batch_size": 64,
    "in_channels": 64,
    "out_channels": 128,
    "kernel_size": 3,
    # Not upstream CONFIG keys: upstream hard-codes H = W = 128 in create_inputs; listed so SMALL can shrink them.
    "height": 128,
    "width": 128,
}
# small: same channels and kernel; batch 4 and a 16x16 image (output 4x128x14x14, BN over 784 values).
SMALL = {"batch_size": 4, "height": 16, "width": 16}
META = {"family": "conv2d + Mish + training-mode BN", "source": "KernelBench L2 #52"}
# audit (docs/audit.md): a correct f32 computation differs by up to 0.125 at |y| ~ 7.6; MaxKernel uses atol 0.1.
# certificate at the full size (docs/audit.md, docs/certificates/full.jsonl; issue 40): with atol 0.1 the honest
# float32 implementation failed (17 of 130,056,192 elements, seeds None, 11, 12): it needs atol 0.48. Set to 3x that
# (bench.audit.certificate.calibrated); every shortcut needs atol 639 or more and misses rel L2 0.05 by 20x.
TOLERANCE = {"atol": 1.5}
# The small size's own bound: there honest code (bench audit --certificate --size small) needs atol 0.049,
# and this is 3x that, never below the default (the full size's long bf16 sums are what TOLERANCE is for).
SMALL_TOLERANCE = {"atol": 0.15}

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    k1, k2, k3 = jax.random.split(base_key(0, seed), 3)
    x = uniform(k1, (n, cin, cfg["height"], cfg["width"]), dtype)
    conv_weight = normal(k2, (cout, cin, k, k), dtype)
    conv_bias = normal(k3, (cout,), dtype)
    bn_weight = jnp.ones((cout,), dtype=dtype)
    bn_bias = jnp.zeros((cout,), dtype=dtype)
    return x, conv_weight, conv_bias, bn_weight, bn_bias


def workload(x, conv_weight, conv_bias, bn_weight, bn_bias):
    y = lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(conv_weight, (2, 3, 1, 0)),
        window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jnp.transpose(y + conv_bias.reshape(1, 1, 1, -1), (0, 3, 1, 2))
    y = jnp.tanh(jax.nn.softplus(y)) * y
    mean = jnp.mean(y, axis=(0, 2, 3), keepdims=True)
    var = jnp.mean((y - mean) ** 2, axis=(0, 2, 3), keepdims=True)
    return (y - mean) / jnp.sqrt(var + EPS) * bn_weight.reshape(1, -1, 1, 1) + bn_bias.reshape(1, -1, 1, 1)
