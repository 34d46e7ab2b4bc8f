"""Attacks on the reserved kinds (issue 40, section 5): a reference figure is read only from listed submissions.

Each attack is one way a stranger could make their kernel the "hand-tuned" (or XLA baseline) reference every other
submission is read against; each is caught by validation, by the pull request's scope check, or by the SQL.
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from bench.dataset import reserved, schema, store
from bench.dataset.metrics import Metrics
from bench.dataset.pr_scope import scope
from bench.dataset.validate import check
from bench.paths import SUBMISSIONS_DIR

TRACK, T0 = "v6e/full", dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _copy(src: str, dst: Path, **changes: object) -> Path:
    """A copy of a shipped submission under another id, its submission.yaml edited with `changes`."""
    shutil.copytree(SUBMISSIONS_DIR / src, dst, ignore=shutil.ignore_patterns("__pycache__"))
    meta = yaml.safe_load((dst / "submission.yaml").read_text())
    (dst / "submission.yaml").write_text(yaml.safe_dump({**meta, **changes}, sort_keys=False))
    return dst


def _kind_problems(folder: Path) -> list[str]:
    _, problems = check(folder)
    return [p.message for p in problems if p.field == "kind"]


def test_the_list_names_the_shipped_references():
    allowed = reserved.listed()
    assert allowed["hand-tuned-pallas"] == "hand-tuned" and allowed["xla-baseline"] == "baseline"
    for sub, kind in allowed.items():
        if (SUBMISSIONS_DIR / sub / "submission.yaml").exists():
            assert yaml.safe_load((SUBMISSIONS_DIR / sub / "submission.yaml").read_text())["kind"] == kind


@pytest.mark.parametrize("kind", reserved.RESERVED_KINDS)
def test_a_strangers_reserved_kind_is_refused(tmp_path, kind):
    folder = _copy("jaxbench-team-pallas", tmp_path / "stranger", kind=kind)
    (msg,) = _kind_problems(folder)
    assert f"kind {kind!r} is reserved" in msg and reserved.LIST_RELPATH in msg and "use kind 'agent'" in msg


def test_the_same_folder_as_human_is_accepted(tmp_path):
    assert _kind_problems(_copy("jaxbench-team-pallas", tmp_path / "stranger", kind="human")) == []


def test_a_renamed_copy_of_the_listed_submission_is_refused(tmp_path):
    """Same kernels, same name, same kind: only the id differs, and the id is what the maintainers listed."""
    (msg,) = _kind_problems(_copy("hand-tuned-pallas", tmp_path / "hand-tuned-pallas-v2"))
    assert "'hand-tuned' is reserved" in msg and "hand-tuned-pallas" in msg


@pytest.mark.parametrize(
    "name",
    [
        "Hand-tuned Pallas (Tokamax / JAX Pallas ops)",
        "HAND TUNED pallas v2",
        "Ｈａｎｄ－ｔｕｎｅｄ kernels",
        "XLA baseline",
        "H\u0430nd-tuned Pallas (Tokamax / JAX Pallas ops)",  # a Cyrillic a: folds to no Latin letter
        "XLA b\u0430seline",
    ],
)
def test_a_strangers_name_that_claims_a_reserved_kind_is_refused(tmp_path, name):
    """Red team, stop 62: a `kind: human` copy named exactly like the hand-tuned reference was accepted; the ranking
    keys on the id, but a reader goes by the name. Full-width letters read as the same name."""
    _, problems = check(_copy("jaxbench-team-pallas", tmp_path / "stranger", kind="human", name=name))
    assert [p.field for p in problems] == ["name"], problems
    assert any(why in problems[0].message for why in ("claims the reserved kind", "mixes alphabets")), problems
    own_names = ("Tuned by hand", "Ручная настройка Pallas", "αβ kernels (Greek letters)", "日本語のカーネル")
    for i, own in enumerate(own_names):
        assert check(_copy("jaxbench-team-pallas", tmp_path / f"own{i}", kind="human", name=own))[1] == [], own


def test_a_listed_id_with_another_reserved_kind_is_refused(tmp_path):
    """The listing is of (id, kind): the hand-tuned submission cannot turn itself into the XLA baseline."""
    assert reserved.kind_problem("hand-tuned-pallas", "baseline", reserved.listed()) is not None
    assert reserved.kind_problem("hand-tuned-pallas", "hand-tuned", reserved.listed()) is None


@pytest.mark.parametrize(
    "changed,needle",
    [
        ([reserved.LIST_RELPATH], "the list of reserved-kind submissions"),  # a PR that lists itself
        ([reserved.LIST_RELPATH, "submissions/mine/submission.yaml"], "the list of reserved-kind submissions"),
        (["submissions/hand-tuned-pallas/kernels/8p_GEMM.py"], "submissions/hand-tuned-pallas/: a listed hand-tuned"),
        (["submissions/xla-baseline/submission.yaml"], "a listed baseline submission"),  # slow down the XLA row
    ],
)
def test_a_pull_request_that_touches_the_list_or_a_listed_folder_fails_its_scope(changed, needle):
    sub_id, problems = scope(changed)
    assert sub_id is None and any(needle in p for p in problems), problems


def test_an_ordinary_submission_pull_request_is_still_in_scope():
    assert scope(["submissions/mine/submission.yaml", "submissions/mine/kernels/8p_GEMM.py"]) == ("mine", [])


def test_the_list_file_refuses_a_kind_that_is_not_reserved(tmp_path):
    bad = tmp_path / "list.yaml"
    bad.write_text("mine: agent\n")
    with pytest.raises(ValueError, match="expected a mapping"):
        reserved.listed(bad)


# -- the SQL: a row stored by other means (never validated) still supplies no reference figure -------------------
def _row(sub: str, wid: str, speedup: float) -> dict:
    return {n: None for n in schema.RESULTS.names} | dict(
        schema_version=1,
        track=TRACK,
        chip="v6e",
        size="full",
        submission=sub,
        workload=wid,
        status="correct",
        correct=True,
        baseline_ms=2.0,
        kernel_ms=2.0 / speedup,
        speedup=speedup,
        has_pallas=True,
        flags=[],
        content_hash="h",
        evaluated_at=T0,
        provenance="measured",
    )


def _data(tmp_path: Path, stranger_kind: str) -> Path:
    rows = [_row("hand-tuned-pallas", "a", 1.18), _row("xla-baseline", "a", 1.0), _row("stranger", "a", 0.2)]
    store.write_atomic(pa.Table.from_pylist(rows, schema=schema.RESULTS), tmp_path / "results" / "rows.parquet")
    for sub, kind in (("hand-tuned-pallas", "hand-tuned"), ("xla-baseline", "baseline"), ("stranger", stranger_kind)):
        meta = {n: None for n in schema.SUBMISSIONS.names} | {
            "submission": sub,
            "kind": kind,
            "name": sub,
            "recorded_at": T0,
        }
        store.write_atomic(
            pa.Table.from_pylist([meta], schema=schema.SUBMISSIONS), store.submission_meta_path(tmp_path, sub)
        )
    return tmp_path


@pytest.mark.parametrize("stranger_kind", ["agent", "hand-tuned"])
def test_a_stored_strangers_hand_tuned_row_does_not_move_the_reference(tmp_path, stranger_kind):
    m = Metrics(_data(tmp_path, stranger_kind), suite=["a"])
    (ref,) = [r for r in m.per_kernel_table(TRACK) if r.submission == "hand-tuned-pallas"]
    assert ref.hand_tuned_speedup == pytest.approx(1.18)  # the median of 1.18 and 0.2 would be 0.69
    board = {r.submission: r for r in m.leaderboard(TRACK)}
    assert board["stranger"].kind == ("unlisted" if stranger_kind == "hand-tuned" else "agent")


def test_a_stored_strangers_baseline_row_is_ranked_not_the_sanity_row(tmp_path):
    board = {r.submission: r for r in Metrics(_data(tmp_path, "baseline"), suite=["a"]).leaderboard(TRACK)}
    assert board["xla-baseline"].rank is None and board["stranger"].kind == "unlisted"
    assert board["stranger"].rank is not None
