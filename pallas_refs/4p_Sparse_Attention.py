"""Hand-tuned Pallas reference (harness entry point, `with_pallas_reference`) for 4p_Sparse_Attention: the library kernel and its adapter live in pallas_refs/sparse_attention.py."""

from pallas_refs.sparse_attention import workload as _reference


def workload(*inputs):
    return _reference(*inputs)
