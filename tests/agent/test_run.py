"""`bench agent run` with the built-in generator: folder layout, validity, resume after kill -9, budgets, parallel."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from bench.agent.run import Budget, RunError, RunSpec, run
from bench.agent.template_search import TemplateSearchGenerator, config_of, space
from bench.dataset.validate import check

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("agent_fakes", HERE / "fakes.py")
fakes = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fakes)

WORKLOADS = ["41k_Gemm_Add_ReLU", "36k_Matmul_Sigmoid_Sum"]


def _spec_for(tmp: Path, name: str, **kw) -> RunSpec:
    args = dict(
        out=tmp / "submissions" / name,
        method="iterative",
        chains=2,
        turns=3,
        workloads=WORKLOADS,
        generator=TemplateSearchGenerator(),
        journal_dir=tmp / "journals" / name,
        evaluator=fakes.fake_evaluator,
        meta={"date": "2026-12-01", "name": "test run"},
    )
    args.update(kw)
    return RunSpec(**args)


#: Per-sample times: measured, so they differ between two runs of the same samples.
TIMES = ("wall_time_s", "model_latency_s")


def _files(root: Path) -> dict[str, bytes]:
    """The folder's files, byte for byte except the trajectory lines' measured times (checked to be there)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file():
            continue
        data = p.read_bytes()
        if p.suffix == ".jsonl":
            lines = [json.loads(x) for x in data.splitlines()]
            assert all(line[t] >= 0 for line in lines for t in TIMES)
            kept = [{k: v for k, v in line.items() if k not in TIMES} for line in lines]
            data = b"".join(json.dumps(line, sort_keys=True).encode() + b"\n" for line in kept)
        out[str(p.relative_to(root))] = data
    return out


def _trajectory(out: Path, workload: str) -> list[dict]:
    return [json.loads(line) for line in (out / "trajectory" / f"{workload}.jsonl").read_text().splitlines()]


def test_run_writes_a_valid_submission_with_a_complete_trajectory(tmp_path):
    outcome = run(_spec_for(tmp_path, "ts"))
    out = tmp_path / "submissions" / "ts"
    sub, problems = check(out)
    assert problems == [] and sub is not None
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["kind"] == "agent" and meta["samples_per_workload"] == 6 and meta["human_in_the_loop"] is False
    assert meta["agent_run"] == {
        "complete": True,
        "planned_samples_per_workload": 6,
        "samples": {w: 6 for w in WORKLOADS},
        "not_started": [],
    }
    assert "generator: template-search" in meta["agent_framework"]
    for w in WORKLOADS:
        lines = _trajectory(out, w)
        assert [x["sample"] for x in lines] == list(range(6))
        assert [(x["chain"], x["turn"]) for x in lines] == [(c, t) for c in range(2) for t in range(3)]
        assert set(lines[0]) >= {
            "sample",
            "chain",
            "turn",
            "source",
            "declared",
            "tokens_in",
            "tokens_out",
            "wall_time_s",
            "model_latency_s",
        }
        assert all(0 <= x["model_latency_s"] <= x["wall_time_s"] for x in lines)
        assert all(x["declared"]["outcome"] in ("correct", "wrong_output", "api_runtime_error") for x in lines)
        # every sample is a real template-search candidate, and turn 0 of each chain starts where the order says
        assert all(config_of(x["source"]) in space(w, "small") for x in lines)
        # the selected kernel is the fastest correct sample, byte for byte one of the samples
        correct = [x for x in lines if x["declared"]["outcome"] == "correct"]
        ran = [x for x in lines if x["declared"]["outcome"] == "wrong_output"]
        best = max(correct, key=lambda x: (x["declared"]["speedup"], -x["sample"])) if correct else ran[-1]
        assert (out / "kernels" / f"{w}.py").read_text() == best["source"]
        assert w in meta["workloads"]
    assert "trajectory" not in meta  # v2: the folder is the declaration
    assert outcome.new_samples == 12 and outcome.stopped is None


def test_feedback_moves_the_search(tmp_path):
    """Later turns differ from a best-of-n walk: the chain uses its feedback (neighbours of its best)."""
    run(_spec_for(tmp_path, "ts"))
    lines = _trajectory(tmp_path / "submissions" / "ts", WORKLOADS[0])
    configs = [config_of(x["source"]) for x in lines if x["chain"] == 0]
    assert len(set(configs)) == 3  # never proposes a configuration twice in a chain


DRIVER = """
import importlib.util, sys
from pathlib import Path
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("agent_fakes", {fakes!r})
fakes = importlib.util.module_from_spec(spec); spec.loader.exec_module(fakes)
import time
from bench.agent.run import RunSpec, run
from bench.agent.template_search import TemplateSearchGenerator
calls = [0]
def slow(workload, kernels, settings):  # the 6th evaluation hangs until the test kills the run: no race on a busy host
    calls[0] += 1
    time.sleep(0.05 if calls[0] <= 5 else 600)
    return fakes.fake_evaluator(workload, kernels, settings)
run(RunSpec(out=Path({out!r}), method="iterative", chains=2, turns=3, workloads={workloads!r},
            generator=TemplateSearchGenerator(), journal_dir=Path({journal!r}), evaluator=slow,
            meta={{"date": "2026-12-01", "name": "test run"}}))
"""


def test_kill_9_halfway_then_rerun_gives_the_same_folder(tmp_path):
    reference = _spec_for(tmp_path, "uninterrupted")
    run(reference)
    out, journal = tmp_path / "submissions" / "resumed", tmp_path / "journals" / "resumed"
    code = DRIVER.format(
        root=str(Path.cwd()), fakes=str(HERE / "fakes.py"), out=str(out), journal=str(journal), workloads=WORKLOADS
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "JAX_PLATFORMS": "cpu"})
    samples = journal / "samples.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if samples.exists() and len(samples.read_bytes().splitlines()) >= 5:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = len(samples.read_bytes().splitlines())
    assert done == 5
    with open(samples, "ab") as fh:  # a record torn by the kill
        fh.write(b'{"workload": "41k_Gemm_Add_ReLU", "chain": 1, "tu')
    outcome = run(_spec_for(tmp_path, "resumed"))
    assert outcome.new_samples == 12 - done
    assert _files(out) == _files(reference.out)


def test_sample_budget_stops_with_a_valid_gapless_trajectory(tmp_path):
    outcome = run(_spec_for(tmp_path, "b", budget=Budget(max_samples=4)))
    out = tmp_path / "submissions" / "b"
    assert outcome.stopped and "sample budget" in outcome.stopped
    lines = _trajectory(out, WORKLOADS[0])
    assert [x["sample"] for x in lines] == list(range(4))
    assert not (out / "trajectory" / f"{WORKLOADS[1]}.jsonl").exists()
    assert check(out)[1] == []
    # what the run did, not what it planned: 4 samples of the first workload, the second never started
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["samples_per_workload"] == 4 and meta["workloads"] == WORKLOADS[:1]
    assert meta["agent_run"] == {
        "complete": False,
        "planned_samples_per_workload": 6,
        "samples": {WORKLOADS[0]: 4},
        "not_started": WORKLOADS[1:],
        "stopped": "sample budget reached (4)",
    }
    # resuming with a larger budget continues where it stopped
    outcome = run(_spec_for(tmp_path, "b", budget=Budget(max_samples=8)))
    assert outcome.new_samples == 4
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    assert meta["agent_run"]["samples"] == {WORKLOADS[0]: 6, WORKLOADS[1]: 2} and meta["agent_run"]["not_started"] == []
    assert check(out)[1] == []


@pytest.mark.parametrize(
    "edit,field",
    [
        (lambda m: m.update(samples_per_workload=6), "samples_per_workload"),  # the plan's N, not what the run did
        (lambda m: m["agent_run"]["samples"].update({WORKLOADS[0]: 3}), "agent_run.samples"),
        (lambda m: m["agent_run"]["samples"].pop(WORKLOADS[0]), "agent_run.samples"),  # a kernel with no count
        (lambda m: m["agent_run"]["samples"].update({WORKLOADS[0]: 6}), "agent_run.samples"),
        (lambda m: m["agent_run"].update(complete=True), "agent_run.complete"),
        (lambda m: m["agent_run"].pop("stopped"), "agent_run.stopped"),
        (lambda m: m["agent_run"]["samples"].update({WORKLOADS[1]: 2}), "agent_run.not_started"),
        (lambda m: m["agent_run"].update(extra=1), "agent_run.extra"),
    ],
)
def test_validation_checks_what_a_stopped_run_says_it_did(tmp_path, edit, field):
    run(_spec_for(tmp_path, "b", budget=Budget(max_samples=4)))
    out = tmp_path / "submissions" / "b"
    meta = yaml.safe_load((out / "submission.yaml").read_text())
    edit(meta)
    (out / "submission.yaml").write_text(yaml.safe_dump(meta, sort_keys=False))
    problems = check(out)[1]
    assert any(p.field.startswith(field) for p in problems), problems


def test_no_folder_until_there_is_a_sample_to_submit(tmp_path):
    """A run that produced nothing to submit (here: stopped before its first sample) leaves submissions/ alone, so
    `bench ingest` is never broken by a leftover; everything it has lives in its journal folder under build/."""
    outcome = run(_spec_for(tmp_path, "none", budget=Budget(max_samples=0)))
    assert outcome.new_samples == 0 and outcome.stopped
    assert not (tmp_path / "submissions").exists() or list((tmp_path / "submissions").iterdir()) == []
    assert (tmp_path / "journals" / "none" / "run.json").is_file()
    # once it has one, the folder appears whole: no temporary files beside it or inside it
    run(_spec_for(tmp_path, "none", budget=Budget(max_samples=1)))
    assert [p.name for p in (tmp_path / "submissions").iterdir()] == ["none"]
    assert check(tmp_path / "submissions" / "none")[1] == []
    assert not [p for p in (tmp_path / "submissions").rglob("*") if p.name.endswith((".tmp", ".new", ".old"))]


def test_token_budget(tmp_path):
    outcome = run(_spec_for(tmp_path, "t", budget=Budget(max_tokens=1)))
    assert outcome.new_samples == 1 and "token budget" in outcome.stopped


def test_parallel_chains_give_the_same_folder(tmp_path):
    run(_spec_for(tmp_path, "serial"))
    run(_spec_for(tmp_path, "par", parallel=2))
    assert _files(tmp_path / "submissions" / "par") == _files(tmp_path / "submissions" / "serial")


def test_resume_refuses_other_parameters(tmp_path):
    run(_spec_for(tmp_path, "r", budget=Budget(max_samples=2)))
    with pytest.raises(RunError, match=r"other parameters \(size\)"):
        run(_spec_for(tmp_path, "r", size="medium"))
    with pytest.raises(RunError, match=r"other parameters \(turns\)"):  # a run is extended, never shrunk
        run(_spec_for(tmp_path, "r", turns=2))


def test_a_rerun_with_more_chains_and_turns_extends_the_run(tmp_path):
    """docs/agents.md: "rerun with more chains or turns to continue": the journaled samples are kept and the
    folder ends as a run planned that large from the start would have left it."""
    first = run(_spec_for(tmp_path, "grow", chains=1, turns=2))
    assert first.new_samples == 2 * len(WORKLOADS)
    more = run(_spec_for(tmp_path, "grow", chains=2, turns=3))
    assert more.new_samples == (2 * 3 - 2) * len(WORKLOADS) and more.stopped is None
    run(_spec_for(tmp_path, "whole", chains=2, turns=3))
    assert _files(tmp_path / "submissions" / "grow") == _files(tmp_path / "submissions" / "whole")
    meta = yaml.safe_load((tmp_path / "submissions" / "grow" / "submission.yaml").read_text())
    assert meta["agent_run"]["complete"] is True and meta["samples_per_workload"] == 6
    assert json.loads((tmp_path / "journals" / "grow" / "run.json").read_text())["chains"] == 2


def test_best_of_n_has_no_feedback(tmp_path):
    seen = []

    class Spy(TemplateSearchGenerator):
        def generate(self, prompt):
            seen.append(prompt)
            return super().generate(prompt)

    run(_spec_for(tmp_path, "bon", method="best-of-n", chains=4, turns=1, workloads=WORKLOADS[:1], generator=Spy()))
    assert [(p.chain, p.turn) for p in seen] == [(i, 0) for i in range(4)]
    assert all(p.feedback is None and "Previous attempt" not in p.user for p in seen)
    lines = _trajectory(tmp_path / "submissions" / "bon", WORKLOADS[0])
    assert [config_of(x["source"]) for x in lines] == list(space(WORKLOADS[0], "small")[:4])


@pytest.mark.parametrize(
    "args,message",
    [
        (["--method", "best-of-n", "--chains", "2", "--turns", "2"], "best-of-n takes --samples"),
        (["--method", "iterative", "--samples", "4"], "takes --chains C --turns T"),
        (["--chains", "1", "--turns", "1", "--generator", "openai"], "needs --base-url and --model"),
        (["--chains", "1", "--turns", "1", "-w", "1p_Flash_Attention"], "no template for"),
    ],
)
def test_cli_refuses_inconsistent_options(tmp_path, args, message):
    from typer.testing import CliRunner

    from bench.app import app
    from bench.cli import main  # noqa: F401  registers every command

    base = ["agent", "run", "--out", str(tmp_path / "x"), "--journal", str(tmp_path / "j")]
    if "-w" not in args:
        base += ["-w", "41k"]
    res = CliRunner().invoke(app, base + args)
    assert res.exit_code != 0 and message in " ".join(res.output.split())
    assert not (tmp_path / "x").exists()
