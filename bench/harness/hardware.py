"""Which chip are we on, and what are its peaks? One table, with the source of every number.

`device_kind` strings differ from marketing names ("TPU v6 lite" is v6e, "TPU v5 lite" is v5e), and
the original harness matched substrings that real chips never report (spec §2.5), so normalization
is explicit here and tested against recorded strings.
"""

from __future__ import annotations

import importlib.metadata
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ChipSpec:
    chip: str
    peak_bf16_tflops: float
    hbm_gb_s: float
    source: str
    nominal: bool = False  # True: an order-of-magnitude value, not a data-sheet peak
    # Prompt facts (bench prompt's preamble), None where no source we trust states them.
    title: str = ""  # how a prompt names the chip
    vmem_mib: float | None = None
    tensorcores: int | None = None


_TPU_JSON = "MaxKernel auto_agent/tpu_specs.json (spec/upstream-jaxbench.md §2.5)"
CHIPS: dict[str, ChipSpec] = {s.chip: s for s in (
    ChipSpec("v4", 275.0, 1200.0, _TPU_JSON),
    ChipSpec("v5e", 197.0, 819.0, "JAXBench harness/tpu_specs.py (spec §2.5); Google Cloud TPU v5e docs"),
    ChipSpec("v5p", 459.0, 2760.0, _TPU_JSON),
    ChipSpec("v6e", 918.0, 1640.0, "JAXBench paper roofline (paper-results.md); harness/tpu_specs.py uses 1600 GB/s;"
             " VMEM and TensorCores as the paper's Appendix B prompt states them",
             title="TPU v6e (Trillium)", vmem_mib=128.0, tensorcores=8),
    ChipSpec("7x", 2157.0, 7400.0, _TPU_JSON),
    ChipSpec("h100", 989.4, 3350.0, "NVIDIA H100 SXM5 data sheet (dense bf16, HBM3)"),
    ChipSpec("h100_pcie", 756.0, 2000.0, "NVIDIA H100 PCIe data sheet (dense bf16, HBM2e)"),
    ChipSpec("h200", 989.4, 4800.0, "NVIDIA H200 SXM data sheet (dense bf16, HBM3e)"),
    ChipSpec("cpu", 0.2, 20.0, "nominal: 2 x86 cores x ~3 GHz x 32 FLOP/cycle, ~20 GB/s DRAM; not a measured or data-sheet peak",
             nominal=True),
)}

# Ordered: the first pattern that matches the lower-cased device_kind wins.
_KIND_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"tpu\s*v6", "v6e"),  # "TPU v6 lite", "TPU v6e"
    (r"tpu\s*v5\s*(lite|e\b)", "v5e"),  # "TPU v5 lite", "TPU v5e"
    (r"tpu\s*v5", "v5p"),  # "TPU v5p", "TPU v5"
    (r"tpu\s*v4", "v4"),
    (r"tpu\s*7x|tpu7x|ironwood", "7x"),
    (r"h100.*pcie", "h100_pcie"),
    (r"h100", "h100"),
    (r"h200", "h200"),
    (r"^cpu$|^cpu\b", "cpu"),
)


def normalize_chip(device_kind: str) -> str:
    """Map a raw `device_kind` to our chip name; unknown kinds keep a slug of the raw string."""
    kind = device_kind.strip().lower()
    for pattern, chip in _KIND_PATTERNS:
        if re.search(pattern, kind):
            return chip
    return re.sub(r"[^a-z0-9]+", "_", kind).strip("_") or "unknown"


def chip_spec(chip: str) -> ChipSpec | None:
    return CHIPS.get(chip)


def default_size(backend: str) -> str:
    """Production size on accelerators, the CPU-friendly preset elsewhere."""
    return "full" if backend in ("tpu", "gpu") else "small"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """jax / jaxlib / libtpu versions from package metadata (no backend initialization needed)."""
    return {"jax_version": _version("jax") or "unknown", "jaxlib_version": _version("jaxlib") or "unknown",
            "libtpu_version": _version("libtpu") or _version("libtpu-nightly")}


def detect() -> dict[str, str | None]:
    """Backend, device kind and chip of this process's first device. Initializes the jax backend:
    the evaluation parent never calls it (the reference worker does), so it never holds the chip."""
    import jax

    dev = jax.devices()[0]
    return {"backend": dev.platform, "device_kind": dev.device_kind, "chip": normalize_chip(dev.device_kind), **versions()}
