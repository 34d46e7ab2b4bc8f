"""The pull-request scope check: one submissions/<id>/ and nothing else, on a real git history."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.dataset.pr_scope import changed_files, check, scope
from bench.paths import ROOT

GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@e",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@e",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=GIT_ENV, check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, str]:
    """A repository with code and one shipped submission; returns (repo, base sha) on a fresh PR branch."""
    r = tmp_path / "repo"
    (r / "bench").mkdir(parents=True)
    (r / "bench" / "evaluate.py").write_text("trusted = True\n")
    (r / "submissions" / "old").mkdir(parents=True)
    (r / "submissions" / "old" / "submission.yaml").write_text("name: old\n")
    _git(r, "init", "-q", "-b", "main")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "base")
    base = _git(r, "rev-parse", "HEAD")
    _git(r, "checkout", "-qb", "pr")
    return r, base


def _write(r: Path, *paths: str) -> None:
    for p in paths:
        (r / p).parent.mkdir(parents=True, exist_ok=True)
        (r / p).write_text("x")


def _pr(r: Path, base: str) -> tuple[str | None, list[str]]:
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "pr")
    return scope(changed_files(r, base))


def test_one_new_submission_is_in_scope(repo):
    r, base = repo
    (r / "submissions" / "mine" / "kernels").mkdir(parents=True)
    (r / "submissions" / "mine" / "kernels" / "8p_GEMM.py").write_text("def workload(a, b): return a @ b\n")
    (r / "submissions" / "mine" / "we ird\nname.txt").write_text("x")
    assert _pr(r, base) == ("mine", [])


@pytest.mark.parametrize(
    "change,needle",
    [
        (lambda r: (r / "bench" / "evaluate.py").write_text("trusted = False\n"), "'bench/evaluate.py': outside"),
        (
            lambda r: os.rename(r / "bench" / "evaluate.py", r / "submissions" / "old" / "evaluate.py"),
            "'bench/evaluate.py'",
        ),
        (lambda r: _write(r, "submissions/two/a", "submissions/old/b"), "changes 2 submissions (old, two)"),
        (lambda r: os.symlink("/etc", r / "submissions" / "link"), "'submissions/link': outside"),
        (lambda r: _write(r, "submissions/Bad Id/a"), "submission id 'Bad Id' must match"),
        (lambda r: (r / "submissions" / "README.md").write_text("x"), "'submissions/README.md': outside"),
    ],
)
def test_anything_else_fails(repo, change, needle):
    r, base = repo
    change(r)
    sub_id, problems = _pr(r, base)
    assert sub_id is None and any(needle in p for p in problems), problems


def test_cli_prints_the_id_or_errors(repo):
    r, base = repo
    (r / "submissions" / "mine").mkdir()
    (r / "submissions" / "mine" / "submission.yaml").write_text("name: x\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "pr")
    cmd = [sys.executable, "-m", "bench.dataset.pr_scope", str(r), base]
    ok = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert (ok.returncode, ok.stdout) == (0, "mine\n"), ok.stderr
    (r / "bench" / "evaluate.py").write_text("trusted = False\n")
    _git(r, "commit", "-qam", "sneak")
    bad = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout.startswith("::error::'bench/evaluate.py': outside")


@pytest.mark.parametrize(
    ("folder", "needle"),
    [
        ("evil\n", "must match"),  # `$` matched before a final newline; the workflow's $(...) then dropped it
        ("index", "reserved"),  # its page replaced the site's list of submissions
        ("paper-t3-autocomp-gemini-3-flash", "reserved"),  # re-labelled the paper's reported row
    ],
)
def test_ids_that_are_not_a_submission_s_own_are_refused_in_scope_and_validation(
    tmp_path: Path, folder: str, needle: str
) -> None:
    """Red team 7: three folder names that passed both checks."""
    from bench.dataset.validate import check

    sub_id, problems = scope([f"submissions/{folder}/submission.yaml"])
    assert sub_id is None and any(needle in p for p in problems), problems
    root = tmp_path / folder
    (root / "kernels").mkdir(parents=True)
    (root / "submission.yaml").write_text((ROOT / "submissions" / "template-search" / "submission.yaml").read_text())
    sub, found = check(root)
    assert sub is None and any(needle in p.message for p in found), found


def _base_with_maintainers(r: Path, *logins: str) -> str:
    """Commit, on main, `old`'s submission.yaml listing `logins` as maintainers; return the new base sha and
    start the pull request's branch from it."""
    _git(r, "checkout", "-q", "main")
    (r / "submissions" / "old" / "submission.yaml").write_text(f"name: old\nmaintainers: {list(logins)}\n")
    _git(r, "commit", "-qam", "maintainers")
    _git(r, "checkout", "-qB", "pr2")
    return _git(r, "rev-parse", "HEAD")


def _commit(r: Path) -> None:
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "pr")


@pytest.mark.parametrize(
    "change",
    [
        lambda r: _write(r, "submissions/old/kernels/8p_GEMM.py"),  # a kernel swapped into someone else's folder
        lambda r: (r / "submissions" / "old" / "submission.yaml").unlink(),  # their metadata deleted
        # the pull request lists its own author: only the base branch's list is read
        lambda r: (r / "submissions" / "old" / "submission.yaml").write_text("name: old\nmaintainers: [mallory]\n"),
    ],
)
def test_a_stranger_cannot_change_another_submission_s_folder(repo, change):
    """Red team 7's open lead: a pull request editing another (unreserved) submission's folder passed the scope
    check. Now only the maintainers the base branch lists for that folder may change it."""
    r, _ = repo
    base = _base_with_maintainers(r, "Alice")
    change(r)
    _commit(r)
    assert scope(changed_files(r, base)) == ("old", [])  # in scope: one submission's folder ...
    sub_id, problems = check(r, base, "mallory")  # ... but not the author's
    assert sub_id is None and "only its maintainers" in problems[0] and "alice" in problems[0], problems
    assert check(r, base, "ALICE") == ("old", [])  # logins are case-insensitive on GitHub
    assert check(r, base, None)[0] is None  # no author given: refused


def test_a_folder_that_lists_no_maintainer_is_changed_by_no_pull_request(repo):
    r, base = repo
    _write(r, "submissions/old/notes.md")
    _commit(r)
    sub_id, problems = check(r, base, "old")
    assert sub_id is None and "no one" in problems[0], problems


def test_a_new_folder_needs_no_maintainer(repo):
    r, base = repo
    _write(r, "submissions/mine/submission.yaml")
    _commit(r)
    assert check(r, base, None) == ("mine", [])


def test_cli_refuses_a_stranger_s_change_and_accepts_the_maintainer_s(repo):
    r, _ = repo
    base = _base_with_maintainers(r, "alice")
    _write(r, "submissions/old/kernels/8p_GEMM.py")
    _commit(r)
    cmd = [sys.executable, "-m", "bench.dataset.pr_scope", str(r), base, "--author"]
    bad = subprocess.run([*cmd, "mallory"], cwd=ROOT, capture_output=True, text=True)
    assert bad.returncode == 1 and bad.stdout.startswith("::error::submissions/old/ exists on the base branch")
    ok = subprocess.run([*cmd, "alice"], cwd=ROOT, capture_output=True, text=True)
    assert (ok.returncode, ok.stdout) == (0, "old\n"), ok.stderr
