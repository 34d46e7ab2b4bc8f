"""Static tripwires: each family fires on the construct it names, honest kernels stay clean."""

from pathlib import Path

import pytest

from bench.integrity.static_scan import scan_details, scan_source

KERNELS = Path(__file__).parents[1] / "adversarial" / "kernels"

CASES = {
    "import sys\nf = sys._getframe(1).f_back": "static:frame_inspection",
    "import sys\nf = getattr(sys, '_getframe')": "static:frame_inspection",
    "import inspect": "static:frame_inspection",
    "import gc\nobjs = gc.get_objects()": "static:introspection",
    "import sys\nm = sys.modules['bench']": "static:introspection",
    "import ctypes": "static:native_memory",
    "import jax\njax.config.update('jax_enable_x64', True)": "static:jax_config",
    "from jax import config": "static:jax_config",
    "import os\nos.environ['XLA_FLAGS'] = ''": "static:environment",
    "import threading": "static:threads",
    "from concurrent.futures import ThreadPoolExecutor": "static:threads",
    "import subprocess": "static:subprocess",
    "import os\nos.system('ls')": "static:subprocess",
    "data = open('x').read()": "static:file_access",
    "import numpy as np\na = np.load('x.npy')": "static:file_access",
    "import socket": "static:network",
    "import urllib.request": "static:network",
    "import bench.harness.parent.evaluate": "static:harness_import",
    "from . import helper": "static:harness_import",
    "import importlib\nw = importlib.import_module('workloads.8p_GEMM')": "static:workload_import",
    "import time\ntime.perf_counter = lambda: 0.0": "static:timer_patch",
    "import time\nsetattr(time, 'perf_counter', None)": "static:timer_patch",
    "import jax\njax.jit = None": "static:monkeypatch",
    "import jax\nwith jax.profiler.TraceAnnotation('jit_x'):\n    pass": "static:profiler",
    "import jax\ny = jax.pure_callback(f, s, x)": "static:host_callback",
    "from jax.experimental import io_callback": "static:host_callback",
    "import jax\njax.debug.callback(print, 1)": "static:host_callback",
    "import jax\nr = jax.ffi.ffi_call('t', s)": "static:native_call",
    "import os\nos._exit(0)": "static:exit",
    "raise SystemExit(0)": "static:exit",
    "exec('x = 1')": "static:exit" if False else "static:dynamic_code",
    "n = [0]\ndef f():\n    n[0] += 1": "static:mutable_state",
    "c = {}\ndef f(a):\n    c.setdefault(id(a), 1)": "static:mutable_state",
    "def f():\n    global N": "static:mutable_state",
}


@pytest.mark.parametrize("source,flag", CASES.items())
def test_tripwire(source: str, flag: str) -> None:
    assert flag in scan_source(source)


def test_honest_kernels_are_clean() -> None:
    for stem in ("honest_pallas_gemm", "honest_baseline_copy", "attack_no_pallas", "attack_lazy_output"):
        assert scan_source((KERNELS / f"{stem}.py").read_text()) == [], stem


def test_common_kernel_idioms_do_not_trip() -> None:
    source = '''
import functools, math
import jax, jax.numpy as jnp
import numpy as np
from jax.experimental import pallas as pl
from jax.experimental.pallas import tpu as pltpu

CONFIG = {"block": 128}

def kernel(x_ref, o_ref, *, scale):
    x = pl.load(x_ref, (slice(None),))
    o_ref[...] = jnp.exp(x * scale) / math.sqrt(2.0)

@functools.partial(jax.jit, static_argnames=("scale",))
def workload(x, scale=1.0):
    """Compile with the interpret flag; see docs, load the block, walk the grid."""
    config = dict(CONFIG)
    out = pl.pallas_call(functools.partial(kernel, scale=scale), out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                         compiler_params=pltpu.CompilerParams(dimension_semantics=("parallel",)))(x)
    return jnp.asarray(out, dtype=np.float32).astype(x.dtype).reshape(x.shape)
'''
    assert scan_source(source) == []


def test_details_carry_lines_and_unparsable_source_is_silent() -> None:
    found = scan_details("import jax\n\nimport socket\n")
    assert [(f.flag, f.line) for f in found] == [("static:network", 3)]
    assert scan_source("def broken(:\n") == []


def test_module_table_entry_assignment_is_a_monkeypatch() -> None:
    assert "static:monkeypatch" in scan_source("import bench.harness.worker as w\nw.COMMANDS['finish'] = None")


def test_shipped_submissions_are_clean() -> None:
    """No false flag on the honest submissions in the repo (their kernels may import pallas_refs)."""
    from bench.paths import SUBMISSIONS_DIR

    kernels = sorted(SUBMISSIONS_DIR.glob("*/kernels/*.py"))
    assert kernels
    flagged = {str(p): scan_source(p.read_text()) for p in kernels if scan_source(p.read_text())}
    assert flagged == {}
