"""A real Ray cluster on this machine for the executor tests: a head (coordinator only) and two worker nodes,
each a separate `ray start` offering `jaxbench_host_cpu: 1` (one stand-in accelerator host each), all on
127.0.0.1. Started once per module; every process of every node is killed in the finalizer."""

from __future__ import annotations

import os

import pytest

from bench.paths import ROOT

HOST_RESOURCE = {"jaxbench_host_cpu": 1}
FAKE_SLEEP_S = "2"  # the fake evaluator's duration on the cluster: long enough to kill a node mid-run


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("ray")
    from bench.executor.local_cluster import LocalCluster

    c = LocalCluster(
        env={
            "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
            "JAXBENCH_ROOT": str(ROOT),
            "FAKE_EVAL_SLEEP": FAKE_SLEEP_S,
        }
    )
    c.env["FAKE_EVAL_START_LOG"] = str(c.root / "fake_starts.log")  # every fake evaluation started on a node
    try:
        c.start_head()
        c.add_worker(HOST_RESOURCE)
        c.add_worker(HOST_RESOURCE)
        yield c
    finally:
        c.stop()
