"""TRUSTED (parent): how the untrusted build step is confined: bubblewrap with a minimal read-only filesystem, a
capped private /tmp and /dev, no network, its own PID namespace; rlimits; pids, CPU and memory cgroups; an
allow-listed environment. What each bound is and why: docs/threat-model.md, "The build sandbox".

Why cgroups: with scheduler autogroups every session is its own scheduling entity, so `nice` means nothing across
sessions, and a build that made a few hundred busy sessions kept a 2-core host at a load of 200-400 (issue 40). A
cgroup holds every process the build starts, whatever sessions it makes: its `pids.max` bounds them, its CPU weight
makes the whole build one entity (the runner's group weighs eight), and its membership is the kill list. Where the
host refuses a cgroup, the result names the weaker bound that applies instead (`BuildCgroups.refused`, `applied`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import platform
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from pydantic import JsonValue

from bench.paths import PALLAS_REFS_DIR, ROOT, WORKLOADS_DIR

MODES = ("auto", "bwrap", "none")

#: Environment variables passed to the build verbatim (everything else is dropped).
ENV_ALLOW = frozenset(
    "PATH LANG LANGUAGE LC_ALL LC_CTYPE TZ PYTHONPATH PYTHONHASHSEED PYTHONUNBUFFERED PYTHONDONTWRITEBYTECODE "
    "JAX_ENABLE_X64 JAX_TRACEBACK_FILTERING JAXBENCH_ROOT VIRTUAL_ENV".split()
)

TMPFS_MB = 256  # the build's private /tmp; part of the memory cap
DEV_MB = 16  # the build's private /dev (device nodes and /dev/shm); part of the memory cap
PROCESS_LIMIT = 256  # processes + threads in the build's pids cgroup (jax starts a few dozen threads)
#: The kernel's settings under /proc, read-only in the build: a harness run as root runs its builds as host uid 0 (no
#: capabilities), and the kernel lets uid 0 write most of /proc/sys on file permissions alone (kernel.core_pattern
#: would run a program of the build's choosing as host root).
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/mtrr")
#: Host files of /proc the build sees as empty: the kernel's keyrings are not namespaced, and these list the keys
#: (with their names) the build's uid may view on the host (`seccomp_program` refuses the calls themselves).
PROC_HIDDEN = ("/proc/keys", "/proc/key-users")
#: The only device nodes in the build's own /dev (never an accelerator: only the runner opens a chip).
DEV_NODES = ("null", "zero", "full", "random", "urandom")

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The build's CPU weight, whatever it starts: one session's (v1 1024, v2 100) ...
BUILD_CPU_SHARES = 1024
BUILD_CPU_WEIGHT = 100
#: ... and the runner's: eight sessions' (a build, or a flood of sessions inside one, gets at most 1/9 of a contended
#: core against it). Not a build weight far below a session's: on a shared host the build would then crawl beside
#: every other session's work (at 1/8 of a session, a 20 s build deadline was missed under a load of 15).
RUNNER_CPU_SHARES = 8192
RUNNER_CPU_WEIGHT = 800
#: The most CPU time a build may take per period, in cores: one, on a host whose runner holds another.
BUILD_CPU_CORES = 1.0
CPU_PERIOD_US = 100_000
#: The fallback priority where no CPU cgroup can be made.
BUILD_NICE = 19
#: The out-of-memory counters of a memory cgroup: v1 `memory.oom_control`, v2 `memory.events`.
OOM_COUNTERS = ("oom", "oom_kill")


class SandboxUnavailable(RuntimeError):
    """bubblewrap was required (mode "bwrap", official runs) but is missing or cannot create namespaces."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one build. `memory_mb` None: no address-space cap."""

    memory_mb: int | None = 8192
    tmpfs_mb: int = TMPFS_MB
    processes: int = PROCESS_LIMIT
    dev_mb: int = DEV_MB
    cpus: frozenset[int] | None = None  # the cores it may run on (a cpuset cgroup); None: every core

    @property
    def address_space_mb(self) -> int | None:
        """The address-space cap left once the tmpfs mounts (/tmp, /dev) are counted against the memory cap."""
        if not self.memory_mb:
            return None
        return max(self.memory_mb - self.tmpfs_mb - self.dev_mb, 512)


# ------------------------------------------------------------------ cgroups


def _own_cgroups() -> list[tuple[list[str], str]]:
    """(controllers, path) of each hierarchy this process belongs to (/proc/self/cgroup); v2's has no controllers."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        _, controllers, rel = line.split(":", 2)
        out.append(([c for c in controllers.split(",") if c], rel.lstrip("/")))
    return out


def _hierarchies() -> tuple[dict[str, str], str | None]:
    """(v1 controller -> our path, our v2 path or None)."""
    own = _own_cgroups()
    return {c: rel for cs, rel in own for c in cs}, next((rel for cs, rel in own if not cs), None)


def _new_group(base: Path, settings: dict[str, str]) -> tuple[Path | None, list[str]]:
    """A fresh cgroup below `base` with `settings` written: (the group, the settings that took, "name=value"), or
    (None, []) where the host refuses the group itself."""
    path = base / f"jaxbench_build_{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
    except OSError:
        return None, []
    took = []
    for name, value in settings.items():
        with contextlib.suppress(OSError):
            (path / name).write_text(value)
            took.append(f"{name}={value}")
    return path, took


def cpu_list(cpus: frozenset[int]) -> str:
    """The kernel's list format of a set of cores ("0,2,3"), as cpuset.cpus and taskset take it."""
    return ",".join(str(c) for c in sorted(cpus))


def parse_cpu_list(text: str) -> frozenset[int]:
    """A set of cores from the kernel's list format ("0-2,5"); ValueError on anything else."""
    out: set[int] = set()
    for part in filter(None, text.strip().split(",")):
        low, _, high = part.partition("-")
        out.update(range(int(low), int(high or low) + 1))
    return frozenset(out)


def _read_cpus(group: Path) -> frozenset[int] | None:
    """The cores a cpuset group's tasks may run on, as the kernel reads them back ("0-2,5"; None: unreadable): the
    effective set where the kernel has one (v2's `cpuset.cpus` echoes the request, which an ancestor may narrow or,
    where it leaves nothing, replace by its own)."""
    names = ("cpuset.cpus.effective", "cpuset.effective_cpus", "cpuset.cpus")
    try:
        return parse_cpu_list(next((group / n).read_text() for n in names if (group / n).exists()))
    except (OSError, ValueError, StopIteration):
        return None


def release_group(group: Path | None, wait_s: float = 1.0) -> None:
    """Remove `group` once it is empty (kept, and countable, if a process still holds it after `wait_s`)."""
    deadline = time.monotonic() + wait_s
    while group is not None:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.02)


@lru_cache(maxsize=1)
def _chrt() -> bool:
    """`chrt --idle` works here. Some hosts refuse SCHED_IDLE (a TPU VM's container answered "failed to set pid 0's
    policy: Invalid argument"), and a build started under a refused chrt never ran: every candidate `crashed`."""
    exe = shutil.which("chrt")
    try:
        return (
            exe is not None
            and subprocess.run([exe, "--idle", "0", "true"], capture_output=True, timeout=10).returncode == 0
        )
    except (OSError, subprocess.SubprocessError):
        return False


@dataclass
class BuildCgroups:
    """The pids and CPU cgroups one build joins (a v1 group per controller, or one v2 group), and what they bound."""

    processes: int
    groups: list[Path] = field(default_factory=list)  # every group the build joins (cgroup.procs of each)
    applied: list[str] = field(default_factory=list)  # the bounds that hold, e.g. "cpu.shares=1024 (cgroup v1)"
    refused: list[str] = field(default_factory=list)  # what the host refused, and what applies instead
    pids_group: Path | None = None  # where pids.events counts the forks the bound refused
    cpu_bounded: bool = False  # a CPU cgroup holds the build (else the launcher's nice / SCHED_IDLE)
    pids_bounded: bool = False
    cpus: frozenset[int] | None = None  # the cores a cpuset cgroup confines it to (None: every core, or refused)

    @classmethod
    def create(cls, processes: int, cpus: frozenset[int] | None = None) -> BuildCgroups:
        """The pids and CPU groups of one build, on cgroup v1 (one hierarchy per controller) or v2 (one group), and
        where `cpus` is given, a cpuset group confining it (and all it starts) to those cores."""
        made = cls(processes)
        v1, unified = _hierarchies()
        wanted = {"cpuset.cpus": cpu_list(cpus)} if cpus else {}
        cpuset: tuple[Path | None, list[str], str] = (None, [], "")  # the cpuset group, what took, the version
        quota = int(BUILD_CPU_CORES * CPU_PERIOD_US)
        if {"pids", "cpu", "cpuset"} & v1.keys():
            if "pids" in v1:
                made._keep(*_new_group(CGROUP_ROOT / "pids" / v1["pids"], {"pids.max": str(processes)}), "pids.", "v1")
            if "cpu" in v1:
                cpu = {"cpu.shares": str(BUILD_CPU_SHARES), "cpu.cfs_period_us": str(CPU_PERIOD_US)}
                cpu["cpu.cfs_quota_us"] = str(quota)
                made._keep(*_new_group(CGROUP_ROOT / "cpu" / v1["cpu"], cpu), "cpu.", "v1")
            if cpus and "cpuset" in v1:  # v1 needs the memory nodes written before a task may join
                base = CGROUP_ROOT / "cpuset" / v1["cpuset"]
                with contextlib.suppress(OSError):
                    wanted["cpuset.mems"] = (base / "cpuset.mems").read_text().strip()
                cpuset = (*_new_group(base, wanted), "v1")
        elif unified is not None:
            base = CGROUP_ROOT / unified
            for controller in ("+cpu", "+pids", *(["+cpuset"] if cpus else [])):  # one by one: one refused, not all
                with contextlib.suppress(OSError):  # controllers for our children, where the host lets us enable them
                    (base / "cgroup.subtree_control").write_text(controller)
            settings = {"pids.max": str(processes), "cpu.weight": str(BUILD_CPU_WEIGHT), **wanted}
            group, took = _new_group(base, {**settings, "cpu.max": f"{quota} {CPU_PERIOD_US}"})
            made._keep(group, [t for t in took if t.startswith("pids.")], "pids.", "v2")
            made._keep(group, [t for t in took if t.startswith("cpu.")], "cpu.", "v2")
            cpuset = (group, took, "v2")
        if cpus:
            made._confine(cpus, *cpuset)
        if not made.pids_bounded:
            made.refused.append(
                f"pids cgroup refused: RLIMIT_NPROC {made.nproc_limit()} instead (counts every task "
                "of the user; never enforced for root)"
            )
        if not made.cpu_bounded:
            idle = " and SCHED_IDLE" if _chrt() else ""
            made.refused.append(
                f"cpu cgroup refused: nice {BUILD_NICE}{idle} instead (no bound across sessions under scheduler "
                "autogroups)"
            )
        return made

    def _confine(self, cpus: frozenset[int], group: Path | None, took: list[str], version: str) -> None:
        """Keep the cpuset bound of `group` only where the kernel reads back exactly `cpus`: the overlap of builds
        with a timing (parent/evaluate.py) rests on it. Why a cgroup and not affinity: a build can widen its own
        affinity, never its cpuset."""
        wanted = cpu_list(cpus)
        mems = version != "v1" or any(t.startswith("cpuset.mems=") and t != "cpuset.mems=" for t in took)
        if group is not None and f"cpuset.cpus={wanted}" in took and mems and _read_cpus(group) == cpus:
            if group not in self.groups:
                self.groups.append(group)
            self.applied.append(f"cpuset.cpus={wanted} (cgroup {version})")
            self.cpus = cpus
            return
        if group is not None and group not in self.groups:
            release_group(group, 0.0)
        self.refused.append("cpuset cgroup refused: every core (no timing runs beside this build)")

    def _keep(self, group: Path | None, took: list[str], kind: str, version: str) -> None:
        """Join `group` when its `kind` of bound took (else remove it, unless another bound of it holds)."""
        if group is None:
            return
        if not took:
            if group not in self.groups:
                release_group(group, 0.0)
            return
        if group not in self.groups:
            self.groups.append(group)
        self.applied += [f"{t} (cgroup {version})" for t in took]
        if kind == "pids.":
            self.pids_bounded, self.pids_group = True, group
        else:
            self.cpu_bounded = True

    def nproc_limit(self) -> int:
        """The fallback process bound (RLIMIT_NPROC counts every task of the user, host-wide): the user's tasks now
        plus the build's allowance."""
        uid, tasks = os.getuid(), 0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError):
                    if entry.stat().st_uid == uid:
                        tasks += sum(1 for _ in (entry / "task").iterdir())
        return tasks + self.processes

    def launcher(self) -> list[str]:
        """The fallback bounds as a command prefix, where the cgroups were refused (empty where they hold)."""
        prefix: list[str] = []
        if not self.pids_bounded and shutil.which("prlimit"):
            limit = self.nproc_limit()
            prefix += ["prlimit", f"--nproc={limit}", "--"]
            self.applied.append(f"RLIMIT_NPROC {limit}" + (" (not enforced: root)" if os.geteuid() == 0 else ""))
        if not self.cpu_bounded:
            prefix += ["nice", "-n", str(BUILD_NICE)] + (["chrt", "--idle", "0"] if _chrt() else [])
            self.applied.append(f"nice {BUILD_NICE}" + (" + SCHED_IDLE" if _chrt() else ""))
        return prefix

    def members(self) -> set[int]:
        """Every process in the build's groups now."""
        found: set[int] = set()
        for group in self.groups:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (group / "cgroup.procs").read_text().split())
        return found

    def kill_members(self, wait_s: float = 4.0) -> int:
        """SIGKILL every member until none is left (a member forking meanwhile is caught on the next pass): how many
        were killed. Without groups, nothing can be found here (0)."""
        killed: set[int] = set()
        deadline = time.monotonic() + wait_s
        while left := self.members():  # at least one pass, whatever `wait_s`
            for pid in left - killed:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            killed |= left
            if time.monotonic() >= deadline:
                break
            time.sleep(0.01)  # a killed process leaves cgroup.procs once the kernel reaped it
        return len(killed)

    def forks_refused(self) -> int:
        """How many times the process bound refused a fork (pids.events "max"): 0 where it never did, or unknown."""
        if self.pids_group is None:
            return 0
        with contextlib.suppress(OSError):
            for line in (self.pids_group / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and count.strip().isdigit():
                    return int(count)
        return 0

    def describe(self) -> dict[str, JsonValue]:
        """What the result records of these bounds."""
        return {"applied": list(self.applied), "refused": list(self.refused), "forks_refused": self.forks_refused()}

    def release(self, wait_s: float = 1.0) -> None:
        """Remove the groups once they are empty; one that still holds a process after `wait_s` is kept."""
        for group in self.groups:
            release_group(group, wait_s)


def runner_group(pid: int) -> Path | None:
    """Move the runner (every thread of `pid`) into a CPU group of its own weighing RUNNER_CPU_SHARES (v2:
    RUNNER_CPU_WEIGHT); None where the host refuses it (the runner then weighs a session, as a build does). The
    caller removes it (`release_group`) once the runner has exited."""
    v1, unified = _hierarchies()
    if "cpu" in v1:
        group, took = _new_group(CGROUP_ROOT / "cpu" / v1["cpu"], {"cpu.shares": str(RUNNER_CPU_SHARES)})
    elif unified is not None:
        group, took = _new_group(CGROUP_ROOT / unified, {"cpu.weight": str(RUNNER_CPU_WEIGHT)})
    else:
        return None
    try:
        if group is None or not took:
            raise OSError("no CPU weight")
        (group / "cgroup.procs").write_text(str(pid))
    except OSError:
        release_group(group, 0.0)
        return None
    return group


def _memory_cgroup(limit_mb: int | None) -> Path | None:
    """A fresh memory cgroup limited to `limit_mb` (v1 memory.limit_in_bytes, and memsw where swap is accounted;
    v2 memory.max, memory.swap.max 0), or None where the host does not allow it. Why: RLIMIT_AS does not count
    tmpfs or shared-memory pages; a memory cgroup charges them to whoever touched them."""
    if not limit_mb:
        return None
    limit = str(int(limit_mb) << 20)
    v1, unified = _hierarchies()
    if "memory" in v1:
        settings = {"memory.limit_in_bytes": limit, "memory.memsw.limit_in_bytes": limit}
        group, took = _new_group(CGROUP_ROOT / "memory" / v1["memory"], settings)
    elif unified is not None:
        group, took = _new_group(CGROUP_ROOT / unified, {"memory.max": limit, "memory.swap.max": "0"})
    else:
        return None
    if group is not None and not any(t.startswith(("memory.limit_in_bytes=", "memory.max=")) for t in took):
        release_group(group, 0.0)
        return None
    return group


# ------------------------------------------------------------------ the system calls a build may not make
#
# A classic BPF program that bubblewrap's `--seccomp` loads before it runs the build. Why: the kernel's keyrings are
# not namespaced. A build runs as the harness's uid (host uid 0 on a root harness, even in its user namespace), so
# `add_key` and `keyctl` reached that uid's own user keyring on the host: a build wrote keys that outlived it, that
# the next candidates' builds listed in /proc/keys (4 KB of text in each name: a channel between candidates), and
# cleared the keyring (red team, stop 62). No honest build uses a keyring. The filter answers EPERM for the three
# keyring calls, for the x32 ABI and for any other architecture's calls (a 64-bit process can still make 32-bit
# `int 0x80` calls, with other numbers), and allows everything else.
#: The keyring system calls, by machine: (the seccomp audit architecture, their numbers).
KEYRING_CALLS = ("add_key", "request_key", "keyctl")
_ARCHES = {
    "x86_64": (0xC000003E, (248, 249, 250)),
    "aarch64": (0xC00000B7, (217, 218, 219)),
}
_X32_BIT = 0x40000000  # x86_64: a call numbered from here is an x32 ABI call

_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
_ARCH_OFFSET, _NR_OFFSET = 4, 0  # in struct seccomp_data


def seccomp_program(machine: str | None = None) -> bytes | None:
    """The filter as bubblewrap reads it (an array of struct sock_filter); None on a machine this module does not
    know the numbers of (the build then runs without it, and its result says so)."""
    arch = _ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, numbers = arch
    checks = [(_JGE_K, _X32_BIT)] if audit == _ARCHES["x86_64"][0] else []
    checks += [(_JEQ_K, nr) for nr in numbers]
    # a jump's offset counts the instructions it skips: a match skips the checks after it and the ALLOW return
    code = [(_LD_W_ABS, 0, 0, _ARCH_OFFSET), (_JEQ_K, 0, len(checks) + 2, audit), (_LD_W_ABS, 0, 0, _NR_OFFSET)]
    code += [(op, len(checks) - i, 0, k) for i, (op, k) in enumerate(checks)]
    code += [(_RET_K, 0, 0, _ALLOW), (_RET_K, 0, 0, _ERRNO | errno.EPERM)]
    return b"".join(struct.pack("=HBBI", *insn) for insn in code)


def open_seccomp(machine: str | None = None) -> int | None:
    """A descriptor holding `seccomp_program()` from its start, for `bwrap --seccomp FD` (it reads it to the end: one
    per build); None without a program. The caller passes it to the child and closes it."""
    code = seccomp_program(machine)
    if code is None:
        return None
    fd = os.memfd_create("jaxbench-seccomp")
    os.write(fd, code)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# ------------------------------------------------------------------ the command


@dataclass(frozen=True)
class SandboxedCommand:
    argv: list[str]
    env: dict[str, str]
    name: str  # "bwrap" or "none"
    limits: Limits = field(default_factory=Limits)
    groups: BuildCgroups = field(default_factory=lambda: BuildCgroups(0))  # its pids and CPU cgroups (or why not)
    memory_cgroup: Path | None = None  # the memory cgroup it joins (counts tmpfs and shared-memory pages too)
    fds: list[int] = field(default_factory=list)  # descriptors the command reads at its start (the seccomp filter)

    def close_fds(self) -> None:
        """Close `fds` once the command has started (its own copies stay open in it); each once only, as its number
        may be another file's a moment later."""
        while self.fds:
            with contextlib.suppress(OSError):
                os.close(self.fds.pop())

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
        """The memory cgroup's out-of-memory counters so far (read before `release` removes the cgroup; empty: no
        cgroup, or unreadable). Why the parent reads them: a process the cgroup kills dies by SIGKILL like any
        other; only the kernel's counter says it was the memory cap."""
        if self.memory_cgroup is None:
            return {}
        for name in ("memory.events", "memory.oom_control"):
            try:
                text = (self.memory_cgroup / name).read_text()
            except OSError:
                continue
            pairs = (line.split() for line in text.splitlines())
            return {p[0]: int(p[1]) for p in pairs if len(p) == 2 and p[0] in OOM_COUNTERS and p[1].isdigit()}
        return {}

    def release(self, wait_s: float = 1.0) -> None:
        """Remove the cgroups once every process in them is gone (killed processes leave them a moment
        after their death); one still alive after `wait_s` keeps them (and stays countable there)."""
        self.close_fds()
        self.groups.release(wait_s)
        release_group(self.memory_cgroup, wait_s)


def _rlimits(limits: Limits) -> list[tuple[int, int]]:
    out = [(resource.RLIMIT_FSIZE, limits.tmpfs_mb << 20), (resource.RLIMIT_CORE, 0)]
    if limits.address_space_mb:
        out.append((resource.RLIMIT_AS, limits.address_space_mb << 20))
    return out


#: The shell that joins the cgroups named by its first arguments ($1: how many) with its own pid, then execs the rest.
_JOIN = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"'


def _launcher(limits: Limits, groups: BuildCgroups, memory_cgroup: Path | None = None) -> list[str]:
    """The prefix that confines a command from its first instruction, without Python in a forked child: a
    shell joins the pids, CPU and memory cgroups with its own pid, the fallback bounds where a cgroup was refused
    apply (BuildCgroups.launcher), and prlimit sets the rlimits and execs the command. Every process below
    inherits all of them, whatever session it makes."""
    joined = [*groups.groups, *([memory_cgroup] if memory_cgroup else [])]
    prefix: list[str] = []
    if joined:
        prefix = ["/bin/sh", "-c", _JOIN, "join", str(len(joined)), *[str(g / "cgroup.procs") for g in joined]]
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


def inherited_import_paths() -> list[str]:
    """The folders on the harness's own PYTHONPATH: a host whose packages come from there (a lent TPU VM's jax did)
    has the build import them from there too; it failed with "No module named 'jax'" when only the project root
    was on the build's path. Never a folder that holds the repository or the home directory, or lies in the
    repository: the build reads only bench/, workloads/ and pallas_refs/ of it (not data/ or other submissions)."""
    guarded = [Path(ROOT).resolve(), Path.home().resolve()]
    found = []
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        path = Path(entry).resolve() if entry and os.path.isdir(entry) else None
        if path is None or any(g == path or g.is_relative_to(path) for g in guarded):
            continue
        if not path.is_relative_to(guarded[0]):
            found.append(str(path))
    return found


def readable_paths() -> list[str]:
    """Everything the build may read: Python, the venv, the harness's PYTHONPATH folders and the importable project
    code (outermost only)."""
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(ROOT) / "bench", WORKLOADS_DIR, PALLAS_REFS_DIR}
    paths |= {Path(p) for p in inherited_import_paths()}
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


def bwrap_args(
    kernel: Path | None = None, limits: Limits = Limits(), extra_ro: Iterable[str] = (), seccomp_fd: int | None = None
) -> list[str]:
    """The bubblewrap prefix of a build: minimal read-only binds, a size-capped private /tmp, no network.
    `kernel`: the kernel file, or the folder it will be written to (a build started ahead of need), read-only.
    `seccomp_fd`: the filter of `seccomp_program` to load (the caller passes the descriptor to bubblewrap)."""
    args = ["bwrap", *_system_binds(), "--size", str(limits.tmpfs_mb << 20), "--tmpfs", "/tmp"]
    args += ["--size", str(limits.dev_mb << 20), "--tmpfs", "/dev", "--dir", "/dev/shm", "--proc", "/proc"]
    for path in PROC_READ_ONLY:  # (read-only binds of the host's: bubblewrap skips its own cover where it may not
        args += ["--ro-bind-try", path, path]  # write them, and a root harness's build is host uid 0: red team 9)
    for path in PROC_HIDDEN:
        args += ["--ro-bind-try", "/dev/null", path]
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
    # its own user namespace, in which it may make no other: without one, a build made one, gained every capability
    # there, mounted the cgroup hierarchy and rewrote its own cpuset, pids.max and memory limit (red team 8)
    unshare = "--unshare-user --disable-userns --unshare-net --unshare-pid --unshare-ipc --unshare-uts"
    unshare += " --unshare-cgroup-try"
    args += [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
    return [*args, "--chdir", "/tmp", *unshare.split(), *"--die-with-parent --new-session --cap-drop ALL --".split()]


@lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """None when bubblewrap works on this host; otherwise why not (checked once per process)."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed"
    flags = "--ro-bind / / --tmpfs /tmp --dev /dev --proc /proc --unshare-user --disable-userns --unshare-net"
    flags += " --unshare-pid --die-with-parent"
    fd = open_seccomp()
    flags += "" if fd is None else f" --seccomp {fd}"
    probe = [exe, *flags.split(), "--cap-drop", "ALL", "--", "true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=20, pass_fds=() if fd is None else (fd,))
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap cannot start: {exc}"
    finally:
        if fd is not None:
            os.close(fd)
    if done.returncode != 0:
        return f"bubblewrap cannot create its namespaces: {done.stderr.strip()[:300]}"
    return None


@lru_cache(maxsize=1)
def _warn_once(problem: str) -> None:
    """Say once per process that candidates run unsandboxed (every row then records sandbox: none)."""
    print(
        f"jaxbench: WARNING: {problem}; building candidate kernels WITHOUT a sandbox "
        "(results record sandbox: none; official runs refuse this)",
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
    groups = BuildCgroups.create(limits.processes, limits.cpus)
    memory = _memory_cgroup(limits.memory_mb)
    launcher = _launcher(limits, groups, memory)
    if name == "none":
        home = Path(tempfile.mkdtemp(prefix="jaxbench_build_home_"))
        return SandboxedCommand(
            launcher + list(argv), scrubbed_env(extra_env, home=home), "none", limits, groups, memory
        )
    env = scrubbed_env(extra_env, home=Path("/tmp"))
    fd = open_seccomp()
    if fd is None:
        groups.refused.append(f"seccomp filter: none on {platform.machine()} (the host's keyrings are reachable)")
    else:
        groups.applied.append("seccomp: " + ", ".join(KEYRING_CALLS) + " refused (EPERM)")
    boxed, fds = bwrap_args(kernel, limits, extra_ro, fd), [] if fd is None else [fd]
    return SandboxedCommand(launcher + boxed + list(argv), env, "bwrap", limits, groups, memory, fds)
