"""The one strict, bounded reader of a submission folder: everything validate and ingest read goes through it.

A submission folder comes from a stranger's pull request, so nothing in it is trusted, not even its shape:
- a path is a plain relative path (no absolute part, no `..`, no backslash or control character) and it is
  opened component by component with O_NOFOLLOW relative to the folder, so no symlink anywhere on the way
  is followed and nothing outside the folder is ever opened;
- only regular files are read (never a directory, FIFO, device or socket), and never more than a limit:
  the size is checked on the open file before reading, and the read itself stops at the limit;
- YAML is parsed by a loader that refuses aliases, anchors, explicit tags, merge keys, duplicate keys and
  deep nesting, so a tiny file cannot expand into gigabytes (a "billion laughs" alias bomb);
- the folder walk lists entries without following links and stops at a bounded number of them.

Every refusal is a `Problem` (file, field, what is wrong and what to do), raised as `SubmissionInvalid`, so
that callers report it and move on: a hostile folder never produces a traceback. Paths in messages are
shown as the submitter wrote them (`Folder.shown`), values shortened (`shorten`).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

#: Sizes of the track grammar `<chip>/<size>` (the harness's two input presets).
SIZES = ("small", "full")


@dataclass(frozen=True)
class Limits:
    """Bounds of what a submission folder may hold. Generous for honest work, small enough to read in ms."""

    yaml_bytes: int = 64 * 1024  # submission.yaml
    # One kernels/<workload>.py (the largest shipped one is ~10 KB). Parsing Python costs ~8 us and ~600 bytes per
    # source byte at worst (a file of one-name lines): 64 KiB takes ~0.3 s and ~60 MB; 512 KiB took 4 s and 330 MB.
    kernel_bytes: int = 64 * 1024
    csv_bytes: int = 2 * 1024 * 1024  # trajectory.csv (50 workloads x 144 samples is ~300 KB)
    csv_rows: int = 20_000  # rows of trajectory.csv
    jsonl_bytes: int = 8 * 1024 * 1024  # one trajectory/<workload>.jsonl (samples carry their source)
    file_bytes: int = 16 * 1024 * 1024  # any other file (source/ material)
    folder_bytes: int = 128 * 1024 * 1024  # everything in the folder together
    entries: int = 1000  # files and folders in the whole submission
    depth: int = 6  # folder nesting below the submission folder
    yaml_nodes: int = 5000  # scalars, sequences and mappings in submission.yaml
    yaml_depth: int = 8  # nesting of sequences and mappings in submission.yaml


LIMITS = Limits()

_CHUNK = 64 * 1024
_BAD_CHARS = re.compile(r"[\x00-\x1f\x7f\\]")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a submission: `file: field: what is wrong, what to do`."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}: {self.message}"


class SubmissionInvalid(Exception):
    """A submission (or one file of it) failed validation; `problems` says where and why."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def shorten(value: Any, limit: int = 60) -> str:
    """A value for a message: its repr (control characters escaped), cut to `limit` characters with its length."""
    if isinstance(value, (dict, list, tuple, set)):
        return f"a {type(value).__name__} of {len(value)} items"
    if isinstance(value, int) and abs(value) > 10**limit:
        return f"an integer of more than {limit} digits"
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    if len(text) <= limit:
        return text
    n = f" ({len(value)} characters)" if isinstance(value, str) else ""
    return text[: limit - 1] + "…" + n


def shown_text(text: str, limit: int = 200) -> str:
    """A path or name for a message: non-printable characters escaped, cut to `limit` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def shown_path(path: Path) -> str:
    """A folder as messages name it: relative to the working directory when below it (`submissions/<id>`
    when run from the repository), else as given."""
    try:
        return str(Path(path).absolute().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def parse_track(value: Any) -> tuple[str, str]:
    """`<chip>/<size>` -> (chip, size), with chip one of bench.hardware.CHIPS and size small or full.

    Raises ValueError saying what a track looks like: tracks become folder names under data/, so only these.
    """
    from bench.hardware import CHIPS

    if isinstance(value, str) and value.count("/") == 1:
        chip, size = value.split("/")
        if chip in CHIPS and size in SIZES:
            return chip, size
    raise ValueError(
        f"expected <chip>/<size> with chip one of {sorted(CHIPS)} and size one of "
        f"{list(SIZES)} (e.g. v6e/full), got {shorten(value)}"
    )


def check_relpath(relpath: Any) -> str | None:
    """None if `relpath` is a plain relative path (`a/b.csv`), else what is wrong with it."""
    if not isinstance(relpath, str) or not relpath:
        return f"expected a relative path inside the submission folder, got {shorten(relpath)}"
    if len(relpath) > 255:
        return f"path too long ({len(relpath)} characters, at most 255)"
    if _BAD_CHARS.search(relpath):
        return f"path {shorten(relpath)} has a backslash or control character; use plain '/'-separated names"
    if relpath.startswith("/"):
        return f"path {shorten(relpath)} is absolute; give it relative to the submission folder"
    parts = relpath.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return f"path {shorten(relpath)} has an empty, '.' or '..' part; give a plain path inside the submission folder"
    return None


@dataclass(frozen=True)
class Entry:
    """One thing found in the folder, by its relative path, without following links."""

    relpath: str
    kind: str  # "file", "dir", "symlink" or "other" (FIFO, device, socket)
    size: int


class Folder:
    """A submission folder, read strictly: every read is bounded and stays inside `root`.

    `shown` is how the folder is named in messages: the path as the submitter gave it (`submissions/<id>`
    in CI), never a path they did not write.
    """

    def __init__(self, root: Path, shown: str | None = None, limits: Limits = LIMITS) -> None:
        self.root = Path(root)
        self.shown = shown_text(shown if shown is not None else str(root)).rstrip("/") or "."
        self.limits = limits

    def where(self, relpath: str) -> str:
        """`relpath` as a path in messages."""
        return f"{self.shown}/{shown_text(relpath)}" if relpath else self.shown

    def _problem(self, relpath: str, field: str, message: str) -> SubmissionInvalid:
        return SubmissionInvalid([Problem(self.where(relpath), field, message)])

    def _open_dir(self) -> int:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise self._problem("", "(folder)", f"cannot open the submission folder ({exc.strerror})") from None

    def read_bytes(self, relpath: str, max_bytes: int, field: str = "(file)") -> bytes:
        """The bytes of the regular file at `relpath`, at most `max_bytes`; SubmissionInvalid otherwise.

        Each folder on the way and the file itself are opened with O_NOFOLLOW relative to the previous one,
        so a symlink anywhere is refused rather than followed; O_NONBLOCK keeps a FIFO from blocking the open.
        """
        err = check_relpath(relpath)
        if err:
            raise self._problem(relpath if isinstance(relpath, str) else "", field, err)
        parts = relpath.split("/")
        fds = [self._open_dir()]
        try:
            for i, part in enumerate(parts):
                last = i == len(parts) - 1
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
                try:
                    fds.append(os.open(part, flags, dir_fd=fds[-1]))
                except OSError as exc:
                    raise self._open_problem(relpath, "/".join(parts[: i + 1]), field, exc, last) from None
            fd = fds[-1]
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
                raise self._problem(relpath, field, f"is {kind}; expected a regular file")
            if st.st_size > max_bytes:
                raise self._problem(
                    relpath, field, f"file too large ({st.st_size} bytes, at most {max_bytes}); shrink it"
                )
            chunks, total = [], 0
            while total <= max_bytes:
                chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - total))  # os.read(n) allocates n bytes up front
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
            blob = b"".join(chunks)
            if len(blob) > max_bytes:  # it grew after the fstat
                raise self._problem(relpath, field, f"file too large (over {max_bytes} bytes); shrink it")
            return blob
        finally:
            for fd in fds:
                os.close(fd)

    def _open_problem(self, relpath: str, upto: str, field: str, exc: OSError, last: bool) -> SubmissionInvalid:
        if exc.errno == errno.ENOENT:
            return self._problem(
                relpath, field, "file absent" if upto == relpath else f"folder {shown_text(upto)!r} absent"
            )
        if exc.errno in (errno.ELOOP, errno.EMLINK) or (exc.errno == errno.ENOTDIR and self._is_link(upto)):
            return self._problem(
                relpath, field, f"{shown_text(upto)!r} is a symbolic link; put the real file in the folder"
            )
        if exc.errno == errno.ENOTDIR:
            return self._problem(relpath, field, f"{shown_text(upto)!r} is not a folder")
        if exc.errno == errno.EISDIR:
            return self._problem(relpath, field, "is a folder; expected a regular file")
        return self._problem(relpath, field, f"cannot be read ({exc.strerror})")

    def _is_link(self, relpath: str) -> bool:
        try:
            return stat.S_ISLNK(os.lstat(self.root / relpath).st_mode)
        except OSError:
            return False

    def read_text(self, relpath: str, max_bytes: int, field: str = "(file)") -> str:
        """The file at `relpath` as strict UTF-8 text (bounded as read_bytes)."""
        blob = self.read_bytes(relpath, max_bytes, field)
        try:
            return blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self._problem(relpath, field, f"not UTF-8 text (byte {exc.start}); save it as UTF-8") from None

    def entries(self) -> list[Entry]:
        """Everything in the folder (relative paths, sorted), never following a link, bounded in count and depth."""
        out: list[Entry] = []
        self._walk("", 0, out)
        return sorted(out, key=lambda e: e.relpath)

    def _walk(self, rel: str, depth: int, out: list[Entry]) -> None:
        path = self.root / rel if rel else self.root
        try:
            with os.scandir(path) as it:
                for entry in it:
                    self._add(entry, f"{rel}/{entry.name}" if rel else entry.name, depth, out)
        except OSError as exc:
            raise self._problem(rel, "(folder)", f"cannot be listed ({exc.strerror})") from None

    def _add(self, entry: os.DirEntry, relpath: str, depth: int, out: list[Entry]) -> None:
        if len(out) >= self.limits.entries:
            raise self._problem(
                "", "(folder)", f"more than {self.limits.entries} files and folders; keep only the submission"
            )
        st = entry.stat(follow_symlinks=False)
        kind = (
            "symlink"
            if stat.S_ISLNK(st.st_mode)
            else "dir"
            if stat.S_ISDIR(st.st_mode)
            else "file"
            if stat.S_ISREG(st.st_mode)
            else "other"
        )
        out.append(Entry(relpath, kind, st.st_size if kind == "file" else 0))
        if kind == "dir":
            if depth + 1 >= self.limits.depth:
                raise self._problem(
                    relpath, "(folder)", f"folders nested deeper than {self.limits.depth}; flatten them"
                )
            self._walk(relpath, depth + 1, out)


def read_text_file(folder: Path, relpath: str, max_bytes: int, shown: str | None = None) -> str:
    """One file of a submission as UTF-8 text: contained, regular, at most `max_bytes` (see Folder.read_bytes)."""
    return Folder(folder, shown).read_text(relpath, max_bytes)


# -- YAML ---------------------------------------------------------------------------------------------------
class _StrictLoader(yaml.SafeLoader):
    """SafeLoader minus everything a metadata file does not need: aliases, anchors, tags, merges, duplicates."""

    max_nodes = LIMITS.yaml_nodes
    max_depth = LIMITS.yaml_depth

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._nodes = 0
        self._depth = 0

    def _refuse(self, what: str, mark: Any) -> None:
        raise yaml.composer.ComposerError(None, None, what, mark)

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            self._refuse("aliases (*name) are not allowed; write the value out", event.start_mark)
        if getattr(event, "anchor", None) is not None:
            self._refuse("anchors (&name) are not allowed; write the value out", event.start_mark)
        tag = getattr(event, "tag", None)
        if tag is not None:
            self._refuse(f"explicit tags ({shorten(tag)}) are not allowed; write a plain value", event.start_mark)
        self._nodes += 1
        if self._nodes > self.max_nodes:
            self._refuse(f"more than {self.max_nodes} values; keep the metadata short", event.start_mark)
        nested = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        self._depth += nested
        if self._depth > self.max_depth:
            self._refuse(f"nested deeper than {self.max_depth} levels", event.start_mark)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= nested

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                raise yaml.constructor.ConstructorError(
                    None, None, "merge keys (<<) are not allowed", key_node.start_mark
                )
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if key is None:
                raise yaml.constructor.ConstructorError(None, None, "keys must be plain names", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {shorten(key)}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


# Dates stay strings (the validator parses them): a timestamp the constructor cannot build would raise a
# ValueError from deep inside PyYAML, and metadata needs no datetime objects.
_StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_yaml(text: str) -> Any:
    """Parse YAML strictly (see _StrictLoader); raises yaml.YAMLError (with a mark when known) on anything refused.

    Values PyYAML cannot build (an integer of 5000 digits, ...) become a YAMLError too, never a ValueError.
    """
    loader = _StrictLoader(text)
    try:
        return loader.get_single_data()
    except (ValueError, TypeError, OverflowError, RecursionError, MemoryError) as exc:
        raise yaml.YAMLError(f"value not accepted ({type(exc).__name__}: {shown_text(str(exc), 120)})") from None
    finally:
        loader.dispose()


def yaml_problem(exc: Exception, file: str) -> Problem:
    """A Problem naming the line and column of a YAML error."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(file)"
    what = getattr(exc, "problem", None) or str(exc)
    return Problem(
        file,
        where,
        f"YAML not accepted: {shown_text(str(what), 300)} (plain keys, values and lists "
        "only: no anchors, aliases, tags or duplicate keys)",
    )
