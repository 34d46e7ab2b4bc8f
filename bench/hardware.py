"""Which chip are we on, and what are its peaks? One table, with the source of every number.

`device_kind` strings differ from marketing names ("TPU v6 lite" is v6e, "TPU v5 lite" is v5e), and
the original harness matched substrings that real chips never report, so normalization
is explicit here and tested against recorded strings.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class ChipSpec:
    chip: str
    peak_bf16_tflops: float
    hbm_gb_s: float
    source: str
    nominal: bool = False  # True: an order-of-magnitude value, not a data-sheet peak
    # Prompt facts (bench prompt's preamble), None where no source we trust states them.
    title: str = ""  # how a prompt names the chip
    label: str = ""  # short display name (the site's track titles, `bench info`); chip_label() falls back to CHIP
    vmem_mib: float | None = None
    tensorcores: int | None = None

    @property
    def peaks(self) -> tuple[float, float]:
        """(FLOP/s, bytes/s): the bf16 peak and the memory bandwidth, in the units the work counts are in."""
        return self.peak_bf16_tflops * 1e12, self.hbm_gb_s * 1e9


_TPU_JSON = "MaxKernel auto_agent/tpu_specs.json, as the original JAXBench cites it"
CHIPS: dict[str, ChipSpec] = {
    s.chip: s
    for s in (
        ChipSpec("v4", 275.0, 1200.0, _TPU_JSON, label="TPU v4"),
        ChipSpec(
            "v5e",
            197.0,
            819.0,
            "the original JAXBench's harness/tpu_specs.py; Google Cloud TPU v5e docs",
            label="TPU v5e",
        ),
        ChipSpec("v5p", 459.0, 2760.0, _TPU_JSON, label="TPU v5p"),
        ChipSpec(
            "v6e",
            918.0,
            1640.0,
            "the JAXBench paper's roofline; the original's harness/tpu_specs.py uses 1600 GB/s;"
            " VMEM and TensorCores as the paper's Appendix B prompt states them",
            title="TPU v6e (Trillium)",
            vmem_mib=128.0,
            tensorcores=8,
            label="TPU v6e",
        ),
        ChipSpec("7x", 2157.0, 7400.0, _TPU_JSON, label="TPU 7x"),
        ChipSpec("h100", 989.4, 3350.0, "NVIDIA H100 SXM5 data sheet (dense bf16, HBM3)"),
        ChipSpec("h100_pcie", 756.0, 2000.0, "NVIDIA H100 PCIe data sheet (dense bf16, HBM2e)"),
        ChipSpec("h200", 989.4, 4800.0, "NVIDIA H200 SXM data sheet (dense bf16, HBM3e)"),
        ChipSpec(
            "cpu",
            0.2,
            20.0,
            "nominal: 2 x86 cores x ~3 GHz x 32 FLOP/cycle, ~20 GB/s DRAM; not a measured or data-sheet peak",
            nominal=True,
            label="CPU interpret",
        ),
    )
}

#: Device files of accelerator chips: their presence says a worker's jax would use a TPU / GPU (schedule).
TPU_DEVICE_GLOBS = ("/dev/accel*", "/dev/vfio/[0-9]*")  # v4/v5e: /dev/accel*; newer TPU VMs: vfio groups
GPU_DEVICE_GLOBS = ("/dev/nvidia[0-9]*",)


#: Cloud TPU VMs name their slice in TPU_ACCELERATOR_TYPE ("v5litepod-4", "v6e-8", "v5p-8", "v4-8", "tpu7x-8").
_ACCELERATOR_TYPES = (
    ("v5litepod", "v5e"),
    ("v5e", "v5e"),
    ("v6e", "v6e"),
    ("v5p", "v5p"),
    ("v4", "v4"),
    ("tpu7x", "7x"),
)
#: PCI device ids of Google's TPU chips (vendor 0x1ae0), where the variable is unset (a lent v5e: 0x0063).
_TPU_PCI_IDS = {"0x005e": "v4", "0x0062": "v5p", "0x0063": "v5e", "0x006f": "v6e"}


def tpu_chip(environ: Mapping[str, str] | None = None, pci_root: Path = Path("/sys/bus/pci/devices")) -> str | None:
    """This host's TPU chip, read without jax: the build lowers for a TPU it never opens (its jax runs on CPU),
    so the parent names the chip for Mosaic's target parameters and the tuned tables. TPU_ACCELERATOR_TYPE's
    prefix, else the PCI id of Google's chips; None where neither says."""
    kind = (os.environ if environ is None else environ).get("TPU_ACCELERATOR_TYPE", "").lower()
    for prefix, chip in _ACCELERATOR_TYPES:
        if kind.startswith(prefix + "-"):
            return chip
    for device in sorted(pci_root.glob("*")) if pci_root.is_dir() else []:
        try:  # Google's other PCI devices (gVNIC, 0x0042) share the vendor: only a known TPU id decides
            if (device / "vendor").read_text().strip() == "0x1ae0":
                found = _TPU_PCI_IDS.get((device / "device").read_text().strip())
                if found:
                    return found
        except OSError:
            continue
    return None


def mosaic_device_kind(chip: str) -> str:
    """The `device_kind` a TPU of `chip` reports, as Mosaic's lowering reads it ("TPU v5e", "TPU7x")."""
    return "TPU7x" if chip == "7x" else f"TPU {chip}"


def chip_label(chip: str) -> str:
    """How people read a chip's name: "TPU v6e", "CPU interpret"; unknown chips upper-cased."""
    spec = CHIPS.get(chip)
    return spec.label if spec and spec.label else chip.upper()


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
    """The one default size rule: the CPU-friendly preset on CPU, production size on accelerators. `backend`
    may also be a track's chip name (the CPU track's chip is "cpu")."""
    return "small" if backend == "cpu" else "full"


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str | None]:
    """jax / jaxlib / libtpu versions from package metadata (no backend initialization needed)."""
    return {
        "jax_version": _version("jax") or "unknown",
        "jaxlib_version": _version("jaxlib") or "unknown",
        "libtpu_version": _version("libtpu") or _version("libtpu-nightly"),
    }


def host_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The host's CPU model, from /proc/cpuinfo where Linux has it, with x86's family and model ("AMD EPYC (family 25,
    model 17)"; the vendor id where the model name reads "unknown", as on a TPU v5e host). Why: a CPU row's chip is
    `cpu` whatever the host, and the same kernels' speedups moved by 1.5x or more between two hosts of this project (a
    bf16 matrix unit on one), so a row says which CPU measured it."""
    try:
        text = cpuinfo.read_text(errors="replace").split("\n\n")[0]  # the first processor's
    except OSError:
        text = ""
    fields = {k.strip(): " ".join(v.split()) for k, _, v in (line.partition(":") for line in text.splitlines())}
    name = fields.get("model name") or fields.get("Model") or fields.get("cpu model")
    if name in (None, "", "unknown"):  # a TPU VM's cpuinfo says "unknown": its vendor still names the line
        name = fields.get("vendor_id") or name
    if name:  # a VM may say only "AMD EPYC": x86's family and model tell its generations apart
        family, model = fields.get("cpu family"), fields.get("model")
        return (f"{name} (family {family}, model {model})" if family and model else name)[:200]
    import platform  # lazily: only where /proc/cpuinfo names no model

    return platform.processor() or platform.machine() or None


def detect() -> dict[str, str | None]:
    """Backend, device kind and chip of this process's first device, and the host's CPU. Initializes the jax backend:
    the evaluation parent never calls it (the runner does), so it never holds the chip."""
    import jax  # lazily: the parent imports this module and must never start a jax backend

    dev = jax.devices()[0]
    return {
        "backend": dev.platform,
        "device_kind": dev.device_kind,
        "chip": normalize_chip(dev.device_kind),
        "host_cpu": host_cpu(),
        **versions(),
    }


def detect_in_subprocess() -> dict[str, str | None]:
    """`detect()` run in a child process: what a parent that must never hold the accelerator (ingest, tune,
    the evaluation parent) uses to learn the backend and chip."""
    code = "import json; from bench.hardware import detect; print(json.dumps(detect()))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    found: dict[str, str | None] = json.loads(out.stdout.strip().splitlines()[-1])
    return found
