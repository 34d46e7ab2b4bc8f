"""Executors without a cluster: the local executor's outcomes and batches, a host's warm runners kept across
batches, Ray placement from node resources, Ray never imported for the local path, the agent's executor-backed
evaluator, and rows of the wrong chip refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench.agent.evaluation import EvalSettings, ExecutorEvaluator
from bench.dataset.ingest import ingest
from bench.executor import ExecutorUnavailable, Outcome, make_executor
from bench.executor.host import HARNESS_EVALUATOR, Host, batch_size, batches
from bench.harness.protocol.result import Correctness, EvalResult, Status
from bench.harness.protocol.task import EvalTask
from bench.paths import ROOT, SUBMISSIONS_DIR

FAKE = f"{ROOT / 'tests' / 'dataset' / 'fake_evaluator.py'}:evaluate"


def echo_unit(host: Host, spec: str, task_jsons: list[str]) -> list:
    tasks = [json.loads(t) for t in task_jsons]
    if any(t["workload"] == "boom" for t in tasks):
        raise RuntimeError("harness bug")
    return [
        json.dumps(
            {
                "spec": spec,
                "workload": t["workload"],
                "kernel": Path(t["kernel_path"]).name,
                "host": id(host),
                "batch": len(tasks),
            }
        )
        for t in tasks
    ]


def test_local_executor_yields_one_outcome_per_task_and_keeps_going_after_an_exception(tmp_path):
    tasks = [(i, EvalTask(workload=w, kernel_path=tmp_path / "k.py")) for i, w in enumerate(["a", "boom", "c"])]
    out = list(make_executor("local", chip="cpu").run(echo_unit, "S", tasks))
    assert [o.key for o in out] == [0, 1, 2] and {o.host for o in out} == {"local"}
    assert json.loads(out[0].result_json)["spec"] == "S" and out[0].error is None
    assert out[1].result_json is None and isinstance(out[1].error, RuntimeError)


def test_batches_hold_tasks_that_differ_only_in_the_kernel_file(tmp_path):
    task = lambda w, k, **kw: EvalTask(workload=w, kernel_path=tmp_path / k, **kw)  # noqa: E731
    items = [
        (0, task("a", "0.py")),
        (1, task("b", "1.py")),
        (2, task("a", "2.py", secret_seed=5)),
        (3, task("a", "3.py", seeds=5)),
        (4, task("a", "4.py")),
        (5, task("b", "5.py")),
    ]
    assert [[k for k, _ in b] for b in batches(items, 2)] == [[0, 2], [4], [1, 5], [3]]
    executor = make_executor("local", chip="cpu")
    out = {o.key: json.loads(o.result_json) for o in executor.run(echo_unit, "S", items, batch=8)}
    assert [out[k]["kernel"] for k in range(6)] == [f"{k}.py" for k in range(6)]
    assert [out[k]["batch"] for k in range(6)] == [3, 2, 3, 1, 3, 2]
    assert len({o["host"] for o in out.values()}) == 1  # one Host for every batch of this executor


class _Runner:
    """Stands in for the harness's WarmRunner: records its batches."""

    made: list[_Runner] = []

    def __init__(self, template: EvalTask) -> None:
        self.workload, self.batches, self.closed = template.workload, [], False
        _Runner.made.append(self)

    def evaluate(self, kernels):
        if any(Path(k).name == "bug.py" for k in kernels):
            raise RuntimeError("harness bug")
        self.batches.append([Path(k).name for k in kernels])
        return [
            EvalResult(
                workload=self.workload,
                status=Status.INCORRECT,
                size="small",
                tpu="cpu",
                correctness=Correctness(correct=False, reason="fake"),
            )
            for _ in kernels
        ]

    def close(self) -> None:
        self.closed = True


def test_a_host_keeps_one_warm_runner_per_workload_across_batches(tmp_path):
    _Runner.made = []
    host = Host(keep=2, warm_runner=_Runner)
    task = lambda w, k: EvalTask(workload=w, kernel_path=tmp_path / k)  # noqa: E731
    first = host.evaluate(HARNESS_EVALUATOR, [task("a", "1.py"), task("a", "2.py")])
    assert [r.status for r in first] == [Status.INCORRECT] * 2
    host.evaluate(HARNESS_EVALUATOR, [task("a", "3.py")])
    host.evaluate(HARNESS_EVALUATOR, [task("b", "4.py"), task("a", "5.py")])
    a, b = _Runner.made
    assert (a.workload, a.batches) == ("a", [["1.py", "2.py"], ["3.py"], ["5.py"]]) and b.batches == [["4.py"]]
    host.evaluate(HARNESS_EVALUATOR, [task("c", "6.py")])  # a third workload: the least recently used one goes
    assert not a.closed and b.closed
    out = host.evaluate(HARNESS_EVALUATOR, [task("a", "bug.py"), task("c", "7.py")])
    assert isinstance(out[0], RuntimeError) and out[1].status == Status.INCORRECT  # a failed runner is replaced
    assert a.closed and len(_Runner.made) == 3
    host.evaluate(HARNESS_EVALUATOR, [task("a", "8.py")])
    assert len(_Runner.made) == 4 and _Runner.made[-1].batches == [["8.py"]]
    host.close()
    assert all(r.closed for r in _Runner.made)


def test_a_host_runs_another_evaluator_task_by_task(tmp_path):
    (tmp_path / "ok.py").write_text("# fake: speedup=2")
    (tmp_path / "bad.py").write_text("# fake: raise")
    out = Host().evaluate(FAKE, [EvalTask(workload="8p_GEMM", kernel_path=tmp_path / n) for n in ("ok.py", "bad.py")])
    assert out[0].speedup_vs_baseline == 2 and isinstance(out[1], RuntimeError)
    assert batch_size(FAKE) == 1 and batch_size(HARNESS_EVALUATOR) > 1


def test_local_runs_never_import_ray():
    code = (
        "import sys, bench.cli; from bench.executor import make_executor; make_executor('local', chip='cpu'); "
        "print('ray' in sys.modules)"
    )
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


def test_an_idle_ray_host_takes_the_batch_it_has_a_warm_runner_for_else_one_no_other_host_holds():
    pytest.importorskip("ray")
    from bench.executor.ray_cluster import pick

    assert pick(["a", "b", "c"], mine=["c"], elsewhere={"a"}) == 2  # its own warm runner first
    assert pick(["a", "a", "b"], mine=[], elsewhere={"a"}) == 2  # else one that no other host holds
    assert pick(["a", "b"], mine=["z"], elsewhere={"a", "b"}) == 0  # else the first: never idle while work waits


def test_two_ray_hosts_given_two_workloads_start_one_runner_each():
    """The head's dispatch (RayExecutor._take, without a cluster): two hosts and two batches of each of two
    workloads, queued in order. In queue order each host would start both workloads' runners; with the warm
    affinity each starts one and keeps it, and a host remembers at most KEEP_RUNNERS warm runners, as its Host."""
    pytest.importorskip("ray")
    from collections import deque
    from types import SimpleNamespace

    from bench.executor.host import KEEP_RUNNERS
    from bench.executor.ray_cluster import RayExecutor, _Batch

    head = SimpleNamespace(warm={})
    queue = deque(_Batch([i], [], [], warm=w) for i, w in enumerate(["a", "a", "b", "b"]))
    taken = {h: [RayExecutor._take(head, queue, h).warm] for h in ("h1", "h2")}
    for h in ("h1", "h2"):
        taken[h].append(RayExecutor._take(head, queue, h).warm)
    assert taken == {"h1": ["a", "a"], "h2": ["b", "b"]} and not queue
    more = deque(_Batch([i], [], [], warm=w) for i, w in enumerate(["c", "d", "e"]))
    for _ in range(3):
        RayExecutor._take(head, more, "h1")
    assert head.warm["h1"] == ["c", "d", "e"][-KEEP_RUNNERS:] and head.warm["h2"] == ["b"]


class _Stub:
    """An executor whose task 0 succeeds and task 1 fails (a lost host after its retries)."""

    name = "stub"

    def run(self, unit, evaluator, items, batch=1):
        for key, task in items:
            if key == 0:
                yield Outcome(
                    key,
                    EvalResult(
                        workload=task.workload, status=Status.COMPILE_ERROR, size="small", tpu="cpu"
                    ).model_dump_json(),
                    None,
                    "h1",
                )
            else:
                yield Outcome(key, None, RuntimeError("node died"), "?")

    def close(self) -> None:
        pass


def test_agent_samples_through_an_executor(tmp_path):
    results = ExecutorEvaluator(_Stub())("8p_GEMM", [tmp_path / "a.py", tmp_path / "b.py"], EvalSettings(size="small"))
    assert [r.status for r in results] == [Status.COMPILE_ERROR, Status.ERROR]
    assert "node died" in results[1].reason


def test_a_row_of_another_chip_than_the_tracks_is_not_stored(tmp_path):
    subs = tmp_path / "subs"
    (subs / "x" / "kernels").mkdir(parents=True)
    meta = (SUBMISSIONS_DIR / "xla-baseline" / "submission.yaml").read_text()
    # kind "human" and a name of its own: "baseline" is reserved to the listed xla-baseline, its kind and a name
    # claiming it (bench/dataset/reserved_submissions.yaml)
    meta = meta.replace("kind: baseline", "kind: human", 1).replace("name: XLA baseline", "name: XLA as written", 1)
    (subs / "x" / "submission.yaml").write_text(meta)
    (subs / "x" / "kernels" / "8p_GEMM.py").write_text("def workload(a, b):\n    return a @ b\n")
    report = ingest(data_dir=tmp_path / "data", submissions_dir=subs, chip="v6e", size="small", evaluator=FAKE)
    assert report.written == [] and "ran on chip 'cpu', not this track's 'v6e'" in report.failed[0][2]
    assert not list((tmp_path / "data").glob("results/**/*.parquet"))


def test_an_unreachable_cluster_is_a_clear_error_not_a_hang():
    pytest.importorskip("ray")
    with pytest.raises(ExecutorUnavailable, match="cannot reach the Ray cluster at 127.0.0.1:1"):
        make_executor("ray", chip="cpu", address="127.0.0.1:1")
