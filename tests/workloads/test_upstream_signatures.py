"""Every workload's `workload(...)` parameters have the original JAXBench's names, in the original's positions.

A kernel written for the original receives its inputs positionally, so the order of `create_inputs` and of
`workload`'s parameters is the contract (issue #17: 17p had center_scale last); the names are what agents and
docs see. The table is tests/workloads/upstream_signatures.md, a committed copy of shared/spec/upstream-signatures.md
(committed so the test does not depend on ../shared being present; when it is, the copy must equal it).
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import jax
import pytest

from bench.paths import ROOT
from bench.registry import load_workload, workload_ids

TABLE = Path(__file__).with_name("upstream_signatures.md")
SHARED = ROOT.parent / "shared" / "spec" / "upstream-signatures.md"


def parse_table(text: str) -> dict[str, list[str]]:
    """{workload id: parameter names in order} from the Markdown table's rows `| id | a, b, c |`."""
    rows = {}
    for line in text.splitlines():
        m = re.fullmatch(r"\|\s*(\d+[pk]_\w+)\s*\|\s*([^|]+?)\s*\|", line.strip())
        if m:
            rows[m.group(1)] = [p.strip() for p in m.group(2).split(",")]
    return rows


UPSTREAM = parse_table(TABLE.read_text())
IDS = list(workload_ids())


def test_table_covers_every_workload():
    assert len(UPSTREAM) == 50
    assert sorted(UPSTREAM) == sorted(IDS)


@pytest.mark.skipif(not SHARED.is_file(), reason="shared/ is not beside the repository")
def test_committed_copy_equals_the_spec():
    assert TABLE.read_text() == SHARED.read_text(), f"{TABLE} is stale: copy {SHARED} over it"


@pytest.mark.parametrize("workload_id", IDS)
def test_workload_parameters_are_upstreams(workload_id):
    params = list(inspect.signature(load_workload(workload_id).workload).parameters)
    assert params == UPSTREAM[workload_id], f"{workload_id}: workload{tuple(params)}, upstream {UPSTREAM[workload_id]}"


@pytest.mark.parametrize("workload_id", IDS)
def test_create_inputs_matches_the_parameters(workload_id):
    """create_inputs returns one input per parameter (abstractly: no arrays drawn)."""
    mod = load_workload(workload_id)
    static = set(getattr(mod, "STATIC_ARGNUMS", ()))
    count = [0]

    def draw():
        inputs = tuple(mod.create_inputs(size="small"))
        count[0] = len(inputs)
        return [x for i, x in enumerate(inputs) if i not in static]

    jax.eval_shape(draw)
    assert count[0] == len(UPSTREAM[workload_id])


def test_17p_inputs_in_upstreams_order_with_upstreams_keys():
    """17p: center_scale is 7th and drawn from key 5 (as upstream), out_proj_w / out_gate_w from keys 6 / 7."""
    mod = load_workload("17p_Triangle_Multiplication")
    inputs = dict(zip(UPSTREAM["17p_Triangle_Multiplication"], mod.create_inputs(size="small"), strict=True))
    keys = jax.random.split(jax.random.key(42), 9)
    c = inputs["center_scale"].shape[0]
    assert inputs["center_scale"].shape == (c,) and inputs["out_gate_w"].shape == (c, c)
    expect_scale = jax.random.normal(keys[5], (c,), dtype=inputs["center_scale"].dtype) * 0.1 + 1.0
    expect_gate = jax.random.normal(keys[7], (c, c), dtype=inputs["out_gate_w"].dtype) * 0.02
    assert bool((inputs["center_scale"] == expect_scale).all())
    assert bool((inputs["out_gate_w"] == expect_gate).all())
