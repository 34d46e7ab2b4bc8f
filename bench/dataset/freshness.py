"""The freshness key: one hash of everything that determines a stored result, so ingest knows what is current.

A result is a function of (the submission's declared metadata, the kernel file, the workload it is measured
against, the harness, the libraries that compile and run it, and the project code the kernel imports). A row
whose key differs from the key computed now is stale and is evaluated again. What goes in, and why:

- `submission.yaml` and the kernel file's bytes: what was submitted;
- `workloads/<id>.py` and `workloads/_common.py`: inputs, shapes, tolerance and semantics of the task
  (a changed tolerance or input distribution changes the verdict);
- `bench.HARNESS_VERSION`: every harness change that can move a verdict or a timing bumps it;
- jax / jaxlib / libtpu versions: compile and run the programs;
- the `pallas_refs/` modules the kernel imports (followed transitively through their own imports, read
  statically with `ast`, never executed) and the chip's tuned block-size table when `pallas_refs.tables` is
  among them. A kernel that imports the `pallas_refs` package itself (`pallas_refs.load(...)` picks a module at
  run time) depends on the whole package.

The key is a sha256 hex digest; `parts` lists the named ingredients (for debugging a mismatch).
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import bench
from bench.hardware import versions
from bench.paths import PALLAS_REFS_DIR, WORKLOADS_DIR

REFS_PACKAGE = "pallas_refs"


@dataclass(frozen=True)
class FreshnessKey:
    key: str
    parts: dict[str, str] = field(default_factory=dict)  # ingredient -> its own sha256 (or version string)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _imported_modules(source: str) -> set[str]:
    """Absolute module names imported by `source` (`from a.b import c` yields a.b and a.b.c: c may be a module)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()  # the harness reports it as a compile error; the kernel bytes are in the key anyway
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _ref_file(module: str, refs_dir: Path) -> Path | None:
    """The file of a pallas_refs module name, or None when the name is not a module of the package."""
    parts = module.split(".")
    if parts[0] != REFS_PACKAGE:
        return None
    if len(parts) == 1:
        return refs_dir / "__init__.py"
    path = refs_dir.joinpath(*parts[1:])
    if path.with_suffix(".py").is_file():
        return path.with_suffix(".py")
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return None


def refs_closure(source: str, refs_dir: Path | None = None) -> list[Path]:
    """Every pallas_refs file a kernel's source depends on, by static import resolution (sorted)."""
    refs_dir = refs_dir or PALLAS_REFS_DIR
    found: set[Path] = set()
    todo = [source]
    whole_package = False
    while todo:
        for module in _imported_modules(todo.pop()):
            if module == REFS_PACKAGE:
                whole_package = True  # `import pallas_refs` / `from pallas_refs import load`: any module, at run time
            parts = module.split(".")
            # importing a.b.c runs a/__init__.py and a/b/__init__.py first
            for path in [_ref_file(".".join(parts[:i]), refs_dir) for i in range(1, len(parts) + 1)]:
                if path is not None and path not in found:
                    found.add(path)
                    todo.append(path.read_text(errors="replace"))
    if whole_package:
        found.update(refs_dir.rglob("*.py"))
    return sorted(found)


def freshness_key(
    submission_yaml: Path,
    kernel: Path,
    workload: str,
    chip: str,
    workloads_dir: Path | None = None,
    refs_dir: Path | None = None,
) -> FreshnessKey:
    """The key of one (submission, kernel, workload) on a chip's track, from the files as they are now."""
    workloads_dir, refs_dir = workloads_dir or WORKLOADS_DIR, refs_dir or PALLAS_REFS_DIR
    kernel_source = kernel.read_bytes()
    parts: dict[str, str] = {
        "submission.yaml": _sha(submission_yaml.read_bytes()),
        "kernel": _sha(kernel_source),
        f"workloads/{workload}.py": _sha((workloads_dir / f"{workload}.py").read_bytes()),
        "workloads/_common.py": _sha((workloads_dir / "_common.py").read_bytes()),
        "harness_version": bench.HARNESS_VERSION,
        **{k: str(v) for k, v in versions().items()},
    }
    refs = refs_closure(kernel_source.decode(errors="replace"), refs_dir)
    for path in refs:
        parts[f"pallas_refs/{path.relative_to(refs_dir)}"] = _sha(path.read_bytes())
    if refs_dir / "tables.py" in refs:
        table = refs_dir / "tuned" / f"{chip}.yaml"
        parts[f"pallas_refs/tuned/{chip}.yaml"] = _sha(table.read_bytes()) if table.is_file() else "absent"
    blob = "\n".join(f"{k}={v}" for k, v in sorted(parts.items())).encode()
    return FreshnessKey(_sha(blob), parts)
