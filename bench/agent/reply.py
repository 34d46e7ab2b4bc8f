"""Parsing a model's reply: the preamble demands exactly one ```python code block and nothing else.

Classes: "ok" (one python block: its body is the candidate), "no_code_block", "several_code_blocks". A block
fenced as plain ``` (no language) counts when it is the reply's only block, because some chat servers drop the
language tag; prose around the one block is tolerated (the paper's rule 3 is the model's, not a parse failure).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$",
                    re.DOTALL | re.MULTILINE)
_PYTHON = {"python", "py", "python3"}


@dataclass(frozen=True)
class ParsedReply:
    kind: str  # "ok" | "no_code_block" | "several_code_blocks"
    source: str  # the code for "ok"; for the others the whole reply (kept in the trajectory as it came)

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def parse_reply(reply: str) -> ParsedReply:
    blocks = [(m.group("lang").lower(), m.group("body")) for m in _FENCE.finditer(reply)]
    python = [body for lang, body in blocks if lang in _PYTHON]
    if len(python) > 1:
        return ParsedReply("several_code_blocks", reply)
    if len(python) == 1:
        return ParsedReply("ok", python[0].rstrip() + "\n")
    untagged = [body for lang, body in blocks if not lang]
    if len(blocks) == 1 and len(untagged) == 1:
        return ParsedReply("ok", untagged[0].rstrip() + "\n")
    return ParsedReply("several_code_blocks" if len(untagged) > 1 else "no_code_block", reply)


def as_reply(source: str) -> str:
    """A well-formed reply carrying `source` (what the built-in generator answers)."""
    return f"```python\n{source.rstrip()}\n```\n"
