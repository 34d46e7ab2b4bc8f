"""Generators: the OpenAI-compatible path against a real local HTTP server (127.0.0.1) with canned replies, the
command generator, and the loop around them; the slow test feeds back real harness results."""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bench.agent.generators import CommandGenerator, GeneratorError, OpenAIGenerator
from bench.agent.run import RunSpec, run
from bench.agent.template_search import source_for, space
from bench.dataset.validate import check

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("agent_fakes", HERE / "fakes.py")
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)

KEY_ENV, KEY = "JAXBENCH_TEST_API_KEY", "sk-test-do-not-store-7f3a9"
W = "41k_Gemm_Add_ReLU"


class ChatServer:
    """A chat-completions server on 127.0.0.1 replying from a list; it records every request."""

    def __init__(self, replies: list, usage: bool = True) -> None:
        self.replies, self.requests, self.usage = list(replies), [], usage
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
                reply = server.replies.pop(0)
                if isinstance(reply, int):  # an HTTP error status
                    self.send_response(reply)
                    self.end_headers()
                    return
                payload = {"id": "x", "object": "chat.completion",
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}}]}
                if server.usage:
                    payload["usage"] = {"prompt_tokens": 1000 + len(server.requests), "completion_tokens": 50}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _fence(source: str) -> str:
    return f"Here is the kernel.\n```python\n{source}```\n"


BROKEN = "def workload(x, weight, bias):\n    raise ValueError('boom from the candidate')\n"


def _run(tmp_path: Path, generator, evaluator=None, turns: int = 3) -> RunSpec:
    spec = RunSpec(out=tmp_path / "sub", method="iterative", chains=1, turns=turns, workloads=[W], generator=generator,
                   journal_dir=tmp_path / "journal", meta={"date": "2026-12-01", "name": "llm test"},
                   **({"evaluator": evaluator} if evaluator else {}))
    run(spec)
    return spec


def _all_text(*roots: Path) -> str:
    return "".join(p.read_text(errors="replace") for r in roots for p in r.rglob("*") if p.is_file())


def test_openai_generator_over_local_http(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    good = source_for(W, space(W, "small")[0])
    server = ChatServer([_fence(good), 503, _fence(BROKEN), "Sorry, I cannot help with that."])
    try:
        gen = OpenAIGenerator(server.url, "test-model", KEY_ENV, temperature=0.0)
        _run(tmp_path, gen, fakes.fake_evaluator)
    finally:
        server.close()
    assert [r["path"] for r in server.requests] == ["/v1/chat/completions"] * 4  # one retried after the 503
    assert all(r["auth"] == f"Bearer {KEY}" for r in server.requests)
    bodies = [r["body"] for r in server.requests]
    assert bodies[0]["model"] == "test-model" and [m["role"] for m in bodies[0]["messages"]] == ["system", "user"]
    assert "Previous attempt" not in bodies[0]["messages"][1]["content"]
    assert good.strip() in bodies[2]["messages"][1]["content"]  # turn 2 carries turn 1's source
    traj = [json.loads(x) for x in (tmp_path / "sub" / "trajectory" / f"{W}.jsonl").read_text().splitlines()]
    assert [t["tokens_in"] for t in traj] == [1001, 1003, 1004] and {t["tokens_out"] for t in traj} == {50}
    assert traj[0]["source"] == good and traj[2]["declared"]["outcome"] == "api_runtime_error"
    assert traj[2]["source"] == "Sorry, I cannot help with that."
    assert KEY not in _all_text(tmp_path)  # the key is written nowhere
    assert check(tmp_path / "sub")[1] == []


def test_openai_without_the_key_variable_fails_clearly(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    gen = OpenAIGenerator("http://127.0.0.1:9/v1", "m", KEY_ENV)
    from bench.agent.prompts import render
    from bench.agent.spec import task_spec

    with pytest.raises(GeneratorError, match=KEY_ENV):
        gen.generate(render(task_spec(W, "small"), "best-of-n"))


def test_command_generator_reads_the_prompt_json(tmp_path):
    script = tmp_path / "model.py"
    good = source_for(W, space(W, "small")[1])
    (tmp_path / "good.py").write_text(good)
    script.write_text(
        "import json, sys\n"
        "p = json.load(sys.stdin)\n"
        f"open({str(tmp_path / 'seen.jsonl')!r}, 'a').write(json.dumps({{'turn': p['turn'], 'fb': p['feedback']}}) + '\\n')\n"
        f"print('```python\\n' + open({str(tmp_path / 'good.py')!r}).read() + '```')\n")
    _run(tmp_path, CommandGenerator(f"{sys.executable} {script}"), fakes.fake_evaluator, turns=2)
    seen = [json.loads(x) for x in (tmp_path / "seen.jsonl").read_text().splitlines()]
    assert [s["turn"] for s in seen] == [0, 1] and seen[0]["fb"] is None and seen[1]["fb"]["previous_source"] == good


def test_command_generator_failure_is_an_error(tmp_path):
    with pytest.raises(GeneratorError, match="exited 3"):
        _run(tmp_path, CommandGenerator("exit 3"), fakes.fake_evaluator)


@pytest.mark.slow
def test_openai_loop_feeds_back_real_harness_results(tmp_path, monkeypatch):
    """Real evaluations: turn 2's prompt reports turn 1's measured latency, turn 3's the candidate's real error."""
    monkeypatch.setenv(KEY_ENV, KEY)
    good = source_for(W, space(W, "small")[0])
    server = ChatServer([_fence(good), _fence(BROKEN), "no code, sorry"])
    try:
        _run(tmp_path, OpenAIGenerator(server.url, "test-model", KEY_ENV))
    finally:
        server.close()
    prompts = [r["body"]["messages"][1]["content"] for r in server.requests]
    assert len(prompts) == 3
    assert "Previous attempt was correct. Latency " in prompts[1] and "XLA baseline " in prompts[1]
    assert "Best-so-far in this chain: " in prompts[1] and good.strip() in prompts[1]
    assert "Previous attempt was incorrect or failed to run" in prompts[2]
    assert "boom from the candidate" in prompts[2] and BROKEN.strip() in prompts[2]
    traj = [json.loads(x) for x in (tmp_path / "sub" / "trajectory" / f"{W}.jsonl").read_text().splitlines()]
    assert [t["declared"]["outcome"] for t in traj] == ["correct", "api_runtime_error", "api_runtime_error"]
    assert traj[0]["declared"]["speedup"] > 0
    assert (tmp_path / "sub" / "kernels" / f"{W}.py").read_text() == good
    assert check(tmp_path / "sub")[1] == [] and KEY not in _all_text(tmp_path)


def test_an_empty_reply_is_recorded_as_a_failed_sample(tmp_path):
    from bench.agent.run import EMPTY_REPLY

    spec = _run(tmp_path, CommandGenerator("true"), fakes.fake_evaluator, turns=2)
    from bench.agent.journal import Journal

    records = Journal(spec.journal_dir).load()
    assert [r.source for r in records] == [EMPTY_REPLY] * 2 and {r.attempt.outcome for r in records} == {"api_runtime_error"}
    # no sample ran, so there is no kernel to submit for the workload, and no trajectory without its kernel
    assert not (tmp_path / "sub" / "trajectory").exists() and not (tmp_path / "sub" / "kernels").exists()
