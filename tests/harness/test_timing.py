"""The timer on a REAL CPU trace recorded here, and on a recorded TPU-like trace (device plane path)."""

import json
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax.profiler import ProfileData

from bench.harness.parent import timing

FIXTURE = Path(__file__).parent / "fixtures" / "tpu_trace.pbtxt"
#: a REAL trace from a TPU v5e (fixtures/record_tpu_trace.py): an XLA GEMM, a Pallas kernel and a decoy, 6 calls each
TPU_TRACE = Path(__file__).parent / "fixtures" / "tpu_v5e_trace.xplane.pb"


def _cpu_trace(tmp_path, runs: int) -> bytes:
    def timed_program(a):
        return jnp.tanh(a @ a).sum()

    compiled = jax.jit(timed_program).lower(jnp.ones((128, 128))).compile()
    other = jax.jit(lambda a: a + 1).lower(jnp.ones((128, 128))).compile()
    x = jnp.ones((128, 128))
    jax.profiler.start_trace(str(tmp_path))
    for _ in range(runs):
        jax.block_until_ready(compiled(x))
        jax.block_until_ready(other(x))  # a decoy module in the same trace
    jax.profiler.stop_trace()
    return next(tmp_path.rglob("*.xplane.pb")).read_bytes()


def test_real_cpu_trace_groups_op_events_by_run_id(tmp_path):
    data = _cpu_trace(tmp_path, runs=6)
    tm, ops, note, _ = timing.program_timing(data, "jit_timed_program", [1.0] * 6, flops=1e6, peak_tflops=1.0)
    assert note is None and tm.timing_method == "cpu_profiler_ops" and tm.num_iters == 6
    assert all(t > 0 for t in tm.raw_times_ms) and tm.min_ms <= tm.median_ms <= tm.max_ms
    assert ops and abs(sum(o.pct for o in ops) - 100) < 1.0


def test_untraced_cpu_timing_uses_the_wall_clock_and_the_profile_pass_for_ops(tmp_path):
    # CPU: 50 untraced timed calls; a separate 5-call profile pass gives the op breakdown and profiled time
    data = _cpu_trace(tmp_path, runs=5)
    walls = [1.0 + 0.01 * i for i in range(50)]
    tm, ops, note, profiled = timing.program_timing(data, "jit_timed_program", walls, None, None, traced=False)
    assert note is None and tm.timing_method == "cpu_wall_clock" and tm.num_iters == 50
    assert tm.raw_times_ms == [round(w, 6) for w in walls] and tm.median_ms == pytest.approx(1.245)
    assert ops and profiled is not None and profiled > 0 and abs(sum(o.pct for o in ops) - 100) < 1.0
    tm, ops, note, profiled = timing.program_timing(None, "jit_timed_program", walls, None, None, traced=False)
    assert tm.timing_method == "cpu_wall_clock" and not ops and profiled is None and "no profile" in note


def test_cpu_trace_with_the_wrong_count_falls_back_to_wall_clock(tmp_path):
    data = _cpu_trace(tmp_path, runs=3)
    tm, ops, note, _ = timing.program_timing(data, "jit_timed_program", [2.0] * 5, None, None)
    assert tm.timing_method == "wall_clock" and tm.median_ms == 2.0 and "held 3 executions, expected 5" in note
    tm, _, note, _ = timing.program_timing(data, "jit_not_there", [2.0] * 3, None, None)
    assert tm.timing_method == "wall_clock" and "held 0" in note


def test_tpu_like_trace_uses_the_device_module_events():
    data = ProfileData.text_proto_to_serialized_xspace(FIXTURE.read_text())
    tm, ops, note, _ = timing.program_timing(data, "jit_candidate_program", [9.0] * 4, flops=2e9, peak_tflops=918.0)
    assert note is None and tm.timing_method == "device_profiler"
    assert tm.raw_times_ms == pytest.approx([2.0, 2.1, 1.9, 2.0])
    assert tm.median_ms == pytest.approx(2.0) and tm.tflops == pytest.approx(1.0, rel=1e-3)
    names = {o.name: o for o in ops}
    assert set(names) == {"fusion.1", "copy.2"}  # the other module's op lies outside every window
    assert names["fusion.1"].total_ms == pytest.approx(1.5) and names["copy.2"].total_ms == pytest.approx(0.5)
    assert names["fusion.1"].pct == pytest.approx(75.0)


def test_tpu_like_trace_with_missing_executions_is_not_trusted():
    data = ProfileData.text_proto_to_serialized_xspace(FIXTURE.read_text())
    tm, _, note, _ = timing.program_timing(data, "jit_candidate_program", [9.0] * 50, None, None)
    assert tm.timing_method == "wall_clock" and "held 4 executions, expected 50" in note


@pytest.mark.parametrize("program", ["timed_program", "pallas_program", "decoy"])
def test_a_real_tpu_trace_gives_each_program_its_own_device_times_and_ops(program):
    meta = json.loads(TPU_TRACE.with_suffix("").with_suffix(".json").read_text())
    walls = meta["wall_ms"][program]
    tm, ops, note, _ = timing.program_timing(
        TPU_TRACE.read_bytes(), meta["modules"][program], walls, flops=meta["flops"], peak_tflops=197.0
    )
    assert note is None and tm.timing_method == "device_profiler" and tm.num_iters == meta["runs"]
    # the device's own time of each call: positive and below the host's wall clock around that call
    assert all(0 < t < w for t, w in zip(tm.raw_times_ms, walls, strict=True))
    # every op of every call inside its module's window (picosecond spans: whole nanoseconds dropped a GEMM's op
    # from 2 of its 6 calls), so each op counts once per call and the ops' time stays within the module's
    assert ops and all(o.count == 1 for o in ops) and abs(sum(o.pct for o in ops) - 100) < 0.1
    assert sum(o.total_ms for o in ops) <= tm.median_ms * 1.01
    if program == "pallas_program":
        assert "tpu_custom_call" in ops[0].name  # the Pallas kernel is the program's one op
    else:
        assert not any("tpu_custom_call" in o.name for o in ops)  # no other module's ops leak in


def test_stats_are_order_free():
    tm = timing.stats([3.0, 1.0, 2.0, 10.0], "wall_clock", [1, 2], None, None)
    assert tm.median_ms == 2.5 and tm.min_ms == 1.0 and tm.max_ms == 10.0
    assert tm.iqr_ms == pytest.approx(3.0)  # q1 1.75, q3 4.75


def test_untimed_executions_named_by_the_runner_are_left_out_of_a_trace():
    data = ProfileData.text_proto_to_serialized_xspace(FIXTURE.read_text())  # 2.0, 2.1, 1.9, 2.0 ms
    tm, _, note, _ = timing.program_timing(data, "jit_candidate_program", [9.0] * 3, None, None, untimed=[1])
    assert note is None and tm.timing_method == "device_profiler" and tm.raw_times_ms == pytest.approx([2.0, 1.9, 2.0])
