"""Hand-tuned Pallas references for the 8 priority kernels (the paper's expert upper bound, Table 3).

Each module adapts a maintained library kernel (jax.experimental.pallas.ops.tpu, tokamax) to its workload's
exact inputs and output; block sizes come from `pallas_refs/tuned/<chip>.yaml` (see `pallas_refs.tables`).
"""

from __future__ import annotations

import importlib

from pallas_refs.reference import Reference

MODULES = {
    "1p_Flash_Attention": "pallas_refs.flash_attention",
    "2p_GQA_Attention": "pallas_refs.gqa_attention",
    "3p_MLA_Attention": "pallas_refs.mla_attention",
    "4p_Sparse_Attention": "pallas_refs.sparse_attention",
    "6p_Paged_Attention": "pallas_refs.paged_attention",
    "7p_Ragged_Paged_Attention": "pallas_refs.ragged_paged_attention",
    "8p_GEMM": "pallas_refs.gemm",
    "11p_Megablox_GMM": "pallas_refs.megablox_gmm",
}


def resolve(name: str) -> str:
    """Full workload id from an id or its prefix ("8p")."""
    if name in MODULES:
        return name
    hits = [w for w in MODULES if w.split("_", 1)[0] == name or w.startswith(name)]
    if len(hits) != 1:
        raise KeyError(f"no hand-tuned reference for {name!r}; references exist for {sorted(MODULES)}")
    return hits[0]


def load(name: str) -> Reference:
    return importlib.import_module(MODULES[resolve(name)]).REFERENCE
