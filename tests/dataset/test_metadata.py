"""submission.yaml as a pydantic model (bench/dataset/metadata.py): typed values for ingest, and pydantic's errors
turned into the messages a submitter reads, in a stable order."""

from __future__ import annotations

import pytest

from bench.dataset.metadata import OPTIONAL, REQUIRED, SubmissionMeta, parse_meta

from .conftest import good_meta

FILE = "submissions/s/submission.yaml"


def _messages(meta) -> list[str]:
    typed, problems = parse_meta(meta, FILE)
    assert typed is None
    return [str(p).removeprefix(f"{FILE}: ") for p in problems]


def test_valid_metadata_is_typed():
    typed, problems = parse_meta(good_meta(trajectory={"track": "cpu/small"}), FILE)
    assert problems == [] and isinstance(typed, SubmissionMeta)
    assert typed.model.name == "m" and typed.model.version == "1" and typed.samples_per_workload == 4
    assert typed.trajectory is not None and typed.trajectory.chip_and_size() == ("cpu", "small")
    assert typed.trajectory.file is None and typed.notes is None and typed.workloads is None


def test_required_and_optional_fields_come_from_the_model():
    assert set(REQUIRED) == set(good_meta()) - {"links"}
    assert set(OPTIONAL) == {"links", "maintainers", "workloads", "trajectory", "notes", "agent_run"}


def test_problems_in_order_missing_unknown_values_model_trajectory():
    meta = good_meta(contact=3, zz=1, model={"name": "", "extra": 1}, trajectory={"track": "tpu", "x": 0})
    del meta["license"], meta["date"]
    msgs = _messages(meta)
    assert msgs[-1].startswith("trajectory.track: expected <chip>/<size> with chip one of ")
    assert msgs[-1].endswith("(e.g. v6e/full), got 'tpu'")
    assert msgs[:-1] == [
        "date: required field is missing; add it",
        "license: required field is missing; add it",
        f"zz: unknown field; remove it or fix its spelling (allowed: {sorted(REQUIRED + OPTIONAL)})",
        "contact: expected a string, got int (3); quote it",
        "model.name: must not be empty",
        "model.version: expected a string, got NoneType",
        "model.extra: unknown field (allowed: name, version)",
        "trajectory.x: unknown field (allowed: file, track)",
    ]


@pytest.mark.parametrize("key,shown", [(7, "7"), (None, "None"), (True, "True"), ("na\x01me", "na\\x01me")])
def test_keys_that_are_not_names_are_unknown_fields(key, shown):
    msgs = _messages({**good_meta(), key: "x"})
    assert len(msgs) == 1 and msgs[0].startswith(f"{shown}: unknown field; remove it")


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("notes", None, "notes: expected a string, got NoneType"),
        ("links", None, "links: expected a non-empty list of strings, got NoneType"),
        ("workloads", [], "workloads: expected a non-empty list of strings, got list"),
        ("trajectory", [], "trajectory: expected a mapping {file: trajectory.csv, track: v6e/full}, got list"),
        (
            "trajectory",
            {"track": "cpu/small", "file": None},
            "trajectory.file: expected a relative path inside the submission folder, got None",
        ),
        ("samples_per_workload", True, "samples_per_workload: expected an integer, got bool (True)"),
        ("kind", "robot", "kind: expected one of ['agent', 'human', 'hand-tuned', 'baseline'], got str ('robot')"),
        (
            "maintainers",
            ["alice", "-bob"],
            "maintainers: every maintainer must be a GitHub login (1 to 39 letters, digits or inner hyphens), "
            "got '-bob'",
        ),
        (
            "maintainers",
            ["a" * 40],
            "maintainers: every maintainer must be a GitHub login (1 to 39 letters, digits or inner hyphens), got '"
            + "a" * 40
            + "'",
        ),
    ],
)
def test_value_messages(field, value, message):
    assert _messages(good_meta(**{field: value})) == [message]


def test_null_trajectory_and_empty_links_are_absent():
    typed, problems = parse_meta(good_meta(trajectory=None, links=[]), FILE)
    assert problems == [] and typed is not None and typed.trajectory is None and typed.links == []


def test_not_a_mapping():
    assert _messages(["a"]) == ["(top level): expected a mapping of fields, got list"]
