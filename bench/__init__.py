"""JAXBench: evaluate AI-generated Pallas/JAX kernels against XLA baselines and rank them.

HARNESS_VERSION is bumped whenever a change to the harness could change a verdict or a timing;
`bench ingest` re-evaluates every submission whose stored rows carry an older harness version.

The stable Python API (bench/api.py) is re-exported here: `from bench import evaluate, list_workloads, ...`.
It is loaded on first use, so `import bench` (done by every worker process) stays free of pydantic and jax.
"""

from typing import Any

__version__ = "0.1.0"
HARNESS_VERSION = "33"  # 33: a combiner's ops move their bytes once per application in the static reading

API = (
    "EvalOptions",
    "EvalResult",
    "EvalTask",
    "Status",
    "WorkloadSpec",
    "checkout",
    "evaluate",
    "evaluate_many",
    "list_workloads",
    "machine_info",
    "resolve_workload",
    "time_baseline",
    "workload",
    "workload_flops",
)


def __getattr__(name: str) -> Any:
    if name in API:
        from bench import api

        return getattr(api, name)
    raise AttributeError(f"module 'bench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
