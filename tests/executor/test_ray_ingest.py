"""`bench ingest --executor ray` on a real 3-node Ray cluster of this machine (tests/executor/conftest.py):
the same rows as a local ingest, one warm host worker per node kept across batches and runs, a lost worker
node's evaluations retried elsewhere and stored once, a kill -9 of the head resumed by a rerun that submits only
what is missing. Nothing listens beyond loopback."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bench.dataset import schema, store
from bench.paths import ROOT, SUBMISSIONS_DIR

pytestmark = pytest.mark.slow

FAKE = f"{ROOT / 'tests' / 'dataset' / 'fake_evaluator.py'}:evaluate"
REAL_WORKLOADS = ["12p_RMSNorm", "21k_Gemm_Divide_Sum_Scaling"]
FAKE_WORKLOADS = ["12p_RMSNorm", "8p_GEMM", "1p_Flash_Attention", "21k_Gemm_Divide_Sum_Scaling"]


def _submission(root: Path, sub_id: str, kernels: dict[str, str]) -> None:
    d = root / sub_id / "kernels"
    d.mkdir(parents=True)
    meta = yaml.safe_load((SUBMISSIONS_DIR / "xla-baseline" / "submission.yaml").read_text())
    # kind "human": "baseline" is reserved to the listed xla-baseline (bench/dataset/reserved_submissions.yaml)
    (root / sub_id / "submission.yaml").write_text(yaml.safe_dump({**meta, "name": sub_id, "kind": "human"}))
    for wid, text in kernels.items():
        (d / f"{wid}.py").write_text(text)


def _fake_subs(root: Path, names: tuple[str, str] = ("alpha", "beta")) -> Path:
    """Two submissions of the fake evaluator's markers: 8 evaluations, one incorrect."""
    base = SUBMISSIONS_DIR / "xla-baseline" / "kernels"
    for sub in names:
        _submission(root, sub, {w: (base / f"{w}.py").read_text() + f"\n# {sub}\n" for w in FAKE_WORKLOADS})
    (root / names[1] / "kernels" / "8p_GEMM.py").write_text(
        f"def workload(*xs):\n    return xs[0]\n# fake: incorrect {names[1]}\n"
    )
    return root


def _ingest(
    data: Path,
    subs: Path,
    *extra: str,
    env: dict | None = None,
    evaluator: str | None = None,
    chip: str = "cpu",
    timeout: float = 600,
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        "-m",
        "bench.cli",
        "ingest",
        "--chip",
        chip,
        "--size",
        "small",
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
        *extra,
    ]
    full = {**os.environ, **(env or {})}
    if evaluator:
        full["JAXBENCH_EVALUATOR"] = evaluator
    return subprocess.run(cmd, env=full, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def _keys(data: Path) -> list[tuple]:
    rows = store.read_tables(data / "results", schema.RESULTS).to_pylist()
    return sorted(
        (r["track"], r["submission"], r["workload"], r["status"], r["content_hash"], r["freshness_key"]) for r in rows
    )


def _files(data: Path) -> list[Path]:
    return sorted((data / "results").rglob("*.parquet"))


@pytest.mark.timeout(1800)  # two whole ingests of real evaluations, each allowed 600 s, plus the cluster's start
def test_ray_ingest_of_real_evaluations_equals_local_ingest(cluster, tmp_path):
    subs = tmp_path / "subs"
    base = SUBMISSIONS_DIR / "xla-baseline" / "kernels"
    _submission(subs, "xla-small", {w: (base / f"{w}.py").read_text() for w in REAL_WORKLOADS})
    local = _ingest(tmp_path / "local", subs, "--executor", "local")
    assert local.returncode == 0, local.stdout + local.stderr
    ray_run = _ingest(tmp_path / "ray", subs, "--executor", "ray", "--address", "auto", env=cluster.driver_env())
    assert ray_run.returncode == 0, ray_run.stdout + ray_run.stderr
    assert _keys(tmp_path / "ray") == _keys(tmp_path / "local")
    assert len(_keys(tmp_path / "ray")) == len(REAL_WORKLOADS)
    per_host = ray_run.stdout.split("evaluations per host:")[1].split("\n")[0]
    assert sum(int(part.split()[-1]) for part in per_host.split(",")) == len(REAL_WORKLOADS)
    assert "local" not in per_host  # every evaluation ran on a cluster node, none on the head's process
    assert cluster.listening_addresses() <= {"127.0.0.1", "::ffff:127.0.0.1"}


def test_no_host_of_the_tracks_chip_is_a_clear_error(cluster, tmp_path):
    subs = _fake_subs(tmp_path / "subs")
    out = _ingest(tmp_path / "data", subs, "--executor", "ray", chip="v6e", env=cluster.driver_env(), evaluator=FAKE)
    assert out.returncode == 2 and "jaxbench_host_v6e" in out.stdout, out.stdout + out.stderr
    assert not _files(tmp_path / "data")


def _wait_files(data: Path, n: int, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while len(_files(data)) < n and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)


def _wait_started(log: Path, digests: set[str], node: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until `node` has started one of these evaluations (its line in the fake evaluator's log)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        lines = log.read_text().splitlines() if log.exists() else []
        if any(line.split()[0] in digests and line.split()[1] == node for line in lines):
            return
        time.sleep(0.05)


def test_head_killed_then_rerun_submits_only_what_is_missing(cluster, tmp_path):
    subs, ref, data = _fake_subs(tmp_path / "subs"), tmp_path / "ref", tmp_path / "data"
    assert _ingest(ref, subs, evaluator=FAKE).returncode == 0  # local, no sleep: the expected rows
    cmd = [
        sys.executable,
        "-m",
        "bench.cli",
        "ingest",
        "--chip",
        "cpu",
        "--size",
        "small",
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
        "--executor",
        "ray",
    ]
    env = {**os.environ, **cluster.driver_env(), "JAXBENCH_EVALUATOR": FAKE}
    head = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_files(data, 2, head)
    head.send_signal(signal.SIGKILL)
    head.wait()
    partial = len(_files(data))
    assert 2 <= partial < 8, "the kill must land mid-run"
    rerun = _ingest(data, subs, "--executor", "ray", env=cluster.driver_env(), evaluator=FAKE)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert f"{8 - partial} evaluations stored, {partial} already current" in rerun.stdout
    assert _keys(data) == _keys(ref) and len(_files(data)) == 8
    assert not list(data.rglob(f"{store.TMP_PREFIX}*"))


PROBE = """
import json, os, sys
from pathlib import Path
from bench.executor.ray_cluster import RayExecutor
from bench.harness.protocol.task import EvalTask


def probe_unit(host, spec, task_jsons):
    # Evaluates the batch with the fake evaluator and says which process and host state did it.
    results = host.evaluate(spec, [EvalTask.model_validate_json(t) for t in task_jsons])
    return [json.dumps({"pid": os.getpid(), "host": id(host), "batch": host.batches, "size": len(task_jsons),
                        "status": r.status.value}) for r in results]


fake, folder = sys.argv[1], Path(sys.argv[2])
items = [(i, EvalTask(workload="8p_GEMM", kernel_path=folder / f"k{i}.py", size="small")) for i in range(8)]
executor = RayExecutor(chip="cpu", address="auto")
try:
    first = list(executor.run(probe_unit, fake, items[:6], batch=1))
    second = list(executor.run(probe_unit, fake, items[6:], batch=2))
finally:
    executor.close()
print(json.dumps([[o.key, o.host, o.result_json, repr(o.error) if o.error else None, run]
                  for run, outs in ((1, first), (2, second)) for o in outs]))
"""


def test_one_warm_host_worker_per_node_kept_across_batches_and_runs(cluster, tmp_path):
    for i in range(8):
        (tmp_path / f"k{i}.py").write_text(f"# fake: speedup={i + 1}\n")
    (tmp_path / "probe.py").write_text(PROBE)
    done = subprocess.run(
        [sys.executable, str(tmp_path / "probe.py"), FAKE, str(tmp_path)],
        cwd=ROOT,
        env={**os.environ, **cluster.driver_env()},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(key for key, *_ in out) == list(range(8)) and all(err is None for _, _, _, err, _ in out)
    per_host: dict[str, list[dict]] = {}
    for _, host, result, _, _ in out:
        per_host.setdefault(host, []).append(json.loads(result))
    assert len(per_host) == 2  # both worker nodes evaluated; the head (no host resource) none
    for rs in per_host.values():  # one process and one Host per node, across batches and across both runs
        assert len({(r["pid"], r["host"]) for r in rs}) == 1
        batches = sorted({r["batch"] for r in rs})
        assert batches == list(range(1, len(batches) + 1))
    assert sum(len({r["batch"] for r in rs}) for rs in per_host.values()) == 6 + 1
    assert [json.loads(result)["size"] for _, _, result, _, run in out if run == 2] == [2, 2]  # one batch of two
    assert {r["status"] for rs in per_host.values() for r in rs} == {"correct"}


def test_lost_worker_node_is_retried_elsewhere_and_stored_once(cluster, tmp_path):
    """Kills one of the two worker nodes (raylet SIGKILL): keep this test last in the module."""
    subs, ref, data = _fake_subs(tmp_path / "subs", ("gamma", "delta")), tmp_path / "ref", tmp_path / "data"
    digests = {hashlib.sha256(f.read_bytes()).hexdigest() for f in subs.rglob("kernels/*.py")}
    assert _ingest(ref, subs, evaluator=FAKE).returncode == 0
    cmd = [
        sys.executable,
        "-m",
        "bench.cli",
        "ingest",
        "--chip",
        "cpu",
        "--size",
        "small",
        "--data-dir",
        str(data),
        "--submissions-dir",
        str(subs),
        "--executor",
        "ray",
        "--address",
        "auto",
    ]
    env = {**os.environ, **cluster.driver_env(), "JAXBENCH_EVALUATOR": FAKE}
    head = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    victim = cluster.nodes[-1]
    _wait_started(Path(cluster.env["FAKE_EVAL_START_LOG"]), digests, victim.label, head)
    assert head.poll() is None and len(_files(data)) < 8, "the kill must land mid-run"
    cluster.kill_node(victim)  # the evaluation it just started (2 s) is lost with it
    out, _ = head.communicate(timeout=300)
    assert head.returncode == 0, out
    assert "8 evaluations stored" in out and "0 not stored" in out, out
    assert _keys(data) == _keys(ref)
    assert len(_files(data)) == 8 and len({(k[1], k[2]) for k in _keys(data)}) == 8
    started = [
        line.split()[0]
        for line in Path(cluster.env["FAKE_EVAL_START_LOG"]).read_text().splitlines()
        if line.split()[0] in digests
    ]
    assert set(started) == digests and len(started) > len(digests), "the lost evaluation ran again elsewhere"
