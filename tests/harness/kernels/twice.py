"""Computes the GEMM twice. XLA merges two identical dots (even across an optimization_barrier), so the
second one multiplies 2*A (exact in bf16) and halves the product: same values, a second full GEMM.
Speedup ~0.5."""
import jax
import jax.numpy as jnp


def workload(A, B):
    first = jnp.dot(A, B)
    doubled = jax.lax.optimization_barrier(A * 2)
    second = jnp.dot(doubled, B) / 2
    return (first + second) / 2
