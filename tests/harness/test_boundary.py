"""The trust boundary of harness v7, proved from inside a candidate: the build step sees no input value nor the runner,
no process of it outlives it, and what it prints is bounded and escaped before anyone reads it."""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from bench.harness.parent import sandboxing as sandbox
from bench.harness.parent.builder import BuildProcess
from bench.harness.parent.evaluate import evaluate
from bench.harness.protocol.messages import BuildRequest
from bench.harness.protocol.process import LOG_LIMIT, LogCapture, escape_controls
from bench.harness.protocol.result import Status
from bench.harness.protocol.task import EvalTask
from tests.sandbox.test_wrap import pids_cgroup_available

KERNELS = Path(__file__).parent / "kernels"
needs_bwrap = pytest.mark.skipif(
    sandbox.bwrap_problem() is not None, reason=f"bubblewrap unusable: {sandbox.bwrap_problem()}"
)

PROBE = """
import glob, json, os

import jax
import jax.numpy as jnp
import numpy as np


def workload(A, B):
    seen = {"types": [type(A).__name__, type(B).__name__]}
    try:
        seen["value"] = float(np.asarray(A)[0, 0])
    except Exception as e:
        seen["value"] = "none: " + type(e).__name__
    seen["live_shapes"] = sorted({str(tuple(a.shape)) for a in jax.live_arrays()})
    roots = ("/tmp", os.environ.get("JAXBENCH_ROOT", "/nonexistent") + "/build")  # where v6 kept every seed's inputs
    seen["input_files"] = [p for root in roots for p in glob.glob(root + "/**/seed_*", recursive=True)][:5]
    cmdlines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdlines.append(open(f"/proc/{pid}/cmdline", "rb").read())
        except OSError:
            pass
    seen["runner_visible"] = any(b"runner.server" in c for c in cmdlines)
    seen["seed_vars"] = sorted(k for k in os.environ if "SEED" in k.upper())
    print("PROBE " + json.dumps(seen), flush=True)
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


@pytest.mark.slow
def test_the_candidate_never_sees_an_input_value(tmp_path: Path) -> None:
    kernel = tmp_path / "probe.py"
    kernel.write_text(PROBE)
    r = evaluate(
        EvalTask(
            workload="8p_GEMM", kernel_path=kernel, size="small", seeds=1, warmup=1, iters=2, blocks=1, timeout_s=120
        )
    )
    assert r.status == Status.CORRECT, r.reason
    probes = [json.loads(ln[len("PROBE ") :]) for ln in r.candidate_log.splitlines() if ln.startswith("PROBE ")]
    assert probes  # traced once (lowered for the runnable program and for TPU: build/lowering.py), abstract
    for seen in probes:
        assert seen["value"].startswith("none: ") and all("Tracer" in t for t in seen["types"]), seen
        assert "(256, 512)" not in seen["live_shapes"] and seen["input_files"] == [], seen
        # the runner may draw the inputs while the build runs (harness 13), but it is not addressable from the
        # build's PID namespace, and no seed reaches the build
        assert seen["runner_visible"] is False and seen["seed_vars"] == [], seen


SPAWNER = """
import subprocess, sys

import jax.numpy as jnp

def _spawn(tag):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "{marker}-" + tag], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

_spawn("import")


def workload(A, B):
    _spawn("trace")
    return jnp.dot(A, B)
"""


@pytest.mark.parametrize("mode", [pytest.param("bwrap", marks=needs_bwrap), "none"])
def test_no_process_of_the_build_outlives_it(tmp_path: Path, mode: str) -> None:
    if mode == "none" and not pids_cgroup_available():
        pytest.skip("without bubblewrap, only a pids cgroup can find detached processes; none here")
    marker = f"jaxbench-outlive-{uuid.uuid4().hex}"
    kernel = tmp_path / "spawner.py"
    kernel.write_text(SPAWNER.format(marker=marker))
    request = BuildRequest(kernel_path=str(kernel), workload="8p_GEMM", size="small", platforms=["cpu"], interpret=True)
    try:
        artifact = BuildProcess(kernel, mode, sandbox.Limits()).run(request, 120)
        alive = _processes_with(marker)
    finally:
        for pid in _processes_with(marker):
            os.kill(pid, 9)
    assert artifact.ok, artifact.reason
    assert alive == [], f"processes of the build outlived it: {alive}"
    # bwrap: the PID namespace died with the build; none: the pids cgroup found them and they were killed
    if mode == "bwrap":
        assert artifact.survivors == 0
    else:
        assert artifact.survivors >= 2  # one at import, one at the trace (one trace, lowered twice)


def test_log_keeps_head_and_tail_and_escapes_control_characters() -> None:
    r, w = os.pipe()
    capture = LogCapture(r)
    os.write(w, b"HEAD\x1b[2J\x07\n")
    for _ in range(40):
        os.write(w, b"y" * 4096)
    os.write(w, b"\nTAIL\r\n")
    os.close(w)
    text = capture.text()
    assert text.startswith("HEAD\\x1b[2J\\x07\n") and text.endswith("TAIL\\x0d\n")
    assert "bytes of candidate output dropped" in text
    assert len(text.encode()) < LOG_LIMIT + 200 and capture.total == 40 * 4096 + 17
    assert escape_controls("a\tb\nc\x00\x7f") == "a\tb\nc\\x00\\x7f"


def test_a_forged_reply_cannot_carry_a_status() -> None:
    from pydantic import ValidationError

    from bench.harness.protocol.messages import BuildReply

    with pytest.raises(ValidationError):
        BuildReply.model_validate({"ok": True, "status": "correct"})
    assert "status" not in BuildReply.model_fields and "kind" not in BuildReply.model_fields


@pytest.mark.slow
def test_the_parent_never_starts_a_jax_backend(tmp_path: Path) -> None:
    """Only the runner holds the device (on a TPU host: the chip). The parent reads the exports and parses the
    trace with jax imported, but never initializes a backend; the build runs with JAX_PLATFORMS=cpu."""
    import subprocess
    import sys

    code = (
        "from pathlib import Path\nfrom bench.harness.parent.evaluate import evaluate\n"
        "from bench.harness.protocol.task import EvalTask\n"
        f"r = evaluate(EvalTask(workload='8p_GEMM', kernel_path=Path({str(KERNELS / 'pallas_gemm.py')!r}), "
        "size='small', seeds=1, warmup=1, iters=2, blocks=1))\n"
        "from jax._src import xla_bridge\n"
        "print('STATUS', r.status.value, 'BACKENDS', sorted(xla_bridge._backends))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert "STATUS correct BACKENDS []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.slow
def test_without_bubblewrap_the_inputs_wait_until_every_build_ended() -> None:
    """A build without bubblewrap shares the runner's PID namespace: there the runner draws the inputs only once
    every build has ended (with bubblewrap it draws them while the builds run, harness 13)."""
    r = evaluate(
        EvalTask(
            workload="8p_GEMM",
            kernel_path=KERNELS / "identical.py",
            size="small",
            seeds=1,
            warmup=1,
            iters=2,
            blocks=1,
            timeout_s=120,
            sandbox="none",
        )
    )
    assert r.status == Status.CORRECT, r.reason
    assert r.timeline_s is not None and r.timeline_s.build_ended < r.timeline_s.inputs_drawn
