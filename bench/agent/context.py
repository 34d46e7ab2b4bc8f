"""The context pack of "iterative refinement + context" (Appendix B): hardware, Pallas API reference, code examples,
rules. Built by `bench agent context`; `bench prompt --method iterative-context` and `bench agent run` build it too.

- Hardware summary: the target chip's row of our hardware table (bench.hardware), with derived figures.
- API reference: generated from the INSTALLED jax, by introspection of `jax.experimental.pallas` and
  `jax.experimental.pallas.tpu` (public names, signatures, first docstring line), grouped by category, so it never
  names an API the evaluated version lacks.
- Code examples: our own kernels that the harness verified (the team's fused matmul, the hand-tuned references).
- Rules: imperative bullets (block shapes, memory spaces, grid order, what interpret mode hides).

Selection per workload is deterministic: by the workload's family (META["family"]), through FAMILY_RULES. The
paper uses an LLM yes/no filter per category; `select(..., chooser=)` takes such a filter when one is plugged in.
The pack's version is CONTEXT_VERSION plus the jax version plus a hash of its content.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from bench.hardware import CHIPS, chip_spec
from bench.paths import PALLAS_REFS_DIR, SUBMISSIONS_DIR

CONTEXT_VERSION = "1"
MODULES = ("jax.experimental.pallas", "jax.experimental.pallas.tpu")

#: API categories: a name goes to the first category whose list holds it; unlisted names go to "other".
CATEGORIES: dict[str, tuple[str, ...]] = {
    "grid and blocks": (
        "pallas_call",
        "BlockSpec",
        "GridSpec",
        "PrefetchScalarGridSpec",
        "Blocked",
        "Element",
        "Squeezed",
        "squeezed",
        "BoundedSlice",
        "Buffered",
        "BlockDim",
        "no_block_spec",
        "cdiv",
        "program_id",
        "num_programs",
        "Indirect",
        "RevisitMode",
        "GridDimensionSemantics",
        "PARALLEL",
        "ARBITRARY",
        "CORE_PARALLEL",
        "SUBCORE_PARALLEL",
        "Tiling",
    ),
    "indexing and refs": (
        "ds",
        "dslice",
        "Slice",
        "multiple_of",
        "load",
        "store",
        "select_ref",
        "bitcast",
        "align_to",
        "broadcast_to",
        "empty",
        "empty_like",
        "empty_ref_like",
        "strides_from_shape",
        "einshape",
        "roll",
        "pack_elementwise",
        "unpack_elementwise",
        "with_memory_space_constraint",
    ),
    "memory spaces and scratch": (
        "ANY",
        "HOST",
        "MemorySpace",
        "MemoryRef",
        "VMEM",
        "SMEM",
        "HBM",
        "CMEM",
        "SEMAPHORE",
        "VMEM_SHARED",
        "run_scoped",
        "with_scoped",
        "run_state",
        "get_global",
    ),
    "control flow": ("when", "loop", "delay"),
    "DMA and semaphores": (
        "make_async_copy",
        "async_copy",
        "sync_copy",
        "make_async_remote_copy",
        "async_remote_copy",
        "SemaphoreType",
        "dma_semaphore",
        "semaphore",
        "semaphore_read",
        "semaphore_signal",
        "semaphore_wait",
        "DeviceIdType",
        "get_barrier_semaphore",
        "core_barrier",
        "emit_pipeline",
        "emit_pipeline_with_allocations",
        "BufferedRef",
        "BufferedRefBase",
        "BufferType",
    ),
    "compiler parameters and cost": (
        "CompilerParams",
        "CostEstimate",
        "estimate_cost",
        "SideEffectType",
        "lower_as_mlir",
        "pallas_export_experimental",
    ),
    "multi-core": ("core_map", "create_tensorcore_mesh", "CoreType", "run_on_first_core", "kernel"),
    "interpret mode and debugging": (
        "InterpretParams",
        "force_tpu_interpret_mode",
        "set_tpu_interpret_mode",
        "reset_tpu_interpret_mode_state",
        "debug_print",
        "debug_check",
        "enable_debug_checks",
        "enable_poison_buffers",
        "trace_value",
        "touch",
    ),
    "chip information": ("get_tpu_info", "get_tpu_info_for_chip", "TpuInfo", "ChipVersion", "is_tpu_device"),
    "random numbers": (
        "prng_seed",
        "prng_random_bits",
        "stateful_bernoulli",
        "stateful_bits",
        "stateful_normal",
        "stateful_uniform",
        "sample_block",
        "to_pallas_key",
        "stochastic_round",
    ),
    "MXU and math": ("matmul_acc_lhs", "matmul_pop", "matmul_push_rhs", "reciprocal", "next_power_of_2"),
}
BASE_CATEGORIES = (
    "grid and blocks",
    "indexing and refs",
    "memory spaces and scratch",
    "control flow",
    "compiler parameters and cost",
    "MXU and math",
)

#: family keyword -> (extra API categories, example keys). First matches add up; every workload gets the base.
FAMILY_RULES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("gemm", (), ("team_fused_matmul", "team_epilogue")),
    ("attention", ("DMA and semaphores", "multi-core"), ("flash_attention", "splash")),
    ("paged", ("DMA and semaphores",), ("paged_attention",)),
    ("ragged", ("DMA and semaphores",), ("paged_attention", "megablox_gmm")),
    ("grouped", ("DMA and semaphores",), ("megablox_gmm",)),
    ("moe", ("DMA and semaphores",), ("megablox_gmm", "team_fused_matmul")),
    ("mlp", (), ("team_fused_matmul", "gemm")),
    ("dense gemm", (), ("gemm",)),
    ("conv", (), ("team_fused_matmul",)),
    ("norm", (), ("team_epilogue",)),
    ("linear", (), ("team_fused_matmul",)),
    ("retention", ("DMA and semaphores",), ("flash_attention",)),
    ("ssd", ("DMA and semaphores",), ("flash_attention",)),
    ("triangle", (), ("team_fused_matmul",)),
)
DEFAULT_EXAMPLES = ("team_fused_matmul",)

TEAM = SUBMISSIONS_DIR / "jaxbench-team-pallas" / "source"
#: example key -> (title, file, what it shows). All are kernels the harness verified correct at small size on CPU
#: (TPU interpret mode): the team submission 21/21, the hand-tuned references except 7p.
EXAMPLES: dict[str, tuple[str, Path, str]] = {
    "team_fused_matmul": (
        "Tiled matmul with a fused epilogue (JAXBench team)",
        TEAM / "fused_matmul.py",
        "grid over (M, N, K), f32 VMEM accumulator, init and epilogue under pl.when, "
        "dimension_semantics, whole-row and row-reduction variants",
    ),
    "team_epilogue": (
        "Per-workload epilogues for the fused matmul (JAXBench team)",
        TEAM / "epilogues.py",
        "how a workload's elementwise / row-wise tail becomes an epilogue on the accumulator tile",
    ),
    "gemm": (
        "Dense GEMM through the library kernel (hand-tuned reference)",
        PALLAS_REFS_DIR / "gemm.py",
        "jax.experimental.pallas.ops.tpu.matmul with explicit block shapes",
    ),
    "flash_attention": (
        "Flash attention (hand-tuned reference)",
        PALLAS_REFS_DIR / "flash_attention.py",
        "the library flash-attention kernel, block sizes, causal masking",
    ),
    "splash": (
        "Splash attention (hand-tuned reference)",
        PALLAS_REFS_DIR / "splash.py",
        "block-sparse attention masks, MQA per KV head",
    ),
    "paged_attention": (
        "Paged attention (hand-tuned reference)",
        PALLAS_REFS_DIR / "paged_attention.py",
        "page tables as scalar-prefetch inputs, pages per compute block",
    ),
    "megablox_gmm": (
        "Grouped matmul, megablox (hand-tuned reference)",
        PALLAS_REFS_DIR / "megablox_gmm.py",
        "group sizes as scalar prefetch, tiling of ragged groups",
    ),
}

RULES = (
    "- Make every BlockSpec block shape's last two dimensions divisible by (8, 128) (for bfloat16, 16 rows are better "
    "than 8), or equal to the full array dimensions.\n"
    "- Keep blocks in VMEM: inputs and outputs given by BlockSpecs are copied to VMEM for you; size them so all "
    "double-buffered blocks plus scratch fit in VMEM with room to spare.\n"
    "- Put arrays you copy yourself in pl.ANY (HBM) and move them with pltpu.make_async_copy(...).start()/.wait(); "
    "never read a DMA destination before its wait.\n"
    "- Put per-step scalars (indices, lengths, page tables) in SMEM, e.g. through "
    "pltpu.PrefetchScalarGridSpec(num_scalar_prefetch=...).\n"
    "- Allocate accumulators as scratch_shapes=[pltpu.VMEM(shape, jnp.float32)]; accumulate in float32 "
    "(preferred_element_type=jnp.float32) and cast once at the end.\n"
    "- Remember the grid runs in row-major order, last axis fastest: put the reduction (K) axis last, initialize "
    "under pl.when(pl.program_id(axis) == 0) and write the output under pl.when(... == pl.num_programs(axis) - 1).\n"
    '- Mark reduction axes "arbitrary" and independent axes "parallel" in '
    "pltpu.CompilerParams(dimension_semantics=...); a parallel axis may run on another core and in any order.\n"
    "- Revisit an output block only on consecutive grid steps (reduction axis innermost); never write one output "
    "block from two parallel steps.\n"
    "- Alias an input to an output (input_output_aliases) only when you overwrite it entirely and the caller does not "
    "reuse the input.\n"
    "- Use only the names in the API reference of this pack; old names such as TPUMemorySpace or TPUCompilerParams no "
    "longer exist.\n"
    "- Do not call the reference or any XLA implementation of the whole workload: the main computation must be a "
    "pallas_call.\n"
    "- Know what interpret mode hides: JAXBench checks correctness on CPU in TPU interpret mode, which does not "
    "enforce the (8, 128) layout, VMEM capacity or Mosaic lowering limits, runs grid steps one by one, and times the "
    "interpreter, not a TPU; a kernel that passes there can still fail to compile on a chip.\n"
)


@dataclass(frozen=True)
class ApiEntry:
    module: str
    name: str
    kind: str  # "function" | "class" | "value"
    signature: str
    doc: str  # first line of the docstring
    category: str

    def line(self) -> str:
        short = "pl" if self.module == MODULES[0] else "pltpu"
        sig = self.signature if self.kind != "value" else ""
        return f"- `{short}.{self.name}{sig}` ({self.kind}){': ' + self.doc if self.doc else ''}"


def _category(name: str) -> str:
    for cat, names in CATEGORIES.items():
        if name in names:
            return cat
    return "other"


_ADDRESS = re.compile(r" at 0x[0-9a-f]+>")


def _signature(obj: Any) -> str:
    try:
        sig = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    sig = _ADDRESS.sub(">", sig)  # default values printed with their memory address: not reproducible
    return sig if len(sig) <= 400 else sig[:397] + "..."


def _first_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    if not doc or (inspect.isclass(obj) and doc == inspect.getdoc(type(obj))):
        return ""
    return doc.strip().splitlines()[0].strip()[:200]


@lru_cache(maxsize=1)
def api_reference() -> tuple[ApiEntry, ...]:
    """Every public, non-module name of MODULES in the installed jax."""
    import importlib
    import types

    entries = []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in sorted(n for n in dir(mod) if not n.startswith("_")):
            obj = getattr(mod, name)
            if isinstance(obj, types.ModuleType):
                continue
            kind = "class" if inspect.isclass(obj) else "function" if callable(obj) else "value"
            doc = _first_line(obj) if kind != "value" else ""
            signature = _signature(obj) if kind != "value" else ""
            entries.append(ApiEntry(modname, name, kind, signature, doc, _category(name)))
    return tuple(entries)


def jax_version() -> str:
    return importlib.metadata.version("jax")


def hardware_summary(chip: str) -> str:
    spec = chip_spec(chip)
    if spec is None:
        raise KeyError(f"unknown chip {chip!r}; known: {sorted(CHIPS)}")
    title = spec.title or chip
    ridge = spec.peak_bf16_tflops * 1e12 / (spec.hbm_gb_s * 1e9)
    lines = [
        f"Target: {title}.",
        f"- Peak bf16 compute: about {spec.peak_bf16_tflops:g} TFLOP/s; HBM bandwidth: about {spec.hbm_gb_s:g} GB/s.",
        f"- Ridge point: about {ridge:.0f} FLOP per byte of HBM traffic; below it a kernel is bound by memory, "
        "above it by compute. Fusing elementwise work into a matmul's last step saves a full HBM round trip.",
    ]
    if spec.vmem_mib:
        lines.append(f"- VMEM (on-core vector memory, where Pallas blocks live): {spec.vmem_mib:g} MiB.")
    if spec.tensorcores:
        lines.append(f"- TensorCores per chip: {spec.tensorcores}.")
    lines += [
        "- Vector registers hold (8, 128) tiles of 32-bit values: the sublane x lane layout every block shape "
        "must respect. The MXU multiplies bf16 tiles with float32 accumulation.",
        f"- Source of these numbers: {spec.source}.",
    ]
    if spec.nominal:
        lines.append("- These figures are nominal orders of magnitude, not a data sheet.")
    return "\n".join(lines)


@dataclass(frozen=True)
class Selection:
    workload: str
    family: str
    categories: tuple[str, ...]
    examples: tuple[str, ...]


def select(workload: str, family: str, chooser: Callable[[str, str], bool] | None = None) -> Selection:
    """Which API categories and examples a workload gets: FAMILY_RULES by family keyword (deterministic);
    `chooser(workload, category)`, when given, decides the non-base categories instead (a model-based filter)."""
    fam = family.lower()
    cats, examples = list(BASE_CATEGORIES), []
    for keyword, extra, ex in FAMILY_RULES:
        if keyword in fam:
            cats += [c for c in extra if c not in cats]
            examples += [e for e in ex if e not in examples]
    if chooser is not None:
        cats = list(BASE_CATEGORIES) + [c for c in CATEGORIES if c not in BASE_CATEGORIES and chooser(workload, c)]
    cats = [c for c in CATEGORIES if c in cats]  # fixed order
    return Selection(workload, family, tuple(cats), tuple(examples or DEFAULT_EXAMPLES))


def _api_text(categories: tuple[str, ...]) -> str:
    out = [
        f"Pallas API reference, generated from the installed jax {jax_version()} "
        f"(`from jax.experimental import pallas as pl`, `from jax.experimental.pallas import tpu as pltpu`):"
    ]
    entries = api_reference()
    for cat in categories:
        rows = [e for e in entries if e.category == cat]
        if rows:
            out.append(f"\n### {cat}")
            out += [e.line() for e in rows]
    return "\n".join(out)


def _examples_text(keys: tuple[str, ...]) -> str:
    out = []
    for key in keys:
        title, path, shows = EXAMPLES[key]
        out.append(f"### {title}\nShows: {shows}.\n```python\n{path.read_text().strip()}\n```")
    return "\n\n".join(out)


@dataclass(frozen=True)
class Pack:
    """The whole pack: every section's text; per-workload text by `text(workload, family)`."""

    chip: str
    version: str
    hardware: str
    rules: str
    sections: dict[str, int] = field(default_factory=dict)  # section -> bytes (whole pack)

    def text(self, workload: str, family: str, chooser: Callable[[str, str], bool] | None = None) -> str:
        sel = select(workload, family, chooser)
        return (
            f"# Context pack {self.version}\n\n## Hardware\n{self.hardware}\n\n## Pallas API\n"
            f"{_api_text(sel.categories)}\n\n"
            f"## Code examples (verified kernels)\n{_examples_text(sel.examples)}\n\n"
            f"## Rules\n{self.rules}"
        )

    def parts(self, workload: str, family: str) -> dict[str, Any]:
        """The pack's parts for one workload, apart (Autocomp's prompts place them one by one): hardware, api
        (the selected reference), examples ([(key, text)], each drawn on its own per prompt), rules."""
        sel = select(workload, family)
        return {
            "hardware": self.hardware,
            "api": _api_text(sel.categories),
            "examples": [(key, _examples_text((key,))) for key in sel.examples],
            "rules": self.rules,
        }


def build(chip: str = "v6e") -> Pack:
    hardware = hardware_summary(chip)
    api_all = _api_text(tuple(CATEGORIES) + ("other",))
    examples_all = _examples_text(tuple(EXAMPLES))
    digest = hashlib.sha256("\n".join((hardware, api_all, examples_all, RULES)).encode()).hexdigest()[:12]
    version = f"v{CONTEXT_VERSION}+jax{jax_version()}+{digest}"
    sections = {
        "hardware": len(hardware.encode()),
        "api_reference": len(api_all.encode()),
        "examples": len(examples_all.encode()),
        "rules": len(RULES.encode()),
    }
    return Pack(chip, version, hardware, RULES, sections)


def write(out: Path, chip: str = "v6e") -> tuple[Pack, dict[str, int]]:
    """Write the pack to `out`: pack.json (sections, API entries, selection per workload) and workloads/<id>.md.
    Returns the pack and {workload: bytes of its selected text}."""
    from bench.registry import spec as workload_spec
    from bench.registry import workload_ids

    pack = build(chip)
    out.mkdir(parents=True, exist_ok=True)
    sizes, selections = {}, {}
    for w in workload_ids():
        fam = workload_spec(w).family
        text = pack.text(w, fam)
        (out / "workloads").mkdir(exist_ok=True)
        (out / "workloads" / f"{w}.md").write_text(text + "\n")
        sizes[w] = len(text.encode())
        sel = select(w, fam)
        selections[w] = {"family": fam, "categories": list(sel.categories), "examples": list(sel.examples)}
    doc = {
        "version": pack.version,
        "chip": chip,
        "jax_version": jax_version(),
        "sections_bytes": pack.sections,
        "hardware": pack.hardware,
        "rules": pack.rules,
        "api": [e.__dict__ for e in api_reference()],
        "selection": selections,
    }
    (out / "pack.json").write_text(json.dumps(doc, indent=1) + "\n")
    return pack, sizes
