"""The build's CPU and process bounds (bench.harness.parent.sandboxing): what holds, what the host refused and what
applies instead, and the kill by cgroup membership that reaches processes in sessions of their own. No timing."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as cgroups
from bench.harness.parent.sandboxing import _JOIN, BuildCgroups


def test_a_host_that_refuses_every_cgroup_gets_the_fallbacks_named(monkeypatch, tmp_path):
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path / "absent")  # no hierarchy can be created there
    groups = BuildCgroups.create(64)
    assert groups.groups == [] and not groups.cpu_bounded and not groups.pids_bounded
    assert any("pids cgroup refused: RLIMIT_NPROC" in why for why in groups.refused)
    assert any("cpu cgroup refused: nice 19" in why for why in groups.refused)
    prefix = groups.launcher()
    assert prefix[prefix.index("nice") : prefix.index("nice") + 3] == ["nice", "-n", "19"]
    assert any(b.startswith("nice 19") for b in groups.describe()["applied"])  # the bound that applies instead
    assert groups.kill_members() == 0 and groups.forks_refused() == 0  # nothing to find without a group


def test_a_host_that_refuses_sched_idle_still_builds(monkeypatch, tmp_path):
    """On a lent TPU VM the cpu cgroup was refused and `chrt --idle` failed ("Invalid argument"): every build started
    under it exited at once, and every candidate read `crashed`. chrt is used only where it works."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "chrt").write_text('#!/bin/sh\necho "chrt: failed to set pid 0\'s policy: Invalid argument" >&2\nexit 1\n')
    (fake / "chrt").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path / "absent")
    cgroups._chrt.cache_clear()
    try:
        groups = BuildCgroups.create(64)
        prefix = groups.launcher()
        assert "chrt" not in prefix and "nice" in prefix
        assert not any("SCHED_IDLE" in why for why in groups.refused + groups.applied)
        assert (
            subprocess.run([*prefix, sys.executable, "-c", "print('built')"], capture_output=True).stdout == b"built\n"
        )
    finally:
        cgroups._chrt.cache_clear()


def test_v1_hierarchies_get_a_pids_and_a_cpu_group_with_their_bounds(monkeypatch, tmp_path):
    for controller in ("pids", "cpu"):
        (tmp_path / controller).mkdir()
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: [(["pids"], ""), (["cpu", "cpuacct"], "")])
    groups = BuildCgroups.create(64)
    assert groups.pids_bounded and groups.cpu_bounded and groups.refused == [] and groups.launcher() == []
    assert set(groups.applied) >= {
        "pids.max=64 (cgroup v1)",
        f"cpu.shares={cgroups.BUILD_CPU_SHARES} (cgroup v1)",
        f"cpu.cfs_quota_us={cgroups.CPU_PERIOD_US} (cgroup v1)",
    }
    assert {g.parent.name for g in groups.groups} == {"pids", "cpu"}
    assert (groups.pids_group / "pids.max").read_text() == "64"


def test_a_v2_host_gets_one_group_with_every_bound(monkeypatch, tmp_path):
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: [([], "")])
    groups = BuildCgroups.create(32)
    assert len(groups.groups) == 1 and groups.pids_bounded and groups.cpu_bounded
    assert (groups.groups[0] / "cpu.max").read_text() == f"{cgroups.CPU_PERIOD_US} {cgroups.CPU_PERIOD_US}"
    assert (groups.groups[0] / "cpu.weight").read_text() == str(cgroups.BUILD_CPU_WEIGHT)


def _alive(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_every_member_is_killed_whatever_session_it_made():
    groups = BuildCgroups.create(32)
    if not groups.groups:
        pytest.skip(f"this host refuses the build's cgroups: {groups.refused}")
    marker = f"jaxbench-cgroup-kill-{uuid.uuid4().hex}"
    code = (
        "import subprocess, sys, time\n"
        f"ps = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)', '{marker}'],"
        " start_new_session=True)"
        " for _ in range(5)]\n"
        "print('up', flush=True)\ntime.sleep(300)"
    )
    procs = [str(g / "cgroup.procs") for g in groups.groups]
    join = ["/bin/sh", "-c", _JOIN, "join", str(len(procs)), *procs, sys.executable, "-c", code]  # as a build joins
    proc = subprocess.Popen(join, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "up"
        # five processes in sessions of their own, and their parent (whose command line holds the marker too); a
        # child between fork and exec shows no command line for a moment: wait for all six (a wait, not a bound)
        deadline = time.monotonic() + 60
        while len(_alive(marker)) < 6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(_alive(marker)) == 6 and len(groups.members()) == 6
        assert groups.kill_members() == 6
        proc.wait(timeout=30)
        deadline = time.monotonic() + 60  # killed processes leave /proc once reaped (by init, for the orphans)
        while _alive(marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive(marker) == [] and groups.members() == set()
    finally:
        for pid in _alive(marker):
            os.kill(pid, 9)
        proc.kill()
        groups.release()


def test_the_runner_weighs_more_than_any_build():
    assert cgroups.RUNNER_CPU_SHARES >= 8 * cgroups.BUILD_CPU_SHARES
    assert cgroups.RUNNER_CPU_WEIGHT >= 8 * cgroups.BUILD_CPU_WEIGHT
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        group = cgroups.runner_group(proc.pid)
        if group is None:
            pytest.skip("this host refuses a CPU cgroup for the runner")
        assert str(proc.pid) in (group / "cgroup.procs").read_text().split()
        weight = group / ("cpu.shares" if (group / "cpu.shares").exists() else "cpu.weight")
        assert int(weight.read_text()) in (cgroups.RUNNER_CPU_SHARES, cgroups.RUNNER_CPU_WEIGHT)
    finally:
        proc.kill()
        proc.wait()
    cgroups.release_group(group)
    assert not group.exists()


def test_a_build_given_cores_gets_a_cpuset_group_of_them_v1_and_v2(monkeypatch, tmp_path):
    """v1: a group in the cpuset hierarchy with the parent's memory nodes (a v1 task cannot join without them);
    v2: the same one group as the other bounds."""
    for controller in ("pids", "cpu", "cpuset"):
        (tmp_path / "v1" / controller).mkdir(parents=True)
    (tmp_path / "v1" / "cpuset" / "cpuset.mems").write_text("0\n")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path / "v1")
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: [(["pids"], ""), (["cpu"], ""), (["cpuset"], "")])
    groups = BuildCgroups.create(64, frozenset({0, 2}))
    assert groups.cpus == frozenset({0, 2}) and "cpuset.cpus=0,2 (cgroup v1)" in groups.applied
    (cpuset,) = [g for g in groups.groups if g.parent.name == "cpuset"]
    assert (cpuset / "cpuset.mems").read_text() == "0" and groups.refused == []
    (tmp_path / "v2").mkdir()
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path / "v2")
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: [([], "")])
    groups = BuildCgroups.create(64, frozenset({1}))
    assert len(groups.groups) == 1 and groups.cpus == frozenset({1})
    assert (groups.groups[0] / "cpuset.cpus").read_text() == "1" and "cpuset.cpus=1 (cgroup v2)" in groups.applied


def test_a_cpuset_the_kernel_does_not_read_back_as_given_is_refused(monkeypatch, tmp_path):
    """The overlap of builds with a timing rests on the cpuset: kept only where the kernel reads back exactly the
    cores asked for (a parent cpuset narrower than them, say); refused and named otherwise."""
    (tmp_path / "cpuset").mkdir()
    (tmp_path / "cpuset" / "cpuset.mems").write_text("0\n")
    monkeypatch.setattr(cgroups, "CGROUP_ROOT", tmp_path)
    monkeypatch.setattr(cgroups, "_own_cgroups", lambda: [(["cpuset"], "")])
    monkeypatch.setattr(cgroups, "_read_cpus", lambda group: frozenset({0, 1}))
    groups = BuildCgroups.create(64, frozenset({0}))
    assert groups.cpus is None and groups.groups == []
    assert any(why.startswith("cpuset cgroup refused") for why in groups.refused)
    made = [p for p in (tmp_path / "cpuset").iterdir() if p.is_dir()]
    assert len(made) == 1 and (made[0] / "cpuset.cpus").read_text() == "0"  # asked, read back otherwise: refused


def test_a_process_in_the_cpuset_cannot_widen_its_cores():
    """Affinity is the process's own to change; its cpuset is not: a build asking for every core keeps its own."""
    cores = os.sched_getaffinity(0)
    if len(cores) < 2:
        pytest.skip("one core: nothing to confine a build off")
    own = frozenset({min(cores)})
    groups = BuildCgroups.create(32, own)
    if groups.cpus != own:
        pytest.skip(f"this host refuses a cpuset cgroup: {groups.refused}")
    code = (
        "import os\n"
        f"try:\n    os.sched_setaffinity(0, {set(cores)!r})\nexcept OSError:\n    pass\n"
        "print(sorted(os.sched_getaffinity(0)))"
    )
    procs = [str(g / "cgroup.procs") for g in groups.groups]
    try:
        out = subprocess.run(
            ["/bin/sh", "-c", _JOIN, "join", str(len(procs)), *procs, sys.executable, "-c", code],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        assert out.strip() == str(sorted(own)), out
    finally:
        groups.release()
