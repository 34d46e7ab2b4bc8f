"""The CLI: JSON that is a superset of upstream's `evaluate --json`, exit codes, list/run/info."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from bench import commands  # registers the commands
from bench.app import app

KERNELS = Path(__file__).parent / "kernels"
runner = CliRunner()
UPSTREAM_FIELDS = {
    "workload",
    "status",
    "tpu",
    "config",
    "correctness",
    "baseline",
    "kernel",
    "speedup_vs_baseline",
    "pallas_reference",
    "speedup_vs_pallas",
    "error",
    "traceback",
}


@pytest.mark.slow
def test_evaluate_json_is_an_upstream_superset_and_exit_code_follows_status():
    bad = runner.invoke(app, ["evaluate", "8p", str(KERNELS / "wrong_shape.py"), "--json", "--seeds", "1"])
    assert bad.exit_code == 1, bad.output
    data = json.loads(bad.output)
    assert UPSTREAM_FIELDS <= set(data) and data["status"] == "incorrect"
    assert {"correct", "max_diff", "reason"} <= set(data["correctness"]) and data["correctness"]["correct"] is False
    good = runner.invoke(
        app,
        [
            "evaluate",
            "8p_GEMM",
            str(KERNELS / "identical.py"),
            "--json",
            "--seeds",
            "1",
            "--iters",
            "4",
            "--blocks",
            "2",
            "--warmup",
            "1",
        ],
    )
    assert good.exit_code == 0, good.output
    data = json.loads(good.output)
    assert data["status"] == "correct" and data["size"] == "small" and data["env"]["jax_version"]
    for prog in ("baseline", "kernel"):
        want = {"median_ms", "mean_ms", "std_ms", "min_ms", "timing_method", "tflops", "utilization_pct"}
        assert want <= set(data[prog])
    low, high = data["speedup_ci"]
    assert low <= data["speedup_vs_baseline"] <= high and data["timing_quality"] in ("ok", "noisy")


def test_the_human_output_shows_the_interval_and_why_the_timing_is_noisy():
    from bench.harness.protocol.result import Correctness, EvalResult, Status, Timing

    t = Timing(median_ms=1.0, mean_ms=1.0, std_ms=0.0, min_ms=1.0, timing_method="cpu_wall_clock")
    r = EvalResult(
        workload="8p_GEMM",
        status=Status.CORRECT,
        size="small",
        tpu="cpu",
        baseline=t,
        kernel=t,
        correctness=Correctness(correct=True, reason="ok"),
        speedup_vs_baseline=1.01,
        speedup_ci=(0.93, 1.08),
        timing_quality="noisy",
        timing_quality_reason="load average 3.10 on 2 cores",
    )
    with commands.console.capture() as captured:
        commands._print_result(r)
    text = captured.get()
    assert "95% interval 0.93x - 1.08x" in text and "timing quality noisy: load average 3.10 on 2 cores" in text


def test_the_human_output_reads_an_undecided_coverage_where_the_harness_wrote_it():
    """The parent writes a native runner's undecided credit (outcome.credit_bound) under `kernel_credit`; the
    result's one reader of it (Integrity.coverage_at_least) and the human output find it there."""
    from bench.harness.parent import outcome
    from bench.harness.protocol.messages import UNBOUNDED
    from bench.harness.protocol.result import KERNEL_CREDIT, Correctness, EvalResult, Integrity, Status

    site = {"matmul_flops": UNBOUNDED, "other_flops": 0.0, "bytes": 1e6}  # a loop run to a count read from data
    coverage = {"coverage": 0.0, "outside_s": 1e-6, "target_chip": "v6e", "programs_match_outside_kernels": True}
    coverage |= {"sites": {"jaxbench_kernel_0": site}, "uncertain_kernels": 1}
    credit = outcome.credit_bound(coverage, 1, "tpu", None)
    assert credit is not None and credit.coverage is None
    r = EvalResult(
        workload="8p_GEMM",
        status=Status.INCORRECT,
        size="full",
        tpu="v5e",
        correctness=Correctness(correct=False, reason="wrong"),
        integrity=Integrity(details={KERNEL_CREDIT: credit.details}),
        readiness_check="unverified",
    )
    assert r.integrity.coverage_at_least() == credit.details["at_least"]
    assert Integrity().coverage_at_least() is None
    with commands.console.capture() as captured:
        commands._print_result(r)
    assert f"unknown (at least {credit.details['at_least']:.2f}" in captured.get()


def test_list_reports_flops_without_allocating():
    out = runner.invoke(app, ["list", "--json", "--size", "small"])
    assert out.exit_code == 0, out.output
    rows = {r["name"]: r for r in json.loads(out.output)}
    gemm = rows["8p_GEMM"]
    assert gemm["family"] and gemm["source"] and gemm["flops"] >= 2 * 256 * 512 * 384
    assert all(r["flops"] for r in rows.values()), [n for n, r in rows.items() if not r["flops"]]


def test_info_reports_the_chip_and_its_peak_source():
    out = runner.invoke(app, ["info", "--json"])
    data = json.loads(out.output)
    assert data["chip"] == "cpu" and data["default_size"] == "small" and data["peak_source"] and data["jax_version"]


@pytest.mark.slow
def test_run_times_the_baseline_through_the_reference_worker():
    out = runner.invoke(app, ["run", "8p", "--json", "--iters", "5", "--warmup", "1"])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.output)
    assert row["status"] == "success" and row["variant"] == "baseline" and row["num_iters"] == 5
    assert row["timing_method"] == "cpu_wall_clock" and row["profiled_median_ms"] > 0 and row["median_ms"] > 0
    assert row["output_shape"] == [[256, 384]]
