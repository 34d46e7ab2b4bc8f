"""18k_Conv2D_ReLU_BiasAdd: 3x3 VALID conv2d + bias, ReLU, then a per-channel bias (KernelBench L2 #1).

Upstream: JAXBench/benchmark/18k_Conv2D_ReLU_BiasAdd/baseline.py. x (N, Cin, H, W) ~ U[0,1) from
split(key(0))[0]; from split(key(0xBADC0DE), 3) in this order: weight (Cout, Cin, k, k) OIHW,
conv_bias (Cout,) and bias (Cout, 1, 1), each N(0,1)*0.02. The conv runs NHWC/HWIO, as upstream's does;
the output is NCHW (N, Cout, H-k+1, W-k+1).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "1_Conv2D_ReLU_BiasAdd",
    "batch_size": 128,
    "in_channels": 64,
    "out_channels": 128,
    "kernel_size": 3,
    # Not upstream CONFIG keys: upstream hard-codes H = W = 128 in create_inputs; listed so SMALL can shrink them.
    "height": 128,
    "width": 128,
}
# small: same channels and kernel, batch 2 and a 16x16 image (output 2x128x14x14).
SMALL = {"batch_size": 2, "height": 16, "width": 16}
META = {"family": "conv2d + epilogue", "source": "KernelBench L2 #1"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    ka, kb, kc = jax.random.split(base_key(0xBADC0DE, seed), 3)
    k1, _ = jax.random.split(base_key(0, seed))
    x = uniform(k1, (n, cin, cfg["height"], cfg["width"]), dtype)
    weight = normal(ka, (cout, cin, k, k), dtype) * 0.02
    conv_bias = normal(kb, (cout,), dtype) * 0.02
    bias = normal(kc, (cout, 1, 1), dtype) * 0.02
    return x, weight, conv_bias, bias


def workload(x, weight, conv_bias, bias):
    y = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 1)), jnp.transpose(weight, (2, 3, 1, 0)),
        window_strides=(1, 1), padding="VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    y = jax.nn.relu(y + conv_bias.reshape(1, 1, 1, -1))
    return jnp.transpose(y, (0, 3, 1, 2)) + bias
