"""Reserved submission kinds: which submissions a reference figure may be read from, and only those.

Why: the SQL reads the hand-tuned reference of every workload from the rows of kind `hand-tuned` (and treats kind
`baseline` as the unranked XLA sanity row). A kind is something a submitter writes in submission.yaml, so a
stranger's `kind: hand-tuned` would move the figure every other submission is read against. A reserved kind is
therefore accepted only from a submission that a maintainer listed, with that kind, in `reserved_submissions.yaml`:
a file outside every `submissions/<id>/`, so that a submission pull request cannot change it (its scope check
refuses it, and any change to a listed submission's folder), and a code pull request that changes it is flagged.
The same list is loaded by the ranking SQL (bench/dataset/metrics.py), so that a row stored by other means still
cannot supply a reference figure.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from pathlib import Path

import yaml

RESERVED_KINDS = ("hand-tuned", "baseline")
LIST_FILE = Path(__file__).with_name("reserved_submissions.yaml")
LIST_RELPATH = "bench/dataset/reserved_submissions.yaml"  # as the pull-request checks name it


def listed(path: Path = LIST_FILE) -> dict[str, str]:
    """{submission id: reserved kind} as the maintainers listed it. A malformed list is an error, never empty."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not all(isinstance(k, str) and v in RESERVED_KINDS for k, v in data.items()):
        raise ValueError(f"{path}: expected a mapping of submission id -> one of {list(RESERVED_KINDS)}")
    return dict(data)


def kind_problem(submission: str, kind: str, allowed: Mapping[str, str]) -> str | None:
    """Why `submission` may not declare `kind` (None when it may): a reserved kind needs the maintainers' listing."""
    if kind not in RESERVED_KINDS or allowed.get(submission) == kind:
        return None
    owners = sorted(s for s, k in allowed.items() if k == kind)
    return (
        f"kind {kind!r} is reserved: it is read as a reference figure, so only the submissions a maintainer "
        f"listed in {LIST_RELPATH} may declare it ({', '.join(owners) or 'none'}); "
        f"use kind 'agent' or 'human'"
    )


def name_problem(submission: str, name: str, allowed: Mapping[str, str]) -> str | None:
    """Why `submission` may not be called `name` (None when it may): a name that claims a reserved kind ("Hand-tuned
    Pallas ...", "XLA baseline") is a listed submission's alone. Why: a stranger's `kind: human` submission named
    exactly like the hand-tuned reference was accepted, and a reader goes by the name."""
    if submission in allowed:
        return None
    mixed = [w for w in name.split() if len(_scripts(w)) > 1]
    if mixed:
        return f"name {name!r} mixes alphabets within a word ({mixed[0]!r}): letters of one alphabet per word"
    flat = _flat(name)
    for kind in RESERVED_KINDS:
        if _flat(kind) in flat:
            return f"name {name!r} claims the reserved kind {kind!r}: only a listed submission may ({LIST_RELPATH})"
    return None


#: Alphabets whose letters pass for one another (Cyrillic "а" for Latin "a", Greek "ο" for "o" ...).
LOOKALIKE_ALPHABETS = frozenset({"LATIN", "CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE"})


def _scripts(word: str) -> set[str]:
    """The look-alike alphabets of a word's letters (the first word of each letter's Unicode name), after
    compatibility normalisation. Why: a Cyrillic "а" in "Hаnd-tuned" reads as the reference's name and folds to no
    Latin letter, so a word mixing them is refused, as domain registries refuse such names (other scripts, and
    Japanese words of kanji and kana, are not concerned)."""
    letters = (c for c in unicodedata.normalize("NFKC", word) if c.isalpha())
    return {s for c in letters if (s := unicodedata.name(c, "UNKNOWN").split()[0]) in LOOKALIKE_ALPHABETS}


def _flat(text: str) -> str:
    """`text` compared as a reader reads it: compatibility-normalised, case-folded, letters and digits only."""
    return "".join(c for c in unicodedata.normalize("NFKC", text).casefold() if c.isalnum())


def scope_problems(changed: list[str], allowed: Mapping[str, str]) -> list[str]:
    """A submission pull request's changes to the list itself or to a listed submission's folder (maintainers' own)."""
    problems = []
    for path in changed:
        parts = path.split("/")
        if path == LIST_RELPATH:
            problems.append(f"{path!r}: the list of reserved-kind submissions; only a maintainer changes it")
        elif len(parts) >= 3 and parts[0] == "submissions" and parts[1] in allowed:
            problems.append(
                f"submissions/{parts[1]}/: a listed {allowed[parts[1]]} submission "
                f"({LIST_RELPATH}); only a maintainer changes it"
            )
    return list(dict.fromkeys(problems))
