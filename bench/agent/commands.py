"""`bench prompt` and `bench agent {run,context}`. Registered on bench.app.app by bench/cli.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer
import yaml
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.agent.options import DEFAULT_JOURNALS
from bench.agent.options import AutocompOptions as _AC
from bench.agent.options import BudgetOptions as _BO
from bench.agent.options import ExecutorOptions as _EO
from bench.agent.options import GeneratorOptions as _GO
from bench.agent.options import JournalOptions as _JO
from bench.agent.options import MetaOptions as _MO
from bench.agent.options import MethodOptions as _MeO
from bench.agent.options import TargetOptions as _TO
from bench.app import app
from bench.paths import BUILD_DIR

NOT_A_TERMINAL_WIDTH = 1000
#: Progress and summaries go to stderr. Through a pipe or into a file rich would cut lines at 80 columns with "...":
#: there, lines are never cut (a huge width, no wrapping); a terminal keeps its own width.
console = Console(stderr=True, soft_wrap=True)
if not console.is_terminal:
    console.width = NOT_A_TERMINAL_WIDTH
agent_app = typer.Typer(
    help="Run the paper's methods with any generator; build the context pack.", no_args_is_help=True
)
app.add_typer(agent_app, name="agent")

DEFAULT_CONTEXT_DIR = BUILD_DIR / "agent_context"


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
    method: str = typer.Option("best-of-n", help="best-of-n | iterative | iterative-context | autocomp"),
    kind: str = typer.Option("plan", help="autocomp: plan | implement | menu (the prompt kind to print)"),
    iteration: int = typer.Option(
        1,
        min=1,
        help=f"autocomp: the iteration (translation while <= {_AC.model_fields['translate_iterations'].default})",
    ),
    plan: str | None = typer.Option(None, help="autocomp, --kind implement: the plan to implement"),
    chip: str = typer.Option("v6e", help="target chip (its numbers come from bench/hardware.py)"),
    size: str = typer.Option("full", help="full | small: the shapes the prompt states (agent runs on CPU use small)"),
    feedback_result: Path | None = typer.Option(
        None,
        "--feedback",
        exists=True,
        dir_okay=False,
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
    if method == "autocomp":
        if feedback_result is not None or template is not None:
            raise typer.BadParameter("autocomp's prompts take no --feedback/--template (templates/prompts/autocomp/)")
        p = _autocomp_prompt(_workload(workload), chip, size, kind, iteration, plan)
        print(json.dumps(p.as_json(), indent=2)) if as_json else sys.stdout.write(p.text())
        return
    if (feedback_result is None) != (previous is None):
        raise typer.BadParameter("--feedback and --previous go together")
    if feedback_result is not None and method == "best-of-n":
        raise typer.BadParameter("best-of-n has no feedback; use --method iterative or iterative-context")
    wid = _workload(workload)
    fb, turn = None, 0
    if feedback_result is not None and previous is not None:  # together or neither (checked above)
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
        console.print(
            "[dim](turn 1 of a chain; later turns add the feedback block: pass --feedback RESULT.json "
            "--previous KERNEL.py)[/dim]"
        )


def _autocomp_prompt(wid: str, chip: str, size: str, kind: str, iteration: int, plan: str | None):
    """One Autocomp prompt with the XLA reference as its parent (beam slot 0, plan 0, implementation 0), the
    default options (bench.agent.options.AutocompOptions)."""
    from bench.agent.autocomp import Cand, Prompter
    from bench.agent.feedback import Attempt
    from bench.dataset.baseline_submission import baseline_source

    opts = _AC()
    if kind not in ("plan", "implement", "menu"):
        raise typer.BadParameter("--kind must be plan, implement or menu")
    if iteration > opts.iterations:
        raise typer.BadParameter(f"--iteration must be at most {opts.iterations}")
    phase = "translate" if iteration <= opts.translate_iterations else "optimize"
    if kind == "menu" and phase == "translate":
        raise typer.BadParameter(
            f"menu prompts come in optimization iterations only (--iteration {opts.translate_iterations + 1} or later)"
        )
    root = Cand(None, baseline_source(wid), Attempt(status="not_measured", reason="bench prompt"))
    prompter = Prompter(wid, chip, size, opts)
    step = {
        "phase": phase,
        "iteration": iteration,
        "slot": 0,
        "plan_index": 0,
        "parent": None,
        "plans": opts.plans,
        "implementations": opts.implementations,
    }
    if kind == "plan":
        return prompter.plan(step, root, [], opts.translate_iterations, [])
    if kind == "menu":
        return prompter.menu(step, root)
    text = plan or "(the plan a plan prompt returned; pass --plan TEXT)"
    return prompter.implement({**step, "impl_index": 0, "turn": 0, "plan": text}, root, text)


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
    print(
        f"  per workload (selected by family): {vals[0] / 1024:.1f} - {vals[-1] / 1024:.1f} KiB, "
        f"median {vals[len(vals) // 2] / 1024:.1f} KiB over {len(vals)} workloads"
    )


class _Bar:
    """A rich progress bar: one row per workload, with the correct samples, those of them that lower for TPU, and
    the current selection: the sample the run would submit now (bench.agent.submission.select, the selection
    rule), never the fastest of anything."""

    def __init__(self) -> None:
        self.progress = Progress(
            TextColumn("{task.fields[name]:<42}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[stats]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self.tasks: dict[str, Any] = {}
        self.records: dict[str, list[Any]] = {}

    def start(self, params: dict[str, Any], records: list) -> None:
        total = params["chains"] * params["turns"]
        for w in params["workloads"]:
            self.records[w] = [r for r in records if r.workload == w]
            self.tasks[w] = self.progress.add_task(
                "", total=total, completed=len(self.records[w]), name=w, stats=progress_text(self.records[w])
            )
        self.progress.start()

    def advance(self, w: str, record: Any) -> None:
        self.records[w].append(record)
        self.progress.update(self.tasks[w], advance=1, stats=progress_text(self.records[w]))

    def stop(self) -> None:
        self.progress.stop()


def progress_text(records: list[Any]) -> str:
    """A workload's progress line: correct samples (how many lower for TPU) and what would be submitted now."""
    from bench.agent.submission import select

    ok = [r for r in records if r.attempt.correct]
    lowers = sum(r.attempt.lowers is True for r in ok)
    chosen = select(records)
    if chosen is None:
        now = "nothing to submit yet"
    elif not chosen.attempt.correct:
        now = f"would submit chain {chosen.chain} turn {chosen.turn} ({chosen.attempt.status}, no correct sample)"
    else:
        a = chosen.attempt
        lowering = {True: ", lowers", False: ", does NOT lower", None: ""}[a.lowers]
        now = f"would submit chain {chosen.chain} turn {chosen.turn}: {a.speedup:.3f}x{lowering}"
    return f"correct {len(ok)} (lower {lowers}); {now}"


def _opt(model: Any, name: str, *flags: str, **kw: Any) -> Any:
    """A typer option whose default and help are the options model's field (bench.agent.options): quoted, never
    restated."""
    from bench.agent.options import option_default, option_help

    return typer.Option(option_default(model, name), *flags, help=option_help(model, name), **kw)


def _build(options_model: Any, **values: Any) -> Any:
    """The options model from the flags; its validation message as the CLI's error."""
    from pydantic import ValidationError

    try:
        return options_model(**values)
    except ValidationError as e:
        raise typer.BadParameter("; ".join(err["msg"].removeprefix("Value error, ") for err in e.errors())) from None


def _generator(g: Any):
    from bench.agent.generators import CommandGenerator, OpenAIGenerator
    from bench.agent.template_search import TemplateSearchGenerator

    if g.generator == "template-search":
        return TemplateSearchGenerator()
    if g.generator == "command":
        return CommandGenerator(g.command)
    return OpenAIGenerator(g.base_url, g.model, g.api_key_env, temperature=g.temperature)


@agent_app.command("run")
def run_cmd(
    workloads: list[str] = typer.Option(..., "--workloads", "-w", help="workload ids (repeat or comma-separate)"),
    out: Path = typer.Option(..., help="the submission folder to write, e.g. submissions/my-agent"),
    method: str = _opt(_MeO, "method"),
    samples: int | None = _opt(_MeO, "samples"),
    chains: int | None = _opt(_MeO, "chains"),
    turns: int | None = _opt(_MeO, "turns"),
    iterations: int = _opt(_AC, "iterations"),
    translate_iterations: int = _opt(_AC, "translate_iterations"),
    beam: int = _opt(_AC, "beam"),
    plans: int = _opt(_AC, "plans"),
    implementations: int = _opt(_AC, "implementations"),
    menu_keep: float = _opt(_AC, "menu_keep"),
    menu_strategy: str = _opt(_AC, "menu_strategy"),
    example_rate: float = _opt(_AC, "example_rate"),
    early_stop_iters: int = _opt(_AC, "early_stop_iters"),
    early_stop_threshold: float = _opt(_AC, "early_stop_threshold"),
    translate_score: str = _opt(_AC, "translate_score"),
    translate_gate: float = _opt(_AC, "translate_gate"),
    autocomp_seed: int = _opt(_AC, "autocomp_seed"),
    menus: Path | None = _opt(_AC, "menus", exists=True, dir_okay=False),
    generator: str = _opt(_GO, "generator"),
    command: str | None = _opt(_GO, "command"),
    base_url: str | None = _opt(_GO, "base_url"),
    model: str | None = _opt(_GO, "model"),
    api_key_env: str | None = _opt(_GO, "api_key_env"),
    temperature: float | None = _opt(_GO, "temperature"),
    chip: str = _opt(_TO, "chip"),
    size: str = _opt(_TO, "size"),
    template: Path | None = _opt(_TO, "template", exists=True, dir_okay=False),
    max_samples: int | None = _opt(_BO, "max_samples"),
    max_tokens: int | None = _opt(_BO, "max_tokens"),
    max_wall_s: float | None = _opt(_BO, "max_wall_s"),
    parallel: int = _opt(_BO, "parallel"),
    seeds: int = _opt(_TO, "seeds"),
    blocks: int | None = _opt(_TO, "blocks"),
    journal: Path | None = _opt(_JO, "journal"),
    restart: bool = _opt(_JO, "restart"),
    name: str | None = _opt(_MO, "name"),
    model_version: str = _opt(_MO, "model_version"),
    author: list[str] = _opt(_MO, "author"),
    contact: str = _opt(_MO, "contact"),
    notes: str = _opt(_MO, "notes"),
    license: str = _opt(_MO, "license", "--license"),
    executor: str = _opt(_EO, "executor"),
    address: str | None = _opt(_EO, "address"),
    ray_cpus: float | None = _opt(_EO, "ray_cpus"),
) -> None:
    """Run Best-of-N, iterative refinement (+ context) or Autocomp beam search over a generator; every sample goes
    through the harness; writes submission.yaml, kernels/ (the selected sample) and trajectory/<workload>.jsonl.
    Resumable."""
    opts = _build(_MeO, method=method, samples=samples, chains=chains, turns=turns)
    gen_opts = _build(
        _GO,
        generator=generator,
        command=command,
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        temperature=temperature,
    )
    budget_opts = _build(_BO, max_samples=max_samples, max_tokens=max_tokens, max_wall_s=max_wall_s, parallel=parallel)
    meta_opts = _build(
        _MO, name=name, model_version=model_version, author=author, contact=contact, notes=notes, license=license
    )
    exec_opts = _build(_EO, executor=executor, address=address, ray_cpus=ray_cpus)
    target = _build(_TO, chip=chip, size=size, template=template, seeds=seeds, blocks=blocks)
    journal_opts = _build(_JO, journal=journal, restart=restart)
    autocomp = None
    if opts.method == "autocomp":
        if target.template is not None:
            raise typer.BadParameter(
                "autocomp's prompts are templates/prompts/autocomp/*.md.j2 (--menus replaces "
                "its menus); --template is for the other methods"
            )
        autocomp = _build(
            _AC,
            iterations=iterations,
            translate_iterations=translate_iterations,
            beam=beam,
            plans=plans,
            implementations=implementations,
            menu_keep=menu_keep,
            menu_strategy=menu_strategy,
            example_rate=example_rate,
            early_stop_iters=early_stop_iters,
            early_stop_threshold=early_stop_threshold,
            translate_score=translate_score,
            translate_gate=translate_gate,
            autocomp_seed=autocomp_seed,
            menus=menus,
        )
    _run(workloads, out, opts, autocomp, gen_opts, budget_opts, meta_opts, exec_opts, target, journal_opts)


def _run(
    workloads: list[str], out: Path, opts: Any, autocomp: Any, g: Any, b: Any, m: Any, x: Any, t: Any, j: Any
) -> None:
    """The run, from the option models (bench.agent.options) the CLI built."""
    import shutil

    from bench.agent.generators import GeneratorError
    from bench.agent.run import Budget, RunError, RunSpec, run

    ids = [_workload(w.strip()) for item in workloads for w in item.split(",") if w.strip()]
    if opts.method == "best-of-n":
        n_chains, n_turns = opts.samples, 1
    elif autocomp is not None:
        n_chains, n_turns = autocomp.iterations, autocomp.turns
    else:
        n_chains, n_turns = opts.chains, opts.turns
    gen = _generator(g)
    builtin = g.generator == "template-search"
    if builtin:
        from bench.agent.template_search import covered

        missing = [w for w in ids if not covered(w)]
        if missing:
            raise typer.BadParameter(f"template search has no template for {missing}")
    chip, size, template, settings = t.chip, t.size, t.template, t.settings()
    journal_dir = j.journal or DEFAULT_JOURNALS / out.resolve().name
    if j.restart and journal_dir.exists():
        shutil.rmtree(journal_dir)
    context, version = _context_fn(chip) if opts.method in ("iterative-context", "autocomp") else (None, None)
    title = "Template search (not an LLM)" if builtin else None
    if builtin and autocomp is not None:
        title = "Template search, Autocomp beam (not an LLM)"
    meta = {
        "name": m.name or title or out.name,
        "model_name": "none (template search)" if builtin else (g.model or g.generator),
        "model_version": m.model_version,
        "authors": m.author,
        "contact": m.contact,
        "notes": m.notes
        or (
            "Built-in deterministic template search over the JAXBench team's fused-epilogue "
            "Pallas matmul (block sizes and variants), guided by the harness feedback. Not an "
            "LLM: a reference run of the agent loop."
            if builtin
            else ""
        ),
        "target_hardware": chip,
        "license": m.license,
    }
    spec = RunSpec(
        out=out,
        method=opts.method,
        chains=n_chains,
        turns=n_turns,
        workloads=ids,
        generator=gen,
        journal_dir=journal_dir,
        chip=chip,
        size=size,
        template=template,
        context=context if opts.method == "iterative-context" else None,
        context_version=version,
        settings=settings,
        budget=Budget(b.max_samples, b.max_tokens, b.max_wall_s),
        parallel=b.parallel,
        meta=meta,
        autocomp=autocomp,
    )
    if x.executor != "local":  # run() closes the evaluator, and with it the executor
        from bench.agent.evaluation import ExecutorEvaluator
        from bench.executor import ExecutorUnavailable, make_executor

        try:
            spec.evaluator = ExecutorEvaluator(
                make_executor(x.executor, chip=chip, address=x.address, ray_cpus=x.ray_cpus)
            )
        except ExecutorUnavailable as e:
            console.print(f"[red]cannot run on executor {x.executor}:[/red] {e}")
            raise typer.Exit(2) from None
    try:
        outcome = run(spec, progress=_Bar())
    except (RunError, GeneratorError) as e:
        console.print(f"[red]stopped:[/red] {e}  (journal kept in {journal_dir}; rerun to resume)")
        raise typer.Exit(2) from None
    done = len(outcome.records)
    written = any(outcome.selected.values())
    console.print(
        f"{done} samples ({outcome.new_samples} new) -> "
        + (str(out) if written else f"nothing written to {out}: no sample to submit yet (journal: {journal_dir})")
        + (f"; stopped early: {outcome.stopped}" if outcome.stopped else "")
    )
    for line in summary_lines(ids, outcome.selected, outcome.records):
        console.print(line, markup=False)
    if written:
        license_id = yaml.safe_load((out / "submission.yaml").read_text()).get("license")
        console.print(
            f"license: {license_id} (submission.yaml; --license sets it on a run's first start)", markup=False
        )


def summary_lines(ids: list[str], selected: dict[str, Any], records: list[Any]) -> list[str]:
    """One line per workload: the submitted sample, and whether it is faster than XLA by the leaderboard's test
    (bench.agent.verdict: the Holm-corrected interval over the run's workloads, docs/methodology.md), never by
    its point estimate alone."""
    from bench.agent.verdict import speed_verdicts

    correct = {
        w: (r.attempt.speedup, r.attempt.speedup_ci) for w, r in selected.items() if r is not None and r.attempt.correct
    }
    verdicts = speed_verdicts(correct)
    lines = []
    for w in ids:
        started = any(r.workload == w for r in records)
        lines.append(f"  {w}: {_selected_text(selected.get(w), started, verdicts.get(w))}")
    return lines


def _selected_text(r: Any, started: bool, verdict: Any = None) -> str:
    if r is None:
        return "no sample ran" if started else "not started"
    a = r.attempt
    if not a.correct:
        return f"no correct sample; submits the last that ran (chain {r.chain} turn {r.turn}, {a.status})"
    ci = f" [{a.speedup_ci[0]:.3f}, {a.speedup_ci[1]:.3f}]" if a.speedup_ci else ""
    lowering = {True: "lowers for TPU", False: "does NOT lower for TPU", None: "TPU lowering unknown"}[a.lowers]
    speed = f", {verdict.words()}" if verdict is not None else ""
    return f"chain {r.chain} turn {r.turn}, {a.speedup:.3f}x{ci}{speed}, {lowering}"
