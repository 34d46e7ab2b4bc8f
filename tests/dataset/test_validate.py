"""`bench validate`: malformed submissions fail with the file and field named; good ones pass."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.dataset.validate import check
from bench.paths import ROOT, SUBMISSIONS_DIR


def _messages(root: Path, known: set[str]) -> list[str]:
    sub, problems = check(root, known, shown=f"submissions/{root.name}")
    assert sub is None, "expected the submission to be rejected"
    return [str(p) for p in problems]


def test_good_submission_passes(tmp_path, known, meta_factory, submission_factory):
    root = submission_factory(tmp_path, "good", {"8p_GEMM": "", "12p_RMSNorm": "# v1"})
    sub, problems = check(root, known)
    assert problems == [] and sorted(sub.kernels) == ["12p_RMSNorm", "8p_GEMM"]
    before = sub.content_hash("12p_RMSNorm")
    (root / "kernels" / "12p_RMSNorm.py").write_text("def workload(x):\n    return x  # v2\n")
    again, _ = check(root, known)
    assert again.content_hash("12p_RMSNorm") != before and again.content_hash("8p_GEMM") == sub.content_hash("8p_GEMM")


def test_missing_field(tmp_path, known, meta_factory, submission_factory):
    meta = meta_factory()
    del meta["license"]
    msgs = _messages(submission_factory(tmp_path, "s", {"8p_GEMM": ""}, meta), known)
    assert msgs == ["submissions/s/submission.yaml: license: required field is missing; add it"]


@pytest.mark.parametrize(
    "field,value,needle",
    [
        ("samples_per_workload", "many", "expected an integer, got str ('many')"),
        ("human_in_the_loop", "no", "expected true or false"),
        ("authors", "me", "expected a non-empty list of strings"),
        ("date", "yesterday", "expected a date YYYY-MM-DD"),
        ("kind", "robot", "expected one of"),
        ("model", "gemini", "expected a mapping with 'name' and 'version'"),
    ],
)
def test_wrong_type(tmp_path, known, field, value, needle, meta_factory, submission_factory):
    msgs = _messages(submission_factory(tmp_path, "s", {"8p_GEMM": ""}, meta_factory(**{field: value})), known)
    assert len(msgs) == 1 and msgs[0].startswith(f"submissions/s/submission.yaml: {field}: ") and needle in msgs[0]


def test_unknown_workload_id(tmp_path, known, meta_factory, submission_factory):
    msgs = _messages(submission_factory(tmp_path, "s", {"8p_GEMM": "", "99p_Nope": ""}), known)
    assert msgs == [
        "submissions/s/kernels/99p_Nope.py: workload id: unknown workload '99p_Nope' (see `bench list`); "
        "rename the file"
    ]


def test_kernel_file_absent(tmp_path, known, meta_factory, submission_factory):
    root = submission_factory(tmp_path, "s", {"8p_GEMM": ""}, meta_factory(workloads=["8p_GEMM", "12p_RMSNorm"]))
    msgs = _messages(root, known)
    assert msgs == [
        "submissions/s/kernels/12p_RMSNorm.py: (file): kernel file absent, but listed in workloads; "
        "add it or remove it from the list"
    ]


def test_kernel_without_workload_or_with_syntax_error(tmp_path, known, meta_factory, submission_factory):
    root = submission_factory(tmp_path, "s", {"8p_GEMM": ""})
    (root / "kernels" / "12p_RMSNorm.py").write_text("def kernel(x):\n    return x\n")
    (root / "kernels" / "1p_Flash_Attention.py").write_text("def workload(x:\n")
    msgs = _messages(root, known)
    assert (
        "submissions/s/kernels/12p_RMSNorm.py: workload: no top-level `workload` function is defined; "
        "define workload(*inputs)"
    ) in msgs
    assert any(m.startswith("submissions/s/kernels/1p_Flash_Attention.py: line 1: not valid Python") for m in msgs)


def test_yaml_syntax_error(tmp_path, known, meta_factory, submission_factory):
    root = submission_factory(tmp_path, "s", {"8p_GEMM": ""})
    (root / "submission.yaml").write_text("name: x\nauthors: [a, b\nkind: agent\n")
    msgs = _messages(root, known)
    assert len(msgs) == 1 and msgs[0].startswith("submissions/s/submission.yaml: line 3, column ")
    assert "YAML not accepted" in msgs[0]


def test_trajectory_rows_are_checked(tmp_path, known, meta_factory, submission_factory):
    meta = meta_factory(trajectory={"file": "trajectory.csv", "track": "v6e/full"})
    root = submission_factory(tmp_path, "s", {"8p_GEMM": ""}, meta)
    (root / "trajectory.csv").write_text(
        "workload,sample_idx,outcome,speedup\n8p_GEMM,0,correct,1.5\n8p_GEMM,1,exploded,\n8p_GEMM,0,wrong_output,\n"
    )
    msgs = _messages(root, known)
    assert msgs == [
        "submissions/s/trajectory.csv:3: outcome: expected one of ['api_runtime_error', 'wrong_output', 'correct'], "
        "got 'exploded'",
        "submissions/s/trajectory.csv:4: sample_idx: duplicate sample ('8p_GEMM', 0)",
    ]


def test_good_trajectory_passes(tmp_path, known, meta_factory, submission_factory):
    meta = meta_factory(trajectory={"file": "trajectory.csv", "track": "cpu/small"}, samples_per_workload=2)
    root = submission_factory(tmp_path, "s", {"8p_GEMM": "", "12p_RMSNorm": ""}, meta)
    (root / "trajectory.csv").write_text(
        "workload,sample_idx,outcome,speedup,latency_ms\n8p_GEMM,1,correct,1.5,2\n"
        "8p_GEMM,0,wrong_output,,\n12p_RMSNorm,0,correct,,\n"
    )
    sub, problems = check(root, known)
    assert problems == [] and [(r["workload"], r["sample_idx"]) for r in sub.trajectory] == [
        ("8p_GEMM", 1),
        ("8p_GEMM", 0),
        ("12p_RMSNorm", 0),
    ]


def test_cli_exit_codes(tmp_path, meta_factory, submission_factory):
    """The shipped submissions validate (exit 0); a broken folder exits 1 naming file and field, as written."""
    submission_factory(tmp_path, "bad", {"8p_GEMM": ""}, meta_factory(contact=3))
    cmd = [sys.executable, "-m", "bench.cli", "validate"]
    ok = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    assert ok.returncode == 0 and ok.stdout.count("ok submissions/") >= 3, ok.stdout + ok.stderr
    out = subprocess.run(cmd + ["bad"], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 1
    assert out.stdout.strip() == "ERROR bad/submission.yaml: contact: expected a string, got int (3); quote it"


def test_one_document_describes_the_format():
    """docs/submit.md is the format's only description: it names every field validate knows; the README points to it."""
    from bench.dataset import validate
    from bench.paths import ROOT

    doc = (ROOT / "docs" / "submit.md").read_text()
    for name in list(validate.REQUIRED) + list(validate.OPTIONAL):
        assert f"| `{name}` |" in doc, name
    for part in (
        validate.META_FILE,
        f"{validate.KERNELS}/<workload_id>.py",
        f"{validate.SOURCE_DIR}/",
        "trajectory.csv",
        f"{validate.TRAJECTORY_DIR}/<workload_id>.jsonl",
    ):
        assert part in doc, part
    readme = (SUBMISSIONS_DIR / "README.md").read_text()
    assert "docs/submit.md" in readme and "| `name` |" not in readme


def test_misspelt_workload_id_gets_a_did_you_mean(tmp_path, known, meta_factory, submission_factory):
    msgs = _messages(submission_factory(tmp_path, "s", {"8p_GEMM": "", "8p_GEM": ""}), known)
    assert msgs == [
        "submissions/s/kernels/8p_GEM.py: workload id: unknown workload '8p_GEM' (did you mean 8p_GEMM?); "
        "rename the file"
    ]


def test_validate_says_1_kernel(tmp_path, submission_factory, meta_factory):
    from typer.testing import CliRunner

    import bench.cli  # noqa: F401  registers every command
    from bench.app import app

    root = submission_factory(tmp_path, "one", {"8p_GEMM": ""}, meta_factory(workloads=["8p_GEMM"]))
    out = CliRunner().invoke(app, ["validate", str(root)], terminal_width=200)
    assert out.exit_code == 0, out.output
    assert ": 1 kernel" in out.output and "1 kernels" not in out.output
