"""13p_Cross_Entropy: fused linear + softmax cross-entropy, the LM-head loss: mean(-log_softmax(h W)[label]).

Upstream: JAXBench/benchmark/13p_Cross_Entropy/baseline.py, Llama-3.1-8B shapes ("from openxla/tokamax").
Inputs from key(42) split 3: hidden (T, H) ~ N(0, 1); weight (H, V) ~ N(0, 1) * 0.02; labels (T,) int32 uniform in [0, V).
Logits and log_softmax stay in the input dtype; the one-hot is f32, so the loss is an f32 scalar.
"""

import jax
import jax.numpy as jnp

from workloads._common import base_key, sized_config

CONFIG = {
    "name": "13p_Cross_Entropy",
    "model": "Llama-3.1-8B",
    "operator": "cross_entropy",
    "batch_tokens": 8192,
    "hidden_dim": 4096,
    "vocab_size": 128256,
}
# small: 256 tokens, hidden 256, vocab 4096 (128 multiples); the weight is 2 MiB, logits 2 MiB.
SMALL = {"batch_tokens": 256, "hidden_dim": 256, "vocab_size": 4096}
META = {"family": "linear + cross-entropy", "source": "Llama-3.1-8B (tokamax linear softmax cross-entropy)"}
# certificate (docs/audit.md, bench.audit.certificate.calibrated; issue 40): was atol 0.01, rel_l2 0.05, where
# shortcuts passed (constant, audit shortcut: loss on every 8th token only) / honest code failed (none). Honest
# implementations (float32 inputs, bf16-accumulating; small size, seeds None, 11, 12) reach rel L2 9.5e-05 and need
# atol 0: both bounds are set to 3x that (rel L2 at least half a float32 epsilon).
TOLERANCE = {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.00029}
# The small size's own bound (a red team, 2026-12-04): over 21 draws (seed None, 0-19) honest float32 code reaches rel
# L2 2.2e-4 at the small size (median 8e-5), 1.3x from 0.00029; this is 3x that.
SMALL_TOLERANCE = {"rel_l2": 0.00066}
# the trivial-solution certificate cannot be closed on upstream's inputs (docs/audit.md; a red team, 2026-12-04):
DEGENERATE = (
    "Upstream's logits are small (var ~0.1), so the log-sum-exp of each token is its logits' Gaussian cumulants, "
    "log V + h . mean(W) + (h^2) . var(W) / 2: with the label's logit gathered, the loss without the logits GEMM is "
    "as close to the baseline as honest float32 code (certificate: rel L2 9.9e-5 vs 9.5e-5 at the small size; "
    "honest code reaches 2.2e-4 over 21 draws)."
)


def create_inputs(dtype=jnp.bfloat16, size: str = "full", seed: int | None = None):
    cfg = sized_config(CONFIG, SMALL, size)
    t, h, v = cfg["batch_tokens"], cfg["hidden_dim"], cfg["vocab_size"]
    k1, k2, k3 = jax.random.split(base_key(42, seed), 3)
    hidden = jax.random.normal(k1, (t, h), dtype=dtype)
    weight = jax.random.normal(k2, (h, v), dtype=dtype) * 0.02
    labels = jax.random.randint(k3, (t,), 0, v, dtype=jnp.int32)
    return hidden, weight, labels


def workload(hidden, weight, labels):
    log_probs = jax.nn.log_softmax(hidden @ weight, axis=-1)
    one_hot = jax.nn.one_hot(labels, weight.shape[1])
    return jnp.mean(-jnp.sum(one_hot * log_probs, axis=-1))
