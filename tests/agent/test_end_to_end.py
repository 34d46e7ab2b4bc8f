"""`bench agent run` end to end: a local OpenAI-compatible server plays the model, the real harness evaluates.

One chain of 8p_GEMM at size small; the "model" answers, turn by turn: prose only, two code blocks, a correct
Pallas kernel whose block shape breaks the (8, 128) rule (it runs in interpret mode but does not lower for a TPU),
a kernel that raises, and a correct kernel that lowers. Each prompt must tell the model what the harness saw,
and the run must submit the kernel that lowers. Three real evaluations through one warm runner (slow).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import yaml

from bench.agent.generators import OpenAIGenerator
from bench.agent.run import RunSpec, run
from bench.dataset.validate import check

HERE = Path(__file__).resolve().parent
_cs = importlib.util.spec_from_file_location("agent_chat_server", HERE / "chat_server.py")
chat_server = importlib.util.module_from_spec(_cs)
_cs.loader.exec_module(chat_server)

W = "8p_GEMM"
KEY_ENV, KEY = "JAXBENCH_TEST_API_KEY", "sk-test-do-not-store-e2e"


def matmul(bm: int, bn: int) -> str:
    """A plain Pallas matmul for 8p at size small (A: 256x512, B: 512x384): (bm, bn) output tiles, full K."""
    return f"""import jax
import jax.numpy as jnp
from jax.experimental import pallas as pl

BM, BN = {bm}, {bn}


def _kernel(a_ref, b_ref, o_ref):
    o_ref[...] = jnp.dot(a_ref[...], b_ref[...], preferred_element_type=jnp.float32).astype(o_ref.dtype)


def workload(A, B):
    m, k = A.shape
    n = B.shape[1]
    return pl.pallas_call(
        _kernel,
        grid=(m // BM, n // BN),
        in_specs=[pl.BlockSpec((BM, k), lambda i, j: (i, 0)), pl.BlockSpec((k, BN), lambda i, j: (0, j))],
        out_specs=pl.BlockSpec((BM, BN), lambda i, j: (i, j)),
        out_shape=jax.ShapeDtypeStruct((m, n), A.dtype),
    )(A, B)
"""


LOWERS = matmul(128, 128)
NO_LOWER = matmul(128, 96)  # 96 is neither a multiple of 128 nor B's 384 columns: Mosaic refuses the block
BROKEN = "def workload(A, B):\n    raise ValueError('boom from the candidate')\n"
PROSE = "I would tile the matmul in 128 x 128 blocks and accumulate over K in float32."
TWO_BLOCKS = f"Option one:\n```python\n{LOWERS}```\nOption two:\n```python\n{NO_LOWER}```\n"


@pytest.mark.slow
def test_agent_run_end_to_end_against_a_local_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    replies = [PROSE, TWO_BLOCKS, chat_server.fence(NO_LOWER), chat_server.fence(BROKEN), chat_server.fence(LOWERS)]
    out, journal = tmp_path / "submissions" / "e2e", tmp_path / "build" / "agent_runs" / "e2e"
    with chat_server.ChatServer(replies) as server:
        spec = RunSpec(
            out=out,
            method="iterative",
            chains=1,
            turns=5,
            workloads=[W],
            generator=OpenAIGenerator(server.url, "local-test-model", KEY_ENV),
            journal_dir=journal,
            meta={"date": "2026-12-01", "name": "end to end", "model_name": "local-test-model"},
        )
        outcome = run(spec)
    prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
    assert len(prompts) == 5 and outcome.stopped is None

    # turn 1: the prose was not evaluated, and the feedback says so in the model's terms
    assert "Your reply was not evaluated: it has no ```python code block" in prompts[1]
    assert PROSE in prompts[1] and "runner's output" not in prompts[1] and "Previous implementation" not in prompts[1]
    # turn 2: two blocks, quoted whole in a fence their own ``` lines cannot close; neither is taken as the kernel
    assert "Your reply was not evaluated: it has several code blocks" in prompts[2]
    assert "The end of your reply (its last 40 of " in prompts[2] and "\n````text\n" in prompts[2]
    assert "\nOption two:\n```python\n" in prompts[2] and "Previous implementation:" not in prompts[2]
    # turn 3: correct, but it does not lower for a TPU; the error names the model's file, not our copy of it
    p = prompts[3]
    assert "Previous attempt was correct. Latency " in p and "CPU times of Pallas in TPU interpret mode" in p
    assert "TPU lowering (Mosaic) of kernel.py FAILED" in p and "divisible by 8 and 128" in p
    assert "kernel.py:" in p and str(journal) not in p and "agent_runs" not in p and "eval_" not in p
    assert "Previous implementation:\n```python\n" + NO_LOWER.rstrip() in p
    # turn 4: the candidate's own error and traceback, attributed to kernel.py
    p = prompts[4]
    assert "Previous attempt was incorrect or failed to run" in p and "boom from the candidate" in p
    assert "/.venv/" not in p and "/lib/python3." not in p  # installed packages read from site-packages/ on
    assert 'File "kernel.py", line 2' in p and "agent_runs" not in p
    assert "Best-so-far in this chain: " in p and "it does not lower for TPU, turn 2" in p
    # numbered as the trajectory numbers them (chain 0, turns from 0)
    assert "This is turn 4 of chain 0" in p and "file of your previous reply, turn 3)" in p

    # the journal and the trajectory record lowering and the sample's times
    traj = [json.loads(x) for x in (out / "trajectory" / f"{W}.jsonl").read_text().splitlines()]
    assert [t["declared"]["outcome"] for t in traj] == [
        "api_runtime_error",
        "api_runtime_error",
        "correct",
        "api_runtime_error",
        "correct",
    ]
    assert [t["declared"].get("lowers") for t in traj] == [None, None, False, None, True]
    assert traj[0]["source"] == PROSE and traj[1]["source"] == TWO_BLOCKS
    assert all(t["model_latency_s"] >= 0 and t["wall_time_s"] >= t["model_latency_s"] for t in traj)
    # submitted: the correct kernel that lowers, whatever the interpret-mode times of the other said
    assert (out / "kernels" / f"{W}.py").read_text() == LOWERS
    assert outcome.selected[W].turn == 4 and outcome.selected[W].attempt.lowers is True

    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["agent_run"]["complete"] is True and meta["samples_per_workload"] == 5
    assert meta["agent_framework"].endswith("generator: openai-compatible")
    assert meta["model"]["name"] == "local-test-model"
    assert check(out)[1] == []
    published = "".join(p.read_text() for p in out.rglob("*") if p.is_file())
    assert server.url not in published and "127.0.0.1" not in published and KEY not in published
    assert KEY not in "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
