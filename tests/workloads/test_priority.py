"""The 17 priority workloads (1p-17p): upstream's full-size interface, and small-size results against independent
oracles.

Full size is checked without allocating (jax.eval_shape), against shapes written out from the upstream spec, not
derived from the modules' CONFIG. Small size runs the jitted workload and compares it with an oracle written
differently: NumPy in float64 with explicit loops (over heads, sequences, pages, experts, groups), or a JAX library
function. Oracles only take the module's inputs; they never call its workload.

Tolerances: the workloads run in bf16 (8 mantissa bits, relative rounding 2**-9 = 0.2 %) and round several
intermediates (logits, softmax probabilities, projections) before the output is rounded again. A few roundings of
0.2 % each, partly cancelling, give elementwise errors of about 1 % of the output scale; the oracle is exact.
So we use the harness gate `compare` with its defaults (atol 1e-2, rtol 1e-2, relative L2 5e-2) scaled by the
output's magnitude where the outputs are far from 1 (see SCALE_ATOL), and a tighter relative-L2 bound (2e-2)
everywhere, which a wrong mask, head mapping or scale exceeds by far (they give relative L2 errors of 0.1 to 1).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bench.harness.protocol.correctness import Tolerance, compare

BF16, F32, I32 = "bfloat16", "float32", "int32"

# Full-size inputs and output as written in the upstream spec (section 1b): (shape, dtype) per input, an int for a
# Python-int input; then the output (shape, dtype).
FULL: dict[str, tuple[list[Any], tuple[tuple[int, ...], str]]] = {
    "1p_Flash_Attention": ([((4, 64, 4096, 128), BF16)] * 3, ((4, 64, 4096, 128), BF16)),
    "2p_GQA_Attention": (
        [((4, 4096, 128, 128), BF16), ((4, 4096, 8, 128), BF16), ((4, 4096, 8, 128), BF16)],
        ((4, 4096, 128, 128), BF16),
    ),
    "3p_MLA_Attention": (
        [
            ((4, 2048, 7168), BF16),
            ((7168, 1536), BF16),
            ((1536, 24576), BF16),
            ((7168, 576), BF16),
            ((512, 16384), BF16),
            ((512, 16384), BF16),
            ((16384, 7168), BF16),
        ],
        ((4, 2048, 7168), BF16),
    ),
    "4p_Sparse_Attention": (
        [((4, 64, 4096, 128), BF16), ((4, 8, 4096, 128), BF16), ((4, 8, 4096, 128), BF16)],
        ((4, 64, 4096, 128), BF16),
    ),
    "5p_Flex_Attention": ([((4, 64, 4096, 128), BF16)] * 3 + [((64, 4096, 4096), BF16)], ((4, 64, 4096, 128), BF16)),
    "6p_Paged_Attention": (
        [
            ((64, 64, 128), BF16),
            ((16384, 16, 8, 128), BF16),
            ((16384, 16, 8, 128), BF16),
            ((64,), I32),
            ((64, 256), I32),
            ((65,), I32),
        ],
        ((64, 64, 128), BF16),
    ),
    "7p_Ragged_Paged_Attention": (
        [
            ((4096, 64, 128), BF16),
            ((16384, 16, 16, 128), BF16),
            ((64,), I32),
            ((64, 256), I32),
            ((65,), I32),
            ((1,), I32),
        ],
        ((4096, 64, 128), BF16),
    ),
    "8p_GEMM": ([((8192, 8192), BF16), ((8192, 28672), BF16)], ((8192, 28672), BF16)),
    "9p_SwiGLU_MLP": (
        [((2, 4096, 8192), BF16), ((8192, 28672), BF16), ((8192, 28672), BF16), ((28672, 8192), BF16)],
        ((2, 4096, 8192), BF16),
    ),
    "10p_Sparse_MoE": (
        [
            ((2, 4096, 4096), BF16),
            ((4096, 8), BF16),
            ((8, 4096, 14336), BF16),
            ((8, 4096, 14336), BF16),
            ((8, 14336, 4096), BF16),
        ],
        ((2, 4096, 4096), F32),
    ),
    "11p_Megablox_GMM": ([((32768, 4096), BF16), ((128, 4096, 1536), BF16), ((128,), I32), 256], ((32768, 1536), BF16)),
    "12p_RMSNorm": ([((8, 4096, 8192), BF16), ((8192,), BF16)], ((8, 4096, 8192), BF16)),
    "13p_Cross_Entropy": ([((8192, 4096), BF16), ((4096, 128256), BF16), ((8192,), I32)], ((), F32)),
    "14p_Ragged_Dot": ([((8, 1024, 4096), BF16), ((8, 4096, 14336), BF16)], ((8, 1024, 14336), BF16)),
    "15p_RetNet_Retention": ([((4, 16, 4096, 256), BF16)] * 3, ((4, 16, 4096, 256), BF16)),
    "16p_Mamba2_SSD": ([((4, 64, 4096, 64), BF16)] * 3 + [((4, 64, 4096), F32)], ((4, 64, 4096, 64), BF16)),
    "17p_Triangle_Multiplication": (
        [((1536, 1536, 128), BF16), ((1536, 1536, 1), BF16)]
        + [((128, 128), BF16)] * 4
        + [((128,), BF16)]
        + [((128, 128), BF16)] * 2,
        ((1536, 1536, 128), BF16),
    ),
}
IDS = list(FULL)

# Upstream baselines' get_flops at full size (spec section 1a); no other priority baseline has one.
FULL_FLOPS = {
    "6p_Paged_Attention": 8_589_934_592,
    "7p_Ragged_Paged_Attention": 366_228_799_488,
    "11p_Megablox_GMM": 412_316_860_416,
    "12p_RMSNorm": 1_342_177_280,
}


def load(workload_id: str) -> ModuleType:
    return importlib.import_module(f"workloads.{workload_id}")


@functools.cache
def small_inputs(workload_id: str, seed: int | None = None) -> tuple:
    """Small inputs, drawn once per (workload, seed) for all tests: eager draws compile one program per shape."""
    return load(workload_id).create_inputs(size="small", seed=seed)


def _abstract_full(mod: ModuleType) -> tuple[list[Any], Any]:
    """Full-size inputs (ShapeDtypeStructs; Python ints as values) and the output's ShapeDtypeStruct, no allocation."""
    ints: dict[int, int] = {}

    def make():
        inputs = mod.create_inputs(size="full")
        ints.update({i: x for i, x in enumerate(inputs) if isinstance(x, int)})
        return [x for i, x in enumerate(inputs) if i not in ints]

    arrays = jax.eval_shape(make)
    n = len(arrays) + len(ints)

    def merged(arrs):
        it = iter(arrs)
        return [ints[i] if i in ints else next(it) for i in range(n)]

    out = jax.eval_shape(lambda *arrs: mod.workload(*merged(arrs)), *arrays)
    return merged(arrays), out


@pytest.mark.parametrize("workload_id", IDS)
def test_full_size_interface(workload_id: str) -> None:
    mod = load(workload_id)
    inputs, out = _abstract_full(mod)
    expected_inputs, (out_shape, out_dtype) = FULL[workload_id]
    got = [x if isinstance(x, int) else (tuple(x.shape), str(x.dtype)) for x in inputs]
    assert got == expected_inputs
    assert (tuple(out.shape), str(out.dtype)) == (out_shape, out_dtype)
    assert mod.CONFIG["name"] == workload_id
    assert set(mod.META) >= {"family", "source"}


@pytest.mark.parametrize("workload_id", IDS)
def test_get_flops_only_where_upstream_has_it(workload_id: str) -> None:
    mod = load(workload_id)
    if workload_id in FULL_FLOPS:
        assert mod.get_flops("full") == mod.get_flops() == FULL_FLOPS[workload_id]
        assert 0 < mod.get_flops("small") < FULL_FLOPS[workload_id]
    else:
        assert not hasattr(mod, "get_flops")


@pytest.mark.parametrize("workload_id", IDS)
def test_seeds(workload_id: str) -> None:
    mod = load(workload_id)
    a, b = small_inputs(workload_id), mod.create_inputs(size="small")
    other = small_inputs(workload_id, 1)
    for x, y, z in zip(a, b, other, strict=True):
        if isinstance(x, int):
            assert x == y == z
            continue
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
        assert (z.shape, z.dtype) == (x.shape, x.dtype)
    assert not np.array_equal(np.asarray(a[0]), np.asarray(other[0])), "seed=1 must draw new inputs"


# ----------------------------------------------------------------------------------------------------------------------
# Independent oracles (float64 NumPy or JAX library functions). Each takes the module's small inputs.


def f64(x: Any) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _attend(
    q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, offset: int = 0, bias: np.ndarray | None = None
) -> np.ndarray:
    """One head: q (Sq, D), k/v (Sk, D); query row r sees keys 0..r+offset; explicit max-subtracted softmax."""
    scores = q @ k.T * scale
    if bias is not None:
        scores = scores + bias
    rows, cols = np.indices(scores.shape)
    scores = np.where(cols <= rows + offset, scores, -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ v


def oracle_1p(q, k, v):
    q, k, v = f64(q), f64(k), f64(v)
    out = np.zeros_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            out[b, h] = _attend(q[b, h], k[b, h], v[b, h], q.shape[-1] ** -0.5)
    return out


def oracle_2p(q, k, v):
    """jax.nn.dot_product_attention (BTNH layout, native GQA) in float32."""
    f = lambda t: jnp.asarray(t, jnp.float32)  # noqa: E731
    return np.asarray(jax.nn.dot_product_attention(f(q), f(k), f(v), is_causal=True), dtype=np.float64)


def oracle_3p(x, q_down, q_up, kv_down, k_up, v_up, o_proj):
    x, q_down, q_up, kv_down, k_up, v_up, o_proj = map(f64, (x, q_down, q_up, kv_down, k_up, v_up, o_proj))
    batch, seq, _ = x.shape
    kv_lora = k_up.shape[0]
    rope = kv_down.shape[1] - kv_lora
    heads = (q_up.shape[1] - k_up.shape[1]) // rope
    nope, vdim = k_up.shape[1] // heads, v_up.shape[1] // heads
    theta = np.arange(seq)[:, None] / 10000.0 ** (np.arange(0, rope, 2) / rope)
    cos, sin = np.cos(theta), np.sin(theta)

    def rope_rotate(t):  # (S, rope)
        t1, t2 = t[:, : rope // 2], t[:, rope // 2 :]
        return np.concatenate([t1 * cos - t2 * sin, t2 * cos + t1 * sin], axis=1)

    out = np.zeros((batch, seq, heads * vdim))
    for b in range(batch):
        q = (x[b] @ q_down @ q_up).reshape(seq, heads, nope + rope)
        kv = x[b] @ kv_down
        k_nope = (kv[:, :kv_lora] @ k_up).reshape(seq, heads, nope)
        v = (kv[:, :kv_lora] @ v_up).reshape(seq, heads, vdim)
        k_rope = rope_rotate(kv[:, kv_lora:])
        for h in range(heads):
            qh = np.concatenate([q[:, h, :nope], rope_rotate(q[:, h, nope:])], axis=1)
            kh = np.concatenate([k_nope[:, h], k_rope], axis=1)
            out[b, :, h * vdim : (h + 1) * vdim] = _attend(qh, kh, v[:, h], (nope + rope) ** -0.5)
    return out @ o_proj


def oracle_4p(q, k, v):
    q, k, v = f64(q), f64(k), f64(v)
    group = q.shape[1] // k.shape[1]
    out = np.zeros_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            out[b, h] = _attend(q[b, h], k[b, h // group], v[b, h // group], 1.0)
    return out


def oracle_5p(q, k, v, bias):
    q, k, v, bias = f64(q), f64(k), f64(v), f64(bias)
    out = np.zeros_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            out[b, h] = _attend(q[b, h], k[b, h], v[b, h], q.shape[-1] ** -0.5, bias=bias[h])
    return out


def _gather_pages(pages: np.ndarray, table_row: np.ndarray) -> np.ndarray:
    """Concatenate a sequence's pages, one page at a time: (pages_per_seq * page_size, heads, D)."""
    return np.concatenate([pages[int(p)] for p in table_row], axis=0)


def oracle_6p(queries, k_pages, v_pages, kv_lens, page_indices, cu_q_lens):
    queries, k_pages, v_pages = f64(queries), f64(k_pages), f64(v_pages)
    num_seqs, num_q_heads, dim = queries.shape
    group = num_q_heads // k_pages.shape[2]
    out = np.zeros_like(queries)
    for s in range(num_seqs):
        kv_len = int(kv_lens[s])
        keys = _gather_pages(k_pages, np.asarray(page_indices[s]))[:kv_len]
        values = _gather_pages(v_pages, np.asarray(page_indices[s]))[:kv_len]
        row = int(cu_q_lens[s])
        for h in range(num_q_heads):
            q = queries[row, h][None]
            out[s, h] = _attend(q, keys[:, h // group], values[:, h // group], dim**-0.5, offset=kv_len)[0]
    return out


def oracle_7p(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs):
    """Reads lengths from cu_q_lens / kv_lens / num_seqs only (not the module's scenario constants)."""
    queries, kv_pages = f64(queries), f64(kv_pages)
    num_q_heads, dim = queries.shape[1:]
    num_kv_heads = kv_pages.shape[2] // 2
    group = num_q_heads // num_kv_heads
    out = np.zeros_like(queries)
    for i in range(int(num_seqs[0])):
        start, end, kv_len = int(cu_q_lens[i]), int(cu_q_lens[i + 1]), int(kv_lens[i])
        pages = _gather_pages(kv_pages, np.asarray(page_indices[i]))[:kv_len]
        for h in range(num_q_heads):
            kvh = h // group
            out[start:end, h] = _attend(
                queries[start:end, h],
                pages[:, 2 * kvh],
                pages[:, 2 * kvh + 1],
                dim**-0.5,
                offset=kv_len - (end - start),
            )
    return out


def oracle_8p(a, b):
    return f64(a) @ f64(b)


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def oracle_9p(x, gate, up, down):
    x = f64(x)
    return (_silu(x @ f64(gate)) * (x @ f64(up))) @ f64(down)


def oracle_10p(x, router, gate, up, down):
    """Sparse: each token runs only its two chosen experts. The choice uses bf16-rounded logits, as the workload's
    router does, so near-ties between the 2nd and 3rd expert resolve the same way (ties -> lower index)."""
    x2 = f64(x).reshape(-1, x.shape[-1])
    logits = (x2 @ f64(router)).astype(jnp.bfloat16).astype(np.float64)
    top = np.argsort(-logits, axis=1, kind="stable")[:, :2]
    chosen = np.take_along_axis(logits, top, axis=1)
    probs = np.exp(chosen - chosen.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    gate, up, down = f64(gate), f64(up), f64(down)
    out = np.zeros_like(x2)
    for e in range(gate.shape[0]):
        tokens, slot = np.nonzero(top == e)
        h = _silu(x2[tokens] @ gate[e]) * (x2[tokens] @ up[e])
        out[tokens] += probs[tokens, slot][:, None] * (h @ down[e])
    return out.reshape(x.shape)


def oracle_11p(lhs, rhs, group_sizes, max_expert_size):
    """jax.lax.ragged_dot in float32 (max_expert_size only bounds the workload's static slices)."""
    return np.asarray(jax.lax.ragged_dot(jnp.asarray(lhs, jnp.float32), jnp.asarray(rhs, jnp.float32), group_sizes))


def oracle_12p(x, scale):
    x = f64(x)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + 1e-5) * f64(scale)


def oracle_13p(hidden, weight, labels):
    logits = f64(hidden) @ f64(weight)
    peak = logits.max(axis=1)
    log_norm = peak + np.log(np.exp(logits - peak[:, None]).sum(axis=1))
    picked = logits[np.arange(len(logits)), np.asarray(labels)]
    return np.float64(np.mean(log_norm - picked))


def oracle_14p(x, weights):
    x, weights = f64(x), f64(weights)
    return np.stack([x[g] @ weights[g] for g in range(x.shape[0])])


def oracle_15p(q, k, v):
    q, k, v = f64(q), f64(k), f64(v)
    seq = q.shape[2]
    distance = np.subtract.outer(np.arange(seq), np.arange(seq))
    out = np.zeros_like(q)
    for h in range(q.shape[1]):
        gamma = 1.0 - 2.0 ** (-5 - h)
        decay = np.tril(gamma ** np.maximum(distance, 0))
        for b in range(q.shape[0]):
            qk = q[b, h] @ k[b, h].T * decay
            qk /= np.maximum(np.abs(qk).sum(axis=1, keepdims=True), 1.0)
            out[b, h] = qk @ v[b, h]
    return out


def oracle_16p(q, k, v, a_log):
    q, k, v, a_log = f64(q), f64(k), f64(v), f64(a_log)
    out = np.zeros_like(q)
    for b in range(q.shape[0]):
        for h in range(q.shape[1]):
            c = np.cumsum(np.log(1.0 / (1.0 + np.exp(-a_log[b, h])) + 1e-8))
            decay = np.tril(np.exp(np.tril(np.subtract.outer(c, c))))
            scores = q[b, h] @ k[b, h].T * decay
            total = scores.sum(axis=1, keepdims=True)
            total = np.where(np.abs(total) < 1e-6, 1.0, total)
            out[b, h] = scores / np.maximum(np.abs(total), 1.0) @ v[b, h]
    return out


def oracle_17p(pair, mask, wl, wr, wlg, wrg, center_scale, wo, wog):
    pair, mask, wl, wr, wlg, wrg, center_scale, wo, wog = map(
        f64, (pair, mask, wl, wr, wlg, wrg, center_scale, wo, wog)
    )
    sig = lambda t: 1.0 / (1.0 + np.exp(-t))  # noqa: E731
    act = pair * mask
    left = (act @ wl) * sig(act @ wlg)
    right = (act @ wr) * sig(act @ wrg)
    # per channel c: res[:, :, c] = left[:, :, c] @ right[:, :, c].T, as a batched matmul over channels
    res = np.matmul(left.transpose(2, 0, 1), right.transpose(2, 1, 0)).transpose(1, 2, 0)
    res = res / np.sqrt((res**2).mean(axis=-1, keepdims=True) + 1e-6) * center_scale
    return (res @ wo) * sig(pair @ wog)


ORACLES: dict[str, Callable[..., np.ndarray]] = {wid: globals()[f"oracle_{wid.split('_')[0]}"] for wid in IDS}

# Outputs whose typical magnitude is far below 1: atol scaled to it (k, v ~ N(0, 0.02) in 4p/5p/6p; MLA's projections).
SCALE_ATOL = {
    "3p_MLA_Attention": 1e-3,
    "4p_Sparse_Attention": 1e-3,
    "5p_Flex_Attention": 1e-3,
    "6p_Paged_Attention": 1e-4,
}
REL_L2 = 2e-2


@pytest.mark.parametrize("workload_id", IDS)
def test_small_matches_independent_oracle(workload_id: str) -> None:
    mod = load(workload_id)
    inputs = small_inputs(workload_id)
    out = jax.jit(mod.workload, static_argnums=getattr(mod, "STATIC_ARGNUMS", ()))(*inputs)
    ref = ORACLES[workload_id](*inputs)
    assert out.shape == ref.shape
    tol = Tolerance(atol=SCALE_ATOL.get(workload_id, 1e-2), rtol=1e-2, rel_l2=REL_L2)
    # Both sides as float32 arrays: the dtype itself is checked by the full-size interface test.
    report = compare(np.asarray(ref, dtype=np.float32), np.asarray(out, dtype=np.float32), tol)
    print(f"{workload_id}: rel_l2 {report.rel_l2_err:.3g} max_abs {report.max_abs_err:.3g}")
    assert report.correct, f"{workload_id}: {report.reason} (rel_l2 {report.rel_l2_err:.3g})"


def test_7p_small_scenario_has_the_full_scenarios_features() -> None:
    """Decode rows of length 1, several prefill chunks, kv lens ending on partial pages, idle slots, a permuted
    table."""
    mod = load("7p_Ragged_Paged_Attention")
    _, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs = small_inputs("7p_Ragged_Paged_Attention")
    page_size = kv_pages.shape[1]
    active = int(num_seqs[0])
    q_lens = np.diff(np.asarray(cu_q_lens))[:active]
    kv = np.asarray(kv_lens)
    assert (q_lens == 1).sum() >= 2 and (q_lens > 1).sum() >= 2
    assert int(cu_q_lens[-1]) == mod.SMALL["max_num_batched_tokens"]
    assert active < mod.SMALL["max_num_seqs"] and (kv[active:] == 0).all()
    assert (kv[:active] % page_size != 0).all() and (kv[:active] >= q_lens).all()
    assert (kv[:active] <= page_indices.shape[1] * page_size).all()
    table = np.asarray(page_indices).ravel()
    assert sorted(table.tolist()) == list(range(kv_pages.shape[0])), "page table is a permutation of all pages"
    assert (np.diff(table) != 1).any(), "pages are not contiguous"


def test_11p_max_expert_size_is_static_under_jit() -> None:
    mod = load("11p_Megablox_GMM")
    assert mod.STATIC_ARGNUMS == (3,)
    lhs, rhs, group_sizes, max_expert_size = small_inputs("11p_Megablox_GMM")
    assert isinstance(max_expert_size, int) and max_expert_size == lhs.shape[0] // rhs.shape[0]
    lowered = jax.jit(mod.workload, static_argnums=mod.STATIC_ARGNUMS).lower(lhs, rhs, group_sizes, max_expert_size)
    assert lowered.out_info.shape == (lhs.shape[0], rhs.shape[2])
