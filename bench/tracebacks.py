"""What a submitter reads when their kernel fails: tracebacks that point at their file, once.

The harness evaluates a private copy of the kernel (`build/eval/eval_<random>/kernel.py`: the evaluation depends
on the content only), inside the build step's code, which both returns the traceback and prints it to its log.
Raw, that shows a temporary path nobody can open, a dozen harness frames, and the same text twice
(`traceback` and `candidate_log`). `attribute` rewrites a finished EvalResult for its reader: the copy's path
becomes the submitted file, frames of the harness itself are dropped, and the log loses the duplicate.
It runs in the trusted parent on text only; it changes no verdict, no timing.
"""

from __future__ import annotations

import re
from pathlib import Path

from bench.harness.protocol.result import EvalResult
from bench.paths import ROOT

#: The harness's private copy of a candidate (bench.harness.parent.evaluate: EVAL_DIR / "eval_*" / "kernel.py").
_COPY_RE = re.compile(r"[^\s\"']*/eval_[A-Za-z0-9_]+/kernel\.py")
#: How a SyntaxError's message names that copy: by its base name only ("invalid syntax (kernel.py, line 2)").
_SYNTAX_RE = re.compile(r"\(kernel\.py, line (\d+)\)")
#: A traceback frame line and the package folders whose frames are the harness's, not the candidate's.
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+')
_HARNESS_PARTS = ("/bench/harness/", "/bench/integrity/")
_SEE_TRACEBACK = "(traceback: see the `traceback` field)"


def shown_path(kernel_path: str | Path) -> str:
    """The submitted file as the reader knows it: relative to the checkout when inside it."""
    path = Path(kernel_path).resolve()
    try:
        return str(path.relative_to(ROOT.resolve()))
    except ValueError:
        return str(path)


def drop_harness_frames(text: str) -> str:
    """Remove the frames (the `File` line and its indented source/caret lines) of harness modules."""
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        frame = _FRAME_RE.match(line)
        if frame:
            skipping = any(part in frame.group("file") for part in _HARNESS_PARTS)
        elif skipping and line.startswith("    "):
            pass  # the source line or the ^^^ marker of a dropped frame
        else:
            skipping = False
        if not skipping:
            out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def attribute(result: EvalResult, kernel_path: str | Path) -> EvalResult:
    """`result` with tracebacks naming `kernel_path`, without harness frames, and the log without the
    traceback it repeats."""
    shown = shown_path(kernel_path)

    def fix(text: str | None) -> str | None:
        if not text:
            return text
        return _SYNTAX_RE.sub(lambda m: f"({shown}, line {m.group(1)})", _COPY_RE.sub(shown, text))

    traceback = fix(result.traceback)
    log = fix(result.candidate_log) or ""
    if traceback:
        if traceback.strip() and traceback.strip() in log:
            log = log.replace(traceback.strip(), _SEE_TRACEBACK).strip()
            log = "" if log == _SEE_TRACEBACK else log
        traceback = drop_harness_frames(traceback)
    log = drop_harness_frames(log) if log else log
    return result.model_copy(
        update={
            "traceback": traceback,
            "candidate_log": log,
            "reason": fix(result.reason) or "",
            "error": fix(result.error),
            "tpu_lowering": fix(result.tpu_lowering),
        }
    )
