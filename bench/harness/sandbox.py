"""The sandbox the untrusted candidate worker runs in: bubblewrap when it is usable, else a plain process.

Why bubblewrap: a candidate kernel is arbitrary Python. Inside bwrap it sees the whole filesystem read-only
(it cannot edit the harness, the workloads or `data/`), has one private writable scratch directory and a
private `/tmp`, has no network (its own, empty network namespace: even 127.0.0.1 is not the host's), lives in
its own PID namespace (every process it starts dies with the worker: the namespace's init is killed when the
worker exits) and is killed when the harness dies (`--die-with-parent`). All capabilities are dropped, so even
as root it cannot remount anything writable.

The environment is scrubbed to an allow-list in *both* modes: tokens, credentials and the secret seed of
official runs never reach candidate code, with or without bubblewrap.

Accelerators: on TPU hosts the chips are `/dev/accel*` (and `/dev/vfio/*` on newer TPU VMs), on GPU hosts
`/dev/nvidia*` (`nvidia0..N`, `nvidiactl`, `nvidia-uvm`, `nvidia-uvm-tools`, `nvidia-modeset`, `/dev/nvidia-caps`).
Those that exist are bound into the sandbox's private `/dev` with `--dev-bind`, so the same sandbox serves
production runs. Nothing else from the host's `/dev` is visible.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from bench.harness.hardware import SANDBOX_DEVICE_GLOBS

MODES = ("auto", "bwrap", "none")

#: Environment variables passed to the candidate worker verbatim (everything else is dropped).
ENV_ALLOW = frozenset({
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TERM",
    "PYTHONPATH", "PYTHONHASHSEED", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE",
    "JAX_PLATFORMS", "JAX_PLATFORM_NAME", "JAX_ENABLE_X64", "JAX_TRACEBACK_FILTERING", "XLA_FLAGS",
    "JAXBENCH_ROOT", "VIRTUAL_ENV",
    "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "LD_LIBRARY_PATH",
    "TPU_VISIBLE_CHIPS", "TPU_CHIPS_PER_PROCESS_BOUNDS", "TPU_PROCESS_BOUNDS", "TPU_ACCELERATOR_TYPE",
    "TPU_WORKER_ID", "TPU_SKIP_MDS_QUERY", "TPU_HOST_BOUNDS", "TPU_PROCESS_ADDRESSES", "TPU_PROCESS_PORT",
    "LIBTPU_INIT_ARGS", "TPU_LIBRARY_PATH",
})

#: Accelerator device nodes bound through when present (TPU: accel/vfio; GPU: nvidia), defined with the chips.
DEVICE_GLOBS = SANDBOX_DEVICE_GLOBS


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required (mode "bwrap", official runs) but is missing or cannot create namespaces."""


@dataclass(frozen=True)
class SandboxedCommand:
    argv: list[str]
    env: dict[str, str]
    name: str  # "bwrap" or "none"


def scrubbed_env(extra: Mapping[str, str] | None = None, source: Mapping[str, str] | None = None,
                 home: Path | None = None) -> dict[str, str]:
    """The allow-listed subset of `source` (default os.environ), plus `extra` set by the harness itself."""
    src = os.environ if source is None else source
    env = {k: v for k, v in src.items() if k in ENV_ALLOW}
    env.setdefault("PATH", os.defpath)
    if home is not None:
        env["HOME"] = str(home)
        env["TMPDIR"] = str(home)
    env.update(extra or {})
    return env


def device_nodes() -> list[str]:
    """Accelerator device nodes of this host that the sandbox binds through (empty on a CPU-only host)."""
    found: list[str] = []
    for pattern in DEVICE_GLOBS:
        found.extend(p for p in sorted(glob.glob(pattern)) if p not in found)
    return found


def _needed_paths() -> list[str]:
    """What the worker must see: the project (code, inputs under build/) and the Python environment."""
    from bench.paths import ROOT

    paths = {Path(ROOT), Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).parent}
    return sorted({str(p.resolve()) for p in paths})


def _under_tmp(paths: Iterable[str]) -> list[str]:
    """The private /tmp hides whatever lives below /tmp (a checkout or venv there, as in a CI clone):
    those paths are bound back read-only, outermost first, after the tmpfs is mounted."""
    inside = [p for p in paths if p == "/tmp" or p.startswith("/tmp/")]
    return [p for p in inside if not any(p != q and p.startswith(q + "/") for q in inside)]


def bwrap_args(scratch_dir: Path, devices: Iterable[str] = ()) -> list[str]:
    """The bubblewrap prefix: read-only root, writable scratch, private /tmp, /dev and /proc, no network."""
    scratch = str(Path(scratch_dir).resolve())
    args = ["bwrap",
            "--ro-bind", "/", "/",
            "--tmpfs", "/tmp",
            *[a for p in _under_tmp(_needed_paths()) for a in ("--ro-bind", p, p)],
            "--dev", "/dev",
            "--proc", "/proc",
            "--bind", scratch, scratch,
            "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for dev in devices:
        args += ["--dev-bind", dev, dev]
    return args + ["--"]


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works on this host; otherwise why not (checked once per process)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [exe, "--ro-bind", "/", "/", "--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc",
             "--unshare-net", "--unshare-pid", "--die-with-parent", "--cap-drop", "ALL", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create its namespaces: {done.stderr.strip()[:300]}"
    return None


_warned = False


def _warn_once(problem: str) -> None:
    """Say once per process that candidates run unsandboxed (every row then records sandbox: none)."""
    global _warned
    if not _warned:
        _warned = True
        print(f"jaxbench: WARNING: {problem}; running candidate kernels WITHOUT a sandbox "
              f"(results record sandbox: none; official runs refuse this)", file=sys.stderr)


def resolve_mode(mode: str = "auto") -> str:
    """The sandbox a run in `mode` gets: "bwrap" or "none". Raises SandboxUnavailable for mode "bwrap"."""
    if mode not in MODES:
        raise ValueError(f"unknown sandbox mode {mode!r}; expected one of {MODES}")
    if mode == "none":
        return "none"
    problem = bwrap_problem()
    if problem is None:
        return "bwrap"
    if mode == "bwrap":
        raise SandboxUnavailable(problem)
    _warn_once(problem)
    return "none"


def require_bwrap() -> None:
    """For official runs: raise SandboxUnavailable unless bubblewrap is usable here."""
    resolve_mode("bwrap")


def wrap(argv: list[str], scratch_dir: Path, mode: str = "auto",
         extra_env: Mapping[str, str] | None = None) -> SandboxedCommand:
    """The command line and environment that run `argv` (the candidate worker) in the sandbox.

    `scratch_dir` is the only writable path the worker gets (plus a private, empty /tmp); inputs the harness
    writes anywhere else are readable only. `extra_env` is set by the harness after scrubbing.
    """
    scratch = Path(scratch_dir)
    scratch.mkdir(parents=True, exist_ok=True)
    name = resolve_mode(mode)
    env = scrubbed_env(extra_env, home=scratch.resolve())
    if name == "none":
        return SandboxedCommand(argv=list(argv), env=env, name="none")
    return SandboxedCommand(argv=bwrap_args(scratch, device_nodes()) + list(argv), env=env, name="bwrap")


def startup_cost_ms(repeats: int = 5) -> tuple[float, float | None]:
    """Median ms to start and finish a trivial Python process plainly and under bubblewrap (None: unusable).

    What the sandbox adds to an evaluation is this difference, once per candidate worker start; the
    benchmarks print it (target: under 1 s).
    """
    import statistics
    import tempfile
    import time

    def median_ms(cmd: SandboxedCommand) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run(cmd.argv, env=cmd.env, check=True)
            times.append((time.perf_counter() - t) * 1e3)
        return statistics.median(times)

    argv = [sys.executable, "-c", "pass"]
    with tempfile.TemporaryDirectory() as scratch:
        plain = median_ms(wrap(argv, Path(scratch), "none"))
        boxed = median_ms(wrap(argv, Path(scratch), "bwrap")) if bwrap_problem() is None else None
    return plain, boxed
