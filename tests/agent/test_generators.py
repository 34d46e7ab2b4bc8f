"""Generators: the OpenAI-compatible path against a real local HTTP server (127.0.0.1) with canned replies (retries,
Retry-After, errors), the command generator, and the loop around them with a fake harness; the loop with real
harness results is tests/agent/test_end_to_end.py."""

from __future__ import annotations

import email.utils
import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml

from bench.agent.generators import CommandGenerator, GeneratorError, OpenAIGenerator, retry_after_s
from bench.agent.run import RunSpec, run
from bench.agent.template_search import source_for, space
from bench.dataset.validate import check

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("agent_fakes", HERE / "fakes.py")
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)

KEY_ENV, KEY = "JAXBENCH_TEST_API_KEY", "sk-test-do-not-store-7f3a9"
W = "41k_Gemm_Add_ReLU"


_cs = importlib.util.spec_from_file_location("agent_chat_server", HERE / "chat_server.py")
chat_server = importlib.util.module_from_spec(_cs)
_cs.loader.exec_module(chat_server)
ChatServer = chat_server.ChatServer


def _fence(source: str) -> str:
    return f"Here is the kernel.\n```python\n{source}```\n"


BROKEN = "def workload(x, weight, bias):\n    raise ValueError('boom from the candidate')\n"


def _run(tmp_path: Path, generator, evaluator=None, turns: int = 3) -> RunSpec:
    spec = RunSpec(
        out=tmp_path / "sub",
        method="iterative",
        chains=1,
        turns=turns,
        workloads=[W],
        generator=generator,
        journal_dir=tmp_path / "journal",
        meta={"date": "2026-12-01", "name": "llm test"},
        **({"evaluator": evaluator} if evaluator else {}),
    )
    run(spec)
    return spec


def _all_text(*roots: Path) -> str:
    return "".join(p.read_text(errors="replace") for r in roots for p in r.rglob("*") if p.is_file())


def test_openai_generator_over_local_http(tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)
    good = source_for(W, space(W, "small")[0])
    server = ChatServer([_fence(good), 503, _fence(BROKEN), "Sorry, I cannot help with that."])
    try:
        gen = OpenAIGenerator(server.url, "test-model", KEY_ENV, temperature=0.0, sleep=lambda s: None)
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
    # the endpoint is published nowhere: the generator's kind and the model's name say what produced the kernels
    assert server.url not in _all_text(tmp_path) and "127.0.0.1" not in _all_text(tmp_path)
    meta = yaml.safe_load((tmp_path / "sub" / "submission.yaml").read_text())
    assert meta["agent_framework"].endswith("generator: openai-compatible")
    assert all(t["model_latency_s"] >= 0 and t["wall_time_s"] >= t["model_latency_s"] for t in traj)
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
        f"open({str(tmp_path / 'seen.jsonl')!r}, 'a')"
        ".write(json.dumps({'turn': p['turn'], 'fb': p['feedback']}) + '\\n')\n"
        f"print('```python\\n' + open({str(tmp_path / 'good.py')!r}).read() + '```')\n"
    )
    _run(tmp_path, CommandGenerator(f"{sys.executable} {script}"), fakes.fake_evaluator, turns=2)
    seen = [json.loads(x) for x in (tmp_path / "seen.jsonl").read_text().splitlines()]
    assert [s["turn"] for s in seen] == [0, 1] and seen[0]["fb"] is None and seen[1]["fb"]["previous_source"] == good


def test_command_generator_failure_is_an_error(tmp_path):
    with pytest.raises(GeneratorError, match="exited 3"):
        _run(tmp_path, CommandGenerator("exit 3"), fakes.fake_evaluator)


def test_an_empty_reply_is_recorded_as_a_failed_sample(tmp_path):
    from bench.agent.run import EMPTY_REPLY

    spec = _run(tmp_path, CommandGenerator("true"), fakes.fake_evaluator, turns=2)
    from bench.agent.journal import Journal

    records = Journal(spec.journal_dir).load()
    assert [r.source for r in records] == [EMPTY_REPLY] * 2
    assert {r.attempt.outcome for r in records} == {"api_runtime_error"}
    # no sample ran, so there is nothing to submit: no folder at all (a `workloads: []` one would break ingest)
    assert not (tmp_path / "sub").exists()


def _generator(server: ChatServer, sleeps: list[float], **kw) -> OpenAIGenerator:
    return OpenAIGenerator(server.url, "m", None, sleep=sleeps.append, **kw)


def _prompt():
    from bench.agent.prompts import render
    from bench.agent.spec import task_spec

    return render(task_spec(W, "small"), "best-of-n")


def test_retry_after_is_honoured():
    sleeps: list[float] = []
    when = email.utils.format_datetime(email.utils.localtime().replace(microsecond=0), usegmt=False)
    with ChatServer(
        [
            (429, {"Retry-After": "7"}, b"slow down"),
            (503, {"Retry-After": "0.5"}, b""),
            (503, {"Retry-After": when}, b""),
            "ok",
        ]
    ) as server:
        reply = _generator(server, sleeps).generate(_prompt())
    assert reply.text == "ok" and len(server.requests) == 4
    assert sleeps[:2] == [7.0, 0.5] and 0 <= sleeps[2] <= 1.0  # an HTTP date in the past: no wait


def test_backoff_without_retry_after_is_jittered_and_capped(monkeypatch):
    """Full jitter: each wait is drawn uniformly from [0, min(cap, backoff * 2^n)]."""
    import random

    windows: list[tuple[float, float]] = []
    monkeypatch.setattr(random, "uniform", lambda a, b: windows.append((a, b)) or b / 2)
    sleeps: list[float] = []
    with ChatServer([500, 502, 503, 504, "ok"]) as server:
        _generator(server, sleeps, backoff_s=1.0, max_backoff_s=3.0).generate(_prompt())
    assert windows == [(0, 1.0), (0, 2.0), (0, 3.0), (0, 3.0)] and sleeps == [0.5, 1.0, 1.5, 1.5]


@pytest.mark.parametrize("status", [400, 401, 404, 409, 413, 422])
def test_client_errors_other_than_429_are_not_retried(status):
    sleeps: list[float] = []
    with ChatServer([(status, {"Retry-After": "1"}, b'{"error": "the server says why"}'), "never sent"]) as server:
        with pytest.raises(GeneratorError, match=f"HTTP {status}.*the server says why"):
            _generator(server, sleeps).generate(_prompt())
    assert len(server.requests) == 1 and sleeps == []


def test_retries_are_bounded():
    sleeps: list[float] = []
    with ChatServer([503] * 3) as server:
        with pytest.raises(GeneratorError, match="after 3 attempts"):
            _generator(server, sleeps, retries=2).generate(_prompt())
    assert len(server.requests) == 3 and len(sleeps) == 2


def test_an_unreachable_endpoint_is_retried_then_stops_the_run(tmp_path):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    gen = OpenAIGenerator(f"http://127.0.0.1:{port}/v1", "m", None, retries=1, sleep=sleeps.append)
    with pytest.raises(GeneratorError, match="ConnectError"):
        _run(tmp_path, gen, fakes.fake_evaluator)
    assert len(sleeps) == 1
    assert not (tmp_path / "sub").exists()  # nothing to submit: submissions/ is left alone


@pytest.mark.parametrize("value,expected", [("3", 3.0), ("0.25", 0.25), ("-4", 0.0), ("soon", None), (None, None)])
def test_retry_after_values(value, expected):
    assert retry_after_s(value) == expected


def test_retry_after_http_date():
    assert (
        retry_after_s(
            "Wed, 21 Oct 2015 07:28:10 GMT",
            now=email.utils.parsedate_to_datetime("Wed, 21 Oct 2015 07:28:00 GMT").timestamp(),
        )
        == 10.0
    )


def test_malformed_responses_are_errors():
    with ChatServer(
        [(200, {"Content-Type": "application/json"}, b'{"choices": []}'), (200, {}, b"not json")]
    ) as server:
        gen = _generator(server, [])
        with pytest.raises(GeneratorError, match="malformed"):
            gen.generate(_prompt())
        with pytest.raises(GeneratorError, match="malformed"):
            gen.generate(_prompt())
