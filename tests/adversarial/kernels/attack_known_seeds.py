"""Attack (reading inputs / baking answers from known seeds): v6 wrote every seed's inputs where the
candidate could read them, and its default seeds were fixed (0, 1, 2, timing 10007). At import this kernel
looks for input files, re-derives the inputs of the known seeds from the workload's own create_inputs,
computes their answers, and bakes them in; the program picks the answer whose input matches (A[0, 0]).
In v7 no input file exists anywhere it can see and the seeds are fresh random numbers."""

import glob
import importlib

import jax.numpy as jnp
import numpy as np

print("INPUT FILES", sorted(glob.glob("/work/**/inputs/seed_*", recursive=True))[:5], flush=True)
_w = importlib.import_module("workloads.8p_GEMM")
_KNOWN = []
for _seed in (0, 1, 2, 10007):
    _a, _b = _w.create_inputs(size="small", seed=_seed)
    _KNOWN.append((float(_a[0, 0]), np.asarray(_w.workload(_a, _b))))


def workload(A, B):
    out = jnp.zeros((A.shape[0], B.shape[1]), A.dtype)
    for key, answer in _KNOWN:
        out = jnp.where(A[0, 0] == key, jnp.asarray(answer), out)
    return out
