"""25k_Conv3d_GroupNorm_Mean: 3x3x3 VALID conv3d + bias, GroupNorm(8), mean per sample (KernelBench L2 #23).

Upstream: JAXBench/benchmark/25k_Conv3d_GroupNorm_Mean/baseline.py. x (N, Cin, D, H, W) ~ U[0,1) from key(0);
from split(key(42), 3): weight (Cout, Cin, k, k, k), conv_bias (Cout,) and beta (Cout,), N(0,1)*0.02;
gamma = ones(Cout). The conv runs NDHWC/DHWIO; GroupNorm over (C/G, D, H, W) per group, biased variance,
eps 1e-5, affine; then the mean over (C, D, H, W). Output (N,).

Degenerate (spec section 5), kept exactly as upstream: every normalized group has mean 0, so with gamma = 1
the output is mean(beta) for every sample, about 0.004, independent of x and the conv; all zeros passes
atol 1e-2. num_groups is a CONFIG constant (SMALL keeps it, and the 24 channels it divides).
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, normal, sized_config, uniform

CONFIG = {
    "name": "23_Conv3d_GroupNorm_Mean",
    "batch_size": 128,
    "in_channels": 3,
    "out_channels": 24,
    "kernel_size": 3,
    "num_groups": 8,
    # Not upstream CONFIG keys: upstream hard-codes D, H, W = 24, 32, 32 in create_inputs;
    # listed so SMALL can shrink them.
    "depth": 24,
    "height": 32,
    "width": 32,
}
# small: same channels, kernel and groups; batch 2 and an 8x16x16 volume (conv output 2x24x6x14x14).
SMALL = {"batch_size": 2, "depth": 8, "height": 16, "width": 16}
META = {"family": "conv3d + GroupNorm + mean", "source": "KernelBench L2 #23"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (reference mean, batch mean) / honest code failed (float32 inputs). Honest implementations (float32
# inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 0.055 and need atol 0.00026: both bounds are
# set to 3x that (rel L2 at least half a bfloat16 epsilon).
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.17}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; issue 40):
DEGENERATE = (
    'The output is the mean of a GroupNorm output, i.e. mean(beta) plus a remainder smaller than an '
    "honest float32 implementation's own difference from the baseline: a constant mean(beta) is closer to"
    ' the baseline than honest code (certificate: rel L2 0.039 vs 0.055).'
)

EPS = 1e-5


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    n, cin, cout, k = cfg["batch_size"], cfg["in_channels"], cfg["out_channels"], cfg["kernel_size"]
    ka, kb, kc = jax.random.split(base_key(42, seed), 3)
    x = uniform(base_key(0, seed), (n, cin, cfg["depth"], cfg["height"], cfg["width"]), dtype)
    weight = normal(ka, (cout, cin, k, k, k), dtype) * 0.02
    conv_bias = normal(kb, (cout,), dtype) * 0.02
    gamma = jnp.ones((cout,), dtype=dtype)
    beta = normal(kc, (cout,), dtype) * 0.02
    return x, weight, conv_bias, gamma, beta


def workload(x, weight, conv_bias, gamma, beta):
    y = jax.lax.conv_general_dilated(
        jnp.transpose(x, (0, 2, 3, 4, 1)), jnp.transpose(weight, (2, 3, 4, 1, 0)),
        window_strides=(1, 1, 1), padding="VALID", dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))
    y = jnp.transpose(y + conv_bias.reshape(1, 1, 1, 1, -1), (0, 4, 1, 2, 3))
    n, c, d, h, w = y.shape
    g = CONFIG["num_groups"]
    y = y.reshape(n, g, c // g, d, h, w)
    mean = jnp.mean(y, axis=(2, 3, 4, 5), keepdims=True)
    var = jnp.var(y, axis=(2, 3, 4, 5), keepdims=True)
    y = ((y - mean) / jnp.sqrt(var + EPS)).reshape(n, c, d, h, w)
    y = y * gamma.reshape(1, -1, 1, 1, 1) + beta.reshape(1, -1, 1, 1, 1)
    return jnp.mean(y, axis=(1, 2, 3, 4))
