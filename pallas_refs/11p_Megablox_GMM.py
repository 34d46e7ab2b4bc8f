"""Hand-tuned Pallas reference (harness entry point, `with_pallas_reference`) for 11p_Megablox_GMM: the library kernel and its adapter live in pallas_refs/megablox_gmm.py."""

from pallas_refs.megablox_gmm import workload as _reference


def workload(*inputs):
    return _reference(*inputs)
