"""KernelBench workloads 35k-50k: upstream shapes at full size, and exact semantics at the small size.

Each small-size check compares the jitted workload (bf16 inputs, bf16 math, as the harness runs it)
with an independent NumPy float64 oracle written from the spec (explicit GEMMs, im2col convolutions,
explicit norm formulas); the oracle only uses the module's create_inputs, never its workload.

Tolerances: the workload rounds the GEMM output and every elementwise step to bf16 (unit roundoff
2^-9 = 0.2 %), so a correct result differs from the float64 oracle by a few tenths of a percent per
element, more where a subtraction cancels (y - rowmax, GroupNorm's y - mean: about 1-3 % of the
normalised value). Measured: relative L2 error 0.1-0.7 %, worst element 0.2-2 % of max |ref|. We require
relative L2 error <= 2 % overall and every element within 5 % of the output's max |ref|. A wrong
transpose, a missing bias, a wrong constant or a wrong axis all give errors of order 100 %.
"""

from __future__ import annotations

import importlib
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

B, I, O = 4096, 8192, 8192  # noqa: E741  upstream's names (batch, in, out features)

# Full-size inputs (shape per input) and output shape, from the original JAXBench.
FULL = {
    "35k_Gemm_Scaling_Hardtanh_GELU": ([(B, I), (I, O), (O,)], (B, O)),
    "36k_Matmul_Sigmoid_Sum": ([(B, I), (I, O), (O,)], (B, 1)),
    "37k_Matmul_Swish_Scaling": ([(B, I), (I, O), (O,)], (B, O)),
    "38k_Matmul_Dropout_Softmax": ([(B, I), (O, I), (O,)], (B, O)),
    "39k_Conv2d_GELU_GlobalAvgPool": ([(128, 8, 256, 256), (64, 8, 3, 3), (64,)], (128, 64)),
    "40k_Gemm_GroupNorm_Min_BiasAdd": ([(B, I), (O, I), (O,), (O,), (O,), (1, O, 1, 1)], (1, O, B, 1)),
    "41k_Gemm_Add_ReLU": ([(B, I), (I, O), (O,)], (B, O)),
    "42k_Gemm_Max_Subtract_GELU": ([(B, I), (I, O), (O,)], (B, O)),
    "43k_Gemm_BatchNorm_Scaling_Softmax": ([(B, I), (I, O), (O,), (O,), (O,), (O,), (O,), (1,)], (B, O)),
    "44k_Matmul_Divide_GELU": ([(B, I), (I, O), (O,)], (B, O)),
    "45k_Gemm_GroupNorm_Swish_Multiply_Swish": ([(B, I), (O, I), (O,), (O,), (O,), (O,)], (B, O)),
    "46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp": (
        [(128, 8, 128, 128), (64, 8, 3, 3), (64,), (64,), (64,)],
        (128, 1, 126, 126),
    ),
    "47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh": ([(B, I), (I, O), (O,), (O,)], (B, O)),
    "48k_Matmul_BatchNorm_BiasAdd_Divide_Swish": ([(B, I), (I, O), (O,), (O,), (O,), (O,), (O,), (1,)], (B, O)),
    "49k_Matmul_AvgPool_GELU_Scale_Max": ([(B, I), (I, O), (O,)], (B,)),
    "50k_Matmul_GELU_Softmax": ([(B, I), (I, O), (O,)], (B, O)),
}


def _mod(wid: str):
    return importlib.import_module(f"workloads.{wid}")


# ---- float64 building blocks, written from the formulas ----


def gelu_tanh(z):
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def softmax_rows(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def group_norm_rows(y, group_size, eps=1e-5):
    """Normalise each run of `group_size` consecutive features of each row (biased variance)."""
    n, c = y.shape
    g = y.reshape(n, c // group_size, group_size)
    mu = g.sum(-1, keepdims=True) / group_size
    var = ((g - mu) ** 2).sum(-1, keepdims=True) / group_size
    return ((g - mu) / np.sqrt(var + eps)).reshape(n, c)


def conv2d_valid_im2col(x, w, b):
    """NCHW x, OIHW w: gather every k x k patch (im2col), then one matrix product per output pixel."""
    patches = sliding_window_view(x, w.shape[2:], axis=(2, 3))  # (N, C, Ho, Wo, kh, kw)
    cols = patches.transpose(0, 2, 3, 1, 4, 5).reshape(*patches.shape[0:1], *patches.shape[2:4], -1)
    out = cols @ w.reshape(w.shape[0], -1).T + b  # (N, Ho, Wo, O)
    return out.transpose(0, 3, 1, 2)


# ---- oracles: inputs as float64 arrays -> float64 output ----


def o35(x, w, b):
    return gelu_tanh(np.clip((x @ w + b) * 0.5, -2.0, 2.0))


def o36(x, w, b):
    return sigmoid(x @ w + b).sum(axis=1, keepdims=True)


def o37(x, w, b):
    y = x @ w + b
    return 2.0 * y * sigmoid(y)


def o38(x, w, b):
    return softmax_rows(np.einsum("bi,oi->bo", x, w) + b)


def o39(x, w, b):
    y = gelu_tanh(conv2d_valid_im2col(x, w, b))
    return y.mean(axis=(2, 3))


def o40(x, w, lb, gw, gb, bias):
    y = group_norm_rows(np.einsum("bi,oi->bo", x, w) + lb, 16) * gw + gb
    return y.min(axis=1)[None, None, :, None] + bias


def o41(x, w, b):
    return np.maximum(x @ w + b, 0.0)


def o42(x, w, b):
    y = x @ w + b
    return gelu_tanh(y - y.max(axis=1, keepdims=True))


def o43(x, w, b, s, bb, m, v, sc):
    y = x @ w + b
    return softmax_rows(sc * (s * (y - m) / np.sqrt(v + 1e-5) + bb))


def o44(x, w, b):
    return gelu_tanh((x @ w + b) / 10.0)


def o45(x, w, b, gw, gb, mw):
    y = group_norm_rows(np.einsum("bi,oi->bo", x, w) + b, 32) * gw + gb
    y = y * sigmoid(y) * mw
    return y * sigmoid(y)


def o46(x, w, b, gw, gb):
    xc = conv2d_valid_im2col(x, w, b)  # (N, 64, Ho, Wo)
    n, c, h, wd = xc.shape
    g = xc.reshape(n, 16, c // 16, h * wd)
    mu = g.mean(axis=(2, 3), keepdims=True)
    var = ((g - mu) ** 2).mean(axis=(2, 3), keepdims=True)
    y = ((g - mu) / np.sqrt(var + 1e-5)).reshape(n, c, h, wd) * gw[:, None, None] + gb[:, None, None]
    t = np.tanh(y)
    r = xc + t * np.clip(t + 3.0, 0.0, 6.0) / 6.0
    mx = r.max(axis=1, keepdims=True)
    return mx + np.log(np.exp(r - mx).sum(axis=1, keepdims=True))


def o47(x, w, b, a):
    y = x @ w + b + a
    y = y * sigmoid(y)
    return np.clip(gelu_tanh(np.tanh(y)), -1.0, 1.0)


def o48(x, w, lb, s, bb, m, v, bias):
    y = s * ((x @ w + lb) - m) / np.sqrt(v + 1e-5) + bb
    y = (y + bias) / 1.0
    return y * sigmoid(y)


def o49(x, w, b):
    y = x @ w + b
    pooled = y.reshape(y.shape[0], -1, 16).mean(axis=2)
    return (2.0 * gelu_tanh(pooled)).max(axis=1)


def o50(x, w, b):
    return softmax_rows(gelu_tanh(x @ w + b))


ORACLES = {
    "35k_Gemm_Scaling_Hardtanh_GELU": o35,
    "36k_Matmul_Sigmoid_Sum": o36,
    "37k_Matmul_Swish_Scaling": o37,
    "38k_Matmul_Dropout_Softmax": o38,
    "39k_Conv2d_GELU_GlobalAvgPool": o39,
    "40k_Gemm_GroupNorm_Min_BiasAdd": o40,
    "41k_Gemm_Add_ReLU": o41,
    "42k_Gemm_Max_Subtract_GELU": o42,
    "43k_Gemm_BatchNorm_Scaling_Softmax": o43,
    "44k_Matmul_Divide_GELU": o44,
    "45k_Gemm_GroupNorm_Swish_Multiply_Swish": o45,
    "46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp": o46,
    "47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh": o47,
    "48k_Matmul_BatchNorm_BiasAdd_Divide_Swish": o48,
    "49k_Matmul_AvgPool_GELU_Scale_Max": o49,
    "50k_Matmul_GELU_Softmax": o50,
}
# Outputs that are a large offset plus a small signal (36k: 249 +- 0.8; 46k: 4.3 +- 0.04): the norm-based
# bounds cannot see the signal, so these must also sit within 1.5 bf16 ulps of the float64 value
# (rounding to bf16 alone costs up to 0.5 ulp; measured worst 0.5 ulp for 36k, 0.8 ulp for 46k).
OFFSET_DOMINATED = {"36k_Matmul_Sigmoid_Sum", "46k_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp"}
IDS = sorted(FULL, key=lambda s: int(s.split("k_")[0]))
REL_L2 = 2e-2
REL_MAX = 5e-2


def bf16_ulp(v):
    """Spacing of bfloat16 numbers (8 significant bits) at |v|."""
    return 2.0 ** (np.floor(np.log2(np.maximum(np.abs(v), 1e-30))) - 7)


@pytest.mark.parametrize("wid", IDS)
def test_full_size_shapes(wid):
    mod = _mod(wid)
    in_shapes, out_shape = FULL[wid]
    inputs = jax.eval_shape(lambda: mod.create_inputs(size="full"))
    assert [tuple(a.shape) for a in inputs] == in_shapes
    assert all(a.dtype == jnp.bfloat16 for a in inputs)
    out = jax.eval_shape(mod.workload, *inputs)
    assert tuple(out.shape) == out_shape and out.dtype == jnp.bfloat16
    assert "model" not in mod.CONFIG and mod.CONFIG["name"].split("_", 1)[1] == wid.split("_", 1)[1]
    assert mod.META["source"].startswith("KernelBench L2 #" + mod.CONFIG["name"].split("_")[0])


@pytest.mark.parametrize("wid", IDS)
def test_small_matches_float64_oracle(wid):
    mod = _mod(wid)
    oracle = ORACLES[wid]
    inputs = mod.create_inputs(size="small")
    got = np.asarray(jax.jit(mod.workload)(*inputs), dtype=np.float64)
    ref = oracle(*[np.asarray(a, dtype=np.float64) for a in inputs])
    assert got.shape == ref.shape
    rel_l2 = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert rel_l2 <= REL_L2, f"relative L2 error {rel_l2:.3g}"
    worst = np.abs(got - ref).max() / np.abs(ref).max()
    assert worst <= REL_MAX, f"worst element error {worst:.3g} of max |ref|"
    if wid in OFFSET_DOMINATED:
        ulps = float((np.abs(got - ref) / bf16_ulp(ref)).max())
        assert ulps <= 1.5, f"{ulps:.2f} bf16 ulps from the float64 value"


@pytest.mark.parametrize("wid", IDS)
def test_seeds(wid):
    mod = _mod(wid)
    a = mod.create_inputs(size="small")
    b = mod.create_inputs(size="small")
    c = mod.create_inputs(size="small", seed=1)
    for u, v in zip(a, b, strict=True):
        np.testing.assert_array_equal(np.asarray(u, np.float32), np.asarray(v, np.float32))

    def constant(u):  # ones/zeros inits
        return bool(np.isin(np.asarray(u, np.float32), (0.0, 1.0)).all())

    random_inputs = [i for i, u in enumerate(a) if not constant(u)]
    assert random_inputs, "no random input"
    for i in random_inputs:  # every drawn input changes with the seed; constants (ones/zeros) stay
        assert not np.array_equal(np.asarray(a[i], np.float32), np.asarray(c[i], np.float32)), f"input {i}"
