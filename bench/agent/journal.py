"""The run journal: one append-only JSON line per finished sample, the single source of truth of a run.

Why: `bench agent run` must survive kill -9 and a rerun must give the same submission folder as an uninterrupted
run. Each sample is journaled (flushed and fsynced) only after its evaluation; the submission folder is always
rewritten from the journal, never edited in place. A line cut short by a kill is dropped on load (that sample is
generated and evaluated again; generation is deterministic for the built-in generator). The journal also stores
the harness verdicts the feedback is built from, so a resumed chain is told exactly what it would have been told.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.agent.feedback import Attempt


@dataclass(frozen=True)
class Record:
    workload: str
    chain: int
    turn: int
    reply: str
    source: str  # the parsed code, or the whole reply when it had no single python block
    parse: str  # bench.agent.reply.ParsedReply.kind
    tokens_in: int
    tokens_out: int
    attempt: Attempt
    tokens_estimated: bool = False  # the generator reported no token counts: characters / 4
    # the sample's cost in time (None in journals written before they were recorded):
    model_latency_s: float | None = None  # from sending the prompt to having the reply (retries included)
    wall_time_s: float | None = None  # the whole sample: prompt, generation, evaluation by the harness
    # Autocomp: where the sample sits in the beam search (phase, iteration, slot, parent [chain, turn] or None for
    # the XLA reference, plan_index, impl_index, plan); None for the chain methods
    step: dict[str, Any] | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "chain": self.chain,
            "turn": self.turn,
            "reply": self.reply,
            "source": self.source,
            "parse": self.parse,
            "tokens_in": self.tokens_in,
            "tokens_out": self.tokens_out,
            "attempt": self.attempt.as_dict(),
            "tokens_estimated": self.tokens_estimated,
            "model_latency_s": self.model_latency_s,
            "wall_time_s": self.wall_time_s,
            **({"step": self.step} if self.step is not None else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Record:
        return cls(**{**d, "attempt": Attempt.from_dict(d["attempt"])})


class Journal:
    """`<dir>/run.json` (the run's parameters, fixed at its first start), `<dir>/samples.jsonl` and
    `<dir>/calls.jsonl` (model calls that are not samples: Autocomp's plans, menus, translation scores, and its
    measurement of the XLA reference and its beams; never counted as samples)."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.samples_path = self.dir / "samples.jsonl"
        self.params_path = self.dir / "run.json"
        self.calls_path = self.dir / "calls.jsonl"
        self._lock = threading.Lock()

    def exists(self) -> bool:
        return self.params_path.is_file()

    def params(self) -> dict[str, Any]:
        return json.loads(self.params_path.read_text())

    def start(self, params: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.params_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(params, indent=2, sort_keys=True) + "\n")
        os.replace(tmp, self.params_path)

    def load(self) -> list[Record]:
        """Every complete record; a torn last line (killed mid-write) is cut off the file."""
        return [Record.from_json(d) for d in _lines(self.samples_path)]

    def append(self, record: Record) -> None:
        self._write(self.samples_path, record.as_json())

    def load_calls(self) -> list[dict[str, Any]]:
        """Every complete line of calls.jsonl (a torn last line is cut off, like the samples')."""
        return _lines(self.calls_path)

    def append_call(self, call: dict[str, Any]) -> None:
        self._write(self.calls_path, call)

    def _write(self, path: Path, obj: dict[str, Any]) -> None:
        line = json.dumps(obj, sort_keys=True) + "\n"
        with self._lock, open(path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def _lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    data = path.read_bytes()
    good = data[: data.rfind(b"\n") + 1]
    out = [json.loads(line) for line in good.splitlines() if line.strip()]
    if len(good) != len(data):
        with open(path, "r+b") as fh:
            fh.truncate(len(good))
    return out
