"""Executors without a cluster: the local executor's outcomes, Ray task placement from node resources, Ray
never imported for the local path, the agent's executor-backed evaluator, and rows of the wrong chip refused."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.agent.evaluation import EvalSettings, ExecutorEvaluator
from bench.dataset.ingest import ingest
from bench.executor import ExecutorUnavailable, Outcome, make_executor
from bench.harness.result import EvalResult, Status
from bench.harness.task import EvalTask
from bench.paths import ROOT, SUBMISSIONS_DIR

FAKE = f"{ROOT / 'tests' / 'dataset' / 'fake_evaluator.py'}:evaluate"


def echo_unit(spec: str, task_json: str) -> str:
    task = json.loads(task_json)
    if task["workload"] == "boom":
        raise RuntimeError("harness bug")
    return json.dumps({"spec": spec, "workload": task["workload"]})


def test_local_executor_yields_one_outcome_per_task_and_keeps_going_after_an_exception(tmp_path):
    tasks = [(i, EvalTask(workload=w, kernel_path=tmp_path / "k.py")) for i, w in enumerate(["a", "boom", "c"])]
    out = list(make_executor("local", chip="cpu").run(echo_unit, "S", tasks))
    assert [o.key for o in out] == [0, 1, 2] and {o.host for o in out} == {"local"}
    assert json.loads(out[0].result_json) == {"spec": "S", "workload": "a"} and out[0].error is None
    assert out[1].result_json is None and isinstance(out[1].error, RuntimeError)


def test_local_runs_never_import_ray():
    code = ("import sys, bench.cli; from bench.executor import make_executor; make_executor('local', chip='cpu'); "
            "print('ray' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_unknown_executor_is_refused():
    with pytest.raises(ValueError, match="unknown executor"):
        make_executor("dask", chip="cpu")


def _node(**res) -> dict:
    return {"Alive": True, "Resources": res}


def test_ray_tasks_ask_for_one_whole_host_of_the_tracks_chip():
    pytest.importorskip("ray")
    from bench.executor.ray_cluster import task_options

    cpu = [_node(CPU=2, jaxbench_host_cpu=1), _node(CPU=4, jaxbench_host_cpu=1)]
    assert task_options("cpu", None, cpu) == {"num_cpus": 1, "resources": {"jaxbench_host_cpu": 1}}
    assert task_options("cpu", 2, cpu)["num_cpus"] == 2
    tpu = [_node(CPU=96, TPU=4, jaxbench_host_v6e=1), _node(CPU=96, TPU=8, jaxbench_host_v6e=1)]
    assert task_options("v6e", None, tpu)["resources"] == {"jaxbench_host_v6e": 1, "TPU": 4}
    gpu = [_node(CPU=64, GPU=8, jaxbench_host_h100=1)]
    assert task_options("h100", None, gpu)["num_gpus"] == 8
    with pytest.raises(ExecutorUnavailable, match="jaxbench_host_v5e"):
        task_options("v5e", None, [])
    with pytest.raises(ExecutorUnavailable, match="8 CPUs"):
        task_options("cpu", 8, cpu)


class _Stub:
    """An executor whose task 0 succeeds and task 1 fails (a lost host after its retries)."""

    name = "stub"

    def run(self, unit, evaluator, items):
        for key, task in items:
            if key == 0:
                yield Outcome(key, EvalResult(workload=task.workload, status=Status.CORRECT, size="small",
                                              tpu="cpu").model_dump_json(), None, "h1")
            else:
                yield Outcome(key, None, RuntimeError("node died"), "?")

    def close(self) -> None:
        pass


def test_agent_samples_through_an_executor(tmp_path):
    results = ExecutorEvaluator(_Stub())("8p_GEMM", [tmp_path / "a.py", tmp_path / "b.py"], EvalSettings(size="small"))
    assert [r.status for r in results] == [Status.CORRECT, Status.ERROR]
    assert "node died" in results[1].reason


def test_a_row_of_another_chip_than_the_tracks_is_not_stored(tmp_path):
    subs = tmp_path / "subs"
    (subs / "x" / "kernels").mkdir(parents=True)
    (subs / "x" / "submission.yaml").write_text((SUBMISSIONS_DIR / "xla-baseline" / "submission.yaml").read_text())
    (subs / "x" / "kernels" / "8p_GEMM.py").write_text("def workload(a, b):\n    return a @ b\n")
    report = ingest(data_dir=tmp_path / "data", submissions_dir=subs, chip="v6e", size="small", evaluator=FAKE)
    assert report.written == [] and "ran on chip 'cpu', not this track's 'v6e'" in report.failed[0][2]
    assert not list((tmp_path / "data").glob("results/**/*.parquet"))


def test_an_unreachable_cluster_is_a_clear_error_not_a_hang():
    pytest.importorskip("ray")
    with pytest.raises(ExecutorUnavailable, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        make_executor("ray", chip="cpu", address="127.0.0.1:1")
