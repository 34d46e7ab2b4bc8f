"""How the untrusted build step is confined: bubblewrap with a minimal filesystem, plus resource limits.

The build step (bench.harness.sandbox.child) is the only process that ever runs candidate Python. Under bwrap it:
- sees only what it needs, read-only: the system's /usr (and the /lib, /bin links into it), the Python
  installation and the virtualenv, the harness package, the workloads and pallas_refs (importable library
  code, no reference outputs), and the kernel file. Nothing else of the host exists in its mount namespace:
  not the dataset, not the other checkouts, not /root, /home, /etc or /work/shared;
- writes only to a private tmpfs /tmp (its HOME), whose size is capped and counted against the memory cap
  (address space = memory cap - tmpfs size, so the two together never exceed it);
- has no network (its own empty network namespace), its own PID namespace (every process it starts dies
  when the build ends: the namespace's init is gone), no capabilities, and dies with the harness;
- cannot write a file larger than the tmpfs (RLIMIT_FSIZE), cannot start more than PROCESS_LIMIT
  processes/threads (a pids cgroup), and cannot take more than its share of the CPU, whatever sessions it creates
  (a CPU cgroup: one low weight and at most one core for all its processes); where the host refuses a cgroup, the
  weaker bound that applies instead is named in the result (bench.harness.parent.cgroups).
No accelerator device node is bound: the build exports for TPU by cross-lowering and never opens a chip.

The environment is scrubbed to an allow-list in both modes: tokens, credentials and the secret seed of
official runs never reach candidate code, with or without bubblewrap.
"""

from __future__ import annotations

import contextlib
import glob
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from bench.hardware import SANDBOX_DEVICE_GLOBS
from bench.harness.parent.cgroups import BuildCgroups
from bench.paths import PALLAS_REFS_DIR, ROOT, WORKLOADS_DIR

MODES = ("auto", "bwrap", "none")

#: Environment variables passed to the build verbatim (everything else is dropped).
ENV_ALLOW = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "PYTHONPATH",
        "PYTHONHASHSEED",
        "PYTHONUNBUFFERED",
        "PYTHONDONTWRITEBYTECODE",
        "JAX_ENABLE_X64",
        "JAX_TRACEBACK_FILTERING",
        "JAXBENCH_ROOT",
        "VIRTUAL_ENV",
    }
)

#: Accelerator device nodes of a host (defined with the chips): what only the RUNNER may use; the build never.
DEVICE_GLOBS = SANDBOX_DEVICE_GLOBS

TMPFS_MB = 256  # the build's private /tmp; part of the memory cap
DEV_MB = 16  # the build's private /dev (device nodes and /dev/shm); part of the memory cap
PROCESS_LIMIT = 256  # processes + threads in the build's pids cgroup (jax starts a few dozen threads)
CGROUP_ROOT = Path("/sys/fs/cgroup")
#: Device nodes the build sees in its own /dev (bubblewrap's `--dev` is a tmpfs of the kernel's default size,
#: half of RAM, which RLIMIT_AS does not count: issue #23 wrote 1.9 GiB there). Nothing else lives there.
DEV_NODES = ("null", "zero", "full", "random", "urandom")


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required (mode "bwrap", official runs) but is missing or cannot create namespaces."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one build. `memory_mb` None: no address-space cap."""

    memory_mb: int | None = 8192
    tmpfs_mb: int = TMPFS_MB
    processes: int = PROCESS_LIMIT
    dev_mb: int = DEV_MB

    @property
    def address_space_mb(self) -> int | None:
        """The address-space cap left once the tmpfs mounts (/tmp, /dev) are counted against the memory cap."""
        if not self.memory_mb:
            return None
        return max(self.memory_mb - self.tmpfs_mb - self.dev_mb, 512)


@dataclass(frozen=True)
class SandboxedCommand:
    argv: list[str]
    env: dict[str, str]
    name: str  # "bwrap" or "none"
    limits: Limits = field(default_factory=Limits)
    groups: BuildCgroups | None = None  # its pids and CPU cgroups, joined at start (what they bound, or why not)
    memory_cgroup: Path | None = None  # the memory cgroup it joins (counts tmpfs and shared-memory pages too)

    @property
    def cgroup(self) -> Path | None:
        """The pids cgroup (None: the host refused it)."""
        return self.groups.pids_group if self.groups is not None else None

    def preexec(self) -> Callable[[], None] | None:
        """Only where util-linux's prlimit is missing: set the rlimits between fork and exec (Python code in
        a forked child of a threaded parent: the fallback, not the rule; `argv` applies them otherwise)."""
        if shutil.which("prlimit"):
            return None
        limits = self.limits

        def apply() -> None:
            for which, value in _rlimits(limits):
                resource.setrlimit(which, (value, value))

        return apply

    def memory_events(self) -> dict[str, int]:
        """The memory cgroup's out-of-memory counters so far (empty without one): what the parent itself saw of
        the build's memory, read before `release` removes the cgroup (memory_events)."""
        return memory_events(self.memory_cgroup)

    def release(self, wait_s: float = 1.0) -> None:
        """Remove the cgroups once every process in them is gone (killed processes leave them a moment
        after their death); one still alive after `wait_s` keeps them (and stays countable there)."""
        if self.groups is not None:
            self.groups.release(wait_s)
        for group in (self.memory_cgroup,):
            if group is None:
                continue
            deadline = time.monotonic() + wait_s
            while True:
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.02)


def _rlimits(limits: Limits) -> list[tuple[int, int]]:
    out = [(resource.RLIMIT_FSIZE, limits.tmpfs_mb << 20), (resource.RLIMIT_CORE, 0)]
    if limits.address_space_mb:
        out.append((resource.RLIMIT_AS, limits.address_space_mb << 20))
    return out


#: The shell that joins the cgroups named by its first arguments ($1: how many) with its own pid, then execs the rest.
_JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'


def _launcher(limits: Limits, groups: BuildCgroups | None, memory_cgroup: Path | None = None) -> list[str]:
    """The prefix that confines a command from its first instruction, without Python in a forked child: a
    shell joins the pids, CPU and memory cgroups with its own pid, the fallback bounds where a cgroup was refused
    apply (BuildCgroups.launcher), and prlimit sets the rlimits and execs the command. Every process below
    inherits all of them, whatever session it makes."""
    joined = [*(groups.groups if groups is not None else []), *([memory_cgroup] if memory_cgroup else [])]
    prefix: list[str] = []
    if joined:
        prefix = ["/bin/sh", "-c", _JOIN, "join", str(len(joined)), *[str(g / "cgroup.procs") for g in joined]]
    if groups is not None:
        prefix += groups.launcher()
    if shutil.which("prlimit"):
        names = {resource.RLIMIT_AS: "--as", resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_CORE: "--core"}
        prefix += ["prlimit", *[f"{names[w]}={v}" for w, v in _rlimits(limits)], "--"]
    return prefix


def scrubbed_env(
    extra: Mapping[str, str] | None = None, source: Mapping[str, str] | None = None, home: Path | None = None
) -> dict[str, str]:
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
    """Accelerator device nodes of this host (empty on a CPU-only host)."""
    found: list[str] = []
    for pattern in DEVICE_GLOBS:
        found.extend(p for p in sorted(glob.glob(pattern)) if p not in found)
    return found


def readable_paths() -> list[str]:
    """Everything the build may read: Python, the venv, and the importable project code (outermost only)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(ROOT) / "bench", WORKLOADS_DIR, PALLAS_REFS_DIR}
    resolved = sorted({str(p.resolve()) for p in paths if p.exists()})
    return [p for p in resolved if not any(p != q and p.startswith(q + "/") for q in resolved)]


def _system_binds() -> list[str]:
    """/usr read-only; /bin, /lib, /lib64, /sbin as the host has them (merged-/usr links, or directories)."""
    args = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/lib", "/lib64", "/sbin"):
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        args += ["--ro-bind-try", f, f]
    return args


def bwrap_args(kernel: Path | None = None, limits: Limits = Limits(), extra_ro: Iterable[str] = ()) -> list[str]:
    """The bubblewrap prefix of a build: minimal read-only binds, a size-capped private /tmp, no network.
    `kernel`: the kernel file, or the folder it will be written to (a build started ahead of need), read-only."""
    args = [
        "bwrap",
        *_system_binds(),
        "--size",
        str(limits.tmpfs_mb << 20),
        "--tmpfs",
        "/tmp",
        "--size",
        str(limits.dev_mb << 20),
        "--tmpfs",
        "/dev",
        "--dir",
        "/dev/shm",
        "--proc",
        "/proc",
    ]
    for node in DEV_NODES:
        args += ["--dev-bind", f"/dev/{node}", f"/dev/{node}"]
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        args += ["--symlink", f"/proc/self/fd/{i}", f"/dev/{name}"]
    args += ["--symlink", "/proc/self/fd", "/dev/fd"]
    for p in [*readable_paths(), *extra_ro]:
        args += ["--ro-bind", p, p]
    if kernel is not None:
        k = str(Path(kernel).resolve())
        args += ["--ro-bind", k, k]
    args += ["--remount-ro", "/"]  # bubblewrap's root is a tmpfs of no size of its own: nothing may write there
    return args + [
        "--chdir",
        "/tmp",
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--",
    ]


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works on this host; otherwise why not (checked once per process)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [
        exe,
        "--ro-bind",
        "/",
        "/",
        "--tmpfs",
        "/tmp",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-net",
        "--unshare-pid",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--",
        "true",
    ]
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
        print(
            f"jaxbench: WARNING: {problem}; building candidate kernels WITHOUT a sandbox "
            f"(results record sandbox: none; official runs refuse this)",
            file=sys.stderr,
        )


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


def _new_cgroup(base: Path, required: dict[str, str], optional: dict[str, str] | None = None) -> Path | None:
    """A fresh cgroup below `base` with `required` files written (else it is removed again and None returned) and
    `optional` ones written where the host has them (e.g. memsw only where swap is accounted)."""
    path = base / f"jaxbench_build_{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
        for name, value in required.items():
            (path / name).write_text(value)
    except OSError:
        with contextlib.suppress(OSError):
            path.rmdir()
        return None
    for name, value in (optional or {}).items():
        if (path / name).exists():
            with contextlib.suppress(OSError):
                (path / name).write_text(value)
    return path


def _memory_cgroup(limit_mb: int | None) -> Path | None:
    """A fresh memory cgroup below this process's own (v1: memory.limit_in_bytes, and memsw where swap is
    accounted; v2: memory.max, memory.swap.max 0), or None where the host does not allow it. Why a cgroup:
    RLIMIT_AS does not count tmpfs or shared-memory pages; a memory cgroup charges them to whoever touched them."""
    if not limit_mb:
        return None
    limit = str(int(limit_mb) << 20)
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        if "memory" in controllers.split(","):
            base = CGROUP_ROOT / "memory" / rel.lstrip("/")
            return _new_cgroup(base, {"memory.limit_in_bytes": limit}, {"memory.memsw.limit_in_bytes": limit})
    unified = next((ln.split(":", 2)[2] for ln in lines if ln.startswith("0::")), None)
    if unified is None:
        return None
    return _new_cgroup(CGROUP_ROOT / unified.lstrip("/"), {"memory.max": limit}, {"memory.swap.max": "0"})


#: The out-of-memory counters of a memory cgroup: v1 `memory.oom_control` (oom_kill since Linux 4.13), v2
#: `memory.events` (oom: the limit was hit and reclaim failed; oom_kill: a process of the group was killed for it).
OOM_COUNTERS = ("oom", "oom_kill")


def memory_events(cgroup: Path | None) -> dict[str, int]:
    """The out-of-memory counters of `cgroup` (empty: none, or unreadable). Why the parent reads them: a process
    the cgroup kills dies by SIGKILL (under bubblewrap, bwrap then exits 137) like any other SIGKILL; only the
    kernel's counter says it was the memory cap."""
    if cgroup is None:
        return {}
    for name in ("memory.events", "memory.oom_control"):
        try:
            text = (cgroup / name).read_text()
        except OSError:
            continue
        pairs = (line.split() for line in text.splitlines())
        return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[0] in OOM_COUNTERS and p[1].isdigit()}
    return {}


def pids_cgroup_available() -> bool:
    """Whether this host lets the harness create a pids cgroup (checked by creating and removing one)."""
    groups = BuildCgroups.create(PROCESS_LIMIT)
    groups.release()
    return groups.pids_bounded


def wrap(
    argv: list[str],
    mode: str = "auto",
    *,
    kernel: Path | None = None,
    limits: Limits = Limits(),
    extra_env: Mapping[str, str] | None = None,
    extra_ro: Iterable[str] = (),
) -> SandboxedCommand:
    """The command line, environment and limits that run `argv` (the build step) in the sandbox.

    Without bubblewrap (mode "none", or "auto" where it is unusable) the same environment scrub and
    rlimits apply, HOME is a fresh directory, and the row is labelled `sandbox:none`."""
    name = resolve_mode(mode)
    groups = BuildCgroups.create(limits.processes)
    memory = _memory_cgroup(limits.memory_mb)
    launcher = _launcher(limits, groups, memory)
    if name == "none":
        home = Path(tempfile.mkdtemp(prefix="jaxbench_build_home_"))
        return SandboxedCommand(
            launcher + list(argv), scrubbed_env(extra_env, home=home), "none", limits, groups, memory
        )
    env = scrubbed_env(extra_env, home=Path("/tmp"))
    boxed = bwrap_args(kernel, limits, extra_ro)
    return SandboxedCommand(launcher + boxed + list(argv), env, "bwrap", limits, groups, memory)


def startup_cost_ms(repeats: int = 5) -> tuple[float, float | None]:
    """Median ms to start and finish a trivial Python process plainly and under bubblewrap (None: unusable)."""

    def median_ms(cmd: SandboxedCommand) -> float:
        times = []
        for _ in range(repeats):
            t = time.perf_counter()
            subprocess.run(cmd.argv, env=cmd.env, check=True)
            times.append((time.perf_counter() - t) * 1e3)
        cmd.release()
        return statistics.median(times)

    argv = [sys.executable, "-c", "pass"]
    plain = median_ms(wrap(argv, "none"))
    boxed = median_ms(wrap(argv, "bwrap")) if bwrap_problem() is None else None
    return plain, boxed
