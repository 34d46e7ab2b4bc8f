"""Which process model an evaluation uses: interleaved workers, or one device process at a time.

interleaved: the reference and candidate workers are alive together and timing blocks alternate
  between them (ABBA). Good on CPU and GPU (two processes can share the device).
exclusive: no two device workers are ever alive at once. libtpu lets ONE process open the TPU
  chips, so a second live worker would fail to acquire them: reference (baseline half A) -> exit ->
  candidate -> exit -> [Pallas reference -> exit] -> reference again (baseline half B). A-B-A makes
  drift between the phases visible.

"auto" must be decided in the parent BEFORE any worker starts (the candidate would otherwise be
spawned next to the reference) and WITHOUT initializing a jax backend (the parent would then hold
the chip itself). So it probes the host: TPU device files (/dev/accel* on v4/v5e, /dev/vfio/* on
v5p/v6e) and an installed libtpu, unless JAX_PLATFORMS excludes TPU. The reference worker's hello
then confirms the backend; a contradiction is a harness error, never a silent wrong schedule.
"""

from __future__ import annotations

import glob
import importlib.util
import os
from typing import Literal, Mapping

from bench.harness.hardware import GPU_DEVICE_GLOBS, TPU_DEVICE_GLOBS

Schedule = Literal["interleaved", "exclusive"]


def _platforms(env: Mapping[str, str]) -> list[str]:
    """The backends JAX_PLATFORMS restricts jax to (empty: no restriction)."""
    return [p.strip().lower() for p in env.get("JAX_PLATFORMS", "").split(",") if p.strip()]


def tpu_host(environ: dict[str, str] | None = None, device_globs: tuple[str, ...] = TPU_DEVICE_GLOBS) -> bool:
    """True when jax in a worker would pick the TPU backend: device files + libtpu, TPU not excluded."""
    env = os.environ if environ is None else environ
    platforms = _platforms(env)
    if platforms and "tpu" not in platforms:
        return False
    has_devices = any(glob.glob(pattern) for pattern in device_globs)
    return has_devices and importlib.util.find_spec("libtpu") is not None


def cpu_only_host(environ: dict[str, str] | None = None, tpu_globs: tuple[str, ...] = TPU_DEVICE_GLOBS,
                  gpu_globs: tuple[str, ...] = GPU_DEVICE_GLOBS) -> bool:
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


def check_backend(schedule: Schedule, backend: str) -> str | None:
    """Why `schedule` cannot run on `backend` (reported by the reference worker), or None."""
    if schedule == "interleaved" and backend == "tpu":
        return ("the reference worker holds a TPU: two live workers cannot share it; "
                "use --schedule exclusive (the host probe did not detect the TPU)")
    return None
