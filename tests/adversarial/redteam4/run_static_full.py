"""The static reading (the TPU track's credit: parent/outcome.py credit_bound, backend != cpu) of an attack at 8p's
FULL size, as the build would export it: one trace, lowered for CPU (interpret) and TPU, fed to the inspection with
the baseline's own full-size TPU program. No evaluation (a CPU host cannot run 8192 x 8192 x 28672).
Usage: .venv/bin/python tests/adversarial/redteam4/run_static_full.py [attack_module_stem]"""

import importlib.util
import pathlib
import sys

import jax
import jax.numpy as jnp

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from bench.harness.inspection.report import baseline_work, inspect_programs  # noqa: E402
from bench.harness.protocol.messages import DEFAULT_BOUNDS  # noqa: E402
from bench.harness.protocol.signature import export_program  # noqa: E402
from bench.harness.sandbox.child import _tpu_target  # noqa: E402
from bench.harness.sandbox.lowering import export_jaxpr, with_kernel_sites  # noqa: E402
from bench.registry import spec  # noqa: E402

stem = sys.argv[1] if len(sys.argv) > 1 else "attack_credit_triangular_solve"
path = pathlib.Path(__file__).with_name(stem + ".py")
mod_spec = importlib.util.spec_from_file_location(stem, path)
mod = importlib.util.module_from_spec(mod_spec)
mod_spec.loader.exec_module(mod)

s = spec("8p_GEMM")
sig = s.signature("full")
avals = [jax.ShapeDtypeStruct((8192, 8192), jnp.bfloat16), jax.ShapeDtypeStruct((8192, 28672), jnp.bfloat16)]
closed = jax.make_jaxpr(mod.workload)(*avals)
cpu = export_jaxpr(with_kernel_sites(closed, True), "candidate_program", ["cpu"])
with _tpu_target():
    tpu = export_jaxpr(with_kernel_sites(closed, False), "candidate_program", ["tpu"])
base_blob = bytes(export_program(s.workload, "baseline_program", sig, ["tpu"]).serialize())
base = baseline_work(base_blob, DEFAULT_BOUNDS)
report = inspect_programs(bytes(cpu.serialize()), bytes(tpu.serialize()), "cpu", DEFAULT_BOUNDS, base[0])
cov = report.coverage if isinstance(report.coverage, dict) else report.model_dump().get("coverage")
print("baseline (s, flops):", base)
print({k: v for k, v in (cov or {}).items() if not isinstance(v, (dict, list))})
