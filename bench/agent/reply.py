"""Parsing a model's reply. The paper's rule: exactly one ```python code block holding the complete file.

What we do with a reply (docs/agents.md, "Replies"):
- exactly one block tagged python (```python, ```py or ```python3; any fence of 3+ backticks or tildes, closed by
  the same fence): its body is the candidate, evaluated; prose and non-python blocks around it are tolerated
  (rule 3 is the model's to keep, not a parse failure);
- no python block, but exactly one untagged block (some chat servers drop the language tag): that block;
- anything else: "no_code_block" (no block at all, or only blocks of other languages) or "several_code_blocks"
  (two or more python blocks, or two or more untagged blocks and no python one). Such a reply is never evaluated:
  we do not guess which block the model meant. It is recorded as it came, counts as an API/runtime failure, and
  the next turn's feedback says why and shows the end of the reply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_FENCE = re.compile(
    r"^(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[\w+.-]*)[^\n]*\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.DOTALL | re.MULTILINE
)
_PYTHON = {"python", "py", "python3"}
#: Why a reply was not evaluated; the feedback says "Your reply was not evaluated: it has <this>."
WHY_NOT_EVALUATED = {
    "no_code_block": "no ```python code block",
    "several_code_blocks": "several code blocks, and we do not guess which one you meant",
}


@dataclass(frozen=True)
class ParsedReply:
    kind: str  # "ok" | "no_code_block" | "several_code_blocks"
    source: str  # the code for "ok"; for the others the whole reply (kept in the trajectory as it came)
    blocks: int = 0  # code blocks of any language the reply holds

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


def parse_reply(reply: str) -> ParsedReply:
    blocks = [(m.group("lang").lower(), m.group("body")) for m in _FENCE.finditer(reply)]
    python = [body for lang, body in blocks if lang in _PYTHON]
    if len(python) > 1:
        return ParsedReply("several_code_blocks", reply, len(blocks))
    if len(python) == 1:
        return ParsedReply("ok", python[0].rstrip() + "\n", len(blocks))
    untagged = [body for lang, body in blocks if not lang]
    if len(blocks) == 1 and len(untagged) == 1:
        return ParsedReply("ok", untagged[0].rstrip() + "\n", 1)
    return ParsedReply("several_code_blocks" if len(untagged) > 1 else "no_code_block", reply, len(blocks))


def fence_for(text: str, char: str = "`") -> str:
    """A fence that `text` cannot close: one character longer than its longest run of `char` (at least 3)."""
    longest = max((len(m) for m in re.findall(re.escape(char) + "+", text)), default=0)
    return char * max(3, longest + 1)


def fenced(text: str, lang: str = "") -> str:
    """`text` in a markdown code block whose fence nothing inside it can break (prompts quote untrusted text)."""
    fence = fence_for(text)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def as_reply(source: str) -> str:
    """A well-formed reply carrying `source` (what the built-in generator answers)."""
    return fenced(source, "python") + "\n"
