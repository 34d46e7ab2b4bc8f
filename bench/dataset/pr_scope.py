"""The scope check of a submission pull request: it may change one `submissions/<id>/` and nothing else.

Run by .github/workflows/submission.yml from the BASE branch's checkout, on the pull request's checkout:
`python -m bench.dataset.pr_scope <pr checkout> <base sha>` prints the submission id and exits 0, or prints
one `::error::` line per offending path and exits 1. Renames are listed as a deletion plus an addition
(`--no-renames`), so moving a file out of the repository's code into a submission still counts as a change
to the code; paths come NUL-separated (`-z`), so no file name can forge a line. The list of reserved-kind
submissions and the listed submissions' folders are refused too (bench/dataset/reserved.py): a stranger's pull
request can neither list itself nor change the submissions reference figures are read from.

A folder that already exists on the base branch belongs to whoever submitted it: a pull request may change or
delete it only when its author (`--author`, the workflow passes the pull request's GitHub login) is one of the
`maintainers` that the BASE branch's submission.yaml of that folder lists. The pull request's own copy of that
list is never read, so it cannot add its author; a folder that lists no one is changed by the repository's
maintainers only (the check fails, and they merge over it after review).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import yaml

from bench.dataset import reserved
from bench.dataset.validate import id_problem


def changed_files(repo: Path, base: str) -> list[str]:
    """Paths the pull request changes relative to the merge base with `base` (added, modified, deleted)."""
    out = subprocess.run(
        ["git", "-C", str(repo), "diff", "--no-renames", "--name-only", "-z", f"{base}...HEAD"],
        capture_output=True,
        check=True,
    )
    return [p.decode("utf-8", "backslashreplace") for p in out.stdout.split(b"\0") if p]


def scope(changed: list[str], listed: Mapping[str, str] | None = None) -> tuple[str | None, list[str]]:
    """(the one submission id the changes belong to, problems); the id is None when there is any problem.

    `listed`: the reserved-kind submissions (default: the base branch's list, bench/dataset/reserved.py); a change
    to that list or to a listed submission's folder is the maintainers' own and fails here.
    """
    problems, ids = [], set()
    for path in changed:
        parts = path.split("/")
        if len(parts) < 3 or parts[0] != "submissions" or not parts[-1]:
            problems.append(f"{path!r}: outside submissions/<id>/; a submission pull request changes only its folder")
        elif why := id_problem(parts[1]):
            problems.append(f"{path!r}: {why}")
        else:
            ids.add(parts[1])
    if len(ids) > 1:
        problems.append(
            f"changes {len(ids)} submissions ({', '.join(sorted(ids))}); open one pull request per submission"
        )
    if not changed:
        problems.append("changes nothing")
    problems += reserved.scope_problems(changed, reserved.listed() if listed is None else listed)
    return (ids.pop() if not problems else None), problems


def base_maintainers(repo: Path, base: str, sub_id: str) -> list[str] | None:
    """The GitHub logins the base commit's `submissions/<sub_id>/submission.yaml` lists as `maintainers` (lower
    case), [] when it lists none or cannot be read; None when the folder does not exist at `base` (a new one)."""
    listing = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", base, f"submissions/{sub_id}"],
        capture_output=True,
        check=True,
    )
    if not listing.stdout.strip():
        return None
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", f"{base}:submissions/{sub_id}/submission.yaml"], capture_output=True
    )
    try:
        meta = yaml.safe_load(shown.stdout) if shown.returncode == 0 else None
    except yaml.YAMLError:
        meta = None
    found = meta.get("maintainers") if isinstance(meta, dict) else None
    return [m.lower() for m in found if isinstance(m, str)] if isinstance(found, list) else []


def owner_problem(sub_id: str, author: str | None, maintainers: list[str] | None) -> str | None:
    """Why `author` may not change the existing submission `sub_id` (None: a new folder, or one of its maintainers)."""
    if maintainers is None or (author is not None and author.lower() in maintainers):
        return None
    who = ", ".join(maintainers) or "no one"
    return (
        f"submissions/{sub_id}/ exists on the base branch: only its maintainers (the `maintainers` of its "
        f"submission.yaml there: {who}) may change or delete it, and this pull request's author "
        f"({author or 'unknown'}) is not one; submit under a new id, or ask a repository maintainer"
    )


def check(repo: Path, base: str, author: str | None) -> tuple[str | None, list[str]]:
    """The whole check of a pull request: its scope, then whether its author may change that submission."""
    sub_id, problems = scope(changed_files(repo, base))
    if sub_id is not None and (why := owner_problem(sub_id, author, base_maintainers(repo, base, sub_id))):
        return None, [why]
    return sub_id, problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.dataset.pr_scope", description=__doc__)
    parser.add_argument("repo", type=Path, help="the pull request's checkout (full history)")
    parser.add_argument("base", help="the base branch's commit")
    parser.add_argument("--author", help="the pull request author's GitHub login")
    args = parser.parse_args(argv)
    sub_id, problems = check(args.repo, args.base, args.author)
    for p in problems:
        print(f"::error::{p}")
    if sub_id is None:
        return 1
    print(sub_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
