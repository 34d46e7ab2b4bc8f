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
METHODS = ("best-of-n", "iterative", "iterative-context")


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

    @property
    def messages(self) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user}]

    def as_json(self) -> dict[str, Any]:
        """What a command generator reads on stdin."""
        d = asdict(self)
        d["messages"] = self.messages
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
    env = Environment(loader=FileSystemLoader(dirs), undefined=StrictUndefined, keep_trailing_newline=False,
                      autoescape=False)
    env.filters["fenced"] = fenced  # quoted text (sources, replies, logs) in a fence it cannot close
    return env


def render(spec: TaskSpec, method: str, chip: str = "v6e", *, chain: int = 0, turn: int = 0,
           feedback: Feedback | None = None, context: str | None = None, template: Path | None = None,
           history: list[dict[str, Any]] | None = None) -> Prompt:
    """The prompt of `method` for one turn. `feedback` is None on a chain's first turn (and always for best-of-n);
    `context` is the context pack's text (iterative-context)."""
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if method == "best-of-n" and feedback is not None:
        raise ValueError("best-of-n gets no feedback")
    if method == "iterative-context" and not context:
        raise ValueError("iterative-context needs the context pack's text")
    path = Path(template or DEFAULT_TEMPLATE)
    tmpl = _environment(path).get_template(path.name)
    variables = {"method": method, "chip": chip_facts(chip), "spec": spec,
                 "context": context if method == "iterative-context" else None,
                 "feedback": feedback, "harness": harness_facts()}
    ctx = tmpl.new_context(variables)
    "".join(tmpl.root_render_func(ctx))  # a full render registers the blocks of every template it extends
    parts = {}
    for block in ("system", "user"):
        if block not in ctx.blocks:
            raise ValueError(f"template {path} defines no block {block!r} (it needs `system` and `user`)")
        parts[block] = "".join(ctx.blocks[block][0](ctx)).strip()  # [0]: the most derived override
    return Prompt(workload=spec.workload, method=method, chip=chip, size=spec.size, chain=chain, turn=turn,
                  system=parts["system"], user=parts["user"], feedback=feedback.as_dict() if feedback else None,
                  history=list(history or []))
