"""How much room does each weak task's second input distribution (bench/weak_tasks.py) leave? Prints, per workload
at small size over N draws of the stressed inputs: for every honest kernel the project has (submissions/*/kernels,
pallas_refs; Pallas in interpret mode), how close it came to failing the gate: the larger of its elementwise
|ref - out| / (atol + rtol |ref|) and its relative L2 error / rel_l2 (protocol/correctness.py), at its worst draw
(must stay well under 1); for the audit's shortcut (bench/audit/shortcuts.py) the same at its best draw (must stay
over 1: it fails every draw).

    .venv/bin/python benchmarks/stress_margin.py [--draws 20] [38k 43k 50k ...]
"""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.pallas import tpu as pltpu

from bench.audit.shortcuts import shortcut_for
from bench.harness.protocol.correctness import Tolerance
from bench.paths import ROOT
from bench.registry import load_workload, spec
from bench.weak_tasks import STRESS, stress_for


def _kernels(workload: str) -> list[Path]:
    found = [
        *sorted(ROOT.glob(f"submissions/*/kernels/{workload}.py")),
        *sorted(ROOT.glob(f"pallas_refs/{workload}.py")),
    ]
    return [k for k in found if "xla-baseline" not in k.parts]


def _slack(ref: np.ndarray, out: np.ndarray, tol: Tolerance) -> float:
    """How far `out` is from failing the gate: over 1 fails (elementwise or relative L2)."""
    elementwise = float((np.abs(ref - out) / (tol.atol + tol.rtol * np.abs(ref))).max())
    l2 = float(np.linalg.norm(ref - out) / max(float(np.linalg.norm(ref)), 1e-30))
    return max(elementwise, l2 / tol.rel_l2)


def margins(prefix: str, draws: int) -> None:
    s = spec(prefix)
    stress = stress_for(s.id)
    if stress is None:
        return
    tol, base, module = Tolerance.for_workload(s), jax.jit(s.workload), load_workload(s.id)
    kernels = {}
    for path in _kernels(s.id):
        m = importlib.util.module_from_spec(importlib.util.spec_from_file_location(path.stem, path))
        m.__loader__.exec_module(m)  # type: ignore[union-attr]
        kernels[f"{path.parts[-3]}" if path.parts[-2] == "kernels" else "pallas_refs"] = m.workload
    honest: dict[str, list[float]] = {k: [] for k in kernels}
    shortcut: list[float] = []
    sc = shortcut_for(s.id)
    for seed in range(draws):
        x = stress.transform(tuple(s.create_inputs(dtype=jnp.bfloat16, size="small", seed=1000 + seed)))
        ref = np.asarray(base(*x).astype(jnp.float32))
        for name, fn in kernels.items():
            with pltpu.force_tpu_interpret_mode(True):  # type: ignore[arg-type]  # HLO interpret mode
                honest[name].append(_slack(ref, np.asarray(jax.jit(fn)(*x).astype(jnp.float32)), tol))
        if sc is not None:
            shortcut.append(_slack(ref, np.asarray(jnp.asarray(sc.fn(module, *x)).astype(jnp.float32)), tol))
    said = ", ".join(f"{k} {max(v):.3f}" for k, v in honest.items()) or "no honest kernel here"
    short = f"shortcut min {min(shortcut):.1f}" if shortcut else "no shortcut"
    print(f"{s.id} ({stress.description}): honest max {said}; {short}   [{draws} draws]", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workloads", nargs="*", default=sorted(STRESS))
    parser.add_argument("--draws", type=int, default=20)
    args = parser.parse_args()
    for w in args.workloads:
        margins(w, args.draws)


if __name__ == "__main__":
    main()
