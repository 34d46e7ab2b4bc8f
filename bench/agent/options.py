"""The options of `bench agent run`, as typed models: declared once here, built once by the CLI from its flags.

Why: the command has some thirty options in five groups (what to run, the generator, the evaluation, budgets,
the submission's metadata) and one method with its own parameters (Autocomp). Each group is a pydantic model whose
fields carry the default and the help text; bench/agent/commands.py builds its typer options from these fields
(`option(Model, "field")`), so a default is stated here and quoted there, never restated. Validation (ranges,
choices, combinations) happens when the CLI builds the models, with the model's own message.

AutocompOptions' defaults are the paper's configuration where the paper states one (arXiv 2607.20466 §3.1:
8 iterations, 4 of them translation, beam 3, 6 new candidates per beam member) and Autocomp's code defaults where
it does not (ucb-bar/autocomp, its search package's `run_search` module); the sources of each are in docs/agents.md and
../shared/spec/autocomp.md (a.1).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bench.agent.evaluation import EvalSettings
from bench.paths import BUILD_DIR, TEMPLATES_DIR

AUTOCOMP_TEMPLATES = TEMPLATES_DIR / "prompts" / "autocomp"
DEFAULT_MENUS = AUTOCOMP_TEMPLATES / "menus.yaml"
DEFAULT_JOURNALS = BUILD_DIR / "agent_runs"  # a run's journal: <this>/<out name> unless --journal


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class MethodOptions(_Options):
    """What to run: the method and its shape."""

    method: Literal["best-of-n", "iterative", "iterative-context", "autocomp"] = Field(
        "iterative", description="best-of-n | iterative | iterative-context | autocomp"
    )
    samples: int | None = Field(None, ge=1, description="best-of-n: samples per workload (paper: 144)")
    chains: int | None = Field(None, ge=1, description="iterative: chains per workload (paper: 18)")
    turns: int | None = Field(None, ge=1, description="iterative: turns per chain (paper: 8)")

    @model_validator(mode="after")
    def _shape(self) -> MethodOptions:
        if self.method == "best-of-n" and (not self.samples or self.chains or self.turns):
            raise ValueError("best-of-n takes --samples N (and no --chains/--turns)")
        if self.method in ("iterative", "iterative-context") and (not (self.chains and self.turns) or self.samples):
            raise ValueError(f"{self.method} takes --chains C --turns T (and no --samples)")
        if self.method == "autocomp" and (self.samples or self.chains or self.turns):
            raise ValueError(
                "autocomp takes --iterations/--beam/--plans/--implementations, not --samples/--chains/--turns"
            )
        return self


class GeneratorOptions(_Options):
    """Who answers the prompts."""

    generator: Literal["template-search", "command", "openai"] = Field(
        "template-search", description="template-search | command | openai"
    )
    command: str | None = Field(None, description="command generator: shell command reading the prompt JSON on stdin")
    base_url: str | None = Field(None, description="openai: endpoint base URL, e.g. http://127.0.0.1:8000/v1")
    model: str | None = Field(None, description="openai: model name (also written as model.name)")
    api_key_env: str | None = Field(None, description="openai: NAME of the environment variable holding the key")
    temperature: float | None = Field(
        None, ge=0, description="openai: sampling temperature (default: the prompt kind's, else the server's)"
    )

    @model_validator(mode="after")
    def _needs(self) -> GeneratorOptions:
        if self.generator == "command" and not self.command:
            raise ValueError("--generator command needs --command")
        if self.generator == "openai" and not (self.base_url and self.model):
            raise ValueError("--generator openai needs --base-url and --model")
        return self


class TargetOptions(_Options):
    """What the prompts state and the harness evaluates."""

    chip: str = Field("v6e", min_length=1, description="the prompts' target chip")
    size: Literal["small", "full"] = Field(
        "small", description="size the prompts state and the harness evaluates (full on a TPU)"
    )
    template: Path | None = Field(None, description="prompt template replacing the default (not with autocomp)")
    seeds: int = Field(EvalSettings.seeds, ge=1, description="harness correctness trials per sample")
    blocks: int | None = Field(
        EvalSettings.blocks,
        ge=1,
        description="harness timing blocks per sample (default: "
        "the harness's timing policy, bench.harness."
        "protocol.policy.TimingPolicy.blocks)",
    )

    def settings(self) -> EvalSettings:
        return EvalSettings(size=self.size, seeds=self.seeds, blocks=self.blocks)


class JournalOptions(_Options):
    """Where the run's journal lives, and whether to start over."""

    journal: Path | None = Field(None, description=f"journal folder (default {DEFAULT_JOURNALS}/<out name>)")
    restart: bool = Field(False, description="discard this run's journal and start over")


class BudgetOptions(_Options):
    """Limits over the whole run; samples and tokens count resumed samples too, wall time this invocation only."""

    max_samples: int | None = Field(None, ge=1, description="budget: samples in the whole run")
    max_tokens: int | None = Field(None, ge=1, description="budget: tokens (in + out, every model call) in the run")
    max_wall_s: float | None = Field(None, gt=0, description="budget: wall seconds of this invocation")
    parallel: int = Field(
        1, ge=1, le=64, description="chains (autocomp: plans) of one workload generated at once (1 on a 2-core machine)"
    )


class MetaOptions(_Options):
    """What submission.yaml says about the run's authors."""

    name: str | None = Field(None, description="submission.yaml name")
    model_version: str = Field("none", description="submission.yaml model.version")
    author: list[str] = Field(["unknown"], min_length=1, description="submission.yaml authors (repeat)")
    contact: str = Field("unknown", description="submission.yaml contact")
    notes: str = Field("", description="submission.yaml notes")
    license: str = Field(
        "Apache-2.0",
        min_length=1,
        max_length=100,
        description="submission.yaml license: the SPDX id of the kernels' license (the kernels are published under it)",
    )


class ExecutorOptions(_Options):
    """Where the samples are evaluated."""

    executor: Literal["local", "ray"] = Field(
        "local",
        description="local | ray: every sample evaluated on one host of --chip of a Ray cluster (docs/scale-out.md)",
    )
    address: str | None = Field(None, description="Ray cluster: auto | host:6379 | ray://host:10001")
    ray_cpus: float | None = Field(None, gt=0, description="CPUs each Ray evaluation asks for (default 1)")


class AutocompOptions(_Options):
    """`--method autocomp`: the beam search's parameters (docs/agents.md, "Autocomp", gives each default's source)."""

    iterations: int = Field(
        8, ge=1, le=100, description="autocomp: beam-search iterations in all, translation included (paper: 8)"
    )
    translate_iterations: int = Field(
        4, ge=0, le=100, description="autocomp: of them, translation iterations (paper: 4)"
    )
    beam: int = Field(3, ge=1, le=32, description="autocomp: beam size (paper: 3)")
    plans: int = Field(
        3,
        ge=1,
        le=32,
        description="autocomp: plans per beam member (paper: 6 candidates per member; "
        "3 plans x 2 implementations is our split)",
    )
    implementations: int = Field(2, ge=1, le=32, description="autocomp: implementations per plan")
    menu_keep: float = Field(
        0.25,
        ge=0,
        le=1,
        description="autocomp: probability that a plan prompt keeps each optimization-menu item (Autocomp's default)",
    )
    menu_strategy: Literal["one-shot", "static"] = Field(
        "one-shot",
        description="autocomp: one-shot (a model call per beam member proposes ~10 strategies of its "
        "own each optimization iteration) | static (the menu file only)",
    )
    example_rate: float = Field(
        0.25,
        ge=0,
        le=1,
        description="autocomp: probability that a plan prompt includes each of the workload's code examples",
    )
    early_stop_iters: int = Field(
        1,
        ge=0,
        le=100,
        description="autocomp: stop when the beam's best latency did not improve over this many iterations (0: never)",
    )
    early_stop_threshold: float = Field(
        1.0, gt=0, le=10, description="autocomp: 'did not improve' means new best / old best >= this"
    )
    translate_score: Literal["llm", "coverage", "off"] = Field(
        "llm",
        description="autocomp: how translation candidates are ranked: llm (a model call rates 0-10 how much "
        "runs in Pallas) | coverage (10 x the harness's Pallas coverage) | off (by latency)",
    )
    translate_gate: float = Field(
        15.0,
        ge=1,
        description="autocomp, --translate-score off: a translation candidate "
        "enters the beam only if under this many times its "
        "parent's latency",
    )
    autocomp_seed: int = Field(1111, description="autocomp: seed of the random draws (menu items, examples, asks)")
    menus: Path | None = Field(
        None,
        description="autocomp: a YAML file replacing templates/prompts/autocomp/menus.yaml (strategy menus and rules)",
    )

    @model_validator(mode="after")
    def _phases(self) -> AutocompOptions:
        if self.translate_iterations > self.iterations:
            raise ValueError("--translate-iterations cannot exceed --iterations")
        return self

    @property
    def per_parent(self) -> int:
        """New candidates per beam member and iteration (plans x implementations; the paper's 6)."""
        return self.plans * self.implementations

    @property
    def turns(self) -> int:
        """Sample positions per iteration (beam x plans x implementations): the trajectory's turns."""
        return self.beam * self.per_parent

    @property
    def menus_path(self) -> Path:
        return Path(self.menus or DEFAULT_MENUS)

    def params(self) -> dict[str, Any]:
        """What a resume must agree with and submission.yaml records: every parameter, the menus by hash, and the
        templates by hash."""
        d = self.model_dump(mode="json", exclude={"menus"})
        d["menus_sha256"] = hashlib.sha256(self.menus_path.read_bytes()).hexdigest()[:16]
        h = hashlib.sha256()
        for p in sorted(AUTOCOMP_TEMPLATES.glob("*.md.j2")):
            h.update(p.name.encode() + b"\0" + p.read_bytes())
        d["templates_sha256"] = h.hexdigest()[:16]
        return d


def option_default(model: type[BaseModel], name: str) -> Any:
    """A field's default, for the CLI to quote."""
    return model.model_fields[name].default


def option_help(model: type[BaseModel], name: str) -> str:
    return model.model_fields[name].description or ""
