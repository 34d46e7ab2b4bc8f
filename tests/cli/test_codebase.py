"""One place for each idea: the workload contract is read only by the registry, and the harness constants
(default timeout, build paths, device globs) are defined once. A regression here is a second definition."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
CONTRACT = re.compile(
    r"getattr\([^)]*[\"'](CONFIG|SMALL|META|TOLERANCE|SMALL_TOLERANCE|DEGENERATE|STATIC_ARGNUMS|get_flops)[\"']"
    r"|\.(CONFIG|SMALL|META|TOLERANCE|SMALL_TOLERANCE|DEGENERATE|STATIC_ARGNUMS|get_flops)\b"
)
#: literal -> the one module allowed to hold it
DEFINED_ONCE = {
    "300.0": "harness/protocol/task.py",
    '"/dev/accel': "hardware.py",
    '"/dev/nvidia': "hardware.py",
    '/ "eval"': "paths.py",
    '"jax_cache"': "paths.py",
    "STARTUP_TIMEOUT_S =": "harness/protocol/task.py",
    "warmup=5,\n    min_calls=50,": "harness/protocol/policy.py",
    "confidence=0.95": "harness/protocol/policy.py",
}


def _sources() -> dict[str, str]:
    return {str(p.relative_to(BENCH)): p.read_text() for p in BENCH.rglob("*.py")}


def test_the_workload_contract_is_read_only_by_the_registry():
    offenders = [
        f"{name}:{i + 1}: {line.strip()}"
        for name, text in _sources().items()
        if name != "registry.py"
        for i, line in enumerate(text.splitlines())
        if CONTRACT.search(line)
    ]
    assert offenders == [], "read the workload's attributes through bench.registry.spec / spec_of:\n" + "\n".join(
        offenders
    )


def test_harness_constants_are_defined_once():
    for literal, home in DEFINED_ONCE.items():
        where = sorted(name for name, text in _sources().items() if literal in text)
        assert where == [home], f"{literal!r} appears in {where}; define it in bench/{home} and import it"


# -- rules outside the harness (the harness's own are held by the tests above and tests/harness) ---------------
ROOT = BENCH.parent
#: Python that restates the default-size rule ("small" on CPU, "full" on accelerators) instead of asking
#: bench.hardware.default_size.
SIZE_RULE = re.compile(r"""["'](small|full)["']\s+if\b|\belse\s+["'](small|full)["']""")


def _python_outside_tests() -> dict[str, str]:
    files = [*BENCH.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py"), *(ROOT / "scripts").rglob("*.py")]
    return {str(p.relative_to(ROOT)): p.read_text() for p in files}


def test_the_default_size_rule_is_stated_once():
    offenders = [
        f"{name}:{i + 1}: {line.strip()}"
        for name, text in _python_outside_tests().items()
        if name != "bench/hardware.py"
        for i, line in enumerate(text.splitlines())
        if SIZE_RULE.search(line)
    ]
    assert offenders == [], "ask bench.hardware.default_size(backend):\n" + "\n".join(offenders)


def test_eval_task_defaults_are_not_restated_outside_the_harness():
    """`seeds: int = 3` or `typer.Option(10, ...)` beside an EvalTask field name is a second copy of the default."""
    from bench.harness.protocol.task import EvalTask

    offenders = []
    for field in ("seeds", "blocks", "memory_limit_mb"):
        default = EvalTask.model_fields[field].default
        restated = re.compile(rf"\b{field}\b[^=\n]*=\s*(typer\.Option\()?{re.escape(repr(default))}\b")
        offenders += [
            f"{name}:{i + 1}: {line.strip()}"
            for name, text in _python_outside_tests().items()
            if not name.startswith("bench/harness/") and name != "bench/commands.py"  # its None: unset
            for i, line in enumerate(text.splitlines())
            if restated.search(line)
        ]
    assert offenders == [], "read EvalTask.model_fields[...].default (or EvalSettings):\n" + "\n".join(offenders)


def test_the_xla_cpu_timing_flags_are_defined_once():
    where = sorted(name for name, text in _python_outside_tests().items() if "xla_cpu_multi_thread_eigen" in text)
    assert where == ["bench/harness/protocol/isolation.py"], (
        f"XLA:CPU flags written in {where}; import bench.harness.protocol.isolation.CPU_TIMING_FLAGS"
    )


def test_the_changelog_records_the_current_versions():
    """A bump of HARNESS_VERSION or SCHEMA_VERSION says in CHANGELOG.md what it means for stored numbers."""
    import bench
    from bench.dataset.schema import SCHEMA_VERSION

    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"### Harness {bench.HARNESS_VERSION} (" in changelog, "add the harness version's entry to CHANGELOG.md"
    assert f"### Schema {SCHEMA_VERSION} (" in changelog, "add the schema version's entry to CHANGELOG.md"


# ---------------------------------------------------------------- bench/harness: rules stated once, layers

HARNESS = BENCH / "harness"
#: a rule -> (a pattern that states it, the one module allowed to state it)
RULES_ONCE = {
    "out-of-memory error text": (re.compile(r"RESOURCE_EXHAUSTED\"|std::bad_alloc"), "harness/protocol/wire.py"),
    "the workload's abstract signature": (re.compile(r"inputs\[i\] for i in|eval_shape\(draw"), "registry.py"),
    "the default size": (re.compile(r"else \"(small|full)\"|\"(small|full)\" if "), "hardware.py"),
    "XLA:CPU single-thread flags": (re.compile(r"--xla_cpu_multi_thread_eigen"), "harness/protocol/isolation.py"),
}
#: One folder per process; a module's path says which process runs it. Each folder may import the shared
#: `protocol` (messages, transport, the child-process handle, task, result) and itself, never another process's
#: folder: the parent starts its children by module name (`python -m ...`), it never imports them.
PROCESS_FOLDERS = {
    "parent": "the trusted parent (builds, inspects, runs and decides)",
    "sandbox": "the sandboxed build (UNTRUSTED: the only place candidate code runs)",
    "runner": "the trusted runner (compiles, checks and times the exported programs)",
    "inspection": "the inspection worker (trusted: reads a build's exports, hostile bytes)",
    "protocol": "what the processes share",
}


def test_each_harness_rule_is_stated_once():
    for rule, (pattern, home) in RULES_ONCE.items():
        where = sorted(name for name, text in _sources().items() if pattern.search(text))
        assert where == [home], f"{rule} is stated in {where}; state it in bench/{home} and use it"


def test_failure_kinds_are_status_values_not_strings():
    """The parent decides kinds as Status members where it observes them (builder, process handle, runner session),
    never as strings mapped later."""
    kinds = re.compile(r"[\"'](timeout|crashed|compile_error|runtime_error|out_of_memory)[\"']")
    for name in (
        "parent/builder.py",
        "protocol/process.py",
        "parent/session.py",
        "parent/evaluate.py",
        "parent/outcome.py",
    ):
        found = kinds.findall((HARNESS / name).read_text())
        assert found == [], f"bench/harness/{name} names failure kinds as strings: {found}; use Status"


def _module_imports() -> dict[str, set[str]]:
    """bench.harness module -> the bench.harness modules it imports at module level (its dependency edges)."""
    import ast

    names = {
        ".".join(("bench", *p.relative_to(BENCH).with_suffix("").parts)).removesuffix(".__init__")
        for p in HARNESS.rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for path in HARNESS.rglob("*.py"):
        module = ".".join(("bench", *path.relative_to(BENCH).with_suffix("").parts)).removesuffix(".__init__")
        edges: set[str] = set()
        for node in ast.parse(path.read_text()).body:  # module level only: function-local imports are checked below
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:  # `from pkg import sub`: an edge to sub only
                subs = {f"{node.module}.{a.name}" for a in node.names} & names
                edges |= subs if len(subs) == len(node.names) else {node.module} | subs
        graph[module] = {e for e in edges if e in names and e != module}
    return graph


def test_harness_imports_have_no_cycle():
    graph = _module_imports()
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == 1:
                raise AssertionError("import cycle: " + " -> ".join([*path[path.index(dep) :], dep]))
            if dep not in state:
                visit(dep, [*path, dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def _all_imports(path: Path) -> set[str]:
    """The bench modules `path` imports anywhere in it (module level or inside a function)."""
    import ast

    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("bench")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("bench"):
            found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return found


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["bench", "harness"] else None


def test_untyped_dicts_in_the_harness_are_raw_frames_only():
    """Issue 39's seam budget: a report passed around as `dict[str, Any]` hides misspelt keys; the ten left are raw
    wire frames, trace stats and the free-form `details`/`config` a result carries."""
    found = [
        f"{p.relative_to(HARNESS)}:{n}"
        for p in sorted(HARNESS.rglob("*.py"))
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if "dict[str, Any]" in line
    ]
    assert len(found) <= 10, "\n".join(found)


def test_each_harness_module_lives_in_its_process_folder():
    loose = sorted(str(p.relative_to(HARNESS)) for p in HARNESS.glob("*.py") if p.name != "__init__.py")
    folders = sorted(p.name for p in HARNESS.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert loose == [] and folders == sorted(PROCESS_FOLDERS), (loose, folders)


def test_no_process_imports_another_process_folder():
    """protocol imports nothing above it; parent, sandbox, runner and inspection import protocol and themselves."""
    offenders = []
    for path in sorted(HARNESS.rglob("*.py")):
        module = ".".join(("bench", *path.relative_to(BENCH).with_suffix("").parts)).removesuffix(".__init__")
        own = _folder(module)
        for dep in sorted(_all_imports(path)):
            theirs = _folder(dep)
            if theirs not in (None, own, "protocol"):
                offenders.append(f"{module} ({own}) imports {dep} ({theirs})")
    assert offenders == [], "\n".join(offenders)


def test_child_process_folders_are_not_imported_outside_the_harness():
    """Only the harness's own processes load the sandbox, runner and inspection modules (tests may)."""
    offenders = []
    for path in sorted([*BENCH.rglob("*.py"), *(ROOT / "benchmarks").rglob("*.py")]):
        if HARNESS in path.parents:
            continue
        offenders += [
            f"{path.relative_to(ROOT)} imports {dep}"
            for dep in sorted(_all_imports(path))
            if _folder(dep) in ("sandbox", "runner", "inspection")
        ]
    assert offenders == [], "\n".join(offenders)


def test_the_build_process_imports_neither_pydantic_nor_the_typed_messages():
    """A build is one process per candidate: what it imports, every candidate pays (pydantic and the messages' models
    ~0.2 s of CPU). It speaks the wire format (protocol/wire.py); the parent validates its reply."""
    code = (
        "import sys, bench.harness.sandbox.child; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] == 'pydantic' or m == 'bench.harness.protocol.messages'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout


def test_function_local_imports_in_the_harness_say_why():
    """A function-local import hides a dependency; it is allowed only where a process must not load the module
    (jax in the parent, Pallas's TPU stack where no Pallas runs), with the reason on its line."""
    import ast

    missing = []
    for path in sorted(HARNESS.rglob("*.py")):
        if "inspection" in path.relative_to(HARNESS).parts:  # the inspection package runs its own worker process
            continue  # and is reviewed with the trust boundary (issue 23); its local imports are not held here
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Import | ast.ImportFrom) and "#" not in lines[sub.lineno - 1]:
                        missing.append(f"{path.relative_to(BENCH)}:{sub.lineno}: {lines[sub.lineno - 1].strip()}")
    assert sorted(set(missing)) == [], "say why the import is local, or move it to the top:\n" + "\n".join(
        sorted(set(missing))
    )


def test_the_script_knows_which_module_registers_each_command():
    """The bench script (bench.app.main) imports only the command module a command line needs: its table must name
    every command each module registers (a command missing from it would still work, through importing them all,
    but a one-off `bench evaluate` would pay for the other areas' imports again)."""
    import importlib

    import typer.main

    from bench.app import COMMAND_MODULES, app

    def names() -> set[str]:
        return {
            c.name or typer.main.get_command_name(c.callback.__name__)
            for c in app.registered_commands
            if c.callback is not None
        } | {g.name for g in app.registered_groups if g.name}

    for module, commands in COMMAND_MODULES.items():
        before = names()
        importlib.import_module(module)
        assert names() - before <= set(commands) and set(commands) <= names(), module


@pytest.mark.parametrize("command", ["build-site", "audit", "tune", "evaluate"])
def test_a_command_whose_module_is_imported_alone_still_runs_as_that_command(command):
    """The script imports only the module of the command it runs (bench.app.main): the app stays a group."""
    code = f"import sys; sys.argv = ['bench', {command!r}, '--help']; from bench.app import main; main()"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert f"bench {command}" in out.stdout
