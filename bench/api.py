"""The stable Python API of JAXBench, for agent builders and notebooks: `from bench import evaluate, ...`.

The `bench` CLI is a thin layer over these functions (bench/commands.py); anything the CLI can tell
you, these return as values. Stable means: the names and keyword arguments below keep working across
releases (new keywords may be added, with defaults); `EvalResult`'s fields only grow.

    from bench import evaluate, list_workloads
    result = evaluate("8p", "my_kernel.py")            # an EvalResult (pydantic model)
    result.status, result.speedup_vs_baseline, result.correctness.rel_l2_err, result.timing_meaning

Evaluation options are `EvalOptions` (bench/harness/protocol/task.py: each with its type and default):
`evaluate("8p", "k.py", EvalOptions(size="small", seeds=5))`; the same names as keywords also work
(`evaluate("8p", "k.py", size="small")`) and override the model's.
Evaluations run in worker processes: `evaluate` and `evaluate_many` never start a JAX backend in the calling
process. `machine_info` does (it reports this process's device), and so do `workload_flops` and
`WorkloadSpec.flops` when they use XLA's cost analysis (lowering picks the default backend; set
JAX_PLATFORMS=cpu in a process that must stay off the accelerator).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench.harness.protocol.result import EvalResult, Status
from bench.harness.protocol.task import EvalOptions, EvalTask
from bench.registry import WorkloadSpec, resolve_id, spec, workload_ids

__all__ = [
    "EvalOptions",
    "EvalResult",
    "EvalTask",
    "Status",
    "WorkloadSpec",
    "checkout",
    "evaluate",
    "evaluate_many",
    "list_workloads",
    "machine_info",
    "resolve_workload",
    "time_baseline",
    "workload",
    "workload_flops",
]


def resolve_workload(name: str) -> str:
    """The full id of `name` (full id, `41k`, or a unique prefix); raises bench.registry.UnknownWorkload
    (a KeyError with `.suggestions`) otherwise."""
    return resolve_id(name)


def workload(name: str) -> WorkloadSpec:
    """One workload's typed contract: config, sizes, tolerance, static args, create_inputs, the XLA baseline.

    Its `tolerance` is the EFFECTIVE one, {"atol", "rtol", "rel_l2"}: the workload's overrides over the harness's
    defaults (bench.harness.protocol.correctness.Tolerance), i.e. exactly what the correctness gate applies."""
    from bench.harness.protocol.correctness import Tolerance

    s = spec(name)
    full, small = (dataclasses.asdict(Tolerance.for_workload(s, size)) for size in ("full", "small"))
    return dataclasses.replace(s, tolerance=full, small_tolerance=small)


def list_workloads() -> list[WorkloadSpec]:
    """Every workload, in upstream order (1p ... 17p, 18k ... 50k), as `workload` gives it (effective tolerance)."""
    return [workload(w) for w in workload_ids()]


def workload_flops(name: str, size: str = "full") -> tuple[float | None, str]:
    """(FLOPs, source) of a workload at a size: the same number `bench list` prints and an evaluation reports."""
    return spec(name).flops(size)


def _kernel_file(kernel: str | Path) -> Path:
    """`kernel` as a readable file, or FileNotFoundError / IsADirectoryError: a wrong path is the caller's
    mistake, and must never read as the kernel's (a "compile_error: no callable workload" in an agent's loop)."""
    path = Path(kernel)
    if not path.exists():
        raise FileNotFoundError(f"kernel file {str(kernel)!r} does not exist")
    if path.is_dir():
        raise IsADirectoryError(f"kernel file {str(kernel)!r} is a folder, not a file")
    return path


def _task(workload: str, kernel: Path, options: EvalOptions | None, keywords: dict[str, Any]) -> EvalTask:
    """The task of `options` (defaults: EvalOptions') with `keywords` (the keyword form) overriding them."""
    given = options.model_dump(exclude_unset=True) if options is not None else {}
    return EvalTask(workload=resolve_id(workload), kernel_path=kernel.resolve(), **(given | keywords))


def _lone(task: EvalTask) -> EvalTask:
    """A lone kernel's task: timed for a one-off's feedback ("quick", EvalOptions.timing) unless the caller chose.
    Why: a one-off's user waits for the answer, and on CPU the standard ~0.25 s of calls per program buys little
    precision over ~0.1 s on a quiet host (docs/methodology.md, "Timing"); batches, serve and ingest keep it."""
    return task if task.timing is not None else task.model_copy(update={"timing": "quick"})


def evaluate(workload: str, kernel: str | Path, options: EvalOptions | None = None, **keywords: Any) -> EvalResult:
    """Check one kernel file against a workload's XLA baseline and time both (bench evaluate).

    Never raises for anything the kernel does: compile errors, wrong outputs, crashes and timeouts are
    statuses. Raises FileNotFoundError (IsADirectoryError) when `kernel` is not a file: that is the caller's
    mistake. Tracebacks name `kernel` (not the harness's private copy) and omit the harness's frames. Timed for a
    one-off's feedback (`timing="quick"`: on CPU ~0.1 s of calls per program) unless `timing` is given."""
    from bench.harness.parent.evaluate import evaluate as run
    from bench.tracebacks import attribute

    task = _lone(_task(workload, _kernel_file(kernel), options, keywords))
    return attribute(run(task), kernel)


def evaluate_many(
    workload: str, kernels: Iterable[str | Path], options: EvalOptions | None = None, **keywords: Any
) -> Iterator[EvalResult]:
    """`evaluate` for several kernel files of one workload, through ONE warm runner (bench.harness.parent.evaluate):
    every kernel is built first, then the batch's inputs are drawn and each candidate is run in turn (one at
    a time: parallel evaluations on one host disturb each other's timings). Yields the results in order, each as
    soon as that kernel is decided. Raises FileNotFoundError before evaluating anything when one of `kernels` is
    not a file.

    With several kernels, each result's `wall_time_s` is that kernel's own time (own_wall_time_s), not the
    time since the batch started. One kernel alone is timed as `evaluate` times it (quick unless `timing` is
    given); several, at the standard length."""
    from bench.harness.parent.evaluate import WarmRunner
    from bench.tracebacks import attribute

    paths = [_kernel_file(k) for k in kernels]
    if not paths:
        return
    template = _task(workload, paths[0], options, keywords)
    if len(paths) == 1:
        template = _lone(template)
    with WarmRunner(template) as runner:
        for path, result in zip(paths, runner.stream([p.resolve() for p in paths]), strict=True):
            if len(paths) > 1:
                result = result.model_copy(update={"wall_time_s": own_wall_time_s(result)})
            yield attribute(result, path)


#: The phases of `EvalResult.overhead_s` that belong to one kernel of a batch: its build (builds of a batch run
#: side by side), then its turn in the shared runner. `runner_prepare` (start, inputs, references) is the batch's;
#: `timed_iterations` is part of `timing`.
OWN_PHASES = ("build", "compile", "correctness", "timing", "trace_parsing")


def own_wall_time_s(result: EvalResult) -> float | None:
    """One kernel's own wall seconds in a batch: the sum of its OWN_PHASES (None when none was recorded)."""
    own = [result.overhead_s[k] for k in OWN_PHASES if k in result.overhead_s]
    return round(sum(own), 3) if own else result.wall_time_s


def time_baseline(
    workload: str, size: str | None = None, warmup: int | None = None, iters: int | None = None
) -> dict[str, Any]:
    """Time a workload's XLA baseline in a reference worker on upstream's inputs (bench run): one dict in the
    original JAXBench's `run --json` shape (status, median_ms, tflops, timing_method, ...)."""
    from bench import baseline_timing

    return baseline_timing.time_baseline(resolve_id(workload), size, warmup, iters)


def checkout() -> dict[str, Any]:
    """Which code this process runs: the checkout (JAXBENCH_ROOT or the package's folder), the `bench`
    package's own folder, and where the environment's installed `jaxbench` points. `warning` is set when
    they differ: a copied virtualenv silently runs another checkout's code."""
    from bench.paths import ROOT

    package_root = Path(__file__).resolve().parents[1]
    installed = _installed_location()
    problems = []
    if ROOT.resolve() != package_root:
        problems.append(f"JAXBENCH_ROOT={ROOT} but the bench package is imported from {package_root}")
    if installed is not None and installed.resolve() != package_root:
        problems.append(
            f"this environment's jaxbench install points to {installed}, "
            f"not to the imported package's checkout {package_root}"
        )
    return {
        "root": str(ROOT),
        "root_from": "JAXBENCH_ROOT" if os.environ.get("JAXBENCH_ROOT") else "package",
        "package_root": str(package_root),
        "installed_root": str(installed) if installed else None,
        "warning": "; ".join(problems) or None,
    }


def _installed_location() -> Path | None:
    """The folder of an editable (`pip install -e`) jaxbench install, else the installed package's parent."""
    try:
        dist = importlib.metadata.distribution("jaxbench")
    except importlib.metadata.PackageNotFoundError:
        return None
    direct = dist.read_text("direct_url.json")
    if direct:
        info = json.loads(direct)
        if info.get("dir_info", {}).get("editable") and info.get("url", "").startswith("file://"):
            return Path(info["url"][len("file://") :])
    files = [f for f in dist.files or [] if f.parts and f.parts[0] == "bench"]
    return Path(str(dist.locate_file(files[0]))).resolve().parents[len(files[0].parts) - 1] if files else None


def machine_info() -> dict[str, Any]:
    """Backend, chip, peaks with their sources, versions, sandbox, default size and checkout (bench info).
    Initializes JAX's backend in this process, to describe this process's device."""
    from bench import HARNESS_VERSION, hardware
    from bench.harness.parent.sandboxing import bwrap_problem

    detected = hardware.detect()
    chip = hardware.chip_spec(detected["chip"]) if detected["chip"] else None
    problem = bwrap_problem()
    size = hardware.default_size(str(detected["backend"]))
    return {
        **detected,
        "harness_version": HARNESS_VERSION,
        "default_size": size,
        "peak_bf16_tflops": chip.peak_bf16_tflops if chip else None,
        "hbm_gb_s": chip.hbm_gb_s if chip else None,
        "peak_source": chip.source if chip else "unknown chip: no peak on record",
        "peak_nominal": chip.nominal if chip else None,
        "bubblewrap": "works" if problem is None else problem,
        "checkout": checkout(),
    }
