"""One schedule per backend (bench.harness.protocol.schedule.Plan), and the exclusive schedule forced on CPU: the
runner, the one process that holds the device, starts only after every build of the batch has ended."""

from pathlib import Path

import pytest

from bench.harness.parent.evaluate import evaluate
from bench.harness.protocol import schedule
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

KERNELS = Path(__file__).parent / "kernels"


def test_auto_is_exclusive_only_on_a_tpu_host(tmp_path, monkeypatch):
    assert schedule.resolve("interleaved") == ("interleaved", "requested")
    assert schedule.resolve("exclusive", {"JAX_PLATFORMS": "cpu"})[0] == "exclusive"
    (tmp_path / "accel0").touch()
    globs = (str(tmp_path / "accel*"),)
    real_find_spec = schedule.importlib.util.find_spec
    monkeypatch.setattr(
        schedule.importlib.util, "find_spec", lambda name: object() if name == "libtpu" else real_find_spec(name)
    )
    assert schedule.tpu_host({}, globs) and schedule.tpu_host({"JAX_PLATFORMS": "tpu,cpu"}, globs)
    assert not schedule.tpu_host({"JAX_PLATFORMS": "cpu"}, globs)  # TPU excluded by the platform list
    assert not schedule.tpu_host({}, (str(tmp_path / "none*"),))  # no device files
    monkeypatch.setattr(schedule, "tpu_host", lambda environ=None: True)
    assert schedule.resolve("auto")[0] == "exclusive"
    monkeypatch.setattr(schedule, "tpu_host", lambda environ=None: False)
    assert schedule.resolve("auto")[0] == "interleaved"


def test_each_backend_fills_in_the_plan(monkeypatch):
    cpu = schedule.plan("auto", {"JAX_PLATFORMS": "cpu"})
    assert (cpu.backend, cpu.export_platform, cpu.interpret, cpu.builds_overlap_runner) == ("cpu", "cpu", True, True)
    monkeypatch.setattr(schedule, "tpu_host", lambda environ=None: True)
    tpu = schedule.plan("auto", {})
    assert (tpu.name, tpu.backend, tpu.export_platform, tpu.interpret, tpu.builds_overlap_runner) == (
        "exclusive",
        "tpu",
        "tpu",
        False,
        False,
    )
    monkeypatch.setattr(schedule, "tpu_host", lambda environ=None: False)
    monkeypatch.setattr(schedule, "cpu_only_host", lambda environ=None: False)
    gpu = schedule.plan("auto", {})
    assert (gpu.backend, gpu.export_platform, gpu.interpret) == ("gpu", "cuda", False)
    assert schedule.check_backend(tpu, "tpu") is None and "expected a tpu runner" in schedule.check_backend(tpu, "cpu")


def test_builds_never_get_a_device():
    from bench.harness.parent.builder import _build_env
    from bench.harness.parent.sandboxing import bwrap_args

    assert _build_env()["JAX_PLATFORMS"] == "cpu"
    args = bwrap_args()  # /dev holds harmless nodes only (null, zero, urandom ...): no accelerator is bound
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert bound and not [d for d in bound if any(k in d for k in ("accel", "nvidia", "vfio", "dri"))], bound


@pytest.mark.slow
def test_exclusive_schedule_starts_the_runner_after_the_builds():
    r = evaluate(
        EvalTask(
            workload="8p_GEMM",
            kernel_path=KERNELS / "identical.py",
            size="small",
            seeds=1,
            iters=10,
            blocks=2,
            timeout_s=60,
            schedule="exclusive",
        )
    )
    assert r.status == Status.CORRECT, r.reason
    t = r.timeline_s
    assert r.schedule == "exclusive" and t is not None
    assert t.build_ended < t.runner_started < t.inputs_drawn


def test_one_build_at_a_time_where_the_process_may_use_one_core(monkeypatch):
    """A one-core host or Ray node builds one kernel at a time (one build): a second would only share the core."""
    from bench.harness.protocol import schedule

    p = schedule.Plan("interleaved", "test", "cpu")
    monkeypatch.setattr(schedule.os, "sched_getaffinity", lambda pid: {3})
    assert p.build_parallelism == 1
    monkeypatch.setattr(schedule.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert p.build_parallelism == 2
