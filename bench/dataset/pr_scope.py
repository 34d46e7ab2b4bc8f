"""The scope check of a submission pull request: it may change one `submissions/<id>/` and nothing else.

Run by .github/workflows/submission.yml from the BASE branch's checkout, on the pull request's checkout:
`python -m bench.dataset.pr_scope <pr checkout> <base sha>` prints the submission id and exits 0, or prints
one `::error::` line per offending path and exits 1. Renames are listed as a deletion plus an addition
(`--no-renames`), so moving a file out of the repository's code into a submission still counts as a change
to the code; paths come NUL-separated (`-z`), so no file name can forge a line. The list of reserved-kind
submissions and the listed submissions' folders are refused too (bench/dataset/reserved.py): a stranger's pull
request can neither list itself nor change the submissions reference figures are read from.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

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


def main(argv: list[str]) -> int:
    repo, base = Path(argv[0]), argv[1]
    sub_id, problems = scope(changed_files(repo, base))
    for p in problems:
        print(f"::error::{p}")
    if sub_id is None:
        return 1
    print(sub_id)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
