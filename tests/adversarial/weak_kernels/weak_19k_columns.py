"""Attack (a red team, 2026-12-04) on 19k_Matmul_Subtract_Multiply_ReLU: x ~ U[0, 1) puts column j's pre-activation
near N(0.5 * sum(W_j) + b_j, sum(W_j^2) / 12), so only the columns near the ReLU's threshold ever fire; the GEMM for
the quarter of the columns nearest it, zeros elsewhere, is bit for bit the output on upstream's inputs. Caught by the
second input distribution (x x 4: most columns cross the threshold)."""

import jax
import jax.numpy as jnp


def workload(x, weight, bias):
    wf = weight.astype(jnp.float32)
    z = (0.5 * wf.sum(0) + bias.astype(jnp.float32) - 2.0) / jnp.sqrt((wf * wf).sum(0) / 12.0)
    _, cols = jax.lax.top_k(z, weight.shape[1] // 4)
    y = jax.nn.relu((jnp.matmul(x, weight[:, cols]) + bias[cols] - 2.0) * 1.5)
    return jnp.zeros((x.shape[0], weight.shape[1]), y.dtype).at[:, cols].set(y)
