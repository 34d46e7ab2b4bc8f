"""Fixtures of the dataset tests: tiny submissions over a fixed workload list."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

FAKE_EVALUATOR = f"{Path(__file__).with_name('fake_evaluator.py')}:evaluate"
WORKLOADS = ["1p_Flash_Attention", "8p_GEMM", "12p_RMSNorm"]


def good_meta(**over) -> dict:
    meta = {
        "name": "Test method",
        "kind": "agent",
        "method": "best-of-N",
        "model": {"name": "m", "version": "1"},
        "agent_framework": "none",
        "authors": ["A. Author"],
        "contact": "a@example.org",
        "date": "2026-01-01",
        "samples_per_workload": 4,
        "selection_rule": "fastest correct",
        "human_in_the_loop": False,
        "target_hardware": "v6e",
        "links": ["https://example.org"],
        "license": "Apache-2.0",
    }
    meta.update(over)
    return meta


def make_submission(root: Path, sub_id: str, kernels: dict[str, str], meta: dict | None = None) -> Path:
    d = root / sub_id
    (d / "kernels").mkdir(parents=True)
    (d / "submission.yaml").write_text(yaml.safe_dump(meta or good_meta()))
    for wid, body in kernels.items():
        (d / "kernels" / f"{wid}.py").write_text(f"def workload(*xs):\n    return xs[0]\n{body}\n")
    return d


@pytest.fixture
def known() -> set[str]:
    return set(WORKLOADS)


@pytest.fixture
def meta_factory():
    """good_meta(**overrides): a valid submission.yaml mapping."""
    return good_meta


@pytest.fixture
def submission_factory():
    """make_submission(root, id, {workload: extra source}, meta=None) -> folder."""
    return make_submission
