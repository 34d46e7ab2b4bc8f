"""Where the project's folders are. One place, so that tests and tools agree on the layout."""

from __future__ import annotations

import os
from pathlib import Path

#: Repository root (the folder that holds bench/, workloads/, submissions/, data/ ...).
ROOT = Path(os.environ.get("JAXBENCH_ROOT", Path(__file__).resolve().parents[1]))
WORKLOADS_DIR = ROOT / "workloads"
PALLAS_REFS_DIR = ROOT / "pallas_refs"
SUBMISSIONS_DIR = ROOT / "submissions"
DATA_DIR = ROOT / "data"
TEMPLATES_DIR = ROOT / "templates"
SITE_DIR = ROOT / "site"
BUILD_DIR = ROOT / "build"
#: The harness's per-evaluation folders (inputs, the kernel's private copy, logs); not under /tmp, which the
#: sandbox replaces with a private one.
EVAL_DIR = BUILD_DIR / "eval"
#: The trusted workers' persistent compilation cache.
JAX_CACHE_DIR = BUILD_DIR / "jax_cache"
