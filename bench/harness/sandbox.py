"""Sandbox for the candidate worker. PLACEHOLDER (plain process) until the sandbox work lands: same signature."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SandboxedCommand:
    argv: list[str]
    env: dict[str, str]
    name: str  # "bwrap" or "none"


def wrap(argv: list[str], scratch_dir: Path, mode: str = "auto") -> SandboxedCommand:
    return SandboxedCommand(argv=list(argv), env=dict(os.environ), name="none")
