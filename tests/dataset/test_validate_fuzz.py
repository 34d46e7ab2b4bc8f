"""Property: whatever folder a stranger submits, the reader and validator only ever report validation problems.

Hypothesis generates small folders: random trees of files, folders, symlinks (inside, outside, dangling, loops,
devices) and FIFOs, with names a submission would use or should not, and contents that are random bytes,
mutated valid metadata, YAML fragments (anchors, aliases, tags, merges, deep nesting), trajectory CSVs and
Python. For each one, `check` must return (submission, []) or (None, problems) without raising, within 100 MB
(tracemalloc peak; time is not asserted in tests: benchmarks/intake.py), and must never read or write outside the
folder. Examples are bounded
(and derandomized) so the test takes seconds in CI.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.dataset.reader import Problem, SubmissionInvalid, read_text_file
from bench.dataset.validate import check

from .conftest import WORKLOADS, good_meta
from .test_validate_hostile import MAX_PEAK_BYTES, measured

KNOWN = set(WORKLOADS)
NAMES = [
    "submission.yaml",
    "kernels",
    "8p_GEMM.py",
    "12p_RMSNorm.py",
    "99p_Nope.py",
    "trajectory.csv",
    "trajectory",
    "8p_GEMM.jsonl",
    "source",
    "__pycache__",
    ".hidden",
    "a b",
    "é.py",
    "kernels.py",
    "notes.txt",
]
LINK_TARGETS = [
    "../outside.txt",
    "../../outside.txt",
    "/etc/passwd",
    "/dev/zero",
    "kernels",
    "submission.yaml",
    "loop",
    "self",
    ".",
    "..",
    "missing",
    "kernels/8p_GEMM.py",
]
YAML_FRAGMENTS = [
    "a: &x [1, 2]",
    "b: *x",
    "c: !!python/object:os.system ls",
    "<<: {name: x}",
    "name: [[[[[[[[[[1]]]]]]]]]]",
    "name: x\nname: y",
    "notes: " + "z" * 5000,
    "date: 2026-13-45",
    "samples_per_workload: " + "9" * 5000,
    "trajectory: {file: ../x.csv, track: cpu/small}",
    "trajectory: {file: /dev/zero, track: v6e/full}",
    "trajectory: {file: trajectory.csv, track: cpu-small}",
    "? [a]\n: 1",
    "- 1\n- 2",
    "'unterminated",
    "\x00",
    "kind: !custom agent",
    "authors: [" + ", ".join(["a"] * 200) + "]",
    "model: {name: m, version: 1, extra: 2}",
]
TRACKS = ["cpu/small", "v6e/full", "cpu-small", "../..", "/abs/small", "cpu/../small", "x" * 300, 5, None]
TRAJ_FILES = ["trajectory.csv", "../x.csv", "/dev/zero", "kernels", "loop", "trajectory.csv/", "a\\b.csv", "", 7]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10**6),
    st.floats(allow_nan=True),
    st.text(max_size=40),
    st.sampled_from(["x" * 5000, "2026-01-01", "\x1b[31mred", "<script>"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)


@st.composite
def metadata(draw: Any) -> str:
    """Valid metadata with a few fields dropped, replaced by random values, or a trajectory spec added."""
    meta: dict[str, Any] = good_meta()
    for key in draw(st.lists(st.sampled_from(sorted(meta)), max_size=3)):
        if draw(st.booleans()):
            meta.pop(key, None)
        else:
            meta[key] = draw(values)
    if draw(st.booleans()):
        meta["trajectory"] = {"file": draw(st.sampled_from(TRAJ_FILES)), "track": draw(st.sampled_from(TRACKS))}
    if draw(st.booleans()):
        meta[draw(st.text(max_size=10))] = draw(values)
    return yaml.safe_dump(meta, allow_unicode=True)


def yaml_soup() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(YAML_FRAGMENTS), min_size=1, max_size=6).map("\n".join)


@st.composite
def trajectory_csv(draw: Any) -> str:
    header = draw(
        st.sampled_from(
            [
                "workload,sample_idx,outcome,speedup",
                "workload,sample_idx",
                "a,a,a",
                "workload,sample_idx,outcome,speedup,latency_ms,extra",
                "",
            ]
        )
    )
    rows = draw(
        st.lists(
            st.tuples(
                st.sampled_from(WORKLOADS + ["99p_Nope", ""]),
                st.sampled_from(["0", "1", "2", "-1", "x", "9" * 30, ""]),
                st.sampled_from(["correct", "wrong_output", "api_runtime_error", "boom"]),
                st.sampled_from(["", "1.5", "-2", "nan", "inf", "1e400", "x"]),
            ),
            max_size=12,
        )
    )
    extra = draw(st.sampled_from(["", '\n"unterminated', "\n\x00,0,correct", "\n8p_GEMM,0,correct,1,2,3,4"]))
    return header + "\n" + "\n".join(",".join(r) for r in rows) + extra


@st.composite
def trajectory_jsonl(draw: Any) -> str:
    """Lines of trajectory format v2: mostly well-formed samples, with wrong types, extra fields and broken JSON."""
    kernel = "def workload(*x):\n    return x[0]\n"
    lines = []
    for i in range(draw(st.integers(0, 6))):
        obj: dict[str, Any] = {
            "sample": draw(st.sampled_from([i, i, i + 1, -1, "0", None])),
            "chain": draw(st.sampled_from([0, 1, -1, 2**70])),
            "turn": draw(st.integers(0, 2)),
            "source": draw(st.sampled_from([kernel, "", "x" * 70_000, "\ud800"])),
        }
        if draw(st.booleans()):
            obj["declared"] = {
                "outcome": draw(st.sampled_from(["correct", "boom", None])),
                "speedup": draw(st.sampled_from([1.5, -1, float("inf"), "fast"])),
            }
        if draw(st.booleans()):
            obj[draw(st.sampled_from(["tokens_in", "extra", "sample"]))] = draw(values)
        lines.append(json.dumps(obj) if draw(st.integers(0, 9)) else draw(st.sampled_from(["{", "[1]", "", "NaN"])))
    return "\n".join(lines)


contents = st.one_of(
    st.binary(max_size=600),
    trajectory_jsonl(),
    metadata(),
    yaml_soup(),
    trajectory_csv(),
    st.sampled_from(
        [
            "def workload(*x):\n    return x[0]\n",
            "def workload(:\n",
            "x = 1\n",
            "(" * 300 + ")" * 300,
            "workload = lambda *x: x\n",
            "\x00def workload(): pass",
            "-" * 3000 + "1",
        ]
    ),
)
nodes = st.recursive(
    st.one_of(
        st.tuples(st.just("file"), contents),
        st.tuples(st.just("link"), st.sampled_from(LINK_TARGETS)),
        st.tuples(st.just("fifo"), st.none()),
    ),
    lambda children: st.tuples(st.just("dir"), st.dictionaries(st.sampled_from(NAMES), children, max_size=4)),
    max_leaves=10,
)


@st.composite
def folders(draw: Any) -> dict[str, Any]:
    """A submission folder: usually with a submission.yaml (valid-ish or hostile) and a kernels/ folder."""
    tree = draw(st.dictionaries(st.sampled_from(NAMES), nodes, max_size=5))
    if draw(st.booleans()):
        tree["submission.yaml"] = ("file", draw(st.one_of(metadata(), yaml_soup())))
    if draw(st.booleans()):
        kernels = draw(
            st.dictionaries(
                st.sampled_from(["8p_GEMM.py", "12p_RMSNorm.py", "99p_Nope.py", "x.txt"]), nodes, max_size=3
            )
        )
        tree["kernels"] = ("dir", kernels)
    if draw(st.booleans()):
        tree["trajectory"] = (
            "dir",
            draw(
                st.dictionaries(
                    st.sampled_from(["8p_GEMM.jsonl", "12p_RMSNorm.jsonl", "99p_Nope.jsonl", "x.txt"]),
                    st.tuples(st.just("file"), trajectory_jsonl()),
                    max_size=2,
                )
            ),
        )
    return tree


def _make(folder: Path, tree: dict[str, Any]) -> None:
    folder.mkdir()
    for name, (kind, payload) in tree.items():
        path = folder / name
        if kind == "file":
            path.write_bytes(payload if isinstance(payload, bytes) else payload.encode("utf-8", "surrogatepass"))
        elif kind == "link":
            os.symlink({"loop": "loop", "self": name}.get(payload, payload), path)
        elif kind == "fifo":
            os.mkfifo(path)
        else:
            _make(path, payload)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    tree=folders(),
    relpath=st.sampled_from(
        [
            "submission.yaml",
            "kernels/8p_GEMM.py",
            "../outside.txt",
            "/etc/passwd",
            "kernels",
            "loop/x",
            "trajectory.csv",
            "a b",
            "",
        ]
    ),
)
def test_any_folder_gives_problems_never_an_exception(tree: dict[str, Any], relpath: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "outside.txt").write_text("secret: outside the submission\n")
        root = Path(tmp) / "fuzz-sub"
        _make(root, tree)
        (sub, problems), peak = measured(lambda: check(root, KNOWN, shown="submissions/fuzz-sub"))
        assert (sub is None) == bool(problems)
        assert all(isinstance(p, Problem) and str(p).startswith("submissions/fuzz-sub") for p in problems)
        assert peak < MAX_PEAK_BYTES, peak
        try:
            text = read_text_file(root, relpath, 4096)
        except SubmissionInvalid as exc:
            assert exc.problems and all(isinstance(p, Problem) for p in exc.problems)
        else:
            assert "outside the submission" not in text
        assert sorted(os.listdir(tmp)) == ["fuzz-sub", "outside.txt"]
