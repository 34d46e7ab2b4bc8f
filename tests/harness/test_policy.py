"""The timing policy (bench.harness.protocol.policy): one frozen model per backend, the only decider of calls, blocks,
interval, quality, repeats and deadlines. Pure: no process, no clock."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from bench.harness.protocol.policy import POLICIES, TimingPolicy, resolve


@pytest.mark.parametrize(
    "backend,interpreted,name,calibrated,traced",
    [
        ("cpu", False, "cpu", True, False),
        ("cpu", True, "cpu-interpret", False, False),
        ("gpu", False, "gpu", False, True),
        ("tpu", False, "tpu", False, True),
        ("tpu", True, "tpu", False, True),  # interpret mode exists on a CPU runner only
    ],
)
def test_each_backend_resolves_to_its_policy(backend, interpreted, name, calibrated, traced):
    p = resolve(backend, interpreted)
    assert p.name == name and p.calibrated == calibrated and p.traced == traced
    assert (p.profile_calls > 0) == (not traced)  # untraced blocks get a profile pass for the op breakdown
    assert p.host_interference == (backend == "cpu")  # device time does not contain the host's load


def test_an_unknown_backend_is_refused():
    with pytest.raises(ValueError, match="no timing policy for backend 'rocm'"):
        resolve("rocm")


def test_the_policy_is_frozen_and_refuses_misspelt_fields():
    p = resolve("cpu")
    with pytest.raises(ValidationError):
        p.warmup = 1  # type: ignore[misc]
    with pytest.raises(ValidationError, match="warmpu"):
        TimingPolicy.model_validate({**p.model_dump(), "warmpu": 1})


def test_the_digest_is_stable_across_processes_and_follows_every_field():
    p = resolve("cpu")
    code = "from bench.harness.protocol.policy import resolve; print(resolve('cpu').label)"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == p.label == f"cpu@{p.digest}" and len(p.digest) == 12
    assert len({q.digest for q in POLICIES.values()}) == len(POLICIES)  # gpu and tpu differ by name
    assert p.model_copy(update={"wide_interval": 0.2}).digest != p.digest
    assert p.for_task(None, None, None) is p  # no chosen counts: the backend's policy itself


def test_calibrated_calls_follow_the_baseline_then_fit_the_slowest_program():
    p = resolve("cpu")  # target 0.25 s, 50..1000 calls, fit slack 2
    assert p.calls(None, None) == 50
    assert p.calls(1.0, 1.0) == 250  # 0.25 s of 1 ms calls
    assert p.calls(0.01, 0.01) == 1000  # capped
    assert p.calls(100.0, 100.0) == 50  # floor
    assert p.calls(1.0, 4.0) == 125  # a program 4x slower: its 125 calls take 2 x 0.25 s
    assert p.calls(0.01, 1000.0) == 50  # a kernel 1e5x slower than a tiny baseline keeps the floor, not 1000
    assert p.blocks(250) == 125 and p.blocks(50) == 25 and p.blocks(1000) == 200 and p.blocks(10) == 10


def test_fixed_policies_ignore_the_measured_times():
    for p in (resolve("tpu"), resolve("cpu", interpreted=True)):
        assert p.calls(0.001, 1e6) == p.min_calls == p.max_calls and p.blocks(p.max_calls) == p.min_blocks


def test_counts_the_caller_chose_make_a_named_policy_of_their_own():
    p = resolve("cpu").for_task(warmup=1, iters=20, blocks=4)
    assert p.name == "cpu+task" and not p.calibrated and p.warmup == 1
    assert p.calls(0.01, 0.01) == 20 and p.blocks(20) == 4 and p.digest != resolve("cpu").digest
    q = resolve("cpu").for_task(None, 20, None)  # chosen calls, the backend's usual blocks
    assert q.calls(1.0, 1.0) == 20 and q.blocks(20) == 10


def test_a_lone_kernels_quick_timing_is_a_shorter_calibrated_target_of_its_own():
    cpu = resolve("cpu")
    q = cpu.for_task(None, None, None, quick=True)
    assert q.name == "cpu+quick" and q.calibrated and q.target_s == cpu.quick_target_s < cpu.target_s
    assert q.digest != cpu.digest and q.calls(1.0, 1.0) == 100 < cpu.calls(1.0, 1.0) == 250
    assert q.calls(100.0, 100.0) == cpu.min_calls  # the floor holds
    assert q.timing_deadline_s(300.0, 0.01, 2) < cpu.timing_deadline_s(300.0, 0.01, 2)
    # chosen calls win, and policies that do not calibrate have no quick form
    assert cpu.for_task(None, 20, None, quick=True).name == "cpu+task"
    for fixed in (resolve("tpu"), resolve("gpu"), resolve("cpu", interpreted=True)):
        assert fixed.for_task(None, None, None, quick=True) is fixed
    assert cpu.for_task(1, None, None, quick=True).name == "cpu+quick+task"


def test_deadlines_come_from_the_policys_maxima():
    fixed = resolve("tpu")  # 5 warmup + 1 checked + 50 timed calls per program, no profile pass
    assert fixed.timing_deadline_s(300.0, 0.01, 2) == pytest.approx(30.0 + 2 * 56 * 0.01 * 1000 / 1e3)
    assert fixed.timing_deadline_s(300.0, None, 2) == 300.0  # no measured baseline: the cap
    assert fixed.timing_deadline_s(5.0, 10.0, 2) == 5.0  # never above the cap
    cpu = resolve("cpu")  # calibrated: min_calls (+1) calls' deadline, plus fit_slack * target_s per program
    calls = 2 * (5 + 1 + 5 + 50 + 1)
    assert cpu.timing_deadline_s(300.0, 0.01, 2) == pytest.approx(30.0 + calls * 0.01 + 2 * 2.0 * 0.25)
    # whatever the runner then calibrates, no program's timed calls can exceed what the deadline allows for it
    for call_ms in (0.001, 0.01, 1.0, 100.0):
        n = cpu.calls(0.01, call_ms)
        assert n * call_ms / 1e3 <= max(cpu.min_calls * call_ms, cpu.fit_slack * cpu.target_s * 1e3 + call_ms) / 1e3
    assert cpu.compile_deadline_s(300.0, 0.5) == 60.0 and cpu.compile_deadline_s(300.0, 2.0) == 100.0
    assert cpu.compile_deadline_s(300.0, None) == 300.0 and cpu.run_deadline_s(300.0, 1.0, 3) == 33.0
