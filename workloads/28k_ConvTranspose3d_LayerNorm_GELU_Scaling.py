"""28k_ConvTranspose3d_LayerNorm_GELU_Scaling: ConvTranspose3d (k4 s2 p1), LayerNorm, GELU, x1.0 (KB L2 #34).

Upstream: JAXBench/benchmark/28k_ConvTranspose3d_LayerNorm_GELU_Scaling/baseline.py. No rand_key: split(key(0), 2)
gives x (N, Cin, D, H, W) ~ U[0,1) and conv_weight (Cin, Cout, k, k, k) ~ N(0,1) **unscaled** (PyTorch's
ConvTranspose layout); conv_bias = zeros(Cout), ln_weight = ones(Cout), ln_bias = zeros(Cout).

The transposed conv is computed as upstream does it: zero-insert (stride - 1) between input elements, pad
k - 1 - padding on each side, and run a stride-1 conv with the spatially flipped kernel ('DHWOI'). Output
spatial size is (in - 1) * stride - 2 * padding + k, i.e. 2x the input here: (N, Cout, 2D, 2H, 2W).

Upstream quirk, kept exactly: the "LayerNorm" normalizes over the **last axis of the NCDHW output (W)**, not
over channels, with ln_weight/ln_bias (length Cout) broadcast along W, which only works because 2W == Cout
at full size (64). SMALL keeps 2W == Cout for that reason. GELU is jax.nn.gelu (tanh approximation).
"""

import jax
import jax.numpy as jnp
from jax import lax

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "34_ConvTranspose3d_LayerNorm_GELU_Scaling",
    "batch_size": 32,
    "in_channels": 32,
    "out_channels": 64,
    "kernel_size": 4,
    "stride": 2,
    "padding": 1,
    "bias": True,
    "eps": 1e-05,
    "scaling_factor": 1.0,
    # Not upstream CONFIG keys: upstream hard-codes D, H, W = 16, 32, 32 in create_inputs;
    # listed so SMALL can shrink them.
    "depth": 16,
    "height": 32,
    "width": 32,
}
# small: same channels, kernel, stride and padding; batch 2 and a 2x4x32 volume (output 2x64x4x8x64);
# W stays 32 so that the output width (2W) still equals out_channels, as the LayerNorm affine needs.
SMALL = {"batch_size": 2, "depth": 2, "height": 4}
META = {"family": "transposed conv3d + LN + GELU", "source": "KernelBench L2 #34"}
# audit (docs/audit.md): a correct f32 computation differs by up to 0.031; MaxKernel uses atol 0.05.
TOLERANCE = {"atol": 0.05}


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    k1, k2 = jax.random.split(base_key(0, seed), 2)
    x = uniform(k1, (n, cin, cfg["depth"], cfg["height"], cfg["width"]), dtype)
    conv_weight = normal(k2, (cin, cout, k, k, k), dtype)
    conv_bias = jnp.zeros((cout,), dtype=dtype)
    ln_weight = jnp.ones((cout,), dtype=dtype)
    ln_bias = jnp.zeros((cout,), dtype=dtype)
    return x, conv_weight, conv_bias, ln_weight, ln_bias


def workload(x, conv_weight, conv_bias, ln_weight, ln_bias):
    stride, padding, eps = CONFIG["stride"], CONFIG["padding"], CONFIG["eps"]
    k = conv_weight.shape[2]
    x = jnp.transpose(x, (0, 2, 3, 4, 1))  # NCDHW -> NDHWC
    kernel = jnp.flip(jnp.transpose(conv_weight, (2, 3, 4, 1, 0)), axis=(0, 1, 2))  # (k, k, k, Cout, Cin)
    n, d, h, w, c = x.shape
    dilated = jnp.zeros((n, (d - 1) * stride + 1, (h - 1) * stride + 1, (w - 1) * stride + 1, c), dtype=x.dtype)
    dilated = dilated.at[:, ::stride, ::stride, ::stride, :].set(x)
    pad = k - 1 - padding
    y = lax.conv_general_dilated(dilated, kernel, window_strides=(1, 1, 1), padding=((pad, pad),) * 3,
                                 dimension_numbers=("NDHWC", "DHWOI", "NDHWC"))
    y = jnp.transpose(y + conv_bias.reshape(1, 1, 1, 1, -1), (0, 4, 1, 2, 3))  # -> NCDHW
    mean = jnp.mean(y, axis=-1, keepdims=True)
    var = jnp.mean((y - mean) ** 2, axis=-1, keepdims=True)
    y = (y - mean) / jnp.sqrt(var + eps) * ln_weight + ln_bias
    return jax.nn.gelu(y) * CONFIG["scaling_factor"]
