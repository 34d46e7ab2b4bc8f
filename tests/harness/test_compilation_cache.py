"""Issue #23, class 6: the runner's persistent compilation cache is bounded (every candidate's executable was
stored, without end). The runner's environment sets jax's size cap, and jax's LRU cache evicts under it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.harness.parent.session import COMPILATION_CACHE_MAX_BYTES, compilation_cache_env


def test_the_runner_environment_caps_the_cache(tmp_path: Path) -> None:
    env = {**compilation_cache_env(tmp_path), "JAX_PLATFORMS": "cpu"}
    code = "import jax; print(jax.config.jax_compilation_cache_max_size)"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == str(COMPILATION_CACHE_MAX_BYTES), out.stderr[-500:]


def test_jax_evicts_least_recently_used_entries_under_the_cap(tmp_path: Path) -> None:
    from jax._src.lru_cache import LRUCache

    cache = LRUCache(str(tmp_path), max_size=10_000)
    for i in range(30):
        cache.put(f"entry{i}", b"x" * 1000)
    stored = sum(p.stat().st_size for p in tmp_path.rglob("*") if p.is_file() and not p.name.endswith(".lock"))
    assert stored <= 10_000 + 2000 and cache.get("entry29") is not None and cache.get("entry0") is None


RELABELLED_AFTER_PLAIN = """
import jax, jax.numpy as jnp
from bench.harness.runner.executed import SITE_LABEL, relabel

def site(x):
    return x * 2.0

site.__name__ = "jaxbench_kernel_0"
exp = jax.export.export(jax.jit(lambda x: jax.jit(site)(x) + 1.0))(jax.ShapeDtypeStruct((64,), jnp.float32))
aval = jax.ShapeDtypeStruct((64,), jnp.float32)
jax.jit(exp.call).lower(aval).compile()  # the same program without labels: stored in the cache first
text = jax.jit(relabel(exp).call).lower(aval).compile().as_text()
print("LABELLED" if SITE_LABEL + "jaxbench_kernel_0" in text else "STALE")
"""


def test_a_relabelled_program_never_reuses_an_executable_compiled_under_other_labels(tmp_path: Path) -> None:
    """Issue 40 §1 (what ran, runner/executed.py): the runner reads each op's site from the labels it set before
    compiling. jax's cache key strips locations by default, so the runner's cache handed back an executable compiled
    without them (an earlier harness, the same program unlabelled) and an honest kernel read as never run (credit
    0); the runner's environment puts locations in the key."""
    env = {**compilation_cache_env(tmp_path), "JAX_PLATFORMS": "cpu"}
    for _ in range(2):  # the second process reads both entries from the persistent cache
        out = subprocess.run(
            [sys.executable, "-c", RELABELLED_AFTER_PLAIN], env=env, capture_output=True, text=True, timeout=300
        )
        assert out.stdout.strip().endswith("LABELLED"), out.stdout[-300:] + out.stderr[-1500:]
