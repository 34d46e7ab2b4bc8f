"""Trajectory v2's fields from `bench agent run` (lowering, coverage, per-sample times): optional, bounded, and
files written before they existed still valid."""

from __future__ import annotations

import json

import pytest

from bench.dataset.trajectory import parse

BASE = {"sample": 0, "chain": 0, "turn": 0, "source": "def workload(x):\n    return x\n"}


def _problems(**fields) -> list:
    line = json.dumps({**BASE, **fields}).encode() + b"\n"
    return parse(line, "8p_GEMM", "t.jsonl").problems


def test_files_without_the_new_fields_stay_valid():
    assert _problems() == [] and _problems(declared={"outcome": "correct", "speedup": 1.5}) == []


def test_new_fields_are_read():
    line = json.dumps(
        {
            **BASE,
            "declared": {"outcome": "correct", "speedup": 2, "lowers": False, "pallas_coverage": 1},
            "wall_time_s": 41,
            "model_latency_s": 12.5,
        }
    ).encode()
    traj = parse(line, "8p_GEMM", "t.jsonl").trajectory
    s = traj.samples[0]
    assert (s.wall_time_s, s.model_latency_s, s.declared.lowers, s.declared.pallas_coverage) == (41.0, 12.5, False, 1.0)


@pytest.mark.parametrize(
    "fields,where",
    [
        ({"wall_time_s": -1.0}, "wall_time_s"),
        ({"model_latency_s": "fast"}, "model_latency_s"),
        ({"wall_time_s": 1e12}, "wall_time_s"),
        ({"declared": {"outcome": "correct", "pallas_coverage": 1.5}}, "declared.pallas_coverage"),
        ({"declared": {"outcome": "correct", "lowers": "yes"}}, "declared.lowers"),
    ],
)
def test_bad_values_are_problems_naming_the_field(fields, where):
    problems = _problems(**fields)
    assert problems and problems[0].field == where


def test_non_finite_times_are_refused():
    line = b'{"sample": 0, "chain": 0, "turn": 0, "source": "x = 1", "wall_time_s": NaN}\n'
    assert parse(line, "8p_GEMM", "t.jsonl").problems
