"""The context pack: its API reference names only what the installed jax has; selection by family; size printed."""

from __future__ import annotations

import importlib
import json
import re
import types

from typer.testing import CliRunner

from bench.agent import context
from bench.app import app
from bench.cli import main  # noqa: F401  registers every command
from bench.registry import spec as workload_spec
from bench.registry import workload_ids

_NAME = re.compile(r"\b(pl|pltpu)\.([A-Za-z_]\w*)")
_MODULES = {"pl": "jax.experimental.pallas", "pltpu": "jax.experimental.pallas.tpu"}


def _missing(text: str) -> list[str]:
    return sorted(
        {
            f"{short}.{name}"
            for short, name in _NAME.findall(text)
            if not hasattr(importlib.import_module(_MODULES[short]), name)
        }
    )


def test_api_reference_lists_only_names_of_the_installed_jax():
    entries = context.api_reference()
    assert len(entries) > 80
    for e in entries:
        assert hasattr(importlib.import_module(e.module), e.name), f"{e.module}.{e.name}"
    # and the names are the modules' public ones, none left out (submodules, which other imports add, are skipped)
    for modname in _MODULES.values():
        mod = importlib.import_module(modname)
        public = {n for n in dir(mod) if not n.startswith("_") and not isinstance(getattr(mod, n), types.ModuleType)}
        assert {e.name for e in entries if e.module == modname} == public


def test_every_pallas_name_the_pack_mentions_exists():
    pack = context.build("v6e")
    assert _missing(pack.rules) == []
    for w in ("8p_GEMM", "1p_Flash_Attention", "6p_Paged_Attention", "41k_Gemm_Add_ReLU", "12p_RMSNorm"):
        text = pack.text(w, workload_spec(w).family)
        api = text[text.index("## Pallas API") : text.index("## Code examples")]
        assert _missing(api) == [], w


def test_selection_is_by_family_and_deterministic():
    gemm = context.select("41k_Gemm_Add_ReLU", workload_spec("41k_Gemm_Add_ReLU").family)
    attn = context.select("1p_Flash_Attention", workload_spec("1p_Flash_Attention").family)
    assert "team_fused_matmul" in gemm.examples and "DMA and semaphores" not in gemm.categories
    assert "flash_attention" in attn.examples and "DMA and semaphores" in attn.categories
    assert context.select("41k_Gemm_Add_ReLU", "GEMM + epilogue") == gemm
    pack = context.build("v6e")
    rebuilt = context.build("v6e")
    assert pack.text("41k_Gemm_Add_ReLU", "GEMM + epilogue") == rebuilt.text("41k_Gemm_Add_ReLU", "GEMM + epilogue")
    # a plugged-in filter decides the optional categories
    only_dma = context.select("41k_Gemm_Add_ReLU", "GEMM + epilogue", chooser=lambda w, c: c == "DMA and semaphores")
    assert "DMA and semaphores" in only_dma.categories and "random numbers" not in only_dma.categories


def test_every_workload_gets_examples_that_exist():
    for w in workload_ids():
        sel = context.select(w, workload_spec(w).family)
        assert sel.examples and all(context.EXAMPLES[k][1].is_file() for k in sel.examples), w


def test_version_names_jax_and_is_reproducible():
    a, b = context.build("v6e"), context.build("v6e")
    assert a.version == b.version and a.version.startswith(f"v{context.CONTEXT_VERSION}+jax{context.jax_version()}+")


def test_command_writes_the_pack_and_prints_its_size(tmp_path):
    res = CliRunner().invoke(app, ["agent", "context", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert re.search(r"total\s+\d+\.\d KiB", res.output) and "per workload" in res.output
    doc = json.loads((tmp_path / "pack.json").read_text())
    assert doc["jax_version"] == context.jax_version() and set(doc["selection"]) == set(workload_ids())
    assert (tmp_path / "workloads" / "8p_GEMM.md").read_text().startswith("# Context pack ")
