"""Rendering the paper's prompts (Appendix B) from the Jinja template templates/prompts/prompt.md.j2.

The template has two top-level blocks, `system` and `user`, rendered separately into the two chat messages, so a
user's replacement (`--template FILE`) can reword everything or `{% extends "prompt.md.j2" %}` and override one
block. Chains never share context: each turn's prompt is the task plus the feedback block on the chain's previous
attempt, which carries that attempt's full source; nothing else from earlier turns is replayed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from bench.agent.feedback import KERNEL_NAME, Feedback
from bench.agent.reply import fenced
from bench.agent.spec import TaskSpec
from bench.hardware import CHIPS, ChipSpec, chip_spec
from bench.paths import TEMPLATES_DIR

PROMPTS_DIR = TEMPLATES_DIR / "prompts"
DEFAULT_TEMPLATE = PROMPTS_DIR / "prompt.md.j2"
METHODS = ("best-of-n", "iterative", "iterative-context", "autocomp")
#: What a generator may be asked (Prompt.kind): a kernel ("code": the chain methods; "implement": Autocomp's
#: implementation of a plan, both answered with one python block), or a helper call whose reply is not a sample
#: ("plan": free text; "menu": a <strategies> list; "score": one number 0-10).
KINDS = ("code", "plan", "implement", "menu", "score")
#: Sampling temperature per kind, applied by generators that sample unless the user sets one (Autocomp's: 1 for
#: plans, implementations and menus, 0 for scoring).
KIND_TEMPERATURE = {"plan": 1.0, "implement": 1.0, "menu": 1.0, "score": 0.0}


@dataclass(frozen=True)
class Prompt:
    """One request to a generator: the two messages, and the structured facts they were rendered from."""

    workload: str
    method: str
    chip: str
    size: str
    chain: int
    turn: int
    system: str
    user: str
    feedback: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)  # this chain's earlier attempts (template search)
    kind: str = "code"  # one of KINDS
    step: dict[str, Any] | None = None  # Autocomp: phase, iteration, slot, parent, plan_index, impl_index, plan, ...
    call_seed: int | None = None  # a per-call seed (Autocomp); None: chain * 1000 + turn

    @property
    def seed(self) -> int:
        """The seed a generator passes to the model: different for every call of a run (a plan and each of its
        implementations get their own)."""
        return self.call_seed if self.call_seed is not None else self.chain * 1000 + self.turn

    @property
    def temperature(self) -> float | None:
        """The kind's sampling temperature (KIND_TEMPERATURE), None: the generator's default."""
        return KIND_TEMPERATURE.get(self.kind)

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def as_json(self) -> dict[str, Any]:
        """What a command generator reads on stdin."""
        d = asdict(self)
        d.pop("call_seed")
        d["messages"] = self.messages
        d["seed"] = self.seed
        if self.step is not None:  # the beam position, flat, for a command generator to branch on
            d.update({k: v for k, v in self.step.items() if k not in d})
        return d

    def text(self) -> str:
        return f"{self.system}\n\n{self.user}\n"


def chip_facts(chip: str) -> dict[str, Any]:
    spec: ChipSpec | None = chip_spec(chip)
    if spec is None:
        raise KeyError(f"unknown chip {chip!r}; known: {sorted(CHIPS)}")
    facts = asdict(spec)
    facts["name"] = chip
    facts["title"] = spec.title or f"{'TPU ' if not spec.nominal else ''}{chip}"
    return facts


def harness_facts() -> dict[str, Any]:
    """What the prompt states about the evaluation itself: the installed jax (the API the kernel is written
    against), and the name the model's file gets (the harness's messages about it use that name)."""
    import importlib.metadata

    return {"jax_version": importlib.metadata.version("jax"), "kernel_name": KERNEL_NAME}


def _environment(template: Path) -> Environment:
    # the user's folder first, then ours: a replacement can extend or include the shipped template
    here = template.resolve().parent
    dirs = [str(here)] + ([str(PROMPTS_DIR)] if here != PROMPTS_DIR.resolve() else [])
    env = Environment(
        loader=FileSystemLoader(dirs), undefined=StrictUndefined, keep_trailing_newline=False, autoescape=False
    )
    env.filters["fenced"] = fenced  # quoted text (sources, replies, logs) in a fence it cannot close
    return env


def render_blocks(
    path: Path, variables: dict[str, Any], blocks: tuple[str, ...] = ("system", "user")
) -> dict[str, str]:
    """Render the named top-level blocks of the template at `path` (each one a chat message, or a part of one)."""
    tmpl = _environment(path).get_template(path.name)
    ctx = tmpl.new_context(variables)
    "".join(tmpl.root_render_func(ctx))  # a full render registers the blocks of every template it extends
    parts = {}
    for block in blocks:
        if block not in ctx.blocks:
            raise ValueError(f"template {path} defines no block {block!r} (it needs {', '.join(blocks)})")
        parts[block] = "".join(ctx.blocks[block][0](ctx)).strip()  # [0]: the most derived override
    return parts


def render(
    spec: TaskSpec,
    method: str,
    chip: str = "v6e",
    *,
    chain: int = 0,
    turn: int = 0,
    feedback: Feedback | None = None,
    context: str | None = None,
    template: Path | None = None,
    history: list[dict[str, Any]] | None = None,
) -> Prompt:
    """The prompt of `method` for one turn. `feedback` is None on a chain's first turn (and always for best-of-n);
    `context` is the context pack's text (iterative-context)."""
    if method not in METHODS or method == "autocomp":
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS[:3]} (autocomp: bench.agent.autocomp)")
    if method == "best-of-n" and feedback is not None:
        raise ValueError("best-of-n gets no feedback")
    if method == "iterative-context" and not context:
        raise ValueError("iterative-context needs the context pack's text")
    variables = {
        "method": method,
        "chip": chip_facts(chip),
        "spec": spec,
        "context": context if method == "iterative-context" else None,
        "feedback": feedback,
        "harness": harness_facts(),
        "chain": chain,
        "turn": turn,
    }
    parts = render_blocks(Path(template or DEFAULT_TEMPLATE), variables)
    return Prompt(
        workload=spec.workload,
        method=method,
        chip=chip,
        size=spec.size,
        chain=chain,
        turn=turn,
        system=parts["system"],
        user=parts["user"],
        feedback=feedback.as_dict() if feedback else None,
        history=list(history or []),
    )
