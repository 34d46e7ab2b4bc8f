"""A small v2 trajectory of real kernel sources for 12p_RMSNorm (and 41k_Gemm_Add_ReLU), usable with the real
harness and with tests/dataset/fake_evaluator.py (the `# fake:` comments tell the fake what the real harness finds).

Samples of 12p_RMSNorm, in order: a compile error, a wrong kernel, the XLA baseline's own code, a kernel that
fails to trace, a correct kernel far slower than XLA (mean via a 1024x1024 matmul), the baseline again
(identical source: evaluated once). The honest variant declares what each sample really does; the dishonest
one declares `correct, 2.0x` for the slow kernel and submits it.
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

WORKLOAD = "12p_RMSNorm"

BASELINE = '''"""RMSNorm as plain JAX (the XLA baseline's code)."""
# fake: speedup=0.98
import jax
import jax.numpy as jnp


def workload(x, scale):
    xf = x.astype(jnp.float32)
    normed = xf * jax.lax.rsqrt(jnp.mean(xf * xf, axis=-1, keepdims=True) + 1e-5)
    return normed.astype(x.dtype) * scale
'''

COMPILE_ERROR = """# fake: status=compile_error
import jax.numpy as jnp


def workload(x, scale)
    return x * scale
"""

WRONG = """# fake: incorrect
import jax.numpy as jnp


def workload(x, scale):
    return x * scale  # forgot the normalization
"""

CRASH = """# fake: status=runtime_error
import jax
import jax.numpy as jnp


def workload(x, scale):
    return jnp.reshape(x, (3, -1, 7)) * scale  # shapes do not divide: raises at trace time
"""

SLOW = """# fake: speedup=0.02
import jax
import jax.numpy as jnp


def workload(x, scale):
    xf = x.astype(jnp.float32)
    d = xf.shape[-1]
    ones = jnp.ones((d, d), jnp.float32) / d
    mean_sq = (xf * xf) @ ones  # every column holds the mean: d times the work, same value
    normed = xf * jax.lax.rsqrt(mean_sq + 1e-5)
    return normed.astype(x.dtype) * scale
"""

GEMM_BASELINE = """# fake: speedup=0.97
import jax
import jax.numpy as jnp


def workload(x, weight, bias):
    return jax.nn.relu(jnp.matmul(x, weight) + bias)
"""

GEMM_FAST = """# fake: speedup=1.3
import jax.numpy as jnp


def workload(x, weight, bias):
    return jnp.maximum(jnp.dot(x, weight) + bias, 0)
"""

GEMM_WRONG = """# fake: incorrect
import jax
import jax.numpy as jnp


def workload(x, weight, bias):
    return jnp.matmul(x, weight) + bias  # no ReLU
"""

#: (source, declared outcome, declared speedup) per sample of 12p_RMSNorm, honest declarations.
RMSNORM = [
    (COMPILE_ERROR, "api_runtime_error", None),
    (WRONG, "wrong_output", None),
    (BASELINE, "correct", 0.98),
    (CRASH, "api_runtime_error", None),
    (SLOW, "correct", 0.02),
    (BASELINE, "correct", 0.98),
]
GEMM = [(GEMM_WRONG, "wrong_output", None), (GEMM_BASELINE, "correct", 0.97), (GEMM_FAST, "correct", 1.3)]


def meta(**over) -> dict:
    m = {
        "name": "Trajectory fixture",
        "kind": "agent",
        "method": "iterative refinement",
        "model": {"name": "fixture", "version": "0"},
        "agent_framework": "none",
        "authors": ["JAXBench tests"],
        "contact": "tests@example.org",
        "date": "2026-12-01",
        "samples_per_workload": 8,
        "selection_rule": "the fastest correct sample on the submitter's machine",
        "human_in_the_loop": False,
        "target_hardware": "cpu",
        "license": "Apache-2.0",
    }
    m.update(over)
    return m


def lines(samples: list[tuple[str, str, float | None]], chains: int = 2) -> str:
    """JSONL text: samples alternate over `chains` chains (turns count up within each chain)."""
    out = []
    for i, (source, outcome, speedup) in enumerate(samples):
        obj = {
            "sample": i,
            "chain": i % chains,
            "turn": i // chains,
            "source": source,
            "declared": {"outcome": outcome, "speedup": speedup},
            "tokens_in": 1000 + i,
            "tokens_out": 200,
        }
        if i % 2 == 0:  # times and the TPU claims are optional: odd samples leave them out (stored as NULL)
            obj.update(wall_time_s=10.0 + i, model_latency_s=2.5 + i)
            obj["declared"].update(lowers=outcome == "correct", pallas_coverage=0.5)
        out.append(json.dumps(obj))
    return "\n".join(out) + "\n"


def write(root: Path, sub_id: str = "traj-v2", dishonest: bool = False, gemm: bool = True) -> Path:
    """submissions/<sub_id>/ with a v2 trajectory; the submitted 12p kernel is the baseline code (honest) or the
    slow kernel declared `correct, 2.0x` (dishonest)."""
    d = root / sub_id
    (d / "kernels").mkdir(parents=True)
    (d / "trajectory").mkdir()
    (d / "submission.yaml").write_text(yaml.safe_dump(meta()))
    rms = list(RMSNORM)
    if dishonest:
        rms[4] = (SLOW, "correct", 2.0)
        rms[1] = (WRONG, "correct", 1.5)
    (d / "trajectory" / f"{WORKLOAD}.jsonl").write_text(lines(rms))
    (d / "kernels" / f"{WORKLOAD}.py").write_text(SLOW if dishonest else BASELINE)
    if gemm:
        (d / "trajectory" / "41k_Gemm_Add_ReLU.jsonl").write_text(lines(GEMM, chains=1))
        (d / "kernels" / "41k_Gemm_Add_ReLU.py").write_text(GEMM_FAST)
    return d
