"""Autocomp beam search (`bench agent run --method autocomp`), the paper's fourth method, in our own code.

The paper (arXiv 2607.20466 §3.1) runs Autocomp (ucb-bar/autocomp) as a translation phase that rewrites the XLA
baseline into Pallas, then an optimization phase, both a beam search: every iteration, each beam member (parent)
gets P plan prompts and each plan C implement prompts; the implementations are the samples. What we do per
workload (../shared/spec/autocomp.md a.2, our choices in docs/agents.md):

1. The root is the workload's XLA reference (bench.dataset.baseline_submission.baseline_source), measured once by
   the harness and journaled as a `baseline` call, never as a sample.
2. Iteration i (1..I), phase translate while i <= T: early stop first (before iteration i when E > 0, i > T + E
   and the beam's best latency did not improve over the last E iterations); in optimization with the one-shot menu,
   a `menu` call per parent; then per parent and plan a `plan` call and C `implement` samples, all journaled.
3. A sample is admissible for the beam only on the harness's verdict: correct, and on a CPU track lowering for
   TPU too (what that track ranks). Translation ranks by a translation score (`score` call, or 10 x the Pallas
   coverage) then latency; optimization by latency, a new candidate entering only when its speedup interval lies
   wholly above its parent's (bench.agent.selection.faster: faster by the interval, not by noise). One
   implementation per (parent, plan) at most; the best B form the next beam. Translation ends early once every
   scored member scores >= 9; at its last iteration the root leaves the beam.

Nothing of the beam is stored as state: it is recomputed from the journal (samples, plans, scores), so a resumed
run rebuilds the same prompts; every random draw has its own seed (sha256 of seed, workload, position, purpose).
The trajectory's (chain, turn) is (iteration - 1, slot x P x C + plan x C + implementation), so sample order is
iteration order.
"""

from __future__ import annotations

import hashlib
import random
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bench.agent.feedback import Attempt
from bench.agent.journal import Record
from bench.agent.options import AUTOCOMP_TEMPLATES, AutocompOptions
from bench.agent.prompts import DEFAULT_TEMPLATE, Prompt, chip_facts, harness_facts, render_blocks
from bench.agent.selection import faster
from bench.agent.spec import task_spec

if TYPE_CHECKING:
    from bench.agent.run import _Loop

#: A translation score at or above which a beam member counts as translated (Autocomp's 9.0).
TRANSLATED = 9.0
#: Share of plan prompts asking to apply a listed strategy, to invent one inspired by the list, to think of one
#: unlike the list (Autocomp's 80 / 10 / 10).
ASKS = (("apply", 0.8), ("invent", 0.1), ("different", 0.1))
#: How a plan prompt frames its examples (Autocomp's 75 / 25).
EXAMPLE_NOTES = (
    ("Use them to inform your plan.", 0.75),
    ("Use them to inform your plan, but do not copy them unless they apply directly.", 0.25),
)
PLAN_CHARS = 20_000  # the plan text kept in the trajectory
_THINKING = re.compile(r"^.*(</think>|</thinking>|</planning>)", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _draw(opts: AutocompOptions, workload: str, *where: object) -> random.Random:
    """Its own random stream per draw: the same values on a resume or in another parallel schedule."""
    key = ":".join(str(x) for x in (opts.autocomp_seed, workload, *where))
    return random.Random(int(hashlib.sha256(key.encode()).hexdigest()[:16], 16))


def _weighted(rng: random.Random, choices: tuple[tuple[str, float], ...]) -> str:
    return rng.choices([c for c, _ in choices], weights=[w for _, w in choices])[0]


def call_seed(workload: str, kind: str, iteration: int, slot: int, plan: int = 0, impl: int = 0) -> int:
    """A per-call seed for the model: a plan and each of its implementations differ."""
    key = f"{workload}:{kind}:{iteration}:{slot}:{plan}:{impl}"
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF


@lru_cache(maxsize=4)
def load_menus(path: Path) -> dict[str, Any]:
    menus = yaml.safe_load(Path(path).read_text())
    for key in ("optimization", "translation", "rules"):
        if key not in menus:
            raise ValueError(f"menus file {path} has no {key!r}")
    return menus


def plan_text(reply: str) -> str:
    """The plan: the reply without a thinking preamble."""
    return _THINKING.sub("", reply).strip() or reply.strip()


def parse_strategies(reply: str) -> list[str]:
    """The strategies of a menu reply: the `- ` lines between <strategies> tags (else all `- ` lines), at most 20."""
    m = re.search(r"<strategies>(.*?)</strategies>", reply, re.DOTALL)
    body = m.group(1) if m else reply
    items = [ln.strip()[2:].strip() for ln in body.splitlines() if ln.strip().startswith("- ")]
    return [i for i in items if i][:20]


def parse_score(reply: str) -> float:
    """A translation score: the reply's first number, clamped to 0..10; unreadable counts as 0."""
    m = _NUMBER.search(plan_text(reply))
    return min(10.0, max(0.0, float(m.group()))) if m else 0.0


@dataclass(frozen=True)
class Cand:
    """A beam candidate: a sample (key = (chain, turn)), or the root (key None, the XLA reference)."""

    key: tuple[int, int] | None
    source: str
    attempt: Attempt
    parent: tuple[int, int] | None = None
    plan: str = ""
    score: float | None = None

    @property
    def latency(self) -> float:
        return self.attempt.latency_ms if self.attempt.latency_ms is not None else float("inf")


def _shown(c: Cand) -> dict[str, Any]:
    """The parent as the templates see it (latency None when it was never measured: `bench prompt`)."""
    return {"source": c.source, "latency_ms": c.attempt.latency_ms, "root": c.key is None}


def admissible(a: Attempt) -> bool:
    """May this sample become a parent? Correct, and on a CPU track it also lowers for TPU (what the track ranks)."""
    cpu = (a.track or "").split("/")[0] == "cpu"
    return a.correct and (a.lowers is True or not cpu)


class Prompter:
    """Builds the four kinds of prompts of one workload from the templates in templates/prompts/autocomp/."""

    def __init__(self, workload: str, chip: str, size: str, opts: AutocompOptions) -> None:
        self.workload, self.chip, self.size, self.opts = workload, chip, size, opts
        self.task = task_spec(workload, size)
        self.parts = _pack(chip).parts(workload, self.task.family)
        self.menus = load_menus(opts.menus_path)
        common = {
            "method": "best-of-n",
            "chip": chip_facts(chip),
            "spec": self.task,
            "context": None,
            "feedback": None,
            "harness": harness_facts(),
        }
        shared = render_blocks(DEFAULT_TEMPLATE, common, ("preamble", "details"))  # one wording of both
        self.base = {
            "chip": common["chip"],
            "spec": self.task,
            "harness": common["harness"],
            "facts": shared["details"],
            "preamble": shared["preamble"],
            "hardware": self.parts["hardware"],
            "api": self.parts["api"],
            "rules": self.parts["rules"].rstrip(),
            "planning_rules": self.menus["rules"].get("planning", []),
            "coding_rules": self.menus["rules"].get("coding", []),
            "translation_rules": self.menus["rules"].get("translation", []),
            "iterations": opts.iterations,
        }

    def _render(
        self,
        kind: str,
        variables: dict[str, Any],
        step: dict[str, Any],
        seed: int,
        history: list[dict[str, Any]] | None = None,
    ) -> Prompt:
        parts = render_blocks(AUTOCOMP_TEMPLATES / f"{kind}.md.j2", {**self.base, **variables})
        return Prompt(
            workload=self.workload,
            method="autocomp",
            chip=self.chip,
            size=self.size,
            chain=step["iteration"] - 1,
            turn=step.get("turn", 0),
            system=parts["system"],
            user=parts["user"],
            history=list(history or []),
            kind=kind,
            step=step,
            call_seed=seed,
        )

    def _examples(self, rng: random.Random) -> tuple[list[str], str]:
        kept = [text for _, text in self.parts["examples"] if rng.random() < self.opts.example_rate]
        return kept, _weighted(rng, EXAMPLE_NOTES)

    def plan(
        self,
        step: dict[str, Any],
        parent: Cand,
        dynamic: list[str],
        translate_iterations: int,
        history: list[dict[str, Any]],
    ) -> Prompt:
        i, slot, j = step["iteration"], step["slot"], step["plan_index"]
        rng = _draw(self.opts, self.workload, "plan", i, slot, j)
        examples, note = self._examples(rng)
        if step["phase"] == "translate":
            menu, ask = list(self.menus["translation"]), "apply"
        else:
            menu = [m for m in list(self.menus["optimization"]) + dynamic if rng.random() < self.opts.menu_keep]
            ask = _weighted(rng, ASKS)
        variables = {
            "phase": step["phase"],
            "iteration": i,
            "translate_iterations": translate_iterations,
            "examples": examples,
            "examples_note": note,
            "menu": menu,
            "ask": ask,
            "parent": _shown(parent),
        }
        return self._render("plan", variables, step, call_seed(self.workload, "plan", i, slot, j), history)

    def implement(self, step: dict[str, Any], parent: Cand, plan: str) -> Prompt:
        variables = {"phase": step["phase"], "iteration": step["iteration"], "plan": plan, "parent": _shown(parent)}
        seed = call_seed(
            self.workload, "implement", step["iteration"], step["slot"], step["plan_index"], step["impl_index"] + 1
        )
        return self._render("implement", variables, step, seed)

    def menu(self, step: dict[str, Any], parent: Cand) -> Prompt:
        rng = _draw(self.opts, self.workload, "menu", step["iteration"], step["slot"])
        examples, _ = self._examples(rng)
        variables = {"examples": examples, "static": list(self.menus["optimization"]), "parent": _shown(parent)}
        return self._render("menu", variables, step, call_seed(self.workload, "menu", step["iteration"], step["slot"]))

    def score(self, step: dict[str, Any], cand: Cand, reference: str) -> Prompt:
        variables = {"reference": reference, "candidate": cand.source}
        return self._render(
            "score",
            variables,
            step,
            call_seed(self.workload, "score", step["iteration"], 0, step["turn"]),
            [{"source": cand.source}],
        )


@lru_cache(maxsize=4)
def _pack(chip: str):
    from bench.agent import context

    return context.build(chip)


def _call_key(c: dict[str, Any]) -> tuple:
    return (c["kind"], c["workload"], c.get("iteration"), c.get("slot"), c.get("plan_index"), c.get("turn"))


class BeamSearch:
    """One workload's Autocomp run over the run's loop (bench.agent.run._Loop: samples, budgets, journal)."""

    def __init__(self, loop: _Loop, workload: str) -> None:
        assert loop.spec.autocomp is not None
        self.loop, self.workload, self.opts = loop, workload, loop.spec.autocomp
        self.calls = {_call_key(c): c for c in loop.journal.load_calls() if c.get("workload") == workload}
        self.prompter = Prompter(workload, loop.spec.chip, loop.spec.size, self.opts)
        self.cands: dict[tuple[int, int] | None, Cand] = {}

    # -- journaled model calls that are not samples --------------------------------------------------------------

    def _call(self, prompt: Prompt, **where: Any) -> dict[str, Any] | None:
        """A helper call (plan, menu, score), journaled once: a resume reuses the journaled reply."""
        entry = {"kind": prompt.kind, "workload": self.workload, **where}
        key = _call_key(entry)
        if key in self.calls:
            return self.calls[key]
        if self.loop.halted():
            return None
        reply, latency = self.loop.ask(prompt)
        entry.update(
            {
                "reply": reply.text,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "tokens_estimated": reply.estimated,
                "model_latency_s": latency,
                "prompt_sha256": hashlib.sha256(prompt.text().encode()).hexdigest()[:16],
            }
        )
        self.loop.journal.append_call(entry)
        self.calls[key] = entry
        return entry

    def _note(self, entry: dict[str, Any]) -> None:
        """A journal line of the run's own (baseline, beam, end), written once."""
        entry = {"workload": self.workload, **entry}
        if _call_key(entry) not in self.calls:
            self.loop.journal.append_call(entry)
            self.calls[_call_key(entry)] = entry

    # -- the search ------------------------------------------------------------------------------------------------

    def root(self) -> Cand:
        from bench.agent.run import RunError
        from bench.dataset.baseline_submission import baseline_source

        source = baseline_source(self.workload)
        done = self.calls.get(_call_key({"kind": "baseline", "workload": self.workload}))
        if done is not None:
            attempt = Attempt.from_dict(done["attempt"])
        else:
            attempt = self.loop.evaluate(self.workload, -1, -1, source, name="baseline.py")
            self._note({"kind": "baseline", "attempt": attempt.as_dict()})
        if not attempt.correct:
            raise RunError(f"the XLA reference of {self.workload} failed in the harness: {attempt.reason}")
        return Cand(None, source, attempt)

    def run(self) -> None:
        opts = self.opts
        root = self.root()
        self.cands[None] = root
        beams: list[list[Cand]] = [[root]]
        losses: list[float] = []
        t_end = opts.translate_iterations
        for i in range(1, opts.iterations + 1):
            beam = next(b for b in reversed(beams) if b)  # an empty beam falls back to the latest non-empty one
            losses.append(min(c.latency for c in beam))
            e = opts.early_stop_iters
            if (
                e
                and i > t_end + e
                and losses[i - 1 - e] > 0
                and losses[i - 1] / losses[i - 1 - e] >= opts.early_stop_threshold
            ):
                self._note({"kind": "end", "ended": f"early_stop@{i - 1}"})
                return
            phase = "translate" if i <= t_end else "optimize"
            new = self.iteration(i, phase, beam, t_end)
            if new is None:  # a budget stopped the run
                return
            if phase == "translate" and not self.translation_scores(i, new):
                return  # a budget stopped the run before every candidate was scored
            new = [self.cands[c.key] for c in new]  # with their scores
            nxt = self.select(phase, beam, new, drop_root=(i == t_end))
            if phase == "translate" and i < t_end and opts.translate_score != "off":
                scored = [c.score for c in nxt if c.key is not None and c.score is not None]
                if scored and min(scored) >= TRANSLATED:  # every translated member is translated enough
                    t_end = i
                    nxt = self.select(phase, beam, new, drop_root=True)
            beams.append(nxt)
            self._note(
                {
                    "kind": "beam",
                    "iteration": i,
                    "members": [list(c.key) for c in nxt if c.key],
                    "root": any(c.key is None for c in nxt),
                    "translate_iterations": t_end,
                }
            )
        self._note({"kind": "end", "ended": "iterations"})

    def _history(self, before: int) -> list[dict[str, Any]]:
        """Every sample of earlier iterations, for the built-in generator (what it tried); not in the text."""
        out = [
            {"source": c.source, "correct": c.attempt.correct, "speedup": c.attempt.speedup}
            for k, c in sorted((k, c) for k, c in self.cands.items() if k is not None)
            if k[0] < before - 1
        ]
        return out

    def iteration(self, i: int, phase: str, beam: list[Cand], t_end: int) -> list[Cand] | None:
        opts, p, c = self.opts, self.opts.plans, self.opts.implementations
        history = self._history(i)
        dynamic: dict[int, list[str]] = {}
        for slot, parent in enumerate(beam):
            dynamic[slot] = []
            if phase == "optimize" and opts.menu_strategy == "one-shot":
                step = {"phase": phase, "iteration": i, "slot": slot, "parent": _parent(parent)}
                got = self._call(self.prompter.menu(step, parent), iteration=i, slot=slot)
                if got is None:
                    return None
                dynamic[slot] = parse_strategies(got["reply"])

        def job(slot: int, j: int) -> list[Cand] | None:
            parent = beam[slot]
            step = {
                "phase": phase,
                "iteration": i,
                "slot": slot,
                "plan_index": j,
                "parent": _parent(parent),
                "parent_latency_ms": parent.latency,
                "plans": p,
                "implementations": c,
            }
            got = self._call(
                self.prompter.plan(step, parent, dynamic[slot], t_end, [_as_parent(parent)] + history),
                iteration=i,
                slot=slot,
                plan_index=j,
            )
            if got is None:
                return None
            plan = plan_text(got["reply"])
            out = []
            for k in range(c):
                turn = slot * p * c + j * c + k
                istep = {**step, "impl_index": k, "turn": turn, "plan": plan}
                record = self.loop.done.get((self.workload, i - 1, turn))
                if record is None:
                    record = self.loop.sample(
                        self.workload,
                        i - 1,
                        turn,
                        [],
                        self.prompter.implement(istep, parent, plan),
                        {k2: v for k2, v in istep.items() if k2 not in ("turn",)},
                    )
                if record is None:
                    return None
                cand = _cand(record)
                self.cands[cand.key] = cand
                out.append(cand)
            return out

        positions = [(slot, j) for slot in range(len(beam)) for j in range(p)]
        if self.loop.spec.parallel <= 1:
            results = [job(*pos) for pos in positions]
        else:
            with ThreadPoolExecutor(max_workers=self.loop.spec.parallel) as pool:
                results = [f.result() for f in [pool.submit(job, *pos) for pos in positions]]
        if any(r is None for r in results):
            return None
        return [cand for r in results if r for cand in r]

    def translation_scores(self, i: int, new: list[Cand]) -> bool:
        """Score this iteration's admissible candidates; False when a budget stopped the run first."""
        mode = self.opts.translate_score
        for cand in new:
            if not admissible(cand.attempt) or mode == "off":
                continue
            if mode == "coverage":
                score = round(10 * (cand.attempt.pallas_coverage or 0.0), 3)
            else:
                assert cand.key is not None
                step = {
                    "phase": "translate",
                    "iteration": i,
                    "slot": 0,
                    "turn": cand.key[1],
                    "candidate": list(cand.key),
                }
                got = self._call(
                    self.prompter.score(step, cand, self.cands[None].source), iteration=i, turn=cand.key[1]
                )
                if got is None:
                    return False
                score = parse_score(got["reply"])
            self.cands[cand.key] = Cand(cand.key, cand.source, cand.attempt, cand.parent, cand.plan, score)
        return True

    def select(self, phase: str, beam: list[Cand], new: list[Cand], drop_root: bool) -> list[Cand]:
        """The next beam: incumbents first (they win ties), new admissible candidates through the gate."""
        opts = self.opts
        incumbent = {c.key for c in beam}
        pool = list(beam) + [c for c in new if admissible(c.attempt) and c.key not in incumbent]
        if drop_root:
            pool = [c for c in pool if c.key is not None]
        by_score = phase == "translate" and opts.translate_score != "off"
        if by_score:
            order = sorted(pool, key=lambda c: (-(c.score or 0.0), c.latency))
        else:
            order = sorted(pool, key=lambda c: c.latency)

        def gate(c: Cand) -> bool:
            if c.key in incumbent or by_score:
                return True
            parent = self.cands[c.parent]
            if phase == "translate":
                return c.latency < parent.latency * opts.translate_gate
            return faster(c.attempt, parent.attempt)

        kept: list[Cand] = []
        seen: set[tuple] = set()
        for c in order:
            if not gate(c) or (c.key not in incumbent and (c.parent, c.plan) in seen):
                continue
            kept.append(c)
            seen.add((c.parent, c.plan))
            if len(kept) == opts.beam:
                break
        return kept


def _parent(c: Cand) -> list[int] | None:
    return list(c.key) if c.key is not None else None


def _as_parent(c: Cand) -> dict[str, Any]:
    return {"parent": True, "source": c.source, "correct": c.attempt.correct, "speedup": c.attempt.speedup}


def _cand(record: Record) -> Cand:
    step = record.step or {}
    parent = step.get("parent")
    return Cand(
        (record.chain, record.turn),
        record.source,
        record.attempt,
        tuple(parent) if parent is not None else None,
        step.get("plan", ""),
    )  # type: ignore[arg-type]


def annotate(records: list[Record], calls: list[dict[str, Any]]) -> dict[str, Any]:
    """What the submission folder adds for an Autocomp run, from the journal: per sample its beam step (sample
    index of the parent, translation score, whether it entered a beam), per workload how it ended and its model
    calls per kind (count, tokens, latency)."""
    scores = {
        (c["workload"], c["iteration"], c["turn"]): parse_score(c["reply"]) for c in calls if c["kind"] == "score"
    }
    in_beam = {(c["workload"], tuple(m)) for c in calls if c["kind"] == "beam" for m in c["members"]}
    ended = {c["workload"]: c["ended"] for c in calls if c["kind"] == "end"}
    cost: dict[str, dict[str, dict[str, float]]] = {}

    def add(w: str, kind: str, tin: int, tout: int, latency: float | None) -> None:
        k = cost.setdefault(w, {}).setdefault(
            kind, {"calls": 0, "tokens_in": 0, "tokens_out": 0, "model_latency_s": 0.0}
        )
        k["calls"] += 1
        k["tokens_in"] += tin
        k["tokens_out"] += tout
        k["model_latency_s"] = round(k["model_latency_s"] + (latency or 0.0), 3)

    for c in calls:
        if c["kind"] in ("plan", "menu", "score"):
            add(c["workload"], c["kind"], c["tokens_in"], c["tokens_out"], c.get("model_latency_s"))
    for r in records:
        add(r.workload, "implement", r.tokens_in, r.tokens_out, r.model_latency_s)
    steps: dict[tuple[str, int, int], dict[str, Any]] = {}
    for r in records:
        s = r.step or {}
        step = {
            "phase": s.get("phase"),
            "iteration": s.get("iteration"),
            "slot": s.get("slot"),
            "plan_index": s.get("plan_index"),
            "impl_index": s.get("impl_index"),
            "parent": s.get("parent"),
            "plan": (s.get("plan") or "")[:PLAN_CHARS],
            "beam": (r.workload, (r.chain, r.turn)) in in_beam,
        }
        score = scores.get((r.workload, s.get("iteration"), r.turn))
        if score is not None:
            step["translation_score"] = score
        steps[(r.workload, r.chain, r.turn)] = step
    return {"steps": steps, "ended": ended, "calls": cost}
