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
