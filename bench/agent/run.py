"""`bench agent run`: the paper's methods (Appendix B) over any generator, every sample evaluated by the harness.

- best-of-n: N independent samples (chain i, turn 0), no feedback.
- iterative / iterative-context: C chains x T turns; turn 0 is the best-of-n prompt, each later turn carries the
  feedback block on the chain's previous attempt (Appendix B); chains never share context. iterative-context
  puts the workload's context pack (bench.agent.context) before every prompt.

Samples are journaled one by one (bench.agent.journal) and the submission folder is rewritten from the journal
(bench.agent.submission), so a killed run resumes where it stopped and ends with the same folder. Chains of one
workload can run in parallel threads (each evaluation is its own worker processes); workloads run one after another.
Everything a run needs before it has a sample to submit (journal, candidate files, the folder being built) lives in
its journal folder under build/; submissions/ gets the folder only once there is something to submit.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.agent.evaluation import EvalSettings, Evaluator, HarnessEvaluator
from bench.agent.evaluation import close as close_evaluator
from bench.agent.feedback import Attempt, attempt_from_result, feedback, unparsed_attempt
from bench.agent.generators import Generator
from bench.agent.journal import Journal, Record
from bench.agent.options import AutocompOptions
from bench.agent.prompts import DEFAULT_TEMPLATE, Prompt, render
from bench.agent.reply import parse_reply
from bench.agent.spec import task_spec
from bench.agent.submission import same_filesystem, write_folder
from bench.harness.protocol.result import Status

METHOD_TITLES = {
    "best-of-n": "Best-of-N",
    "iterative": "iterative refinement",
    "iterative-context": "iterative refinement + context",
    "autocomp": "Autocomp beam search",
}


#: What the trajectory records as the source of an empty reply (trajectory v2 requires a non-empty source).
EMPTY_REPLY = "# (the generator's reply was empty)\n"


class RunError(RuntimeError):
    """The run cannot start or continue (bad parameters, a resume that does not match, the harness failing)."""


@dataclass(frozen=True)
class Budget:
    """Limits over the whole run; samples and tokens count resumed samples too, wall time this invocation only."""

    max_samples: int | None = None
    max_tokens: int | None = None
    max_wall_s: float | None = None


@dataclass
class RunSpec:
    out: Path
    method: str
    chains: int
    turns: int
    workloads: list[str]
    generator: Generator
    journal_dir: Path
    chip: str = "v6e"  # the prompt's target chip
    size: str = "small"
    template: Path | None = None
    context: Callable[[str], str] | None = None  # workload -> context pack text (iterative-context)
    context_version: str | None = None
    evaluator: Evaluator = field(default_factory=HarnessEvaluator)
    settings: EvalSettings = field(default_factory=EvalSettings)
    budget: Budget = field(default_factory=Budget)
    parallel: int = 1
    meta: dict[str, Any] = field(default_factory=dict)  # name, model_name, ..., notes (submission.yaml)
    autocomp: AutocompOptions | None = None  # --method autocomp: the beam search's parameters


@dataclass
class Outcome:
    records: list[Record]
    new_samples: int
    stopped: str | None  # why the run stopped early (a budget), None when complete
    selected: dict[str, Record | None]


def _template_hash(path: Path | None) -> str:
    return hashlib.sha256(Path(path or DEFAULT_TEMPLATE).read_bytes()).hexdigest()[:16]


def run_params(spec: RunSpec) -> dict[str, Any]:
    """What a resume must agree with (and what submission.yaml is written from)."""
    return {
        "method": spec.method,
        "method_title": METHOD_TITLES[spec.method],
        "chains": spec.chains,
        "turns": spec.turns,
        "workloads": list(spec.workloads),
        "generator": spec.generator.name,
        "generator_fingerprint": getattr(spec.generator, "fingerprint", spec.generator.name),
        "chip": spec.chip,
        "size": spec.size,
        "template_sha256": _template_hash(spec.template),
        "context_version": spec.context_version,
        "date": spec.meta.get("date") or _dt.date.today().isoformat(),
        "name": spec.meta.get("name") or spec.out.name,
        "model_name": spec.meta.get("model_name", "none"),
        "model_version": spec.meta.get("model_version", "none"),
        "authors": list(spec.meta.get("authors") or ["unknown"]),
        "contact": spec.meta.get("contact", "unknown"),
        "license": spec.meta.get("license", "Apache-2.0"),
        "target_hardware": spec.meta.get("target_hardware") or spec.chip,
        "notes": spec.meta.get("notes", ""),
        "autocomp": spec.autocomp.params() if spec.autocomp is not None else None,
    }


_RESUME_KEYS = (
    "method",
    "chains",
    "turns",
    "workloads",
    "generator",
    "generator_fingerprint",
    "chip",
    "size",
    "template_sha256",
    "context_version",
    "autocomp",
)


class _Loop:
    def __init__(self, spec: RunSpec, records: list[Record], params: dict[str, Any], progress: Any) -> None:
        self.spec, self.params, self.progress = spec, params, progress
        self.journal = Journal(spec.journal_dir)
        self.done = {(r.workload, r.chain, r.turn): r for r in records}
        self.lock = threading.Lock()
        self.t0 = time.monotonic()
        self.samples = len(records)
        self.tokens = sum(r.tokens_in + r.tokens_out for r in records)
        # model calls that are not samples (Autocomp's plans, menus, scores) count toward the token budget too
        self.tokens += sum(c.get("tokens_in", 0) + c.get("tokens_out", 0) for c in self.journal.load_calls())
        self.new = 0
        self.stopped: str | None = None
        self.candidates = spec.journal_dir / "candidates"

    def over_budget(self) -> str | None:
        b = self.spec.budget
        if b.max_samples is not None and self.samples >= b.max_samples:
            return f"sample budget reached ({b.max_samples})"
        if b.max_tokens is not None and self.tokens >= b.max_tokens:
            return f"token budget reached ({self.tokens} >= {b.max_tokens})"
        if b.max_wall_s is not None and time.monotonic() - self.t0 >= b.max_wall_s:
            return f"wall-time budget reached ({b.max_wall_s:g} s)"
        return None

    def prompt(self, workload: str, chain: int, turn: int, history: list[Record]) -> Prompt:
        spec = self.spec
        fb = None
        if history and spec.method != "best-of-n":
            fb = feedback(
                history[-1].attempt, history[-1].source, [r.attempt for r in history], [r.source for r in history]
            )
        context = spec.context(workload) if spec.method == "iterative-context" and spec.context else None
        hist = [
            {
                "turn": r.turn,
                "source": r.source,
                "status": r.attempt.status,
                "correct": r.attempt.correct,
                "speedup": r.attempt.speedup,
            }
            for r in history
        ]
        return render(
            task_spec(workload, spec.size),
            spec.method,
            spec.chip,
            chain=chain,
            turn=turn,
            feedback=fb,
            context=context,
            template=spec.template,
            history=hist if spec.method != "best-of-n" else [],
        )

    def evaluate(self, workload: str, chain: int, turn: int, source: str, name: str | None = None) -> Attempt:
        path = self.candidates / workload / (name or f"chain{chain:03d}_turn{turn:03d}.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        for _ in range(2):  # a harness failure is never the candidate's: retry once, then stop the run
            result = self.spec.evaluator(workload, [path], self.spec.settings)[0]
            if result.status != Status.ERROR:
                return attempt_from_result(result, path)
        raise RunError(f"the harness failed on {workload} chain {chain} turn {turn}: {result.reason}")

    def halted(self) -> bool:
        """Has a budget (or an earlier stop) ended the run? Sets `stopped` the first time a budget is reached."""
        with self.lock:
            self.stopped = self.stopped or self.over_budget()
            return self.stopped is not None

    def ask(self, prompt: Prompt) -> tuple[Any, float]:
        """One model call that is not a sample (Autocomp's plans, menus, scores): the reply and its latency; its
        tokens count toward the token budget."""
        t0 = time.monotonic()
        reply = self.spec.generator.generate(prompt)
        with self.lock:
            self.tokens += reply.tokens_in + reply.tokens_out
        return reply, round(time.monotonic() - t0, 3)

    def sample(
        self,
        workload: str,
        chain: int,
        turn: int,
        history: list[Record],
        prompt: Prompt | None = None,
        step: dict[str, Any] | None = None,
    ) -> Record | None:
        """Generate, evaluate and journal one sample (`prompt`: prebuilt by Autocomp, else the chain's turn)."""
        with self.lock:
            why = self.stopped or self.over_budget()
            if why:
                self.stopped = why
                return None
            self.samples += 1  # reserved: parallel chains never overrun the sample budget
        t0 = time.monotonic()
        prompt = prompt or self.prompt(workload, chain, turn, history)
        t_ask = time.monotonic()
        reply = self.spec.generator.generate(prompt)
        latency = time.monotonic() - t_ask
        parsed = parse_reply(reply.text)
        attempt = (
            self.evaluate(workload, chain, turn, parsed.source)
            if parsed.ok
            else unparsed_attempt(parsed.kind, reply.text)
        )
        source = parsed.source if parsed.source.strip() else EMPTY_REPLY  # the trajectory format needs a source
        record = Record(
            workload,
            chain,
            turn,
            reply.text,
            source,
            parsed.kind,
            reply.tokens_in,
            reply.tokens_out,
            attempt,
            reply.estimated,
            model_latency_s=round(latency, 3),
            wall_time_s=round(time.monotonic() - t0, 3),
            step=step,
        )
        self.journal.append(record)
        with self.lock:
            self.tokens += reply.tokens_in + reply.tokens_out
            self.new += 1
            self.done[(workload, chain, turn)] = record
        if self.progress:
            self.progress.advance(workload, record)
        return record

    def chain(self, workload: str, chain: int) -> None:
        history: list[Record] = []
        for turn in range(self.spec.turns):
            record = self.done.get((workload, chain, turn)) or self.sample(workload, chain, turn, history)
            if record is None:
                return
            history.append(record)

    def workload(self, workload: str) -> None:
        if self.spec.autocomp is not None:
            from bench.agent.autocomp import BeamSearch

            BeamSearch(self, workload).run()
            return
        if self.spec.parallel <= 1:
            for c in range(self.spec.chains):
                self.chain(workload, c)
            return
        with ThreadPoolExecutor(max_workers=self.spec.parallel) as pool:
            for f in [pool.submit(self.chain, workload, c) for c in range(self.spec.chains)]:
                f.result()


def _check_resume(journal: Journal, params: dict[str, Any], out: Path) -> dict[str, Any]:
    if not journal.exists():
        if (out / "submission.yaml").exists():
            raise RunError(
                f"{out} already holds a submission that no journal in {journal.dir} produced; "
                "choose another --out or remove it"
            )
        journal.start(params)
        return params
    old = journal.params()
    grown = _grown(old, params)
    # a journal from before fingerprints were kept is matched on the generator's name alone
    diff = [
        k
        for k in _RESUME_KEYS
        if k not in grown and (k in old or k != "generator_fingerprint") and old.get(k) != params.get(k)
    ]
    if diff:
        raise RunError(
            f"the journal in {journal.dir} belongs to a run with other parameters ({', '.join(diff)}); "
            "rerun with the same parameters to resume (or more chains/turns/samples to extend it), "
            "or pass --restart"
        )
    if grown:  # extend the run: its samples so far are kept, the journal now plans the larger run
        old = {**old, **{k: params[k] for k in grown}}
        journal.start(old)
    return old  # the first start's date and metadata stay


def _grown(old: dict[str, Any], params: dict[str, Any]) -> set[str]:
    """The plan sizes a rerun may enlarge to continue a run: more chains (best-of-n: more samples) or more turns
    per chain, never fewer (samples already journaled stay part of the run). Autocomp's iterations depend on each
    other's beam, so its plan is fixed."""
    if params.get("autocomp") is not None or old.get("method") != params.get("method"):
        return set()
    keys = {k for k in ("chains", "turns") if old.get(k) != params.get(k)}
    if all(isinstance(old.get(k), int) and params[k] > old[k] for k in keys):
        return keys
    return set()


def run(spec: RunSpec, progress: Any = None) -> Outcome:
    """Run (or resume) the method over every workload; returns the journal's records and the selection."""
    if spec.method == "best-of-n" and spec.turns != 1:
        raise RunError("best-of-n has one turn per sample")
    if (spec.method == "autocomp") != (spec.autocomp is not None):
        raise RunError("--method autocomp goes with its options (RunSpec.autocomp), and only it")
    if spec.autocomp is not None and (spec.chains, spec.turns) != (spec.autocomp.iterations, spec.autocomp.turns):
        raise RunError("autocomp: chains are its iterations and turns its beam x plans x implementations")
    if not same_filesystem(spec.out, spec.journal_dir):
        raise RunError(
            f"--out {spec.out} and the journal folder {spec.journal_dir} must be on one filesystem "
            "(the submission folder is built in the journal's folder and moved into place)"
        )
    journal = Journal(spec.journal_dir)
    params = _check_resume(journal, run_params(spec), spec.out)
    records = journal.load()
    loop = _Loop(spec, records, params, progress)
    if progress:
        progress.start(params, records)
    failed = True
    try:
        for w in spec.workloads:
            loop.workload(w)
            if loop.stopped:
                break
        failed = False
    finally:
        close_evaluator(spec.evaluator)
        final = list(loop.done.values())
        why = loop.stopped or ("stopped by an error of the generator or the harness" if failed else None)
        extra = None
        if spec.autocomp is not None:
            from bench.agent.autocomp import annotate

            extra = annotate(final, journal.load_calls())
        chosen = write_folder(spec.out, params, final, spec.journal_dir, why, extra)
        if progress:
            progress.stop()
    return Outcome(final, loop.new, loop.stopped, chosen)
