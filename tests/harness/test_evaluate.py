"""Whole evaluations (slow): every status the must-show list names, in bounded time, readable reasons."""

import threading
import time
from pathlib import Path

import pytest

from bench.harness.parent.evaluate import evaluate
from bench.harness.protocol.policy import resolve
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask

KERNELS = Path(__file__).parent / "kernels"
pytestmark = pytest.mark.slow


def run(kernel: str, **kw) -> "EvalResult":  # noqa: F821
    opts = dict(
        workload="8p_GEMM",
        kernel_path=KERNELS / f"{kernel}.py",
        size="small",
        seeds=1,
        iters=10,
        blocks=2,
        timeout_s=20,
    )
    opts.update(kw)
    return evaluate(EvalTask(**opts))


def test_baseline_as_its_own_candidate_is_correct_with_speedup_near_one():
    r = run("identical", seeds=3)
    assert r.status == Status.CORRECT and r.exit_code() == 0
    assert r.correctness.trials == 3 and r.correctness.max_abs_err == 0.0
    assert r.correctness.timed_outputs_checked == 10  # every timed call of the candidate (bit for bit, or in full)
    assert r.kernel.timing_method == "cpu_wall_clock" and r.baseline.timing_method == "cpu_wall_clock"
    d = r.integrity.details
    # both programs timed in the one runner, ABBA; the CPU profile pass ran for both
    assert r.block_order == ["baseline_program", "candidate_program", "candidate_program", "baseline_program"]
    assert set(d["profiled_median_ms"]) == {"baseline", "kernel"} and r.runner.cpu_affinity.startswith("core ")
    assert r.timing_seed is not None and r.timing_seed not in r.input_seeds and "input_seeds" not in d
    assert r.profile_top_ops and r.flops >= 2 * 256 * 512 * 384 and r.flops_source == "cost_analysis"
    assert r.bytes_accessed and r.operational_intensity == pytest.approx(r.flops / r.bytes_accessed, rel=1e-3)
    assert r.env.chip == "cpu" and r.size == "small" and r.env.jax_version and not r.env.interpret
    assert r.tpu_lowering == "ok" and len(r.input_seeds) == 3
    # per block, per program, the time per call (what the interval resamples) and each program's compile time
    assert set(r.block_ms) == {"baseline", "kernel"} and all(len(v) == 2 for v in r.block_ms.values())
    calls = [n for _, name, n in d["timing_segments"] if name == "kernel"]  # the blocks' (secret) lengths
    per_block = zip(r.block_ms["kernel"], calls, strict=True)
    assert sum(ms * n for ms, n in per_block) == pytest.approx(sum(r.kernel.raw_times_ms))
    assert set(r.compile_s) == {"kernel", "baseline"} and all(s > 0 for s in r.compile_s.values())
    # How close to 1.00 an identical program reads, and twice the work to 0.50, are timing figures: tests never
    # assert on wall time; benchmarks/harness.py and benchmarks/intervals.py print them with the load average.


def test_a_timed_result_carries_its_interval_and_timing_quality():
    r = run("identical", iters=20, blocks=4)
    assert r.status == Status.CORRECT
    lo, hi = r.speedup_ci
    assert lo <= r.speedup_vs_baseline <= hi
    assert r.timing_quality in ("ok", "noisy") and (r.timing_quality == "ok") == (r.timing_quality_reason is None)
    d = r.integrity.details
    # one segment per (block, program), ABBA, accounting for every timed call; the host's interference beside
    assert [s[:2] for s in d["timing_segments"]] == [
        [0, "baseline"],
        [0, "kernel"],
        [1, "kernel"],
        [1, "baseline"],
        [2, "baseline"],
        [2, "kernel"],
        [3, "kernel"],
        [3, "baseline"],
    ]
    assert sum(s[2] for s in d["timing_segments"] if s[1] == "kernel") == r.kernel.num_iters == 20
    assert 0 < d["timing_interference"]["cpu_share"] and d["timing_interference"]["cores"] >= 1
    assert d["timing_interference"]["others_runnable"] >= 0  # counted while timing (/proc/loadavg, kept open)
    if Path("/proc/thread-self/schedstat").exists():  # the timing thread's schedstat, read per segment
        assert d["timing_interference"]["run_delay_s"] is not None
    as_json = r.model_dump(mode="json")
    assert as_json["speedup_ci"] == [lo, hi] and as_json["timing_quality"] == r.timing_quality
    # a result that was not timed has none of them
    bad = run("wrong_shape")
    assert bad.speedup_ci is None and bad.timing_quality is None and bad.timing_quality_reason is None


def test_calibrated_calls_and_blocks_when_the_caller_chose_none():
    """On CPU the runner decides the calls per program under the CPU policy (calibrated on the baseline's call time,
    fitted to the slowest program: TimingPolicy.calls) and times short blocks (TimingPolicy.blocks); the result names
    the policy and the counts the runner used; every timed call of the candidate is verified."""
    r = run("identical", iters=None, blocks=None, warmup=None)
    assert r.status == Status.CORRECT, r.reason
    cpu = resolve("cpu")
    assert r.timing_policy == cpu.label  # no count chosen: the backend's own policy, by name and hash
    n = r.kernel.num_iters
    assert n == r.baseline.num_iters and cpu.min_calls <= n <= cpu.max_calls
    assert r.integrity.details["timing_counts"] == {"calls": n, "blocks": cpu.blocks(n)}
    assert len(r.block_order) == 2 * cpu.blocks(n) and all(len(v) == cpu.blocks(n) for v in r.block_ms.values())
    assert r.correctness.timed_outputs_checked == n
    # the timing deadline came from the policy's maxima, not from the counts the runner chose
    assert r.deadlines_s["timing"] == round(cpu.timing_deadline_s(20, r.integrity.details["baseline_call_ms"], 2), 1)


@pytest.mark.parametrize(
    "kernel,status,words",
    [
        ("syntax_error", Status.COMPILE_ERROR, "SyntaxError"),
        ("raises", Status.COMPILE_ERROR, "host_callbacks"),  # a host callback cannot even be exported
        ("alloc_100gb", Status.OUT_OF_MEMORY, "MemoryError"),
        ("wrong_shape", Status.INCORRECT, "shape mismatch: expected (256, 384), got (256, 383)"),
        ("exits", Status.CRASHED, "exited with code 0 without a verdict"),
        ("runtime_oom", Status.OUT_OF_MEMORY, "RESOURCE_EXHAUSTED"),
    ],
)
def test_failures_get_their_status_and_a_readable_reason(kernel, status, words):
    r = run(kernel)
    assert r.status == status, r.reason
    assert words in r.reason and "\n" not in r.reason and r.exit_code() == 1
    assert r.kernel is None  # (how long it took is the machine's: the deadlines that bound it are asserted below)


def test_a_hanging_kernel_times_out():
    r = run("sleeps", timeout_s=8)
    # the build was ended by its own 8 s deadline (the reason names it), not by the test's patience: no wall-time
    # bound here, which a loaded machine could break without the harness being wrong
    assert r.status == Status.TIMEOUT and "compile time limit of 8 s" in r.reason
    assert r.integrity.details["build"]["survivors"] == 0


def test_pallas_kernel_runs_in_interpret_mode_and_lowers_for_tpu():
    r = run("pallas_gemm", iters=2, warmup=1, blocks=1)
    assert r.status == Status.CORRECT, r.reason
    assert r.env.interpret and r.integrity.pallas_calls == 1 and r.integrity.has_pallas
    assert r.tpu_lowering == "ok" and r.integrity.details["inspection"]["tpu"]["mosaic_calls"] == 1
    assert r.pallas_coverage == 1.0 and r.readiness_check == "verified"


def test_interpret_only_kernel_gets_the_tpu_lowering_error():
    """Honest and correct in interpret mode, but its block shape breaks the TPU (8, 128) rule: the row says so."""
    r = run("pallas_unaligned", iters=2, warmup=1, blocks=1)
    assert r.status == Status.CORRECT, r.reason
    assert r.tpu_lowering and r.tpu_lowering != "ok" and "divisible by 8 and 128" in r.tpu_lowering
    # nothing is Pallas without a TPU program the parent could read (the build's word counts for nothing)
    assert r.integrity.pallas_calls == 0 and r.pallas_coverage is None and r.readiness_check is None
    assert r.env.interpret and "no_pallas" in r.integrity.flags


def test_kernel_whose_lowering_asks_for_the_chip_lowers_for_tpu_on_a_cpu_host():
    """Mosaic reads the chip's parameters while lowering some ops; on a CPU host the build cross-lowers for
    v6e instead of failing with "Unsupported TPU device kind: cpu" (the team's GroupNorm kernel does this)."""
    kernel = Path(__file__).parents[2] / "submissions/jaxbench-team-pallas/kernels/29k_Matmul_Swish_Sum_GroupNorm.py"
    r = evaluate(
        EvalTask(
            workload="29k_Matmul_Swish_Sum_GroupNorm",
            kernel_path=kernel,
            size="small",
            seeds=1,
            iters=2,
            warmup=1,
            blocks=1,
        )
    )
    assert r.status == Status.CORRECT, r.reason
    assert r.tpu_lowering == "ok", r.tpu_lowering


def test_secret_seed_draws_other_inputs():
    r = run("identical", secret_seed=12345, iters=2, blocks=1)
    assert r.status == Status.CORRECT and r.secret_seed_used and r.input_seeds == []
    assert "input_seeds" not in r.integrity.details


def test_a_decision_that_raises_fails_that_candidate_alone_while_the_next_runs(monkeypatch):
    """Candidate i is decided in a thread while the runner runs candidate i+1 (WarmRunner._run_safely): an exception
    in one decision is that candidate's harness error; the runner and the other candidates are untouched."""
    from bench.harness.parent import evaluate as harness_evaluate
    from bench.harness.parent.evaluate import WarmRunner

    real = harness_evaluate.outcome.decide
    calls = []

    def decide(ctx, built, *args):
        calls.append(built.kernel.name)
        if built.kernel.name == "twice.py":
            raise RuntimeError("boom while deciding")
        return real(ctx, built, *args)

    monkeypatch.setattr(harness_evaluate.outcome, "decide", decide)
    task = EvalTask(
        workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small", seeds=1, iters=4, blocks=2, timeout_s=60
    )
    with WarmRunner(task) as runner:
        results = runner.evaluate([KERNELS / "twice.py", KERNELS / "identical.py", KERNELS / "twice.py"])
        assert runner.session.starts == 1  # the runner was never replaced
    assert [r.status for r in results] == [Status.ERROR, Status.CORRECT, Status.ERROR]
    assert results[0].reason == "harness error: RuntimeError: boom while deciding"
    assert results[1].speedup_ci is not None and sorted(calls) == ["identical.py", "twice.py", "twice.py"]


def test_a_parent_confined_to_the_timing_core_decides_between_candidates(monkeypatch):
    """A parent that may run on the timing core only (a one-core host or Ray node) computes nothing while the
    runner times: each candidate is decided on the batch's running thread before the next one runs, and the
    decision's imports are not warmed in a thread of their own."""
    from bench.harness.parent import evaluate as harness_evaluate
    from bench.harness.parent.evaluate import WarmRunner

    events, warmed = [], []
    real_decide, real_evaluate = harness_evaluate.outcome.decide, harness_evaluate.RunnerSession.evaluate

    def decide(ctx, built, *args):
        events.append(("decide", built.kernel.name, threading.get_ident()))
        return real_decide(ctx, built, *args)

    def session_evaluate(self, *args, **kwargs):
        events.append(("run", None, threading.get_ident()))
        return real_evaluate(self, *args, **kwargs)

    monkeypatch.setattr(harness_evaluate, "confined_to", lambda core: True)
    monkeypatch.setattr(harness_evaluate.timing, "warm", lambda: warmed.append(1))
    monkeypatch.setattr(harness_evaluate.outcome, "decide", decide)
    monkeypatch.setattr(harness_evaluate.RunnerSession, "evaluate", session_evaluate)
    task = EvalTask(
        workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small", seeds=1, iters=4, blocks=2, timeout_s=60
    )
    with WarmRunner(task) as runner:
        results = runner.evaluate([KERNELS / "identical.py", KERNELS / "twice.py"])
    assert [r.status for r in results] == [Status.CORRECT, Status.CORRECT]
    assert [(kind, name) for kind, name, _ in events] == [
        ("run", None),
        ("decide", "identical.py"),
        ("run", None),
        ("decide", "twice.py"),
    ]
    assert len({thread for _, _, thread in events}) == 1 and warmed == []


def test_confined_to_the_timing_core_only_when_no_other_core_is_allowed(monkeypatch):
    from bench.harness.protocol import isolation

    monkeypatch.setattr(isolation.os, "sched_getaffinity", lambda pid: {3})
    assert isolation.confined_to(3) and not isolation.confined_to(1) and not isolation.confined_to(None)
    monkeypatch.setattr(isolation.os, "sched_getaffinity", lambda pid: {2, 3})
    assert not isolation.confined_to(3)


def test_a_batch_builds_no_more_kernels_at_once_than_its_slots(monkeypatch: pytest.MonkeyPatch) -> None:
    """The batch's threads outnumber its builds at once by one (a thread whose candidate is being inspected leaves
    its slot to the next build), so builds in processes of their own take a slot each: never more at once than
    the plan's build parallelism (each holds up to the task's memory cap)."""
    import threading

    from bench.harness.parent import evaluate as ev
    from bench.harness.parent.builder import BuildArtifact

    running, most, lock = [0], [0], threading.Lock()

    class StandIn:
        """A build process that builds nothing: it counts how many run at once."""

        cpus = None  # no cpuset: no timing beside it

        def __init__(self, *args: object) -> None:
            pass

        def run(self, *args: object) -> BuildArtifact:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.3)
            with lock:
                running[0] -= 1
            return BuildArtifact(ok=False, kind=Status.COMPILE_ERROR, reason="stand-in build", error="stand-in build")

        def close(self) -> None:
            pass

    monkeypatch.setattr(ev, "BuildProcess", StandIn)
    task = EvalTask(workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small", sandbox="none")
    with ev.WarmRunner(task) as runner:
        results = runner.evaluate([task.kernel_path] * 6)
    assert [r.status for r in results] == [Status.COMPILE_ERROR] * 6
    assert most[0] == runner.plan.build_parallelism


def test_a_batch_has_one_folder_and_one_runner_session_whichever_thread_asks_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The batch's runner future and its build threads all reach for the runner's folder and session first
    (a race could have given the runner's log a folder of its own, and started two runners)."""
    import tempfile
    import threading

    from bench.harness.parent import evaluate as ev

    real = tempfile.mkdtemp

    def slow_mkdtemp(*args: object, **kwargs: object) -> str:
        time.sleep(0.05)  # wide open, were the creation not guarded
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ev.tempfile, "mkdtemp", slow_mkdtemp)
    runner = ev.WarmRunner(EvalTask(workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small"))
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append((runner.folder, runner.session))) for _ in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(seen) == 4 and len({f for f, _ in seen}) == 1
        assert len({id(s) for _, s in seen}) == 1
    finally:
        runner.close()


def test_ranked_rows_are_never_timed_beside_builds_and_feedback_batches_are_where_a_cpuset_holds() -> None:
    """`bench ingest`'s tasks (bench.dataset.evaluation.task_for) keep every build off the host while a candidate
    is timed: a batch mixes submissions, and a build shares the memory bus and caches with the timed core. A feedback
    batch (the default task) runs the next builds beside a timing only where bubblewrap and a cpuset hold them off
    the timing core."""
    from bench.dataset.evaluation import task_for
    from bench.harness.parent.evaluate import WarmRunner
    from bench.harness.parent.sandboxing import BuildCgroups, bwrap_problem
    from bench.harness.protocol.isolation import off_timing_core

    for official in (False, True):
        ranked = task_for("8p_GEMM", KERNELS / "identical.py", "small", official)
        assert ranked.builds_beside is False
        assert WarmRunner(ranked).build_cpus is None
    feedback = EvalTask(workload="8p_GEMM", kernel_path=KERNELS / "identical.py", size="small")
    cores = off_timing_core()
    probe = BuildCgroups.create(8, cores) if cores else None
    if probe is not None:
        probe.release()
    if bwrap_problem() is not None or probe is None or probe.cpus != cores:
        pytest.skip("no bubblewrap, no second core or no cpuset here: no build runs beside a timing")
    assert WarmRunner(feedback).build_cpus == cores
    assert WarmRunner(feedback.model_copy(update={"sandbox": "none"})).build_cpus is None
