"""Integrity flag names and which of them exclude a result from the ranking: the one definition.

Two kinds of flags (docs/threat-model.md explains each):
- LABEL flags describe a row honestly but say nothing bad about it: `no_pallas` (the candidate's TPU
  program holds no live Pallas kernel that computes: an XLA rewrite, shown as such), `mostly_xla` (it does,
  but most of its work is XLA: Pallas coverage below the threshold) and `sandbox:none` (the candidate ran
  without bubblewrap). They never exclude a row.
- Every other flag is EXCLUDING: the row stays in the dataset and on the site, but is left out of every
  ranking until a maintainer records a verdict that clears it. Unknown flags (a future check whose name
  this table does not know yet) are excluding too: the safe default.

The dataset code imports `is_excluding` / `EXCLUDING_FLAGS` from here, never restates the rule.
"""

from __future__ import annotations

from collections.abc import Iterable

# --- labels (never exclude) -------------------------------------------------------------------------
NO_PALLAS = "no_pallas"
SANDBOX_NONE = "sandbox:none"
MOSTLY_XLA = "mostly_xla"  # Pallas coverage below bench.harness.protocol.messages.MOSTLY_XLA_BELOW
LABEL_FLAGS = frozenset({NO_PALLAS, SANDBOX_NONE, MOSTLY_XLA})

# --- excluding: found in the exported program (bench.harness.parent.inspecting) -------------------------------
HOST_CALLBACK = "host_callback"  # a host callback / host transfer in the program (refused: never run)
LARGE_CONSTANT = "large_constant"  # baked-in constants large enough to hold a precomputed answer
NATIVE_CALL = "native_call"  # a custom call outside the allow-list: native code the harness cannot inspect
DISALLOWED_OP = "disallowed_op"  # an op outside the allow-list of pure ops (state, tokens, side effects): refused
OVERSIZED_PROGRAM = "oversized_program"  # past the inspection's bounds (size, nesting, inlined size, time, memory)

# --- excluding: measurement ---------------------------------------------------------------------------
BELOW_PHYSICS_FLOOR = "below_physics_floor"  # faster than writing the output at peak bandwidth: status rejected
BELOW_BASELINE_ROOFLINE = "below_baseline_roofline"  # faster than the baseline's FLOPs/bytes allow: audit
SPEEDUP_ABOVE_THRESHOLD = "speedup_above_threshold"  # larger than any honest speedup seen so far: audit
TIMING_INCONSISTENT = "timing_inconsistent"  # harness <= v6 only: a worker's reported time far below the parent's clock

# --- excluding: the candidate changed what it was given or its process ----------------------------------
# (the runtime:* and trace_unstable tripwires ran in the v6 candidate worker; v7 has no process where they
# mean anything: the candidate's Python runs only in the build. Kept so that stored v6 rows stay excluded.)
RUNTIME_PATCHED = "runtime:patched"  # a timer / jax / numpy / harness function was replaced after import
RUNTIME_JAX_CONFIG = "runtime:jax_config_changed"
RUNTIME_ENVIRON = "runtime:environ_changed"
RUNTIME_THREADS = "runtime:threads"  # more threads alive after import/calls than before
RUNTIME_PROCESSES = "runtime:processes"  # a process started by the candidate is alive after import/compile
TRACE_UNSTABLE = "trace_unstable"  # tracing the candidate twice gave two different programs

# --- excluding: static tripwires on the source (bench.integrity.static_scan) ---------------------------
STATIC_PREFIX = "static:"
STATIC_FLAGS = frozenset(
    STATIC_PREFIX + name
    for name in (
        "frame_inspection",
        "introspection",
        "native_memory",
        "jax_config",
        "environment",
        "threads",
        "subprocess",
        "file_access",
        "network",
        "harness_import",
        "workload_import",
        "timer_patch",
        "monkeypatch",
        "profiler",
        "host_callback",
        "native_call",
        "exit",
        "dynamic_code",
        "mutable_state",
    )
)

EXCLUDING_FLAGS = (
    frozenset(
        {
            HOST_CALLBACK,
            LARGE_CONSTANT,
            NATIVE_CALL,
            DISALLOWED_OP,
            OVERSIZED_PROGRAM,
            BELOW_PHYSICS_FLOOR,
            BELOW_BASELINE_ROOFLINE,
            SPEEDUP_ABOVE_THRESHOLD,
            TIMING_INCONSISTENT,
            RUNTIME_PATCHED,
            RUNTIME_JAX_CONFIG,
            RUNTIME_ENVIRON,
            RUNTIME_THREADS,
            RUNTIME_PROCESSES,
            TRACE_UNSTABLE,
        }
    )
    | STATIC_FLAGS
)


def is_excluding(flag: str) -> bool:
    """True unless `flag` is a pure label. Unknown flags exclude (fail closed)."""
    return flag not in LABEL_FLAGS


def excluding(flags: Iterable[str]) -> list[str]:
    """The flags of a row that keep it out of the ranking until a maintainer verdict clears them."""
    return [f for f in flags if is_excluding(f)]


def merge_flags(*groups: Iterable[str]) -> list[str]:
    """Union of flag lists, sorted, so that rows compare and display the same whatever the check order."""
    return sorted({f for group in groups for f in group})
