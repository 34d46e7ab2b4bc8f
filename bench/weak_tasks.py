"""A second input distribution per weak task: where the audit (docs/audit.md) lists a cheap shortcut that
passes the gate on upstream's inputs, one extra correctness-only trial runs on inputs drawn the same way
and then transformed so that the shortcut's approximation breaks while the task stays well-posed.

Trusted code, applied by the runner (bench.harness.runner.server) to a fresh draw, and by `bench audit`
to show each listed shortcut failing there. Upstream's distribution stays for the main trials and for
timing, so numbers remain comparable with the paper. Exact rewrites (21k, 23k, 26k, 49k) are legitimate and
have none.

Why each transform defeats its shortcut:
- attention (4p, 5p, 6p): scores scaled up (q x 8) make attention peaked instead of near-uniform, so a
  running or global mean of v is far off;
- 3p (small size: scores ~0.01): q_down_proj x 30 makes attention peaked (the causal prefix mean of the kv latent
  reads rel L2 0.75 or more; honest float32 code 0.008 against 0.017);
- 13p: logits scaled up (hidden x 16): per-token losses spread, so the loss on every 8th token is not the mean,
  and the logits are no longer Gaussian enough for their cumulants to give the log-sum-exp (at x 8 that shortcut
  still passed 4 % of fresh draws, 12 of 300: rel L2 down to 4e-5 against 6.6e-4; at x 16 0 of 200, 0.09 or more,
  while honest float32 code reads at most 3.5e-4 over 100 draws);
- 16p: upstream's A_log (~ N(-4, 0.5)) makes the decay a = sigmoid(A_log) ~ 0.018 per step, so a 16-position band
  is exact to float precision at every size. A_log + 10 (a ~ 0.998: a memory of hundreds of steps) alone breaks
  the band but also honest float32 implementations (rows whose q.k scores cancel are not normalised: their
  outputs are large sums of large terms, and the bf16 rounding of the scores exceeds atol near their zeros);
  q and k + 1 as well make every score positive (q.k ~ 64), so each row is a weighted mean of v, well
  conditioned: an honest float32 implementation stays at 0.4x the elementwise tolerance, the band does not
  (docs/audit.md; at full size even a 1024-position band fails);
- 19k: x x 4 moves most columns' pre-activations past the ReLU's threshold, so the quarter of the columns nearest it
  is no longer where every positive output is (elementwise far off; honest float32 code at rel L2 0.005);
- 24k: x x 8 spreads the rows' log-sum-exps, so the second-order expansion around the mean row is far off (rel L2
  0.77 or more; honest float32 code 0.004 against 0.015);
- 25k: gamma spread (x 20, signs alternating): the mean of gamma * normalised no longer vanishes;
- 36k: x scaled up (x 8): the sigmoid leaves its linear range, so the GEMV linearisation is far off;
- 39k: x scaled up (x 8): batch elements' pooled GELUs differ, so broadcasting element 0 is wrong;
- 38k, 43k, 50k (softmax rows; the shortcut passes only the old gate): x scaled up (x 4), rows not uniform.
  Not x 8: the logits' bf16 rounding grows with them, and an honest bf16 kernel (jaxbench-team's 43k) used up to
  0.995 of the elementwise tolerance over 20 draws at x 8 (one ingest failed it by one element of 131,072); at x 4
  honest kernels use at most 0.32 of it (38k 0.32, 43k 0.22, 50k 0.18, 20 draws each) while the uniform-rows
  shortcut is at least 3.8 times over it (benchmarks/stress_margin.py prints both).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Stress:
    description: str
    transform: Callable[[Sequence[Any]], tuple[Any, ...]]  # the drawn inputs -> the stressed inputs


def _scale(index: int, factor: float) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    def apply(inputs: Sequence[Any]) -> tuple[Any, ...]:
        out = list(inputs)
        out[index] = (out[index] * factor).astype(out[index].dtype)
        return tuple(out)

    return apply


def _shift(index: int, delta: float) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    def apply(inputs: Sequence[Any]) -> tuple[Any, ...]:
        out = list(inputs)
        out[index] = (out[index] + delta).astype(out[index].dtype)
        return tuple(out)

    return apply


def _ssd_long_memory(inputs: Sequence[Any]) -> tuple[Any, ...]:
    q, k, v, a_log = inputs
    return (q + 1).astype(q.dtype), (k + 1).astype(k.dtype), v, (a_log + 10).astype(a_log.dtype)


def _spread_gamma(inputs: Sequence[Any]) -> tuple[Any, ...]:
    import jax.numpy as jnp

    out = list(inputs)
    gamma = out[3]
    signs = jnp.where(jnp.arange(gamma.shape[-1]) % 2 == 0, 1.0, -1.0).astype(gamma.dtype)
    out[3] = (gamma * 20 * signs).astype(gamma.dtype)
    return tuple(out)


STRESS: dict[str, Stress] = {
    "3p": Stress("q_down_proj x 30: peaked attention", _scale(1, 30.0)),
    "4p": Stress("q x 8: peaked attention", _scale(0, 8.0)),
    "5p": Stress("q x 8: peaked attention", _scale(0, 8.0)),
    "6p": Stress("queries x 8: peaked attention", _scale(0, 8.0)),
    "13p": Stress("hidden x 16: spread per-token losses, non-Gaussian logits", _scale(0, 16.0)),
    "16p": Stress("q, k + 1 and A_log + 10: positive scores, slow decay", _ssd_long_memory),
    "19k": Stress("x x 4: most columns cross the ReLU's threshold", _scale(0, 4.0)),
    "24k": Stress("x x 8: rows' log-sum-exps spread", _scale(0, 8.0)),
    "25k": Stress("gamma x 20, alternating signs", _spread_gamma),
    "36k": Stress("x x 8: sigmoid outside its linear range", _scale(0, 8.0)),
    "38k": Stress("x x 4: non-uniform softmax rows", _scale(0, 4.0)),
    "39k": Stress("x x 8: batch elements differ", _scale(0, 8.0)),
    "43k": Stress("x x 4: non-uniform softmax rows", _scale(0, 4.0)),
    "50k": Stress("x x 4: non-uniform softmax rows", _scale(0, 4.0)),
}


def stress_for(workload_id: str) -> Stress | None:
    return STRESS.get(workload_id.split("_", 1)[0])
