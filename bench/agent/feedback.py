"""From a harness EvalResult to what the next turn of an iterative chain is told (Appendix B).

An `Attempt` is the part of an EvalResult that feedback, selection and the trajectory need; it is what the run
journal stores per sample, so a resumed run rebuilds exactly the prompts an uninterrupted run would have sent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bench.harness.result import EvalResult, Status

#: Appendix B: "the last 40 lines of the runner's stdout".
OUTPUT_LINES = 40
TOP_OPS = 5

#: per-sample outcome classes (bench.dataset.schema.OUTCOMES), from a harness status.
_OUTCOME = {Status.CORRECT: "correct", Status.INCORRECT: "wrong_output"}


@dataclass(frozen=True)
class Attempt:
    status: str  # bench.harness.result.Status value, or "no_code_block" / "several_code_blocks" (never evaluated)
    reason: str
    latency_ms: float | None = None
    baseline_ms: float | None = None
    speedup: float | None = None
    output_tail: tuple[str, ...] = ()
    top_ops: tuple[dict[str, Any], ...] = ()
    flags: tuple[str, ...] = ()
    track: str | None = None  # "<chip>/<size>" the harness evaluated on; None when never evaluated

    @property
    def correct(self) -> bool:
        return self.status == Status.CORRECT.value and self.speedup is not None

    @property
    def outcome(self) -> str:
        """The paper's class: correct, wrong output, or API/runtime error (everything that did not run to a
        verdict on its output: compile error, exception, timeout, crash, no code block). A `rejected` result
        (correct output, untrustworthy measurement) counts as wrong output: it cannot be ranked."""
        if self.status == Status.REJECTED.value:
            return "wrong_output"
        return _OUTCOME.get(Status(self.status), "api_runtime_error") if self.status in Status._value2member_map_ \
            else "api_runtime_error"

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["output_tail"], d["top_ops"], d["flags"] = list(self.output_tail), list(self.top_ops), list(self.flags)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Attempt":
        return cls(**{**d, "output_tail": tuple(d.get("output_tail", ())), "top_ops": tuple(d.get("top_ops", ())),
                      "flags": tuple(d.get("flags", ()))})


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


def attempt_from_result(result: EvalResult) -> Attempt:
    ok = result.status == Status.CORRECT and result.kernel is not None and result.baseline is not None
    ops = tuple({"name": o.name, "ms": round(o.total_ms, 6), "pct": round(o.pct, 2)}
                for o in result.profile_top_ops[:TOP_OPS])
    return Attempt(status=result.status.value, reason=result.reason,
                   latency_ms=result.kernel.median_ms if ok else None,
                   baseline_ms=result.baseline.median_ms if ok else None,
                   speedup=result.speedup_vs_baseline if ok else None,
                   output_tail=() if ok else tuple(runner_output(result)), top_ops=ops,
                   flags=tuple(result.integrity.flags), track=f"{result.tpu}/{result.size}" if result.size else None)


def unparsed_attempt(kind: str, reply: str) -> Attempt:
    """A reply the parser refused (no python code block, or several): never evaluated, fed back as a failure."""
    why = {"no_code_block": "the reply has no ```python code block",
           "several_code_blocks": "the reply has several ```python code blocks; exactly one is required"}[kind]
    return Attempt(status=kind, reason=why, output_tail=tuple(reply.splitlines()[-OUTPUT_LINES:]))


@dataclass(frozen=True)
class Feedback:
    """The feedback block's facts; templates/prompts/prompt.md.j2 words them."""

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def feedback(previous: Attempt, previous_source: str, chain: list[Attempt]) -> Feedback:
    """Feedback for the next turn: on `previous` (the chain's last attempt), with the best so far over `chain`
    (every attempt of this chain so far, `previous` included)."""
    correct = [a for a in chain if a.correct]
    best = max(correct, key=lambda a: a.speedup) if correct else None
    return Feedback(correct=previous.correct, status=previous.status, reason=previous.reason,
                    latency_ms=previous.latency_ms, baseline_ms=previous.baseline_ms, speedup=previous.speedup,
                    best_ms=best.latency_ms if best else None, best_speedup=best.speedup if best else None,
                    output_tail=list(previous.output_tail), top_ops=list(previous.top_ops),
                    previous_source=previous_source)
