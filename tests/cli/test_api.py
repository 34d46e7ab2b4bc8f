"""The stable Python API (`from bench import ...`), the typed workload spec, and result text for readers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bench
from bench import api, registry
from bench.harness.protocol.correctness import Tolerance, compare
from bench.harness.protocol.result import Environment, EvalResult, Status
from bench.tracebacks import attribute

KERNELS = Path(__file__).parents[1] / "harness" / "kernels"


def test_the_api_is_reexported_from_the_package_and_importing_bench_stays_light():
    from bench import evaluate, evaluate_many, list_workloads, workload, workload_flops  # noqa: F401

    assert set(api.__all__) == set(bench.API) and bench.evaluate is api.evaluate
    code = "import sys, bench; print('pydantic' in sys.modules, 'jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # every worker imports bench: no heavy import on the way


def test_workload_spec_reads_the_contract_once():
    specs = bench.list_workloads()
    assert [s.id for s in specs] == list(registry.workload_ids())
    moe = bench.workload("11p")
    assert moe.id == "11p_Megablox_GMM" and moe.static_argnums == (3,) and moe.get_flops is not None
    assert moe.config_for("small") == moe.small_config and moe.config_for("full") == moe.config
    gemm = bench.workload("8p_GEMM")
    # the API gives the EFFECTIVE tolerance: the harness's defaults under the module's overrides (12p has none)
    norm = bench.workload("12p_RMSNorm")
    assert norm.tolerance == {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.05} and registry.spec("12p").tolerance == {}
    assert Tolerance.for_workload(norm, "full") == Tolerance() == Tolerance.for_workload(norm, "small")
    assert gemm.static_argnums == () and gemm.tolerance == {"atol": 0.63, "rtol": 0.01, "rel_l2": 0.05}
    assert bench.workload_flops("41k", "small") == bench.workload("41k_Gemm_Add_ReLU").flops("small")
    with pytest.raises(ValueError):
        gemm.config_for("tiny")


def test_effective_tolerance_keeps_the_overrides():
    w = bench.workload("22k_Conv2d_InstanceNorm_Divide")  # overrides atol only
    assert w.tolerance == {"atol": 0.05, "rtol": 0.01, "rel_l2": 0.05} == dict(vars(Tolerance.for_workload(w, "full")))
    assert all(set(w.tolerance) == {"atol", "rtol", "rel_l2"} for w in bench.list_workloads())


@pytest.mark.parametrize("make", [lambda d: d / "missing.py", lambda d: d])
def test_evaluate_refuses_a_path_that_is_not_a_file(tmp_path, make):
    """A wrong path is the caller's mistake: an error, never a compile_error the kernel would be blamed for."""
    with pytest.raises(OSError, match="missing.py|is a folder"):
        bench.evaluate("8p", make(tmp_path))
    with pytest.raises(FileNotFoundError):
        list(bench.evaluate_many("8p", [KERNELS / "wrong_shape.py", tmp_path / "missing.py"]))


def test_own_wall_time_of_a_kernel_in_a_batch():
    r = EvalResult(
        workload="8p_GEMM",
        status=Status.TIMEOUT,
        size="small",
        tpu="cpu",
        wall_time_s=40.0,
        overhead_s={
            "build": 20.0,
            "runner_prepare": 13.0,
            "compile": 2.0,
            "correctness": 0.25,
            "timing": 1.0,
            "timed_iterations": 0.5,
            "trace_parsing": 0.05,
        },
    )
    assert api.own_wall_time_s(r) == 23.3  # its build and its turn in the runner, not the batch's shared start
    assert api.own_wall_time_s(r.model_copy(update={"overhead_s": {}})) == 40.0


def test_resolve_accepts_number_prefix_and_suggests():
    assert bench.resolve_workload("41k") == "41k_Gemm_Add_ReLU" and bench.resolve_workload("41K") == "41k_Gemm_Add_ReLU"
    with pytest.raises(registry.UnknownWorkload) as err:
        bench.resolve_workload("Gemm_Add_Relu")
    assert "41k_Gemm_Add_ReLU" in err.value.suggestions and isinstance(err.value, KeyError)


def test_unknown_tolerance_keys_are_refused():
    fake = type(sys)("workloads.99k_Fake")
    fake.__dict__.update(CONFIG={"M": 8}, TOLERANCE={"atl": 1e-3})
    with pytest.raises(ValueError, match="atl"):
        registry.spec_of(fake)


def test_unknown_small_tolerance_keys_are_refused():
    fake = type(sys)("workloads.99k_Fake")
    fake.__dict__.update(CONFIG={"M": 8}, SMALL_TOLERANCE={"rel": 1e-3})
    with pytest.raises(ValueError, match="SMALL_TOLERANCE"):
        registry.spec_of(fake)


def test_the_small_size_has_its_own_bound_never_looser_elementwise_than_the_full_sizes():
    """A bound calibrated on the full size's long bf16 sums (8p: atol 0.63) must not loosen the small size's gate.
    The relative L2 bound may be looser at the small size where honest code's error is larger there (13p: a mean
    over 256 tokens, not 8192)."""
    gemm = bench.workload("8p_GEMM")
    assert gemm.tolerance["atol"] == 0.63 and gemm.small_tolerance == {"atol": 0.01, "rtol": 0.01, "rel_l2": 0.05}
    assert Tolerance.for_workload(registry.spec("8p"), "small") == Tolerance()
    for w in bench.list_workloads():
        assert all(w.small_tolerance[k] <= w.tolerance[k] for k in ("atol", "rtol")), w.id
    loose = [w.id for w in bench.list_workloads() if w.small_tolerance["rel_l2"] > w.tolerance["rel_l2"]]
    assert loose == ["13p_Cross_Entropy"]
    with pytest.raises(ValueError, match="tiny"):
        gemm.tolerance_for("tiny")


def test_correctness_reports_the_rel_l2_limit():
    import numpy as np

    report = compare(np.ones((4, 4), np.float32), np.ones((4, 4), np.float32), Tolerance(rel_l2=0.02))
    assert report.correct and report.rel_l2 == 0.02 and report.atol == 1e-2


def _env(backend: str, interpret: bool) -> Environment:
    return Environment(
        backend=backend,
        chip="cpu" if backend == "cpu" else "v6e",
        device_kind="x",
        jax_version="0",
        jaxlib_version="0",
        harness_version="6",
        interpret=interpret,
    )


def test_timing_meaning_says_what_the_times_are():
    interp = EvalResult(workload="8p_GEMM", status=Status.TIMEOUT, size="small", tpu="cpu", env=_env("cpu", True))
    tpu = EvalResult(workload="8p_GEMM", status=Status.TIMEOUT, size="full", tpu="v6e", env=_env("tpu", False))
    assert "not TPU timings" in interp.timing_meaning and "interpret" in interp.timing_meaning
    assert "device time" in tpu.timing_meaning
    assert "timing_meaning" in interp.model_dump() and EvalResult.model_validate_json(interp.model_dump_json())


def test_tracebacks_name_the_submitted_file_once_without_harness_frames(tmp_path):
    copy = "/repo/build/eval/eval_ab12cd/kernel.py"
    tb = (
        f'Traceback (most recent call last):\n  File "/repo/bench/harness/worker.py", line 403, in serve\n'
        f"    header, blobs = COMMANDS[command](state, msg)\n                    ^^^^^^^^\n"
        f'  File "{copy}", line 5, in workload\n    raise ValueError("boom")\nValueError: boom\n'
    )
    r = EvalResult(
        workload="8p_GEMM",
        status=Status.COMPILE_ERROR,
        size="small",
        tpu="cpu",
        reason=f"boom at {copy}",
        traceback=tb,
        candidate_log="my print\n" + tb,
    )
    kernel = tmp_path / "mine.py"
    out = attribute(r, kernel)
    assert out.traceback == (
        f'Traceback (most recent call last):\n  File "{kernel}", line 5, in workload\n'
        f'    raise ValueError("boom")\nValueError: boom\n'
    )
    assert out.candidate_log.startswith("my print") and "ValueError" not in out.candidate_log
    assert str(kernel) in out.reason and "eval_" not in out.reason


@pytest.mark.slow
def test_api_evaluate_returns_a_result():
    result = bench.evaluate("8p", KERNELS / "wrong_shape.py", seeds=1)
    assert result.status == Status.INCORRECT and result.correctness.rel_l2 is not None


def test_checkout_warns_when_the_install_points_at_another_checkout(monkeypatch, tmp_path):
    monkeypatch.setattr(api, "_installed_location", lambda: Path(api.__file__).resolve().parents[1])
    assert api.checkout()["warning"] is None or "JAXBENCH_ROOT" in api.checkout()["warning"]
    monkeypatch.setattr(api, "_installed_location", lambda: tmp_path / "other-checkout")
    warning = api.checkout()["warning"]
    assert warning and str(tmp_path / "other-checkout") in warning


def test_workload_flops_prints_no_backend_info_lines():
    """In a notebook (logging at INFO) the count used to print JAX's backend probing and PjRt's INFO lines."""
    code = (
        "import logging; logging.basicConfig(level=logging.INFO)\n"
        "from bench.api import workload_flops\nprint(workload_flops('8p_GEMM', 'small'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert "cost_analysis" in done.stdout
    assert "INFO" not in done.stderr and "Unable to initialize backend" not in done.stderr


class _Task(Exception):
    """Raised by a stand-in runner with the task it was given (nothing is evaluated)."""


def _timing_given(monkeypatch: pytest.MonkeyPatch, call: object) -> str | None:
    """The `timing` of the task the harness receives when `call` runs (a stand-in harness raises it back)."""
    from bench.harness.parent import evaluate as ev

    def stand_in(task: object, *args: object) -> None:
        raise _Task(task)

    monkeypatch.setattr(ev, "evaluate", stand_in)
    monkeypatch.setattr(ev, "WarmRunner", stand_in)
    with pytest.raises(_Task) as got:
        call()  # type: ignore[operator]
    return got.value.args[0].timing


def test_a_lone_kernel_is_timed_quick_unless_the_caller_chose_and_batches_and_ingest_are_not(monkeypatch):
    from bench.dataset.evaluation import task_for

    one, two = KERNELS / "identical.py", KERNELS / "twice.py"
    assert _timing_given(monkeypatch, lambda: bench.evaluate("8p", one)) == "quick"
    assert _timing_given(monkeypatch, lambda: next(bench.evaluate_many("8p", [one]))) == "quick"
    assert _timing_given(monkeypatch, lambda: bench.evaluate("8p", one, timing="standard")) == "standard"
    # a batch is timed at the standard length (the runner resolves None so), and ingest says so for any batch
    assert _timing_given(monkeypatch, lambda: next(bench.evaluate_many("8p", [one, two]))) is None
    assert task_for("8p_GEMM", one, "small", official=False).timing == "standard"
