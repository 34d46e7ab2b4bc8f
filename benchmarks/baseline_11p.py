"""Does 11p's XLA baseline time like the original JAXBench's program? (issue #19)

Times three programs at small size on CPU in one process, on the same inputs, in interleaved blocks
(each round runs every program once, in a rotating order, so machine-wide slow phases hit all of them):

- ours: `workloads/11p_Megablox_GMM.workload`, the baseline every 11p speedup is relative to;
- original: the original's formulation written out here as upstream's baseline.py has it (group starts from a
  concatenated zero and the inclusive cumsum, the row-index iota built inside the `lax.scan` body);
- hoisted: our formulation before issue #19 (iota built once outside the scan and closed over), kept for
  contrast: XLA carries it through the loop as a materialized s32 (max_expert_size, N) buffer.

Prints each program's median per-block time and the ratios ours/original (target: within 5 %) and
hoisted/original, and whether ours compiles to the same fingerprint as the original (bench/audit/fingerprint.py).

    .venv/bin/python benchmarks/baseline_11p.py [--rounds 30] [--iters 20] [--size small]
"""

from __future__ import annotations

import argparse
import statistics
import time

import jax
import jax.numpy as jnp


def original_formulation(lhs, rhs, group_sizes, max_expert_size):
    """11p as the original's baseline.py writes it, op for op (the program ours must match)."""
    num_groups = rhs.shape[0]
    m, k = lhs.shape
    n = rhs.shape[2]
    group_ends = jnp.cumsum(group_sizes)
    group_starts = jnp.concatenate([jnp.zeros(1, dtype=jnp.int32), group_ends[:-1]])
    res_flat = jnp.zeros((m + max_expert_size, n), dtype=lhs.dtype)

    def body(carry, i):
        start = group_starts[i]
        count = group_sizes[i]
        expert_lhs = jax.lax.dynamic_slice(lhs, (start, 0), (max_expert_size, k))
        res = jax.lax.dot(expert_lhs, rhs[i, :, :], preferred_element_type=jnp.float32)
        mask = jax.lax.broadcasted_iota(jnp.int32, (max_expert_size, n), 0) < count
        res = jnp.where(mask, res, 0.0)
        current = jax.lax.dynamic_slice(carry, (start, 0), (max_expert_size, n))
        carry = jax.lax.dynamic_update_slice(carry, current + res.astype(carry.dtype), (start, 0))
        return carry, None

    res_flat, _ = jax.lax.scan(body, res_flat, jnp.arange(num_groups))
    return res_flat[:m, :]


def hoisted_formulation(lhs, rhs, group_sizes, max_expert_size):
    """Our 11p before issue #19: the row-index iota built once, outside the scan, and closed over."""
    m, k = lhs.shape
    n = rhs.shape[2]
    starts = jnp.cumsum(group_sizes) - group_sizes
    rows = jax.lax.broadcasted_iota(jnp.int32, (max_expert_size, n), 0)

    def add_group(acc, g):
        block = jax.lax.dynamic_slice(lhs, (starts[g], 0), (max_expert_size, k))
        prod = jax.lax.dot(block, rhs[g], preferred_element_type=jnp.float32)
        prod = jnp.where(rows < group_sizes[g], prod, 0.0).astype(acc.dtype)
        current = jax.lax.dynamic_slice(acc, (starts[g], 0), (max_expert_size, n))
        return jax.lax.dynamic_update_slice(acc, current + prod, (starts[g], 0)), None

    acc = jnp.zeros((m + max_expert_size, n), dtype=lhs.dtype)
    acc, _ = jax.lax.scan(add_group, acc, jnp.arange(rhs.shape[0]))
    return acc[:m]


def _block_ms(fn, args, iters: int) -> float:
    times = []
    for _ in range(iters):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> None:
    from bench.audit.fingerprint import hlo_fingerprint
    from bench.registry import load_workload

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--size", default="small")
    a = ap.parse_args()

    mod = load_workload("11p_Megablox_GMM")
    args = mod.create_inputs(dtype=jnp.bfloat16, size=a.size)
    static = tuple(mod.STATIC_ARGNUMS)
    programs = {"ours": mod.workload, "original": original_formulation, "hoisted": hoisted_formulation}
    compiled, prints = {}, {}
    for name, f in programs.items():
        jitted = jax.jit(f, static_argnums=static)
        compiled[name] = jitted
        prints[name] = hlo_fingerprint(jitted.lower(*args).compile().as_text())
    ref = jax.block_until_ready(compiled["original"](*args))
    for name, fn in compiled.items():
        out = jax.block_until_ready(fn(*args))
        assert bool(jnp.array_equal(out, ref)), f"{name}: output differs from the original formulation's"
        for _ in range(5):
            jax.block_until_ready(fn(*args))

    names = list(compiled)
    blocks: dict[str, list[float]] = {n: [] for n in names}
    for r in range(a.rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            blocks[n].append(_block_ms(compiled[n], args, a.iters))

    print(f"11p_Megablox_GMM, size {a.size}, {a.rounds} rounds x {a.iters} calls per program, "
          f"jax {jax.__version__}, {jax.default_backend()}")
    for n in names:
        print(f"  {n:9s} median {statistics.median(blocks[n]):.3f} ms per call "
              f"(block medians {min(blocks[n]):.3f}-{max(blocks[n]):.3f})")
    for n in ("ours", "hoisted"):
        per_round = [x / y for x, y in zip(blocks[n], blocks["original"], strict=True)]  # one block per round each
        deciles = statistics.quantiles(per_round, n=10)
        print(f"  {n}/original: {statistics.median(per_round):.3f} (median of per-round ratios; "
              f"p10-p90 {deciles[0]:.3f}-{deciles[-1]:.3f})")
    print(f"  ours compiles to the original's fingerprint: {prints['ours'] == prints['original']}; "
          f"hoisted: {prints['hoisted'] == prints['original']}")


if __name__ == "__main__":
    main()
