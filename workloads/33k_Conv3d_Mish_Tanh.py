"""33k_Conv3d_Mish_Tanh: 3x3x3 VALID conv3d + bias, Mish, tanh (KernelBench L2 #47).

Upstream: JAXBench/benchmark/33k_Conv3d_Mish_Tanh/baseline.py. x (N, Cin, D, H, W) ~ U[0,1) from key(0);
from split(key(0xBADC0DE), 2): weight (Cout, Cin, k, k, k) and bias (Cout,), N(0,1)*0.02. The conv runs
NDHWC/DHWIO; Mish uses upstream's naive softplus log(1 + exp(y)) (not jax.nn.softplus); then tanh; output
NCDHW (N, Cout, D-k+1, H-k+1, W-k+1).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "47_Conv3d_Mish_Tanh",
    "batch_size": 16,
    "in_channels": 32,
    "out_channels": 64,
    "kernel_size": 3,
    # Not upstream CONFIG keys: upstream hard-codes D, H, W = 32, 64, 64 in create_inputs;
    # listed so SMALL can shrink them.
    "depth": 32,
    "height": 64,
    "width": 64,
}
# small: same channels and kernel; batch 2 and an 8x16x16 volume (output 2x64x6x14x14).
SMALL = {"batch_size": 2, "depth": 8, "height": 16, "width": 16}
META = {"family": "conv3d + epilogue", "source": "KernelBench L2 #47"}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    ka, kb = jax.random.split(base_key(0xBADC0DE, seed), 2)
    x = uniform(base_key(0, seed), (n, cin, cfg["depth"], cfg["height"], cfg["width"]), dtype)
    weight = normal(ka, (cout, cin, k, k, k), dtype) * 0.02
    bias = normal(kb, (cout,), dtype) * 0.02
    return x, weight, bias


def workload(x, weight, bias):
    y = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 4, 1)), jnp.transpose(weight, (2, 3, 4, 1, 0)),
        window_strides=(1, 1, 1), padding="VALID", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    y = y + bias.reshape(1, 1, 1, 1, -1)
    y = y * jnp.tanh(jnp.log(1 + jnp.exp(y)))
    return jnp.transpose(jnp.tanh(y), (0, 4, 1, 2, 3))
