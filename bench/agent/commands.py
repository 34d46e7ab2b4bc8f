"""`bench prompt` and `bench agent {run,context}`. Registered on bench.app.app by bench/cli.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.agent.evaluation import EvalSettings
from bench.app import app
from bench.paths import BUILD_DIR

console = Console(stderr=True)
agent_app = typer.Typer(
    help="Run the paper's methods with any generator; build the context pack.", no_args_is_help=True
)
app.add_typer(agent_app, name="agent")

DEFAULT_CONTEXT_DIR = BUILD_DIR / "agent_context"
DEFAULT_JOURNALS = BUILD_DIR / "agent_runs"


def _workload(name: str) -> str:
    from bench.app import workload_arg

    return workload_arg(name)  # near matches on a typo, a JSON error object under --json


def _context_fn(chip: str):
    """workload -> its context pack text, and the pack's version."""
    from bench.agent import context
    from bench.registry import spec as workload_spec

    pack = context.build(chip)
    return (lambda w: pack.text(w, workload_spec(w).family)), pack.version


@app.command()
def prompt(
    workload: str = typer.Argument(..., help="workload id or unique prefix, e.g. 8p_GEMM"),
    method: str = typer.Option("best-of-n", help="best-of-n | iterative | iterative-context"),
    chip: str = typer.Option("v6e", help="target chip (its numbers come from bench/hardware.py)"),
    size: str = typer.Option("full", help="full | small: the shapes the prompt states (agent runs on CPU use small)"),
    feedback_result: Path | None = typer.Option(
        None, "--feedback", exists=True, dir_okay=False,
        help="an EvalResult JSON (`bench evaluate --json`) of the previous attempt: renders a later turn",
    ),
    previous: Path | None = typer.Option(
        None, exists=True, dir_okay=False, help="the previous attempt's source (with --feedback)"
    ),
    template: Path | None = typer.Option(
        None, exists=True, dir_okay=False, help="a Jinja template replacing templates/prompts/prompt.md.j2"
    ),
    as_json: bool = typer.Option(
        False, "--json", help="print the request as JSON (what a command generator reads on stdin)"
    ),
) -> None:
    """Print the prompt of the paper's Appendix B for one workload
    (system preamble, task, facts; feedback on a later turn)."""
    from bench.agent.feedback import attempt_from_result, feedback
    from bench.agent.prompts import METHODS, render
    from bench.agent.spec import task_spec
    from bench.harness.protocol.result import EvalResult

    if method not in METHODS:
        raise typer.BadParameter(f"--method must be one of {METHODS}")
    if (feedback_result is None) != (previous is None):
        raise typer.BadParameter("--feedback and --previous go together")
    if feedback_result is not None and method == "best-of-n":
        raise typer.BadParameter("best-of-n has no feedback; use --method iterative or iterative-context")
    wid = _workload(workload)
    fb, turn = None, 0
    if feedback_result is not None:
        result = EvalResult.model_validate_json(feedback_result.read_text())
        if result.workload != wid:
            raise typer.BadParameter(f"the result is for {result.workload}, not {wid}")
        attempt = attempt_from_result(result, previous)  # its paths in the result read as the prompt's file name
        fb, turn = feedback(attempt, previous.read_text(), [attempt]), 1
    context = _context_fn(chip)[0](wid) if method == "iterative-context" else None
    p = render(task_spec(wid, size), method, chip, turn=turn, feedback=fb, context=context, template=template)
    if as_json:
        print(json.dumps(p.as_json(), indent=2))
    else:
        sys.stdout.write(p.text())
    if method != "best-of-n" and fb is None and sys.stderr.isatty():
        console.print("[dim](turn 1 of a chain; later turns add the feedback block: pass --feedback RESULT.json "
                      "--previous KERNEL.py)[/dim]")


@agent_app.command("context")
def context_cmd(
    out: Path = typer.Option(DEFAULT_CONTEXT_DIR, help="folder to write pack.json and workloads/<id>.md into"),
    chip: str = typer.Option("v6e", help="target chip of the hardware summary"),
) -> None:
    """Build the iterative + context pack from the installed jax and our kernels; print its size."""
    from bench.agent import context

    pack, sizes = context.write(out, chip)
    print(f"context pack {pack.version} -> {out}")
    for section, n in pack.sections.items():
        print(f"  {section:14s} {n / 1024:8.1f} KiB (all categories / examples)")
    print(f"  {'total':14s} {sum(pack.sections.values()) / 1024:8.1f} KiB")
    vals = sorted(sizes.values())
    print(f"  per workload (selected by family): {vals[0] / 1024:.1f} - {vals[-1] / 1024:.1f} KiB, "
          f"median {vals[len(vals) // 2] / 1024:.1f} KiB over {len(vals)} workloads")


class _Bar:
    """A rich progress bar: one row per workload, with the correct samples, those of them that lower for TPU, and
    the highest speedup measured (a display; the submitted sample follows bench.agent.selection)."""

    def __init__(self) -> None:
        self.progress = Progress(TextColumn("{task.fields[name]:<42}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[stats]}"), TimeElapsedColumn(), console=console)
        self.tasks: dict[str, Any] = {}
        self.stats: dict[str, list] = {}

    def start(self, params: dict[str, Any], records: list) -> None:
        total = params["chains"] * params["turns"]
        for w in params["workloads"]:
            self.stats[w] = [0, 0, 0.0]
            for r in records:
                if r.workload == w:
                    self._count(w, r)
            done = [r for r in records if r.workload == w]
            self.tasks[w] = self.progress.add_task("", total=total, completed=len(done), name=w, stats=self._text(w))
        self.progress.start()

    def _text(self, w: str) -> str:
        ok, lowers, best = self.stats[w]
        return f"correct {ok} (lower {lowers})" + (f", fastest {best:.3f}x" if ok else "")

    def _count(self, w: str, record: Any) -> None:
        if record.attempt.correct:
            self.stats[w][0] += 1
            self.stats[w][1] += record.attempt.lowers is True
            self.stats[w][2] = max(self.stats[w][2], record.attempt.speedup)

    def advance(self, w: str, record: Any) -> None:
        self._count(w, record)
        self.progress.update(self.tasks[w], advance=1, stats=self._text(w))

    def stop(self) -> None:
        self.progress.stop()


def _generator(kind: str, command: str | None, base_url: str | None, model: str | None,
               api_key_env: str | None, temperature: float | None):
    from bench.agent.generators import CommandGenerator, OpenAIGenerator
    from bench.agent.template_search import TemplateSearchGenerator

    if kind == "template-search":
        return TemplateSearchGenerator()
    if kind == "command":
        if not command:
            raise typer.BadParameter("--generator command needs --command")
        return CommandGenerator(command)
    if kind == "openai":
        if not (base_url and model):
            raise typer.BadParameter("--generator openai needs --base-url and --model")
        return OpenAIGenerator(base_url, model, api_key_env, temperature=temperature)
    raise typer.BadParameter("--generator must be template-search, command or openai")


@agent_app.command("run")
def run_cmd(
    workloads: list[str] = typer.Option(..., "--workloads", "-w", help="workload ids (repeat or comma-separate)"),
    out: Path = typer.Option(..., help="the submission folder to write, e.g. submissions/my-agent"),
    method: str = typer.Option("iterative", help="best-of-n | iterative | iterative-context"),
    samples: int | None = typer.Option(None, help="best-of-n: samples per workload (paper: 144)"),
    chains: int | None = typer.Option(None, help="iterative: chains per workload (paper: 18)"),
    turns: int | None = typer.Option(None, help="iterative: turns per chain (paper: 8)"),
    generator: str = typer.Option("template-search", help="template-search | command | openai"),
    command: str | None = typer.Option(None, help="command generator: shell command reading the prompt JSON on stdin"),
    base_url: str | None = typer.Option(None, help="openai: endpoint base URL, e.g. http://127.0.0.1:8000/v1"),
    model: str | None = typer.Option(None, help="openai: model name (also written as model.name)"),
    api_key_env: str | None = typer.Option(None, help="openai: NAME of the environment variable holding the key"),
    temperature: float | None = typer.Option(None, help="openai: sampling temperature"),
    chip: str = typer.Option("v6e", help="the prompts' target chip"),
    size: str = typer.Option("small", help="size the prompts state and the harness evaluates (full on a TPU)"),
    template: Path | None = typer.Option(
        None, exists=True, dir_okay=False, help="prompt template replacing the default"
    ),
    max_samples: int | None = typer.Option(None, help="budget: samples in the whole run"),
    max_tokens: int | None = typer.Option(None, help="budget: tokens (in + out) in the whole run"),
    max_wall_s: float | None = typer.Option(None, help="budget: wall seconds of this invocation"),
    parallel: int = typer.Option(1, help="chains of one workload evaluated at once (1 on a 2-core machine)"),
    seeds: int = typer.Option(EvalSettings.seeds, help="harness correctness trials per sample"),
    blocks: int | None = typer.Option(EvalSettings.blocks, help="harness timing blocks per sample (default: the "
                                                               "harness's, protocol.policy.TimingPolicy.blocks)"),
    journal: Path | None = typer.Option(None, help=f"journal folder (default {DEFAULT_JOURNALS}/<out name>)"),
    restart: bool = typer.Option(False, help="discard this run's journal and start over"),
    name: str | None = typer.Option(None, help="submission.yaml name"),
    model_version: str = typer.Option("none", help="submission.yaml model.version"),
    author: list[str] = typer.Option(["unknown"], help="submission.yaml authors (repeat)"),
    contact: str = typer.Option("unknown", help="submission.yaml contact"),
    notes: str = typer.Option("", help="submission.yaml notes"),
    executor: str = typer.Option(
        "local",
        help="local | ray: every sample evaluated on one host of --chip of a Ray cluster (docs/scale-out.md)",
    ),
    address: str | None = typer.Option(None, help="Ray cluster: auto | host:6379 | ray://host:10001"),
    ray_cpus: float | None = typer.Option(None, help="CPUs each Ray evaluation asks for (default 1)"),
) -> None:
    """Run Best-of-N or iterative refinement (+ context) over a generator; every sample goes through the harness;
    writes submission.yaml, kernels/ (fastest correct sample) and trajectory/<workload>.jsonl. Resumable."""
    import shutil

    from bench.agent.evaluation import EvalSettings
    from bench.agent.generators import GeneratorError
    from bench.agent.prompts import METHODS
    from bench.agent.run import Budget, RunError, RunSpec, run

    if method not in METHODS:
        raise typer.BadParameter(f"--method must be one of {METHODS}")
    ids = [_workload(w.strip()) for item in workloads for w in item.split(",") if w.strip()]
    if method == "best-of-n":
        if not samples or chains or turns:
            raise typer.BadParameter("best-of-n takes --samples N (and no --chains/--turns)")
        n_chains, n_turns = samples, 1
    else:
        if not (chains and turns) or samples:
            raise typer.BadParameter(f"{method} takes --chains C --turns T (and no --samples)")
        n_chains, n_turns = chains, turns
    gen = _generator(generator, command, base_url, model, api_key_env, temperature)
    if generator == "template-search":
        from bench.agent.template_search import covered

        missing = [w for w in ids if not covered(w)]
        if missing:
            raise typer.BadParameter(f"template search has no template for {missing}")
    journal_dir = journal or DEFAULT_JOURNALS / out.resolve().name
    if restart and journal_dir.exists():
        shutil.rmtree(journal_dir)
    context, version = _context_fn(chip) if method == "iterative-context" else (None, None)
    title = "Template search (not an LLM)" if generator == "template-search" else None
    meta = {"name": name or title or out.name, "model_name": "none (template search)" if generator == "template-search"
            else (model or generator), "model_version": model_version, "authors": author, "contact": contact,
            "notes": notes or ("Built-in deterministic template search over the JAXBench team's fused-epilogue "
                               "Pallas matmul (block sizes and variants), guided by the harness feedback. Not an LLM: "
                               "a reference run of the agent loop." if generator == "template-search" else ""),
            "target_hardware": chip}
    spec = RunSpec(out=out, method=method, chains=n_chains, turns=n_turns, workloads=ids, generator=gen,
                   journal_dir=journal_dir, chip=chip, size=size, template=template, context=context,
                   context_version=version, settings=EvalSettings(size=size, seeds=seeds, blocks=blocks),
                   budget=Budget(max_samples, max_tokens, max_wall_s), parallel=parallel, meta=meta)
    if executor != "local":  # run() closes the evaluator, and with it the executor
        from bench.agent.evaluation import ExecutorEvaluator
        from bench.executor import ExecutorUnavailable, make_executor

        try:
            spec.evaluator = ExecutorEvaluator(make_executor(executor, chip=chip, address=address, ray_cpus=ray_cpus))
        except ExecutorUnavailable as e:
            console.print(f"[red]cannot run on executor {executor}:[/red] {e}")
            raise typer.Exit(2) from None
    try:
        outcome = run(spec, progress=_Bar())
    except (RunError, GeneratorError) as e:
        console.print(f"[red]stopped:[/red] {e}  (journal kept in {journal_dir}; rerun to resume)")
        raise typer.Exit(2) from None
    done = len(outcome.records)
    written = any(outcome.selected.values())
    console.print(f"{done} samples ({outcome.new_samples} new) -> "
                  + (str(out) if written
                     else f"nothing written to {out}: no sample to submit yet (journal: {journal_dir})")
                  + (f"; stopped early: {outcome.stopped}" if outcome.stopped else ""))
    for w in ids:
        started = any(r.workload == w for r in outcome.records)
        console.print(f"  {w}: {_selected_text(outcome.selected.get(w), started)}")


def _selected_text(r: Any, started: bool) -> str:
    if r is None:
        return "no sample ran" if started else "not started"
    a = r.attempt
    if not a.correct:
        return f"no correct sample; submits the last that ran (chain {r.chain} turn {r.turn}, {a.status})"
    ci = f" [{a.speedup_ci[0]:.3f}, {a.speedup_ci[1]:.3f}]" if a.speedup_ci else ""
    lowering = {True: "lowers for TPU", False: "does NOT lower for TPU", None: "TPU lowering unknown"}[a.lowers]
    return f"chain {r.chain} turn {r.turn}, {a.speedup:.3f}x{ci}, {lowering}"
