"""Hand-tuned Pallas reference (harness entry point, `with_pallas_reference`) for 3p_MLA_Attention: the library kernel and its adapter live in pallas_refs/mla_attention.py."""

from pallas_refs.mla_attention import workload as _reference


def workload(*inputs):
    return _reference(*inputs)
