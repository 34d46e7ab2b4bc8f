"""`bench agent run --method autocomp`: the beam arithmetic, prompt kinds, journal, resume after kill -9, budgets,
early stop and the submission's validity. A deterministic fake harness (correct and lowering unless the source's
hash says otherwise) keeps these fast; the built-in generator answers every prompt kind."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from bench.agent.autocomp import parse_score, parse_strategies, plan_text
from bench.agent.generators import CommandGenerator
from bench.agent.journal import Journal
from bench.agent.options import AutocompOptions
from bench.agent.run import Budget, RunSpec, run
from bench.agent.template_search import TemplateSearchGenerator, config_of
from bench.dataset.validate import check
from bench.harness.protocol.result import Correctness, EvalResult, Status, Timing

WORKLOADS = ["41k_Gemm_Add_ReLU"]
TIMES = ("wall_time_s", "model_latency_s")


def _timing(ms: float) -> Timing:
    return Timing(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, timing_method="fake", num_iters=10)


def fake_result(workload: str, name: str, source: str, flat: bool = False) -> EvalResult:
    """The XLA reference: 2 ms. A candidate: wrong when its hash % 5 == 0, else correct, lowering for TPU, with a
    latency from its hash (or, `flat`, always 2 ms: nothing ever improves) and a tight interval."""
    h = int(hashlib.sha256(source.encode()).hexdigest(), 16)
    if name != "baseline.py" and h % 5 == 0:
        return EvalResult(
            workload=workload,
            status=Status.INCORRECT,
            reason="fake: wrong",
            size="small",
            tpu="cpu",
            correctness=Correctness(correct=False, reason="fake"),
            tpu_lowering="ok",
        )
    ms = 2.0 if name == "baseline.py" or flat else 0.5 + (h % 1000) / 500.0
    speedup = round(2.0 / ms, 4)
    return EvalResult(
        workload=workload,
        status=Status.CORRECT,
        reason="fake: correct",
        size="small",
        tpu="cpu",
        correctness=Correctness(correct=True, reason="ok"),
        baseline=_timing(2.0),
        kernel=_timing(ms),
        speedup_vs_baseline=speedup,
        speedup_ci=(speedup * 0.99, speedup * 1.01),
        tpu_lowering="ok",
    )


def fake_evaluator(workload: str, kernels: Sequence[Path], settings) -> list[EvalResult]:
    return [fake_result(workload, Path(k).name, Path(k).read_text()) for k in kernels]


def flat_evaluator(workload: str, kernels: Sequence[Path], settings) -> list[EvalResult]:
    return [fake_result(workload, Path(k).name, Path(k).read_text(), flat=True) for k in kernels]


class Recording:
    """A generator that records every prompt it is asked, then asks the built-in one."""

    def __init__(self, inner=None) -> None:
        self.inner = inner or TemplateSearchGenerator()
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.prompts: list = []

    def generate(self, prompt):
        self.prompts.append(prompt)
        return self.inner.generate(prompt)


SMALL = dict(iterations=4, translate_iterations=2, beam=2, plans=2, implementations=2, early_stop_iters=0)


def _spec(tmp: Path, name: str, opts: AutocompOptions, **kw) -> RunSpec:
    args = dict(
        out=tmp / "submissions" / name,
        method="autocomp",
        chains=opts.iterations,
        turns=opts.turns,
        workloads=WORKLOADS,
        generator=TemplateSearchGenerator(),
        journal_dir=tmp / "journals" / name,
        evaluator=fake_evaluator,
        meta={"date": "2026-12-01", "name": "autocomp test"},
        autocomp=opts,
    )
    args.update(kw)
    return RunSpec(**args)


def _trajectory(out: Path, workload: str) -> list[dict]:
    return [json.loads(line) for line in (out / "trajectory" / f"{workload}.jsonl").read_text().splitlines()]


def _files(root: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if p.suffix == ".jsonl":
                kept = [{k: v for k, v in json.loads(x).items() if k not in TIMES} for x in data.splitlines()]
                data = b"".join(json.dumps(line, sort_keys=True).encode() + b"\n" for line in kept)
            if p.name == "submission.yaml":  # the calls' model latencies are measured
                meta = yaml.safe_load(data)
                for kinds in meta["agent_run"].get("calls", {}).values():
                    for cost in kinds.values():
                        cost.pop("model_latency_s")
                data = yaml.safe_dump(meta).encode()
            out[str(p.relative_to(root))] = data
    return out


def test_calls_follow_the_beam_arithmetic_and_the_folder_validates(tmp_path):
    opts = AutocompOptions(**SMALL)
    gen = Recording()
    outcome = run(_spec(tmp_path, "ac", opts, generator=gen))
    out = tmp_path / "submissions" / "ac"
    calls = Journal(tmp_path / "journals" / "ac").load_calls()
    beams = {c["iteration"]: c for c in calls if c["kind"] == "beam"}
    assert sorted(beams) == [1, 2, 3, 4]
    parents = {1: 1} | {i: len(beams[i - 1]["members"]) + beams[i - 1]["root"] for i in (2, 3, 4)}
    kinds = Counter((p.kind, p.step["iteration"]) for p in gen.prompts)
    t_end = beams[4]["translate_iterations"]
    for i in (1, 2, 3, 4):
        assert kinds[("plan", i)] == parents[i] * opts.plans
        assert kinds[("implement", i)] == parents[i] * opts.plans * opts.implementations
        assert kinds[("menu", i)] == (parents[i] if i > t_end else 0)
    # the built-in generator scores every Pallas candidate 10: translation ends after iteration 1, root dropped
    assert t_end == 1 and not beams[1]["root"]
    assert kinds[("score", 1)] == len([r for r in outcome.records if r.chain == 0 and r.attempt.correct])
    n = sum(parents[i] * opts.per_parent for i in parents)
    assert len(outcome.records) == outcome.new_samples == n < opts.iterations * opts.turns
    sub, problems = check(out)
    assert problems == [] and sub is not None
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    run_ = meta["agent_run"]
    assert run_["complete"] is True and run_["ended"] == {WORKLOADS[0]: "iterations"}
    assert run_["planned_samples_per_workload"] == opts.iterations * opts.turns == 32
    assert run_["samples"] == {WORKLOADS[0]: n} and meta["samples_per_workload"] == n
    cost = run_["calls"][WORKLOADS[0]]
    assert cost["implement"]["calls"] == n and cost["plan"]["calls"] == sum(kinds[("plan", i)] for i in parents)
    assert cost["menu"]["calls"] == sum(kinds[("menu", i)] for i in parents) and cost["score"]["calls"] >= 1
    assert "Autocomp beam search" in meta["method"] and "ucb-bar/autocomp" in meta["links"][0]
    lines = _trajectory(out, WORKLOADS[0])
    assert [x["sample"] for x in lines] == list(range(n))
    members = {tuple(m) for b in beams.values() for m in b["members"]}
    for x in lines:
        s = x["step"]
        assert x["chain"] == s["iteration"] - 1
        assert x["turn"] == s["slot"] * opts.per_parent + s["plan_index"] * opts.implementations + s["impl_index"]
        assert s["phase"] == ("translate" if s["iteration"] <= t_end else "optimize")
        assert s["beam"] == ((x["chain"], x["turn"]) in members)
        if s["iteration"] == 1:
            assert s["parent"] is None  # the XLA reference
        else:  # a parent is a sample that entered the beam of the iteration before
            parent = lines[s["parent"]]
            assert parent["step"]["beam"] and parent["step"]["iteration"] < s["iteration"]
            # the implementation is one of the configurations its plan named
            assert config_of(x["source"]) in {config_of(line) for line in s["plan"].splitlines()}


def test_optimization_admits_only_children_faster_than_their_parent_by_the_interval(tmp_path):
    opts = AutocompOptions(**SMALL)
    run(_spec(tmp_path, "ac", opts))
    lines = _trajectory(tmp_path / "submissions" / "ac", WORKLOADS[0])
    for x in lines:
        s = x["step"]
        if s["beam"] and s["phase"] == "optimize":
            parent = lines[s["parent"]]["declared"]
            assert x["declared"]["outcome"] == "correct" and x["declared"]["lowers"] is True
            assert x["declared"]["speedup"] * 0.99 > parent["speedup"] * 1.01


def test_early_stop_when_the_beam_stops_improving_is_a_complete_run(tmp_path):
    opts = AutocompOptions(iterations=6, translate_iterations=1, beam=2, plans=1, implementations=2, early_stop_iters=1)
    outcome = run(_spec(tmp_path, "flat", opts, evaluator=flat_evaluator))
    out = tmp_path / "submissions" / "flat"
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    # T = 1, E = 1: the first check is before iteration 3, and a flat beam did not improve in iteration 2
    assert meta["agent_run"]["ended"] == {WORKLOADS[0]: "early_stop@2"}
    assert meta["agent_run"]["complete"] is True and "stopped" not in meta["agent_run"]
    assert {r.chain for r in outcome.records} == {0, 1}
    assert check(out)[1] == []


def test_sample_budget_stops_a_run_that_is_incomplete_and_valid(tmp_path):
    opts = AutocompOptions(**SMALL)
    outcome = run(_spec(tmp_path, "b", opts, budget=Budget(max_samples=5)))
    assert len(outcome.records) == 5 and outcome.stopped
    out = tmp_path / "submissions" / "b"
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["agent_run"]["complete"] is False and meta["agent_run"]["ended"] == {}
    assert "sample budget" in meta["agent_run"]["stopped"]
    assert check(out)[1] == []


def test_parallel_plans_give_the_same_folder(tmp_path):
    opts = AutocompOptions(**SMALL)
    run(_spec(tmp_path, "serial", opts))
    run(_spec(tmp_path, "parallel", opts, parallel=3))
    assert _files(tmp_path / "submissions" / "serial") == _files(tmp_path / "submissions" / "parallel")


def test_resume_refuses_other_autocomp_parameters(tmp_path):
    from bench.agent.run import RunError

    run(_spec(tmp_path, "ac", AutocompOptions(**SMALL), budget=Budget(max_samples=2)))
    other = AutocompOptions(**{**SMALL, "menu_keep": 0.5})
    with pytest.raises(RunError, match="autocomp"):
        run(_spec(tmp_path, "ac", other))


SCRIPT = r"""
import json, sys
req = json.load(sys.stdin)
with open(sys.argv[1], "a") as fh:
    fh.write(json.dumps({k: req.get(k) for k in ("kind", "phase", "iteration", "parent", "slot", "plan_index",
                                                   "impl_index", "seed", "chain", "turn")}) + "\n")
kind = req["kind"]
if kind == "plan":
    print("<think>scratch</think>Plan: tile it, variant %d." % req["seed"])
elif kind == "menu":
    print("<strategies>\n- fuse more\n- tile less\n</strategies>")
elif kind == "score":
    print("7")
else:
    print("```python\n# plan: %s\nimport jax.numpy as jnp\ndef workload(x, w, b):\n    return x\n```"
          % req["plan"].splitlines()[0])
"""


def test_a_scripted_command_generator_sees_every_kind_with_its_beam_position(tmp_path):
    script, log = tmp_path / "gen.py", tmp_path / "requests.jsonl"
    script.write_text(SCRIPT)
    opts = AutocompOptions(iterations=3, translate_iterations=1, beam=2, plans=2, implementations=2, early_stop_iters=0)
    gen = CommandGenerator(f"{sys.executable} {script} {log}")
    outcome = run(_spec(tmp_path, "cmd", opts, generator=gen))
    reqs = [json.loads(x) for x in log.read_text().splitlines()]
    assert {r["kind"] for r in reqs} == {"plan", "implement", "menu", "score"}
    assert all(r["phase"] in ("translate", "optimize") and r["iteration"] >= 1 for r in reqs)
    plans = [r for r in reqs if r["kind"] == "plan"]
    impls = [r for r in reqs if r["kind"] == "implement"]
    assert len(impls) == len(outcome.records) == len(plans) * opts.implementations
    for p in plans:  # a plan and each of its implementations have their own seeds
        mine = [
            r
            for r in impls
            if (r["iteration"], r["slot"], r["plan_index"]) == (p["iteration"], p["slot"], p["plan_index"])
        ]
        assert len(mine) == opts.implementations
        assert len({p["seed"], *[r["seed"] for r in mine]}) == 1 + opts.implementations
    assert all(r["parent"] is None for r in reqs if r["iteration"] == 1)
    assert all(r["parent"] is not None for r in reqs if r["iteration"] > 1)
    # the plan reached its implementations without its thinking preamble
    assert all(r.source.startswith("# plan: Plan: tile it") for r in outcome.records if r.parse == "ok")
    assert check(tmp_path / "submissions" / "cmd")[1] == []


DRIVER = """
import importlib.util, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("t", {here!r})
t = importlib.util.module_from_spec(spec); spec.loader.exec_module(t)
from bench.agent.options import AutocompOptions
from bench.agent.run import run
calls = [0]
def slow(workload, kernels, settings):  # the 9th evaluation hangs until the test kills the run
    calls[0] += 1
    if calls[0] > 8:
        time.sleep(600)
    return t.fake_evaluator(workload, kernels, settings)
run(t._spec(Path({tmp!r}), "resumed", AutocompOptions(**t.SMALL), evaluator=slow))
"""


def test_kill_9_then_rerun_gives_the_same_folder(tmp_path):
    opts = AutocompOptions(**SMALL)
    run(_spec(tmp_path, "uninterrupted", opts))
    code = DRIVER.format(root=str(Path.cwd()), here=str(Path(__file__).resolve()), tmp=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "JAX_PLATFORMS": "cpu"})
    samples = tmp_path / "journals" / "resumed" / "samples.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if samples.exists() and len(samples.read_bytes().splitlines()) >= 7:  # 1 baseline + 7 samples evaluated
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    time.sleep(0.3)  # let it journal the plan it asks next
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    journal = Journal(tmp_path / "journals" / "resumed")
    assert len(journal.load()) == 7 and any(c["kind"] == "plan" for c in journal.load_calls())
    with open(journal.calls_path, "ab") as fh:  # a line torn by the kill
        fh.write(b'{"kind": "plan", "workl')
    gen = Recording()
    outcome = run(_spec(tmp_path, "resumed", opts, generator=gen))
    assert outcome.new_samples == len(outcome.records) - 7
    assert _files(tmp_path / "submissions" / "resumed") == _files(tmp_path / "submissions" / "uninterrupted")


def test_reply_parsers():
    assert plan_text("<think>a\nb</think>\nDo X.") == "Do X."
    assert parse_strategies("x\n<strategies>\n- a\n- b\n</strategies>\n- c") == ["a", "b"]
    assert parse_score("Score: 8.5 out of 10") == 8.5 and parse_score("none") == 0.0 and parse_score("42") == 10.0


def test_options_refuse_a_translation_phase_longer_than_the_run():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="cannot exceed"):
        AutocompOptions(iterations=2, translate_iterations=3)
    assert AutocompOptions().turns == 18 and AutocompOptions().iterations * AutocompOptions().turns == 144


def test_cli_prints_plan_and_implement_prompts():
    from typer.testing import CliRunner

    from bench.app import app
    from bench.cli import main  # noqa: F401  registers every command

    res = CliRunner().invoke(app, ["prompt", "8p_GEMM", "--method", "autocomp"])
    assert res.exit_code == 0 and "<strategies>" in res.output and "translation iteration 1 of 4" in res.output
    res = CliRunner().invoke(
        app,
        [
            "prompt",
            "8p_GEMM",
            "--method",
            "autocomp",
            "--kind",
            "implement",
            "--plan",
            "Tile the matmul 256x256.",
            "--json",
        ],
    )
    req = json.loads(res.output)
    assert req["kind"] == "implement" and req["phase"] == "translate" and "Tile the matmul 256x256." in req["user"]
    res = CliRunner().invoke(
        app,
        [
            "agent",
            "run",
            "-w",
            "41k",
            "--out",
            "/tmp/x-never",
            "--method",
            "autocomp",
            "--iterations",
            "2",
            "--translate-iterations",
            "3",
        ],
    )
    assert res.exit_code != 0 and "cannot exceed" in " ".join(res.output.split())


def test_an_autocomp_submission_ingests_with_its_beam_and_cost(tmp_path):
    from bench.dataset import store
    from bench.dataset.ingest import ingest
    from bench.dataset.metrics import Metrics

    opts = AutocompOptions(**SMALL)
    run(_spec(tmp_path, "ac", opts))
    here = Path(__file__).resolve()
    ingest(
        data_dir=tmp_path / "data",
        submissions_dir=tmp_path / "submissions",
        chip="cpu",
        size="small",
        evaluator=f"{here.parent / 'fakes.py'}:evaluate_task",
    )
    lines = _trajectory(tmp_path / "submissions" / "ac", WORKLOADS[0])
    rows = sorted(
        store.current_samples(tmp_path / "data", "cpu", "small", "ac", WORKLOADS[0]), key=lambda r: r["sample_idx"]
    )
    assert [(r["step_phase"], r["step_iteration"], r["step_parent"], r["step_beam"]) for r in rows] == [
        (x["step"]["phase"], x["step"]["iteration"], x["step"]["parent"], x["step"]["beam"]) for x in lines
    ]
    m = Metrics(tmp_path / "data", suite=WORKLOADS)
    (traj,) = m.trajectory_workloads("cpu/small")
    beam = traj.beam
    assert beam is not None
    assert [b.iteration for b in beam] == [1, 2, 3, 4] and sum(b.n for b in beam) == len(lines)
    assert beam[0].parents == [-1]  # iteration 1 starts from the XLA reference
    for b in beam:
        assert b.entered == [x["sample"] for x in lines if x["step"]["iteration"] == b.iteration and x["step"]["beam"]]
    (sub,) = [s for s in m.submissions() if s.submission == "ac"]
    kinds = {c["kind"]: c["calls"] for c in json.loads(sub.agent_calls or "[]")}
    assert (
        kinds["implement"] == len(lines) and kinds["plan"] >= 2 and set(kinds) == {"plan", "implement", "menu", "score"}
    )
    # the submission page shows the beam (the pages' markdown, before mkdocs)
    from bench.site.build import write_docs
    from bench.site.collect import collect, load_workloads
    from bench.site.pages import RenderOptions

    write_docs(collect(m, load_workloads()), RenderOptions(submissions_dir=tmp_path / "submissions"), tmp_path / "docs")
    pages = {str(p.relative_to(tmp_path / "docs")): p.read_text() for p in (tmp_path / "docs").rglob("*.md")}
    (text,) = [t for name, t in pages.items() if "### Beam search" in t]
    assert "autocomp test" in text
    assert "### Beam search" in text
    first = beam[0]
    assert f"<td>1</td><td>translate</td><td>0–{first.last_sample} ({first.n})</td><td>XLA</td>" in text


@pytest.mark.slow
def test_cli_runs_autocomp_end_to_end_through_the_real_harness(tmp_path):
    """`bench agent run --method autocomp` with the built-in generator and the harness itself (one workload, the
    smallest beam): the XLA reference measured, each sample evaluated, the folder valid."""
    from typer.testing import CliRunner

    from bench.app import app
    from bench.cli import main  # noqa: F401  registers every command

    out = tmp_path / "submissions" / "ac"
    res = CliRunner().invoke(
        app,
        [
            "agent",
            "run",
            "-w",
            "8p_GEMM",
            "--out",
            str(out),
            "--journal",
            str(tmp_path / "j"),
            "--method",
            "autocomp",
            "--iterations",
            "2",
            "--translate-iterations",
            "1",
            "--beam",
            "1",
            "--plans",
            "1",
            "--implementations",
            "2",
            "--early-stop-iters",
            "0",
        ],
    )
    assert res.exit_code == 0, res.output
    lines = _trajectory(out, "8p_GEMM")
    assert [(x["chain"], x["turn"]) for x in lines][:2] == [(0, 0), (0, 1)] and len(lines) == 4
    assert all(x["declared"]["outcome"] == "correct" and x["declared"]["lowers"] for x in lines)
    assert check(out)[1] == []
    calls = Journal(tmp_path / "j").load_calls()
    (baseline,) = [c for c in calls if c["kind"] == "baseline"]
    assert baseline["attempt"]["status"] == "correct" and baseline["attempt"]["latency_ms"] > 0


def test_every_agent_run_option_is_a_field_of_an_options_model():
    """Issue 42: the options are declared once (bench.agent.options) and the CLI quotes their defaults."""
    import inspect

    from bench.agent import options
    from bench.agent.commands import run_cmd

    models = [
        options.MethodOptions,
        options.AutocompOptions,
        options.GeneratorOptions,
        options.TargetOptions,
        options.JournalOptions,
        options.BudgetOptions,
        options.MetaOptions,
        options.ExecutorOptions,
    ]
    fields = {name: m.model_fields[name] for m in models for name in m.model_fields}
    params = inspect.signature(run_cmd).parameters
    assert set(params) - set(fields) == {"workloads", "out"}  # the two required arguments
    for name, p in params.items():
        if name in fields:
            assert p.default.default == fields[name].default, name
            assert p.default.help == fields[name].description, name


def test_token_budget_counts_plans_menus_and_scores_and_resumes_with_them(tmp_path):
    opts = AutocompOptions(**SMALL)
    first = run(_spec(tmp_path, "t", opts, budget=Budget(max_tokens=60_000)))
    calls = Journal(tmp_path / "journals" / "t").load_calls()
    helper = sum(c.get("tokens_in", 0) + c.get("tokens_out", 0) for c in calls)
    spent = helper + sum(r.tokens_in + r.tokens_out for r in first.records)
    assert helper > 0 and first.stopped and "token budget" in first.stopped and spent >= 60_000
    again = run(_spec(tmp_path, "t", opts, budget=Budget(max_tokens=60_000)))  # still over: nothing new
    assert again.new_samples == 0 and again.stopped


def test_openai_requests_carry_the_kind_temperature_and_a_per_call_seed():
    from bench.agent.generators import OpenAIGenerator
    from bench.agent.prompts import Prompt

    def prompt(kind: str, seed: int) -> Prompt:
        return Prompt(
            workload="8p_GEMM",
            method="autocomp",
            chip="v6e",
            size="small",
            chain=0,
            turn=0,
            system="s",
            user="u",
            kind=kind,
            call_seed=seed,
        )

    gen = OpenAIGenerator("http://127.0.0.1:9/v1", "m")
    assert gen._body(prompt("score", 7)) | {"messages": None} == {
        "model": "m",
        "messages": None,
        "temperature": 0.0,
        "seed": 7,
    }
    assert gen._body(prompt("plan", 8))["temperature"] == 1.0
    mine = OpenAIGenerator("http://127.0.0.1:9/v1", "m", temperature=0.3)
    assert mine._body(prompt("score", 7))["temperature"] == 0.3
    code = Prompt(
        workload="8p_GEMM", method="iterative", chip="v6e", size="small", chain=2, turn=3, system="s", user="u"
    )
    assert "temperature" not in gen._body(code) and gen._body(code)["seed"] == 2003
