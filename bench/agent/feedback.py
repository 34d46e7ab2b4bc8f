"""From a harness EvalResult to what the next turn of an iterative chain is told (Appendix B, and what it lacks).

An `Attempt` is the part of an EvalResult that feedback, selection and the trajectory need; it is what the run
journal stores per sample, so a resumed run rebuilds exactly the prompts an uninterrupted run would have sent.

Beyond the paper's block, the feedback says what the CPU track ranks above speed: whether the kernel lowers for a
TPU (Mosaic; the error when it does not), and the share of the workload's work inside Pallas kernels; and it
gives every speedup with its 95% interval, saying on CPU that the times are interpret-mode CPU times. Paths in
the harness's messages name the model's file as KERNEL_NAME, the name the prompt gives it, never our copy of it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench.agent.reply import WHY_NOT_EVALUATED
from bench.harness.protocol.result import EvalResult, Status

#: Appendix B: "the last 40 lines of the runner's stdout".
OUTPUT_LINES = 40
TOP_OPS = 5
#: What the prompt calls the file the model writes; the harness's messages about it say this name.
KERNEL_NAME = "kernel.py"
#: Longest lowering error quoted back (the harness keeps 2,000 characters).
LOWERING_CHARS = 1500

#: An installed package's folder (a venv's or the system's): shown from `site-packages/` on, so the model never
#: reads the builder's machine layout (`/home/me/clone/.venv/lib/python3.11/site-packages/jax/...`).
_SITE_PACKAGES = re.compile(r"[^\s\"'(]*/(?:site|dist)-packages/")
#: The standard library of any interpreter: shown as `python3.X/...`.
_STDLIB = re.compile(r"[^\s\"'(]*/lib/(python3\.\d+)/")

#: per-sample outcome classes (bench.dataset.schema.OUTCOMES), from a harness status.
_OUTCOME = {Status.CORRECT: "correct", Status.INCORRECT: "wrong_output"}


@dataclass(frozen=True)
class Attempt:
    status: str  # harness Status value, or "no_code_block" / "several_code_blocks" (never evaluated)
    reason: str
    latency_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    output_tail: tuple[str, ...] = ()
    top_ops: tuple[dict[str, Any], ...] = ()
    flags: tuple[str, ...] = ()
    track: str | None = None  # "<chip>/<size>" the harness evaluated on; None when never evaluated
    # what the CPU track ranks above speed, and the speedup's uncertainty (None: unknown, or an older harness)
    tpu_lowering: str | None = None  # "ok", the Mosaic lowering error (naming KERNEL_NAME), None: not attempted
    pallas_coverage: float | None = None  # 0..1 of the workload's FLOPs and HBM bytes inside Mosaic kernels
    readiness_check: str | None = None  # "verified" | "unverified"
    speedup_ci: tuple[float, float] | None = None  # 95% interval of `speedup`
    timing_quality: str | None = None  # "ok" | "noisy"
    interpret: bool = False  # Pallas ran in TPU interpret mode on CPU: the times are not TPU times
    timing_quality_reason: str | None = None  # why "noisy"
    # an incorrect output: the largest |ref - out|, and where the harness's `worst_index` points (the element
    # furthest OUTSIDE the tolerance, |ref-out| - (atol + rtol*|ref|), which need not be the max_abs_err element)
    max_abs_err: float | None = None
    worst_index: tuple[int, ...] | None = None

    @property
    def correct(self) -> bool:
        return self.status == Status.CORRECT.value and self.speedup is not None

    @property
    def lowers(self) -> bool | None:
        """Does the kernel lower for a TPU (Mosaic)? None when the harness did not try (the build failed first)."""
        return None if self.tpu_lowering is None else self.tpu_lowering == "ok"

    @property
    def evaluated(self) -> bool:
        return self.status in Status._value2member_map_

    @property
    def outcome(self) -> str:
        """The paper's class: correct, wrong output, or API/runtime error (everything that did not run to a
        verdict on its output: compile error, exception, timeout, crash, no code block). A `rejected` result
        (correct output, untrustworthy measurement) counts as wrong output: it cannot be ranked."""
        if self.status == Status.REJECTED.value:
            return "wrong_output"
        return _OUTCOME.get(Status(self.status), "api_runtime_error") if self.evaluated else "api_runtime_error"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["output_tail"], d["top_ops"], d["flags"] = list(self.output_tail), list(self.top_ops), list(self.flags)
        d["speedup_ci"] = list(self.speedup_ci) if self.speedup_ci else None
        d["worst_index"] = list(self.worst_index) if self.worst_index is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Attempt:
        """Also reads journals written before a field existed (the field's default)."""
        ci, worst = d.get("speedup_ci"), d.get("worst_index")
        return cls(
            **{
                **d,
                "output_tail": tuple(d.get("output_tail", ())),
                "top_ops": tuple(d.get("top_ops", ())),
                "flags": tuple(d.get("flags", ())),
                "speedup_ci": tuple(ci) if ci else None,
                "worst_index": tuple(worst) if worst is not None else None,
            }
        )


def runner_output(result: EvalResult) -> list[str]:
    """What the runner printed about a failed run: its verdict, error and traceback, then the candidate's own
    output (stdout and stderr); the last OUTPUT_LINES lines."""
    parts = [f"status: {result.status.value}: {result.reason}"]
    if result.error and result.error not in result.reason:
        parts.append(result.error)
    if result.traceback:
        parts.append(result.traceback)
    if result.candidate_log:
        parts.append(result.candidate_log)
    lines = "\n".join(parts).splitlines()
    return lines[-OUTPUT_LINES:]


def short_paths(text: str) -> str:
    """`text` with the paths of this machine shortened: installed packages from `site-packages/` on, the standard
    library as `python3.X/`, and files of this checkout relative to it. The model needs the file and line, not
    where the builder's venv lives."""
    from bench.paths import ROOT

    text = _STDLIB.sub(r"\1/", _SITE_PACKAGES.sub("site-packages/", text))
    root = str(ROOT.resolve()).rstrip("/") + "/"
    return text.replace(root, "")


def _name_the_file(result: EvalResult, kernel_path: str | Path | None) -> EvalResult:
    """`result` with every path of the candidate (our copy, the file we wrote) replaced by KERNEL_NAME, and the
    other paths of this machine shortened (short_paths).

    A SyntaxError's message names the file by its base name only (Python's `(kernel.py, line 3)`), and the harness
    compiles a private copy called kernel.py (bench.tracebacks), so a harness `reason` says kernel.py while
    its traceback names the submitted file. Here both become KERNEL_NAME, so the model reads one name; the
    harness's own messages (`bench evaluate`) are the harness's to change."""
    from bench.tracebacks import attribute, shown_path

    names: list[str] = []
    if kernel_path is not None:
        result = attribute(result, kernel_path)  # our private copy's path -> the candidate file's path
        names = sorted(
            {shown_path(kernel_path), str(Path(kernel_path).resolve()), str(kernel_path)}, key=len, reverse=True
        )

    def fix(text: str | None) -> str | None:
        if not text:
            return text
        for name in names:
            text = text.replace(name, KERNEL_NAME)
        return short_paths(text)

    return result.model_copy(
        update={k: fix(getattr(result, k)) for k in ("reason", "error", "traceback", "candidate_log", "tpu_lowering")}
    )


def _ci(result: EvalResult) -> tuple[float, float] | None:
    ci = result.speedup_ci
    return (float(ci[0]), float(ci[1])) if ci else None


def attempt_from_result(result: EvalResult, kernel_path: str | Path | None = None) -> Attempt:
    """The Attempt of one evaluation; `kernel_path`, the file the harness evaluated, is named KERNEL_NAME."""
    result = _name_the_file(result, kernel_path)
    kernel, baseline = result.kernel, result.baseline
    ok = result.status == Status.CORRECT and kernel is not None and baseline is not None
    # total_ms is the operator's time per run of the program (all its calls summed, averaged over the timed runs)
    ops = tuple(
        {"name": o.name, "ms": round(o.total_ms, 6), "pct": round(o.pct, 2), "calls": o.count}
        for o in result.profile_top_ops[:TOP_OPS]
    )
    corr = result.correctness
    wrong = result.status == Status.INCORRECT and corr is not None
    return Attempt(
        status=result.status.value,
        reason=result.reason,
        latency_ms=kernel.median_ms if ok and kernel else None,
        baseline_ms=baseline.median_ms if ok and baseline else None,
        speedup=result.speedup_vs_baseline if ok else None,
        output_tail=() if ok else tuple(runner_output(result)),
        top_ops=ops,
        flags=tuple(result.integrity.flags),
        track=f"{result.tpu}/{result.size}" if result.size else None,
        # pallas_coverage and readiness_check: read when the harness reports them (HELPERS.md)
        tpu_lowering=result.tpu_lowering,
        pallas_coverage=getattr(result, "pallas_coverage", None),
        readiness_check=getattr(result, "readiness_check", None),
        speedup_ci=_ci(result) if ok else None,
        timing_quality=result.timing_quality if ok else None,
        timing_quality_reason=result.timing_quality_reason if ok else None,
        interpret=bool(result.env and result.env.interpret),
        max_abs_err=corr.max_abs_err if wrong and corr else None,
        worst_index=tuple(corr.worst_index) if wrong and corr and corr.worst_index is not None else None,
    )


def unparsed_attempt(kind: str, reply: str) -> Attempt:
    """A reply the parser refused (no python code block, or several): never evaluated, fed back as a failure."""
    return Attempt(status=kind, reason=WHY_NOT_EVALUATED[kind], output_tail=tuple(reply.splitlines()[-OUTPUT_LINES:]))


@dataclass(frozen=True)
class Feedback:
    """The feedback block's facts; templates/prompts/prompt.md.j2 words them.

    `evaluated` False: the previous reply was not evaluated (`reason` says why, `output_tail` is the end of the
    reply, `previous_source` the chain's last evaluated implementation, if any, from turn `previous_turn`)."""

    correct: bool
    status: str
    reason: str
    latency_ms: float | None
    baseline_ms: float | None
    speedup: float | None
    best_ms: float | None
    best_speedup: float | None
    output_tail: list[str] = field(default_factory=list)
    top_ops: list[dict[str, Any]] = field(default_factory=list)
    previous_source: str = ""
    evaluated: bool = True
    previous_turn: int | None = None
    kernel_name: str = KERNEL_NAME
    speedup_ci: list[float] | None = None
    timing_quality: str | None = None
    timing_quality_reason: str | None = None
    interpret: bool = False
    tpu_lowering: str | None = None
    lowers: bool | None = None
    pallas_coverage: float | None = None
    best_speedup_ci: list[float] | None = None
    best_lowers: bool | None = None
    best_turn: int | None = None
    reply_lines: int | None = None  # lines of the previous reply, when it was not evaluated (output_tail is its end)
    max_abs_err: float | None = None
    worst_index: list[int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def feedback(
    previous: Attempt, previous_source: str, chain: list[Attempt], sources: list[str] | None = None
) -> Feedback:
    """Feedback for the next turn: on `previous` (the chain's last attempt), with the chain's best so far over
    `chain` (every attempt of this chain so far, `previous` included, oldest first; bench.agent.selection's rule,
    the one that picks the submitted sample). `sources[i]` is `chain[i]`'s source: when `previous` was not
    evaluated, the block carries the chain's last evaluated implementation instead."""
    from bench.agent.selection import best_index

    b = best_index(chain)
    best = chain[b] if b is not None else None
    shown: str = previous_source
    shown_turn: int | None = len(chain) - 1
    reply_lines: int | None = None
    if not previous.evaluated:
        reply_lines = len(previous_source.splitlines())
        evaluated = [i for i, a in enumerate(chain) if a.evaluated]
        shown, shown_turn = (sources[evaluated[-1]], evaluated[-1]) if evaluated and sources else ("", None)
    lowering = previous.tpu_lowering
    if lowering and lowering != "ok" and len(lowering) > LOWERING_CHARS:
        lowering = lowering[:LOWERING_CHARS] + " [...]"
    return Feedback(
        correct=previous.correct,
        status=previous.status,
        reason=previous.reason,
        latency_ms=previous.latency_ms,
        baseline_ms=previous.baseline_ms,
        speedup=previous.speedup,
        best_ms=best.latency_ms if best else None,
        best_speedup=best.speedup if best else None,
        output_tail=list(previous.output_tail),
        top_ops=list(previous.top_ops),
        previous_source=shown,
        evaluated=previous.evaluated,
        previous_turn=shown_turn,
        speedup_ci=list(previous.speedup_ci) if previous.speedup_ci else None,
        timing_quality=previous.timing_quality,
        timing_quality_reason=previous.timing_quality_reason,
        interpret=previous.interpret,
        tpu_lowering=lowering,
        lowers=previous.lowers,
        pallas_coverage=previous.pallas_coverage,
        best_speedup_ci=list(best.speedup_ci) if best and best.speedup_ci else None,
        best_lowers=best.lowers if best else None,
        best_turn=b,
        reply_lines=reply_lines,
        max_abs_err=previous.max_abs_err,
        worst_index=list(previous.worst_index) if previous.worst_index is not None else None,
    )
