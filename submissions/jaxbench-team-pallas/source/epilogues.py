"""Per-workload epilogues of the team submission: (workload id, kernel function, body). Single source for generate.py.

Each body is the `workload` function of kernels/<id>.py; it takes the workload's inputs in order and
calls `fused_matmul` / `fused_matmul_rowsum` (from fused_matmul.py, inlined into every kernel file).
Constants are the workload CONFIG values (KernelBench's scalar hyper-parameters).
"""

KERNELS: dict[str, str] = {
    "19k_Matmul_Subtract_Multiply_ReLU": '''def workload(x, weight, bias):
    # y - 2.0 cancels most of y (about 2 +- 1), so the workload's result is dominated by its rounding of each
    # intermediate to the input dtype; we round the same intermediates, in VMEM, to compute the same function.
    def epilogue(y, b):
        r = lambda t: t.astype(x.dtype).astype(jnp.float32)
        return jnp.maximum(r(r(r(y) + b) - 2.0) * 1.5, 0.0)

    return fused_matmul(x, weight, (bias,), epilogue=epilogue)
''',
    "20k_Gemm_Multiply_LeakyReLU": '''def _leaky(y, b):
    y = (y + b) * 2.0
    return jnp.where(y >= 0, y, y * 0.1)


def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=_leaky)
''',
    "21k_Gemm_Divide_Sum_Scaling": '''def workload(x, weight):
    # weight is (hidden, input): contract on its second axis; sum(y / 2) * 1.5 per row, reduced in VMEM
    return fused_matmul_rowsum(x, weight, epilogue=lambda y: y * 0.75, transpose_w=True)
''',
    "27k_Matmul_Mish_Mish": '''def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=lambda y, b: mish(mish(y + b)))
''',
    "30k_Matmul_Scaling_ResidualAdd": '''def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=lambda y, b: (y + b) * 1.5)
''',
    "35k_Gemm_Scaling_Hardtanh_GELU": '''def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=lambda y, b: gelu_tanh(jnp.clip((y + b) * 0.5, -2.0, 2.0)))
''',
    "36k_Matmul_Sigmoid_Sum": '''def workload(x, weight, bias):
    return fused_matmul_rowsum(x, weight, (bias,), epilogue=lambda y, b: jax.nn.sigmoid(y + b))
''',
    "37k_Matmul_Swish_Scaling": '''def _swish_scaled(y, b):
    y = y + b
    return y * jax.nn.sigmoid(y) * 2.0


def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=_swish_scaled)
''',
    "41k_Gemm_Add_ReLU": '''def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=lambda y, b: jnp.maximum(y + b, 0.0))
''',
    "44k_Matmul_Divide_GELU": '''def workload(x, weight, bias):
    return fused_matmul(x, weight, (bias,), epilogue=lambda y, b: gelu_tanh((y + b) / 10.0))
''',
    "47k_Matmul_Add_Swish_Tanh_GELU_Hardtanh": '''def _chain(y, b, a):
    y = y + b + a
    y = y * jax.nn.sigmoid(y)
    return jnp.clip(gelu_tanh(jnp.tanh(y)), -1.0, 1.0)


def workload(x, weight, bias, add_value):
    return fused_matmul(x, weight, (bias, add_value), epilogue=_chain)
''',
    "23k_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp": '''def workload(x, weight, bias):
    # after the row sum every later op (max, mean, two log-sum-exps) reduces an axis of size 1: the identity
    return fused_matmul_rowsum(x, weight, (bias,), epilogue=lambda y, b: y + b, transpose_w=True)
''',
    "24k_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish": '''def workload(x, weight, bias):
    # the output is about lse**2 (~40), where the workload's input-dtype arithmetic (bf16) is off by up to
    # ~0.5 from exact; so after the f32 GEMM we follow its dtype step by step, in VMEM, to compute the same function.
    def epilogue(y, b):
        t = y.astype(x.dtype) + b.astype(x.dtype)
        t = jnp.clip((t * 2.0) + (t * 2.0), -10.0, 10.0)
        top = jnp.max(t, axis=1, keepdims=True)
        lse = (jnp.log(jnp.sum(jnp.exp(t - top), axis=1, keepdims=True)) + top).astype(x.dtype)
        return lse * (lse * jnp.tanh(jnp.logaddexp(lse, 0.0)))

    return fused_matmul_rows(x, weight, (bias,), epilogue=epilogue, out_cols=1, transpose_w=True)
''',
    "38k_Matmul_Dropout_Softmax": '''def workload(x, weight, bias):
    # dropout is inactive in the workload (inference): softmax of the affine output over each row
    return fused_matmul_rows(x, weight, (bias,), epilogue=lambda y, b: softmax_rows(y + b), transpose_w=True)
''',
    "42k_Gemm_Max_Subtract_GELU": '''def _max_subtract_gelu(y, b):
    y = y + b
    return gelu_tanh(y - jnp.max(y, axis=1, keepdims=True))


def workload(x, weight, bias):
    return fused_matmul_rows(x, weight, (bias,), epilogue=_max_subtract_gelu)
''',
    "43k_Gemm_BatchNorm_Scaling_Softmax": '''def workload(x, weight, bias, bn_scale, bn_bias, bn_mean, bn_var, scale):
    n = weight.shape[1]

    def epilogue(y, b, g, beta, mu, var, s):
        return softmax_rows(s * (g * ((y + b - mu) / jnp.sqrt(var + 1e-5)) + beta))

    vectors = (bias, bn_scale, bn_bias, bn_mean, bn_var, jnp.broadcast_to(scale, (n,)))
    return fused_matmul_rows(x, weight, vectors, epilogue=epilogue)
''',
    "48k_Matmul_BatchNorm_BiasAdd_Divide_Swish": '''def workload(x, weight, linear_bias, bn_scale, bn_bias, bn_mean, bn_var, bias):
    n = weight.shape[1]

    def epilogue(y, b, g, beta, mu, var, c):
        y = g * ((y + b - mu) / jnp.sqrt(var + 1e-5)) + beta + c  # divide_value is 1.0
        return y * jax.nn.sigmoid(y)

    vectors = (linear_bias, bn_scale, bn_bias, bn_mean, bn_var, jnp.broadcast_to(bias, (n,)))
    return fused_matmul(x, weight, vectors, epilogue=epilogue)
''',
    "50k_Matmul_GELU_Softmax": '''def workload(x, weight, bias):
    return fused_matmul_rows(x, weight, (bias,), epilogue=lambda y, b: softmax_rows(gelu_tanh(y + b)))
''',
    "29k_Matmul_Swish_Sum_GroupNorm": '''def workload(x, weight, bias, gn_weight, gn_bias):
    size = weight.shape[1] // 64  # CONFIG num_groups = 64 groups of contiguous features

    def epilogue(y, b, g, beta):
        return group_norm_rows(jax.nn.sigmoid(y) * y + b, size, 1e-5) * g + beta

    return fused_matmul_rows(x, weight, (bias, gn_weight, gn_bias), epilogue=epilogue)
''',
    "45k_Gemm_GroupNorm_Swish_Multiply_Swish": '''def _epilogue(y, b, g, beta, w):
    y = group_norm_rows(y + b, 32, 1e-5) * g + beta  # GROUP_SIZE = 8192 // 256 = 32 features
    y = y * jax.nn.sigmoid(y) * w
    return y * jax.nn.sigmoid(y)


def workload(x, gemm_weight, gemm_bias, gn_weight, gn_bias, multiply_weight):
    vectors = (gemm_bias, gn_weight, gn_bias, multiply_weight)
    return fused_matmul_rows(x, gemm_weight, vectors, epilogue=_epilogue, transpose_w=True)
''',
    "49k_Matmul_AvgPool_GELU_Scale_Max": '''def _epilogue(y, b):
    pooled = group_mean_rows(y + b, 16)  # AvgPool1d, kernel = stride = 16
    return jnp.max(gelu_tanh(pooled) * 2.0, axis=1, keepdims=True)


def workload(x, weight, bias):
    return fused_matmul_rows(x, weight, (bias,), epilogue=_epilogue, out_cols=1).reshape(x.shape[0])
''',
}
