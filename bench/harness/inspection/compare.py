"""Is the runnable program the TPU program, outside the Pallas kernels? (TRUSTED; the parent's own proof)

On a CPU host the program that runs and is checked is the interpret-mode export; what the readiness ranking
reads (lowers for TPU, Pallas coverage) comes from the TPU export. A build can hand over two different
programs (issue #23). This module shows, from the two modules alone, that they are the same computation
outside the kernels, or says where they differ:

1. Value numbering over both modules with one shared table: every value gets a number from (op name,
   attributes, result types, the numbers of its operands, the numbers of the values its regions return);
   calls are inlined (memoized per callee and argument numbers). Locations and sharding annotations are
   ignored. The numbers of `main`'s results must be equal in both modules, in order.
2. A call of a function named `jaxbench_kernel_*` (bench.harness.sandbox.lowering) is a kernel site: its results are
   numbered from its operands and types only, so the comparison looks through it. Sites pair up by those
   numbers. On the TPU side a site must hold exactly one `tpu_custom_call` on its arguments (returning some of
   its results); on the CPU side it holds that kernel's interpreter.
3. Each pair of sites must agree on the kernel's arithmetic: matmul FLOPs within 1 % and other array
   FLOPs within a factor of 4, counted from the Mosaic body (grid x body) and from the interpreted twin
   (grid loop x body); where a count depends on data (a loop of unknown length, a branch on an input, a
   dynamic grid), matmul FLOPs within a factor of 4 (zero on one side and not the other never passes). A
   trivial Mosaic kernel next to a real interpreted one (or the reverse) fails here.
4. Each Mosaic kernel must be the kernel interpreted at its site (bench.harness.inspection.kernels): the same
   grid, blocks, element types, index maps at every grid step, scratch buffers, outputs and body arithmetic.
   The build runs candidate code and could export the TPU program from a twin that lowers where the kernel
   that ran does not (issue 40 §2); this step ties the TPU program's kernels to what ran.

What "verified" does NOT prove (docs/threat-model.md): that the Mosaic kernel computes the same values as its
interpreted twin in every respect (the gaps are listed in bench.harness.inspection.kernels); the TPU program
never runs here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.harness.inspection import kernels
from bench.harness.inspection.allowlist import MOSAIC_TARGET, custom_call_target
from bench.harness.inspection.module import Block, Module
from bench.harness.protocol.messages import DEFAULT_BOUNDS, Bounds
from bench.harness.protocol.wire import is_kernel_site

MATMUL_TOLERANCE = 0.01
OTHER_FACTOR = 4.0
#: Where a count depends on data (unknown loop lengths, input-dependent branches), matmul FLOPs within this factor.
LOOSE_FACTOR = 4.0
#: Other FLOPs below this share of a site's total need not match (rounding steps, casts Mosaic adds).
OTHER_FLOOR_SHARE = 0.02
#: Attributes that may differ between the platforms' lowerings without changing what is computed.
PLATFORM_ATTRS = frozenset({"api_version", "operand_layouts", "result_layouts", "kernel_name", "callee"})


#: (matmul FLOPs, other array FLOPs, depends on data) of a kernel site: (kind "tpu" or "cpu", module, site function).
SiteWork = Callable[[str, Module, str], tuple[float, float, bool]]


@dataclass(frozen=True)
class SiteArithmetic:
    """One pair of kernel sites as compared (recorded as the result's readiness_sites)."""

    site: str
    tpu_matmul_flops: float
    cpu_matmul_flops: float
    tpu_other_flops: float
    cpu_other_flops: float
    depends_on_data: bool


@dataclass(frozen=True)
class Verdict:
    verified: bool
    reason: str  # why not, or what was compared
    sites: list[SiteArithmetic] = field(default_factory=list)
    #: the two programs are the same outside their kernel sites, which call the same kernels at the same places: the
    #: XLA work the TPU program's reading weighs a kernel's credit against is the work the runnable program does
    outside_same: bool = False


class _Numbering:
    """Value numbers of one module (see the module docstring); `table` is shared with the other module."""

    def __init__(self, module: Module, table: dict[tuple[Any, ...], int]) -> None:
        self.module, self.table = module, table
        self.memo: dict[tuple[str, tuple[int, ...]], tuple[int, ...]] = {}
        self.sites: dict[int, list[str]] = {}  # site number -> the site functions found there (in order)

    def intern(self, key: tuple[Any, ...]) -> int:
        return self.table.setdefault(key, len(self.table))

    def function(self, name: str, args: tuple[int, ...]) -> tuple[int, ...]:
        key = (name, args)
        if key not in self.memo:
            f = self.module.funcs[name]
            env = dict(zip(f.body.args, args, strict=False))  # value ids are unique in a module: one env per call
            self.memo[key] = self.block(f.body, env, ("fn",))
        return self.memo[key]

    def block(self, block: Block, env: dict[int, int], scope: tuple[Any, ...]) -> tuple[int, ...]:
        """Numbers of the block's terminator operands (its results), numbering its ops into env."""
        for op in block.ops:
            if op.name in ("func.return", "stablehlo.return"):
                return tuple(env.get(a, -1) for a in op.args)
            args = tuple(env.get(a, self.intern(("free", a, self.module.main))) for a in op.args)
            if op.name == "func.call":
                callee = op.attrs.get("callee", "").lstrip("@")
                if is_kernel_site(callee):
                    site = self.intern(("site", args, op.types))
                    self.sites.setdefault(site, []).append(callee)
                    outs = tuple(self.intern(("site_result", site, i)) for i in range(len(op.outs)))
                else:
                    outs = (
                        self.function(callee, args)
                        if callee in self.module.funcs
                        else tuple(self.intern(("missing", callee, i)) for i in range(len(op.outs)))
                    )
            else:
                attrs = tuple(sorted((k, v) for k, v in op.attrs.items() if k not in PLATFORM_ATTRS))
                regions = []
                for r, region in enumerate(op.regions):
                    for b, blk in enumerate(region):
                        inner_scope = (op.name, args, r, b, scope)
                        nonce = self.intern(("scope",) + inner_scope)
                        env.update(
                            {
                                a: self.intern(("barg", nonce, i, t))
                                for i, (a, t) in enumerate(zip(blk.args, blk.arg_types, strict=False))
                            }
                        )
                        regions.append(self.block(blk, env, (nonce,)))
                key = self.intern((op.name, attrs, args, op.types, tuple(regions)))
                outs = tuple(self.intern(("res", key, i)) for i in range(len(op.outs)))
            env.update(zip(op.outs, outs, strict=False))
        return ()


def _tpu_site_ok(module: Module, name: str) -> str | None:
    """A TPU kernel site is one tpu_custom_call on the function's arguments, returned as is."""
    f = module.funcs.get(name)
    if f is None:
        return f"kernel site @{name} is missing"
    ops = [op for op in f.body.ops if op.name not in ("func.return",)]
    if len(ops) != 1 or ops[0].name != "stablehlo.custom_call" or custom_call_target(ops[0]) != MOSAIC_TARGET:
        return f"kernel site @{name} of the TPU program is not a single Mosaic kernel"
    ret = f.body.ops[-1]
    if ops[0].args != f.body.args or not set(ret.args) <= set(ops[0].outs):
        return f"kernel site @{name} of the TPU program is not its kernel applied to the site's arguments"
    return None


def compare(runnable: Module, tpu: Module, site_work: SiteWork, bounds: Bounds = DEFAULT_BOUNDS) -> Verdict:
    """Compare the runnable (interpret-mode) module with the TPU module. `site_work(kind, module, name)` gives
    (matmul FLOPs, other FLOPs, whether they depend on data) of a site's function: kind "tpu" from its Mosaic body,
    "cpu" from its ops."""
    table: dict[tuple[Any, ...], int] = {}
    a, b = _Numbering(runnable, table), _Numbering(tpu, table)
    fa, fb = runnable.funcs[runnable.main], tpu.funcs[tpu.main]
    if fa.body.arg_types != fb.body.arg_types or fa.result_types != fb.result_types:
        return Verdict(False, "the two programs take or return different types")
    args = tuple(table.setdefault(("input", i, t), len(table)) for i, t in enumerate(fa.body.arg_types))
    outs_a = a.function(fa.name, args)
    outs_b = b.function(fb.name, args)
    if outs_a != outs_b:
        differ = [i for i, (x, y) in enumerate(zip(outs_a, outs_b, strict=False)) if x != y]
        return Verdict(
            False,
            f"outside its Pallas kernels, the runnable program computes output(s) {differ} "
            f"differently from the TPU program",
        )
    if set(a.sites) != set(b.sites) or any(len(a.sites[s]) != len(b.sites[s]) for s in a.sites):
        return Verdict(False, "the two programs call their Pallas kernels at different places")
    per_site: list[SiteArithmetic] = []
    for site in a.sites:
        for cpu_name, tpu_name in zip(a.sites[site], b.sites[site], strict=False):
            if cpu_name != tpu_name:  # the TPU kernels are run on the operands captured under the same name
                return Verdict(False, f"the TPU program calls @{tpu_name} where the runnable program calls @{cpu_name}")
            problem = _tpu_site_ok(tpu, tpu_name)
            if problem:
                return Verdict(False, problem)
            t_mm, t_other, t_data = site_work("tpu", tpu, tpu_name)
            c_mm, c_other, c_data = site_work("cpu", runnable, cpu_name)
            loose = t_data or c_data
            per_site.append(SiteArithmetic(tpu_name, t_mm, c_mm, t_other, c_other, loose))
            why = _arithmetic_differs(t_mm, t_other, c_mm, c_other, loose)
            why = why or kernels.mismatch(runnable, cpu_name, tpu, tpu_name, bounds)
            if why:
                return Verdict(False, f"kernel @{tpu_name}: {why}", per_site, outside_same=True)
    said = f"same program outside {len(per_site)} kernel site(s), each the interpreted kernel"
    return Verdict(True, said, per_site, outside_same=True)


def _arithmetic_differs(t_mm: float, t_other: float, c_mm: float, c_other: float, loose: bool) -> str | None:
    """Why the two kernels' arithmetic differs (None: it agrees). `loose`: a side's counts depend on data
    (loops of unknown length, branches on inputs, a dynamic grid), so only the order of magnitude is compared."""
    biggest = max(t_mm, c_mm)
    if (t_mm > 0) != (c_mm > 0) or biggest > 0 and not loose and abs(t_mm - c_mm) > MATMUL_TOLERANCE * biggest:
        return f"the Mosaic kernel does {t_mm:.3g} matmul FLOPs, its interpreted twin {c_mm:.3g}"
    if biggest > 0 and loose and biggest / min(t_mm, c_mm) > LOOSE_FACTOR:
        return f"the Mosaic kernel does {t_mm:.3g} matmul FLOPs, its interpreted twin {c_mm:.3g} (data-dependent)"
    floor = OTHER_FLOOR_SHARE * max(biggest + max(t_other, c_other), 1.0)
    lo, hi = sorted((t_other, c_other))
    if hi > floor and (lo <= 0 or hi / lo > (LOOSE_FACTOR * OTHER_FACTOR if loose else OTHER_FACTOR)):
        return f"the Mosaic kernel does {t_other:.3g} other FLOPs, its interpreted twin {c_other:.3g}"
    return None
