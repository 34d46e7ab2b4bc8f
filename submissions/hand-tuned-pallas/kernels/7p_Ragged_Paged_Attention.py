"""Submission 'Hand-tuned Pallas (Tokamax / JAX Pallas ops)' for 7p_Ragged_Paged_Attention: the library kernel and its adapter live in pallas_refs/ragged_paged_attention.py."""

from pallas_refs.ragged_paged_attention import workload as _reference


def workload(*inputs):
    return _reference(*inputs)
