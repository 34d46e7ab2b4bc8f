"""The sandbox's must-show properties proved from inside a candidate kernel, through the real `evaluate`.

One probe kernel (generated with this test's port and marker) tries, at import: a write to the project's
`data/`, a connection to a port this test holds open on 127.0.0.1, reading a token set in the harness's
environment, and starting a detached background process. It prints what happened (its log) and then
computes the right answer, so the evaluation itself completes.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.harness.parent.evaluate import evaluate
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask
from bench.paths import DATA_DIR

needs_bwrap = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}"
)

PROBE = """
import json, os, socket, subprocess, sys

import jax.numpy as jnp

seen = {{}}
try:
    with open({planted!r}, "w") as f:
        f.write("planted")
    seen["write_data"] = "wrote"
except OSError as e:
    seen["write_data"] = "denied: " + type(e).__name__
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    seen["connect"] = "connected"
except OSError as e:
    seen["connect"] = "refused: " + type(e).__name__
seen["token"] = os.environ.get("JAXBENCH_PROBE_TOKEN", "absent")
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", {marker!r}], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print("PROBE " + json.dumps(seen), flush=True)


def workload(A, B):
    return jnp.dot(A, B)
"""


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


@needs_bwrap
def test_sandbox_from_inside_a_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = f"jaxbench-probe-{uuid.uuid4().hex}"
    planted = DATA_DIR / f"planted_{marker}.txt"
    monkeypatch.setenv("JAXBENCH_PROBE_TOKEN", "ghp_harness_secret")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)
    kernel = tmp_path / "probe_kernel.py"
    kernel.write_text(PROBE.format(planted=str(planted), port=server.getsockname()[1], marker=marker))
    try:
        r = evaluate(
            EvalTask(
                workload="8p_GEMM",
                kernel_path=kernel,
                size="small",
                seeds=1,
                warmup=1,
                iters=2,
                blocks=1,
                sandbox="bwrap",
                timeout_s=180,
            )
        )
        deadline = time.monotonic() + 120  # a bound for a busy machine: the loop ends as soon as none is left
        while _processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        survivors = _processes_with(marker)
    finally:
        server.close()
        for pid in _processes_with(marker):
            os.kill(pid, 9)
        planted.unlink(missing_ok=True)
    assert r.env is not None and r.env.sandbox == "bwrap", r.reason
    assert r.status == Status.CORRECT, f"{r.status.value}: {r.reason}\n{r.candidate_log}"
    line = next(ln for ln in r.candidate_log.splitlines() if ln.startswith("PROBE "))
    seen = json.loads(line[len("PROBE ") :])
    assert seen["write_data"].startswith("denied"), seen
    assert seen["connect"].startswith("refused"), seen
    assert seen["token"] == "absent", seen
    assert survivors == [], f"background process outlived the evaluation: {survivors}"
    assert "sandbox:none" not in r.integrity.flags


def test_unsandboxed_rows_say_so(tmp_path: Path) -> None:
    """sandbox="none" (what "auto" falls back to without bubblewrap): the row records it, as a label only."""
    kernel = tmp_path / "plain.py"
    kernel.write_text("import jax.numpy as jnp\n\n\ndef workload(A, B):\n    return jnp.dot(A, B)\n")
    r = evaluate(
        EvalTask(
            workload="8p_GEMM",
            kernel_path=kernel,
            size="small",
            seeds=1,
            warmup=1,
            iters=2,
            blocks=1,
            sandbox="none",
            timeout_s=180,
        )
    )
    assert r.status == Status.CORRECT, r.reason
    assert r.env is not None and r.env.sandbox == "none"
    assert sorted(r.integrity.flags) == ["no_pallas", "sandbox:none"]
