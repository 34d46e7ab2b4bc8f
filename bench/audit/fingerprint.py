"""A short, stable fingerprint of each workload's compiled XLA baseline, pinned in the repository.

Why: every speedup is relative to a baseline program, and the paper's are relative to the original JAXBench's
programs. Two formulations with the same values can compile to different programs (issue #19: 11p's row-index
iota, hoisted out of the `lax.scan`, became a materialized buffer carried through every iteration and the
baseline ran 2.2x slower than the original's). tests/workloads/test_baseline_fingerprints.py holds every
workload's compiled baseline (small size, CPU, bf16 inputs as the harness draws them) to the fingerprint stored
in tests/workloads/baseline_fingerprints.json, so an accidental change to a baseline program fails CI.

Only facts that do not depend on the run are kept: the multiset of HLO opcodes of the optimized module (every
computation, fused ones included) and the shapes carried by each `while` loop, layouts stripped. Instruction
names, ids, fusion names and metadata are dropped (they vary between runs and machines).

Regenerate after a reviewed change to a baseline program (and review the diff of the JSON file):

    python -m bench.audit.fingerprint --write           # all workloads
    python -m bench.audit.fingerprint --write 11p 17p   # only these
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

from bench.paths import ROOT

FINGERPRINT_FILE = ROOT / "tests" / "workloads" / "baseline_fingerprints.json"
SIZE = "small"

# One HLO instruction: `[ROOT ]%name = <shape> opcode(operands...)...`. The shape may be a (nested) tuple.
_INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?P<rest>.*)$")
_LAYOUT = re.compile(r"\{[^{}]*\}")
_COMMENT = re.compile(r"/\*.*?\*/")


def _split_shape(rest: str) -> tuple[str, str]:
    """(shape, text after it) of an instruction's right-hand side; the shape may be a parenthesized tuple."""
    if rest.startswith("("):
        depth = 0
        for i, ch in enumerate(rest):
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0:
                return rest[: i + 1], rest[i + 1 :].lstrip()
    shape, _, after = rest.partition(" ")
    return shape, after


def _strip_layout(shape: str) -> str:
    shape = _COMMENT.sub("", shape)
    while _LAYOUT.search(shape):
        shape = _LAYOUT.sub("", shape)
    return shape.replace(" ", "")


def hlo_fingerprint(hlo_text: str) -> dict[str, Any]:
    """Opcode multiset and while-loop carried shapes of an optimized HLO module's text."""
    ops: Counter[str] = Counter()
    loops: list[str] = []
    for line in hlo_text.splitlines():
        m = _INSTRUCTION.match(line)
        if not m or line.lstrip().startswith(("HloModule", "//")):
            continue
        shape, after = _split_shape(m.group("rest"))
        opcode = after.split("(", 1)[0].strip()
        if not opcode or not re.fullmatch(r"[a-z][a-z0-9\-]*", opcode):
            continue
        ops[opcode] += 1
        if opcode == "while":
            loops.append(_strip_layout(shape))
    return {"ops": dict(sorted(ops.items())), "loops": sorted(loops)}


def compiled_hlo(workload_id: str, size: str = SIZE) -> str:
    """Optimized HLO of the workload's baseline, compiled as the harness compiles it, without drawing inputs.

    Inputs are abstract (the workload's signature: bench.registry.WorkloadSpec.signature), static inputs (11p's
    max_expert_size) are captured as the Python values create_inputs returns.
    """
    import jax

    from bench.registry import load_workload, spec_of

    mod = load_workload(workload_id)
    static_argnums = spec_of(mod).static_argnums
    sig = spec_of(mod).signature(size)
    args = sig.full_args(sig.arrays)
    text = jax.jit(mod.workload, static_argnums=static_argnums).lower(*args).compile().as_text()
    if text is None:
        raise RuntimeError(f"{workload_id}: the backend gave no text of the compiled program")
    return text


def fingerprint(workload_id: str, size: str = SIZE) -> dict[str, Any]:
    return hlo_fingerprint(compiled_hlo(workload_id, size))


def load_stored(path: Path = FINGERPRINT_FILE) -> dict[str, Any]:
    return json.loads(path.read_text())


def diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Readable differences between two fingerprints (empty when equal)."""
    lines = []
    e_ops, a_ops = Counter(expected.get("ops", {})), Counter(actual.get("ops", {}))
    for op in sorted(set(e_ops) | set(a_ops)):
        if e_ops[op] != a_ops[op]:
            lines.append(f"  opcode {op}: stored {e_ops[op]}, compiled {a_ops[op]}")
    if expected.get("loops") != actual.get("loops"):
        lines.append(f"  while-loop carried shapes: stored {expected.get('loops')}, compiled {actual.get('loops')}")
    return lines


def _environment() -> dict[str, str]:
    import jax
    import jaxlib

    return {"jax": jax.__version__, "jaxlib": jaxlib.__version__, "backend": jax.default_backend(), "size": SIZE}


def write(ids: list[str] | None = None, path: Path = FINGERPRINT_FILE) -> dict[str, Any]:
    """Recompute the fingerprints of `ids` (default: all) and store them, keeping the others."""
    from bench.registry import workload_ids

    stored = load_stored(path) if path.is_file() else {"workloads": {}}
    targets = ids or list(workload_ids())
    for wid in targets:
        stored["workloads"][wid] = fingerprint(wid)
    stored["environment"] = _environment()
    stored["regenerate"] = "python -m bench.audit.fingerprint --write [ids...]"

    def by_number(kv: tuple[str, Any]) -> tuple[int, str]:
        return int(kv[0].split("_")[0][:-1]), kv[0]

    stored["workloads"] = dict(sorted(stored["workloads"].items(), key=by_number))
    path.write_text(json.dumps({k: stored[k] for k in ("regenerate", "environment", "workloads")}, indent=1) + "\n")
    return stored


def main(argv: list[str] | None = None) -> None:
    from bench.registry import resolve_id

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("ids", nargs="*", help="workload ids or prefixes (default: all)")
    parser.add_argument("--write", action="store_true", help=f"store the fingerprints in {FINGERPRINT_FILE}")
    args = parser.parse_args(argv)
    ids = [resolve_id(w) for w in args.ids] or None
    if args.write:
        write(ids)
        print(f"wrote {FINGERPRINT_FILE}")
        return
    from bench.registry import workload_ids

    stored = load_stored()["workloads"] if FINGERPRINT_FILE.is_file() else {}
    for wid in ids or list(workload_ids()):
        lines = diff(stored.get(wid, {}), fingerprint(wid))
        print(f"{wid}: " + ("matches the stored fingerprint" if not lines else "DIFFERS\n" + "\n".join(lines)))


if __name__ == "__main__":
    main()
