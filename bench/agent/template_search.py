"""The built-in generator: deterministic template search over the team's fused-epilogue Pallas matmul. No model.

Why it exists: so `bench agent run` does real work (real kernels, real harness verdicts, real feedback) on a
machine without a model, in the tests and in CI, and so the loop's plumbing is exercised end to end.

A candidate is the team kernel (submissions/jaxbench-team-pallas: fused_matmul.py plus the workload's epilogue from
epilogues.py) with one configuration: the variant (`tiles`: (bm, bn, bk) tiles, epilogue at the last K step;
`rows`: whole output rows per tile, for any epilogue; `rowsum`: rows reduced in VMEM) and its block sizes, chosen
among the sizes the kernel's own fitting rule can produce for the task's shapes. The configuration is written into
the candidate as a `# template-search:` line, so the search state is the chain's history of sources and verdicts:
- best-of-n, and the first turn of a chain: the (chain)-th configuration of a fixed pseudo-random order;
- later turns use the feedback: after an improvement, the same move again; otherwise the untried neighbours of the
  chain's fastest correct configuration (one block size one step up or down, or the other variant); when none is
  left, the next untried configuration of the fixed order.
Everything is a function of (workload, shapes, chain, history): a rerun proposes the same candidates.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from bench.agent.generators import Reply, estimate_tokens
from bench.agent.prompts import Prompt
from bench.agent.reply import as_reply
from bench.agent.spec import task_spec
from bench.paths import SUBMISSIONS_DIR

TEAM_DIR = SUBMISSIONS_DIR / "jaxbench-team-pallas" / "source"
BLOCK_CHOICES = (128, 256, 512, 1024)
_MARK = re.compile(r"^# template-search: (\{.*\})$", re.MULTILINE)

#: Workloads the team kernel covers beyond its epilogue table: 8p_GEMM is the fused matmul with no epilogue.
EXTRA_BODIES = {
    "8p_GEMM": """def workload(A, B):
    return fused_matmul(A, B, epilogue=lambda y: y)
""",
}


@lru_cache(maxsize=1)
def bodies() -> dict[str, str]:
    """{workload: body} of every workload the search covers (the team's epilogue table plus EXTRA_BODIES)."""
    path = TEAM_DIR / "epilogues.py"
    spec = importlib.util.spec_from_file_location("team_epilogues", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load the team's epilogue table from {path}")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {**mod.KERNELS, **EXTRA_BODIES}


def covered(workload: str) -> bool:
    return workload in bodies()


@dataclass(frozen=True, order=True)
class Config:
    variant: str  # "tiles" | "rows" | "rowsum"
    bm: int
    bn: int  # 0 for "rows" (a tile spans all output features)
    bk: int

    def as_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "bm": self.bm, "bn": self.bn, "bk": self.bk}

    def describe(self) -> str:
        if self.variant == "rows":
            blocks = f"bm={self.bm}, bk={self.bk}"
        else:
            blocks = f"bm={self.bm}, bn={self.bn}, bk={self.bk}"
        return f"{self.variant} ({blocks})"


def _fit(block: int, dim: int) -> int:
    """The team kernel's fitting rule (fused_matmul._fit): largest of block, block/2, ... dividing dim."""
    b = min(block, dim)
    while b > 1 and dim % b:
        b //= 2
    return b


def _sizes(dim: int) -> list[int]:
    return sorted({_fit(b, dim) for b in BLOCK_CHOICES})


def _variants(body: str) -> list[str]:
    if "fused_matmul_rowsum(" in body:
        return ["rowsum"]
    if "fused_matmul_rows(" in body:
        return ["rows"]
    return ["tiles", "rows"]


def _dims(workload: str, size: str) -> tuple[int, int, int]:
    """(M, N, K) of the task's GEMM: x is (M, K); the weight is (K, N) or, transposed, (N, K)."""
    spec = task_spec(workload, size)
    x, w = spec.inputs[0].shape, spec.inputs[1].shape
    if x is None or w is None or len(x) != 2 or len(w) != 2:
        raise ValueError(f"{workload}: the template search needs two 2-D array inputs (x, weight), got {x} and {w}")
    m, k = x
    return m, (w[1] if w[0] == k else w[0]), k


@cache
def space(workload: str, size: str) -> tuple[Config, ...]:
    """Every configuration, in the fixed pseudo-random order the search walks (sha256 of workload and config)."""
    m, n, k = _dims(workload, size)
    configs = []
    for variant in _variants(bodies()[workload]):
        for bm in _sizes(m):
            for bk in _sizes(k):
                for bn in [0] if variant == "rows" else _sizes(n):
                    configs.append(Config(variant, bm, bn, bk))

    def key(c: Config) -> str:
        return hashlib.sha256(f"{workload}:{c.as_dict()}".encode()).hexdigest()

    return tuple(sorted(configs, key=key))


def source_for(workload: str, config: Config) -> str:
    """The candidate file: the team kernel inlined with this configuration, then the workload's epilogue body."""
    kernel = (TEAM_DIR / "fused_matmul.py").read_text()
    body = bodies()[workload]
    if config.variant == "rows":
        body = re.sub(r"\bfused_matmul\(", "fused_matmul_rows(", body)
        kernel = re.sub(r"^ROW_BLOCKS = \([^)]*\)", f"ROW_BLOCKS = ({config.bm}, {config.bk})", kernel, flags=re.M)
    else:
        kernel = re.sub(r"^BLOCKS = \([^)]*\)", f"BLOCKS = ({config.bm}, {config.bn}, {config.bk})", kernel, flags=re.M)
        kernel = re.sub(r"^ROW_BLOCKS = \([^)]*\)", f"ROW_BLOCKS = ({config.bm}, {config.bk})", kernel, flags=re.M)
    header = (
        f'"""{workload}: a template-search candidate, the JAXBench team\'s fused-epilogue Pallas matmul '
        f'(submissions/jaxbench-team-pallas) as {config.describe()}."""\n'
        f"# template-search: {json.dumps(config.as_dict(), sort_keys=True)}\n\n"
    )
    return header + kernel + "\n\n" + body


def config_of(source: str) -> Config | None:
    m = _MARK.search(source or "")
    if not m:
        return None
    try:
        return Config(**json.loads(m.group(1)))
    except (TypeError, ValueError):
        return None


def _neighbours(c: Config, workload: str, size: str) -> list[Config]:
    m, n, k = _dims(workload, size)
    out = []
    for field_name, dim in (("bm", m), ("bn", n), ("bk", k)):
        if field_name == "bn" and c.variant == "rows":
            continue
        sizes, value = _sizes(dim), getattr(c, field_name)
        i = sizes.index(value) if value in sizes else 0
        for j in (i + 1, i - 1):  # larger blocks first: fewer grid steps
            if 0 <= j < len(sizes):
                out.append(Config(**{**c.as_dict(), field_name: sizes[j]}))
    for variant in _variants(bodies()[workload]):
        if variant != c.variant:
            out.append(Config(variant, c.bm, 0 if variant == "rows" else (c.bn or _sizes(n)[-1]), c.bk))
    return out


def _move(a: Config, b: Config) -> Config | None:
    """b moved once more the way it moved from a (one block size a step further), or None."""
    if a.variant != b.variant:
        return None
    step = {f: (getattr(a, f), getattr(b, f)) for f in ("bm", "bn", "bk") if getattr(a, f) != getattr(b, f)}
    if len(step) != 1:
        return None
    ((f, (old, new)),) = step.items()
    nxt = new * 2 if new > old else new // 2
    return Config(**{**b.as_dict(), f: nxt})


def choose(workload: str, size: str, chain: int, history: list[dict[str, Any]]) -> Config:
    """The next configuration for a chain, from its history [{source, correct, speedup}] (oldest first)."""
    order = space(workload, size)
    if not history:
        return order[chain % len(order)]
    tried = [config_of(h.get("source", "")) for h in history]
    seen = {c for c in tried if c}
    legal = set(order)
    pairs = enumerate(zip(history, tried, strict=True))
    wins: list[tuple[float, int, Config]] = [
        (h["speedup"], -i, c) for i, (h, c) in pairs if h.get("correct") and c is not None
    ]
    if wins:
        best = max(wins)[2]
        last, last_ok = tried[-1], history[-1].get("correct")
        earlier = [w for w in wins if -w[1] < len(history) - 1]
        if last_ok and last == best and earlier:
            again = _move(max(earlier)[2], best)
            if again in legal and again not in seen:
                return again
        for c in _neighbours(best, workload, size):
            if c in legal and c not in seen:
                return c
    start = chain % len(order)
    for c in order[start:] + order[:start]:
        if c not in seen:
            return c
    return max(wins)[2] if wins else order[start]


#: What the built-in generator answers to an Autocomp menu prompt.
MENU = (
    "Retile the matmul with a neighbouring block configuration.",
    "Keep whole output rows per tile so the epilogue sees complete rows.",
    "Apply the epilogue on the last reduction step instead of in a second pass.",
)


def plan_configs(workload: str, size: str, history: list[dict[str, Any]], position: int, n: int) -> list[Config]:
    """An Autocomp plan's configurations: untried neighbours of the parent's configuration (history[0], flagged
    `parent`), then untried ones of the fixed order; plan `position` (slot x plans + plan) takes its own n of them,
    so the plans of one iteration differ. The root (no configuration) starts from the fixed order."""
    order = space(workload, size)
    parent = config_of(history[0].get("source", "")) if history and history[0].get("parent") else None
    tried = {config_of(h.get("source", "")) for h in history}
    legal = set(order)
    first = [c for c in _neighbours(parent, workload, size) if c in legal] if parent else []
    fresh = list(dict.fromkeys(c for c in first + list(order) if c not in tried))
    if not fresh:
        fresh = list(order)
    start = (position * n) % len(fresh)
    return [fresh[(start + k) % len(fresh)] for k in range(n)]


def _answer(prompt: Prompt) -> str:
    """The reply to one prompt of any kind (bench.agent.prompts.KINDS)."""
    step = prompt.step or {}
    if prompt.kind == "plan":
        n = int(step.get("implementations", 1))
        position = int(step.get("slot", 0)) * int(step.get("plans", 1)) + int(step.get("plan_index", 0))
        configs = plan_configs(prompt.workload, prompt.size, prompt.history, position, n)
        lines = "\n".join(f"# template-search: {json.dumps(c.as_dict(), sort_keys=True)}" for c in configs)
        return (
            f"Plan (template search, no model): rebuild the kernel as the team's fused-epilogue matmul with one "
            f"of these configurations, one per implementation: {', '.join(c.describe() for c in configs)}.\n"
            f"{lines}\n"
        )
    if prompt.kind == "implement":
        marks = [Config(**json.loads(m)) for m in _MARK.findall(step.get("plan", ""))]
        config = marks[int(step.get("impl_index", 0)) % len(marks)] if marks else space(prompt.workload, prompt.size)[0]
        return as_reply(source_for(prompt.workload, config))
    if prompt.kind == "menu":
        return "<strategies>\n" + "".join(f"- {m}\n" for m in MENU) + "</strategies>\n"
    if prompt.kind == "score":  # 10 when the candidate calls pallas_call at all, else 0
        source = prompt.history[0]["source"] if prompt.history else ""
        return "10\n" if "pallas_call(" in source else "0\n"
    config = choose(prompt.workload, prompt.size, prompt.chain, prompt.history)
    return as_reply(source_for(prompt.workload, config))


class TemplateSearchGenerator:
    """The built-in generator (see the module docstring). It answers every prompt kind, so Autocomp runs end to
    end without a model too: a plan names configurations (neighbours of its parent's), an implementation builds
    the one its index picks, a menu is a fixed list, a translation score says whether the code calls pallas_call."""

    name = "template-search (built-in, no model)"
    fingerprint = name

    def generate(self, prompt: Prompt) -> Reply:
        if not covered(prompt.workload):
            raise ValueError(f"template search has no template for {prompt.workload}; it covers {sorted(bodies())}")
        text = _answer(prompt)
        return Reply(text, estimate_tokens(prompt.system) + estimate_tokens(prompt.user), estimate_tokens(text), True)
