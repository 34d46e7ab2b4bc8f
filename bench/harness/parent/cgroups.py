"""TRUSTED (parent): the CPU and process bounds of one build, from cgroups, and the kill by cgroup membership.

Why cgroups: a build that starts a few hundred busy processes, each in a session of its own, kept a 2-core host
at a load of 200-400 (issue 40, section 3). With scheduler autogroups every session is its own scheduling entity,
so `nice` says nothing across sessions, and a process group or a session says nothing about who the build
started. A cgroup holds every process the build starts, whatever sessions or process groups it creates:
- `pids.max` bounds how many processes and threads it has at once (a fork beyond it fails with EAGAIN);
- the CPU controller gives the whole group ONE scheduling weight (v1 `cpu.shares`, v2 `cpu.weight`): a session's
  (1024, resp. 100), so the build is one entity like any other session of the host however many sessions it makes,
  and at most BUILD_CPU_CORES cores' time per period (v1 `cpu.cfs_quota_us`, v2 `cpu.max`). The runner joins a CPU
  group of its own weighing RUNNER_CPU_SHARES (8x a session's: `runner_group`), so a build's share stays far below
  the runner's. Why not a build weight far below a session's instead: on a shared host the build would then crawl
  beside every other session's work (at 1/8 of a session, a 20 s build deadline was missed under a load of 15);
- its membership (`cgroup.procs`) is the list of everything to kill when the build has replied or reached its
  deadline: every member is sent SIGKILL until none is left.
Where the host refuses a cgroup (no hierarchy, not writable), the build says so in its result (`refused`) and the
strongest bound the host allows applies instead: `nice` 19 and SCHED_IDLE (inherited across sessions, but a
session's autogroup weighs the same whatever its processes' priority), RLIMIT_NPROC for the processes (per user:
never enforced for root). `applied` names every bound that holds.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The build's CPU weight, whatever it starts: one session's (v1 1024, v2 100; module docstring) ...
BUILD_CPU_SHARES = 1024
BUILD_CPU_WEIGHT = 100
#: ... and the runner's: eight sessions' (a build, or a flood of sessions inside one, gets at most 1/9 of a contended
#: core against it).
RUNNER_CPU_SHARES = 8192
RUNNER_CPU_WEIGHT = 800
#: The most CPU time a build may take per period, in cores: one, on a host whose runner holds another.
BUILD_CPU_CORES = 1.0
CPU_PERIOD_US = 100_000
#: The fallback priority where no CPU cgroup can be made.
BUILD_NICE = 19


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


def _new_group(base: Path, settings: dict[str, str]) -> tuple[Path | None, list[str]]:
    """A fresh cgroup below `base` with `settings` written: (the group, the settings that took), or (None, []) where
    the host refuses the group itself. A setting the host refuses is left out of the list."""
    path = base / f"jaxbench_build_{uuid.uuid4().hex[:12]}"
    try:
        path.mkdir()
    except OSError:
        return None, []
    took = []
    for name, value in settings.items():
        try:
            (path / name).write_text(value)
            took.append(f"{name}={value}")
        except OSError:
            continue
    return path, took


@dataclass
class BuildCgroups:
    """The cgroups one build joins (a v1 group per controller, or one v2 group), and what they bound."""

    processes: int
    groups: list[Path] = field(default_factory=list)  # every group the build joins (cgroup.procs of each)
    applied: list[str] = field(default_factory=list)  # the bounds that hold, e.g. "cpu.shares=128 (cgroup v1)"
    refused: list[str] = field(default_factory=list)  # what the host refused, and what applies instead
    pids_group: Path | None = None  # where pids.events counts the forks the bound refused
    cpu_bounded: bool = False  # a CPU cgroup holds the build (else the launcher's nice / SCHED_IDLE)
    pids_bounded: bool = False

    @classmethod
    def create(cls, processes: int) -> BuildCgroups:
        """The pids and CPU groups of one build, on cgroup v1 (one hierarchy per controller) or v2 (one group)."""
        made = cls(processes)
        own = _own_cgroups()
        v1 = {c: rel for controllers, rel in own for c in controllers}
        if "pids" in v1 or "cpu" in v1:
            made._v1(v1)
        else:
            unified = next((rel for controllers, rel in own if not controllers), None)
            if unified is not None:
                made._v2(CGROUP_ROOT / unified)
        if not made.pids_bounded:
            made.refused.append(
                f"pids cgroup refused: RLIMIT_NPROC {made.nproc_limit()} instead (counts every task "
                "of the user; never enforced for root)"
            )
        if not made.cpu_bounded:
            made.refused.append(
                f"cpu cgroup refused: nice {BUILD_NICE}"
                + (" and SCHED_IDLE" if _chrt() else "")
                + " instead (no bound across sessions under scheduler autogroups)"
            )
        return made

    def _v1(self, rel: dict[str, str]) -> None:
        if "pids" in rel:
            group, took = _new_group(CGROUP_ROOT / "pids" / rel["pids"], {"pids.max": str(self.processes)})
            self._keep(group, took, "pids.max", "v1")
        if "cpu" in rel:
            quota = str(int(BUILD_CPU_CORES * CPU_PERIOD_US))
            group, took = _new_group(
                CGROUP_ROOT / "cpu" / rel["cpu"],
                {
                    "cpu.shares": str(BUILD_CPU_SHARES),
                    "cpu.cfs_period_us": str(CPU_PERIOD_US),
                    "cpu.cfs_quota_us": quota,
                },
            )
            self._keep(group, took, "cpu.", "v1")

    def _v2(self, base: Path) -> None:
        with contextlib.suppress(OSError):  # controllers for our children, where the host lets us enable them
            (base / "cgroup.subtree_control").write_text("+cpu +pids")
        group, took = _new_group(
            base,
            {
                "pids.max": str(self.processes),
                "cpu.weight": str(BUILD_CPU_WEIGHT),
                "cpu.max": f"{int(BUILD_CPU_CORES * CPU_PERIOD_US)} {CPU_PERIOD_US}",
            },
        )
        if group is not None:
            self._keep(group, [t for t in took if t.startswith("pids.")], "pids.max", "v2")
            self._keep(group, [t for t in took if t.startswith("cpu.")], "cpu.", "v2")

    def _keep(self, group: Path | None, took: list[str], needed: str, version: str) -> None:
        """Join `group` when its bound took (else remove it, unless another bound of the same group holds)."""
        if group is None:
            return
        if not any(t.startswith(needed) for t in took):
            if group not in self.groups:
                with contextlib.suppress(OSError):
                    group.rmdir()
            return
        if group not in self.groups:
            self.groups.append(group)
        self.applied += [f"{t} (cgroup {version})" for t in took]
        if needed == "pids.max":
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
            prefix += ["nice", "-n", str(BUILD_NICE)]
            if _chrt():
                prefix += ["chrt", "--idle", "0"]
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
        try:
            for line in (self.pids_group / "pids.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name == "max" and count.strip().isdigit():
                    return int(count)
        except OSError:
            pass
        return 0

    def describe(self) -> dict[str, JsonValue]:
        """What the result records of these bounds."""
        return {"applied": list(self.applied), "refused": list(self.refused), "forks_refused": self.forks_refused()}

    def release(self, wait_s: float = 1.0) -> None:
        """Remove the groups once they are empty; one that still holds a process after `wait_s` is kept."""
        for group in self.groups:
            release_group(group, wait_s)


def _chrt() -> bool:
    return shutil.which("chrt") is not None


def runner_group(pid: int) -> Path | None:
    """Move the runner (every thread of `pid`) into a CPU group of its own weighing RUNNER_CPU_SHARES (v2:
    RUNNER_CPU_WEIGHT); None where the host refuses it (the runner then weighs a session, as a build does). The
    caller removes it (`release_group`) once the runner has exited."""
    own = _own_cgroups()
    v1 = {c: rel for controllers, rel in own for c in controllers}
    if "cpu" in v1:
        group, took = _new_group(CGROUP_ROOT / "cpu" / v1["cpu"], {"cpu.shares": str(RUNNER_CPU_SHARES)})
    else:
        unified = next((rel for controllers, rel in own if not controllers), None)
        if unified is None:
            return None
        group, took = _new_group(CGROUP_ROOT / unified, {"cpu.weight": str(RUNNER_CPU_WEIGHT)})
    if group is None:
        return None
    try:
        if not took:
            raise OSError("no CPU weight")
        (group / "cgroup.procs").write_text(str(pid))
    except OSError:
        release_group(group, 0.0)
        return None
    return group


def release_group(group: Path | None, wait_s: float = 1.0) -> None:
    """Remove `group` once it is empty (kept, and countable, if a process still holds it after `wait_s`)."""
    if group is None:
        return
    deadline = time.monotonic() + wait_s
    while True:
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() >= deadline:
                return
            time.sleep(0.02)
