"""One schedule per backend (`Plan`): only the trusted runner ever holds the device, and what still differs per
backend is the platform of the runnable export, Pallas in interpret mode (CPU), and whether the runner starts while
the builds run (`interleaved`) or only once every build ended (`exclusive`: auto on a TPU host, where libtpu admits
one process). "auto" is decided before any process starts and without a jax backend (the parent would then hold the
chip itself): TPU device files and an installed libtpu, unless JAX_PLATFORMS excludes TPU. The runner's hello
confirms the backend; a contradiction is a harness error, never a silent wrong schedule.
"""

from __future__ import annotations

import glob
import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from bench.hardware import GPU_DEVICE_GLOBS, TPU_DEVICE_GLOBS

Schedule = Literal["interleaved", "exclusive"]


def _platforms(env: Mapping[str, str]) -> list[str]:
    """The backends JAX_PLATFORMS restricts jax to (empty: no restriction)."""
    return [p.strip().lower() for p in env.get("JAX_PLATFORMS", "").split(",") if p.strip()]


def tpu_host(environ: Mapping[str, str] | None = None, device_globs: tuple[str, ...] = TPU_DEVICE_GLOBS) -> bool:
    """True when jax in a worker would pick the TPU backend: device files + libtpu, TPU not excluded."""
    env = os.environ if environ is None else environ
    platforms = _platforms(env)
    if platforms and "tpu" not in platforms:
        return False
    has_devices = any(glob.glob(pattern) for pattern in device_globs)
    return has_devices and importlib.util.find_spec("libtpu") is not None


def cpu_only_host(
    environ: Mapping[str, str] | None = None,
    tpu_globs: tuple[str, ...] = TPU_DEVICE_GLOBS,
    gpu_globs: tuple[str, ...] = GPU_DEVICE_GLOBS,
) -> bool:
    """True when jax in a worker will run on the CPU backend: JAX_PLATFORMS says cpu only, or the
    host has no TPU (device files + libtpu) and no NVIDIA device. Decided without importing jax."""
    env = os.environ if environ is None else environ
    platforms = _platforms(env)
    if platforms:
        return platforms == ["cpu"]
    return not tpu_host(env, tpu_globs) and not any(glob.glob(pattern) for pattern in gpu_globs)


def resolve(requested: str, environ: dict[str, str] | None = None) -> tuple[Schedule, str]:
    """(schedule, why) for a task's `schedule` field."""
    if requested in ("interleaved", "exclusive"):
        return requested, "requested"  # type: ignore[return-value]
    if tpu_host(environ):
        return "exclusive", "auto: TPU host (device files and libtpu found)"
    return "interleaved", "auto: no TPU on this host"


def host_backend(environ: dict[str, str] | None = None) -> str:
    """The backend a runner on this host will get ("cpu", "tpu" or "gpu"), probed without jax."""
    if tpu_host(environ):
        return "tpu"
    return "cpu" if cpu_only_host(environ) else "gpu"


@dataclass(frozen=True)
class Plan:
    """How one batch of evaluations runs on one backend: the small interface every backend fills in."""

    name: Schedule
    why: str
    backend: str

    @property
    def export_platform(self) -> str:
        """The platform of the runnable export (jax.export's names)."""
        return {"gpu": "cuda"}.get(self.backend, self.backend)

    @property
    def interpret(self) -> bool:
        """Pallas lowered in HLO interpret mode: only a CPU runner cannot run Mosaic or Triton."""
        return self.backend == "cpu"

    @property
    def builds_overlap_runner(self) -> bool:
        """Interleaved: the runner starts while the builds run. Exclusive: only after they all ended."""
        return self.name == "interleaved"

    @property
    def build_parallelism(self) -> int:
        """Builds at once: two, or one where this process may use a single core (a one-core host, a Ray node confined
        to one): there a second build only shares that core (a fresh warm batch of 8: 9.4 s one at a time, 10.8 s
        two)."""
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        return max(1, min(2, cores))


def plan(requested: str, environ: dict[str, str] | None = None) -> Plan:
    """The schedule of a task's `schedule` field on this host."""
    name, why = resolve(requested, environ)
    return Plan(name, why, host_backend(environ))


def check_backend(p: Plan, backend: str) -> str | None:
    """Why plan `p` cannot run on `backend` (reported by the runner), or None."""
    if backend != p.backend:
        return f"the host probe expected a {p.backend} runner, the runner reports {backend}"
    return None
