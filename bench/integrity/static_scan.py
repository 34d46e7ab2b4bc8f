"""Static tripwires on a candidate's source, run in the trusted parent before the candidate is launched.

Why tripwires and not verdicts: the real defenses are structural (another process computes the reference,
the candidate runs sandboxed and compiled once, every output is re-checked). A tripwire marks source that
*tries* something no kernel needs (walking stack frames, patching timers, touching files or the network,
importing the harness or the workload) so that a maintainer looks at it; the row is excluded until then.

How: an AST walk. Every identifier the module mentions (names, attribute names, imported modules) and every
string constant that is a bare identifier (so `getattr(sys, "_getframe")` counts like `sys._getframe`) is
matched against per-flag token sets; a few rules look at structure (assignments to module attributes,
`global` statements, mutation of module-level containers inside functions, calls to `id`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from bench.integrity.flags import STATIC_PREFIX

# Tokens (identifiers, attribute names, module path components) that trip a flag wherever they appear.
_TOKENS: dict[str, frozenset[str]] = {
    "frame_inspection": frozenset(
        {
            "inspect",
            "_getframe",
            "currentframe",
            "f_back",
            "f_locals",
            "f_globals",
            "tb_frame",
            "gi_frame",
            "cr_frame",
            "settrace",
            "setprofile",
            "extract_stack",
            "walk_stack",
            "_current_frames",
        }
    ),
    "introspection": frozenset(
        {
            "gc",
            "get_objects",
            "get_referrers",
            "get_referents",
            "__subclasses__",
            "__globals__",
            "__code__",
            "__closure__",
            "__builtins__",
            "modules",
            "live_arrays",
            "live_buffers",
        }
    ),
    "native_memory": frozenset(
        {"ctypes", "cffi", "mmap", "unsafe_buffer_pointer", "__array_interface__", "__cuda_array_interface__", "dlpack"}
    ),
    "jax_config": frozenset(
        {
            "config",
            "compilation_cache",
            "set_cache_dir",
            "jax_default_matmul_precision",
            "default_matmul_precision",
            "jax_enable_x64",
            "enable_x64",
        }
    ),
    "environment": frozenset({"environ", "putenv", "unsetenv", "getenv", "environb"}),
    "threads": frozenset(
        {
            "threading",
            "_thread",
            "multiprocessing",
            "concurrent",
            "asyncio",
            "fork",
            "forkpty",
            "Thread",
            "Timer",
            "signal",
            "sched",
        }
    ),
    "subprocess": frozenset(
        {
            "subprocess",
            "system",
            "popen",
            "Popen",
            "execv",
            "execve",
            "execvp",
            "spawnv",
            "spawnl",
            "posix_spawn",
            "pty",
        }
    ),
    "file_access": frozenset(
        {
            "open",
            "pathlib",
            "Path",
            "shutil",
            "tempfile",
            "glob",
            "listdir",
            "scandir",
            "walk",
            "remove",
            "unlink",
            "rename",
            "replace",
            "mkdir",
            "makedirs",
            "rmdir",
            "pickle",
            "shelve",
            "load",
            "save",
            "savez",
            "fromfile",
            "tofile",
            "chdir",
            "io",
            "memmap",
            "sqlite3",
        }
    ),
    "network": frozenset(
        {
            "socket",
            "http",
            "urllib",
            "urllib3",
            "requests",
            "httpx",
            "ssl",
            "ftplib",
            "smtplib",
            "xmlrpc",
            "socketserver",
            "websocket",
            "grpc",
        }
    ),
    "harness_import": frozenset({"bench", "JAXBench", "harness", "evaluate", "correctness", "pytest"}),
    # pallas_refs/ (the project's hand-tuned Pallas library, no reference outputs, read-only) may be imported.
    "workload_import": frozenset({"workloads", "create_inputs", "baseline", "_common"}),
    "profiler": frozenset(
        {
            "profiler",
            "TraceAnnotation",
            "StepTraceAnnotation",
            "start_trace",
            "stop_trace",
            "xprof",
            "tensorboard",
            "perfetto",
            "annotate_function",
        }
    ),
    "host_callback": frozenset({"pure_callback", "io_callback", "host_callback", "callback", "id_tap", "call_tf"}),
    "native_call": frozenset(
        {"ffi", "ffi_call", "custom_call", "register_ffi_target", "xla_client", "mlir", "hlo", "stablehlo"}
    ),
    "exit": frozenset(
        {"exit", "_exit", "quit", "abort", "kill", "killpg", "SystemExit", "KeyboardInterrupt", "atexit", "excepthook"}
    ),
    "dynamic_code": frozenset(
        {
            "exec",
            "eval",
            "compile",
            "__import__",
            "importlib",
            "marshal",
            "CodeType",
            "FunctionType",
            "runpy",
            "zipimport",
            "b64decode",
            "decompress",
            "codecs",
        }
    ),
}
# Timers and measurement functions: any *assignment* to these (or setattr naming them) is a timer patch.
_TIMER_NAMES = frozenset(
    {
        "perf_counter",
        "perf_counter_ns",
        "time",
        "time_ns",
        "monotonic",
        "monotonic_ns",
        "process_time",
        "thread_time",
        "block_until_ready",
        "median",
        "mean",
        "percentile",
        "elapsed_time",
        "ProfileData",
    }
)
# Tokens legitimate kernels use constantly under these names; a match needs more context for them.
_AMBIGUOUS = {
    "load",
    "save",
    "replace",
    "remove",
    "io",
    "config",
    "compile",
    "walk",
    "callback",
    "modules",
    "signal",
    "system",
    "Timer",
    "kill",
    "baseline",
    "evaluate",
    "harness",
    "hlo",
    "mlir",
    "time",
}
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")
_MUTATORS = frozenset({"append", "update", "setdefault", "pop", "clear", "add", "extend", "insert", "__setitem__"})


@dataclass(frozen=True)
class Finding:
    flag: str  # e.g. "static:frame_inspection"
    line: int
    what: str  # the token or construct that tripped it


def scan_source(source: str) -> list[str]:
    """Sorted, unique `static:*` flags for a candidate's source (empty for a clean kernel)."""
    return sorted({f.flag for f in scan_details(source)})


def scan_details(source: str) -> list[Finding]:
    """Every tripwire hit with its line, for the row's integrity details and for the auditor.

    Source that does not parse yields no finding: it cannot run, and the pipeline reports a compile error.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    scanner = _Scanner(_module_containers(tree))
    scanner.visit(tree)
    return sorted(set(scanner.findings), key=lambda f: (f.line, f.flag, f.what))


def _module_containers(tree: ast.Module) -> set[str]:
    """Names bound at module level to a mutable container: a cache keyed on inputs or a trace counter lives there."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(
            node.value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp, ast.Call)
        ):
            if isinstance(node.value, ast.Call) and _call_name(node.value) not in {
                "dict",
                "list",
                "set",
                "defaultdict",
                "OrderedDict",
                "Counter",
                "deque",
                "WeakKeyDictionary",
                "WeakValueDictionary",
                "count",
            }:
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _dotted(node: ast.AST) -> list[str]:
    """['jax', 'config', 'update'] for jax.config.update; [] when the chain does not start at a name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + parts[::-1]
    return []


class _Scanner(ast.NodeVisitor):
    def __init__(self, module_containers: set[str]) -> None:
        self.findings: list[Finding] = []
        self.module_containers = module_containers
        self.imported: set[str] = set()  # local names bound to imported modules
        self.depth = 0  # function nesting

    def hit(self, name: str, node: ast.AST, what: str) -> None:
        self.findings.append(Finding(STATIC_PREFIX + name, getattr(node, "lineno", 0), what))

    def tokens(self, token: str, node: ast.AST, context: str = "") -> None:
        """Match one identifier; ambiguous ones only count with context (module path / known owner)."""
        for flag, words in _TOKENS.items():
            if token in words and (token not in _AMBIGUOUS or self._ambiguous_ok(flag, token, context)):
                self.hit(flag, node, token)

    @staticmethod
    def _ambiguous_ok(flag: str, token: str, context: str) -> bool:
        owners = {
            ("file_access", "load"): {"np", "numpy", "jnp", "pickle", "json", "torch"},
            ("file_access", "save"): {"np", "numpy", "jnp", "pickle", "torch"},
            ("file_access", "replace"): {"os"},
            ("file_access", "remove"): {"os"},
            ("file_access", "walk"): {"os"},
            ("file_access", "io"): {"import"},
            ("jax_config", "config"): {"jax", "import:jax", "jax.config"},
            ("dynamic_code", "compile"): {"builtin"},
            ("host_callback", "callback"): {"debug", "jax.debug"},
            ("introspection", "modules"): {"sys"},
            ("threads", "signal"): {"import"},
            ("threads", "Timer"): {"threading"},
            ("subprocess", "system"): {"os"},
            ("exit", "kill"): {"os"},
            ("harness_import", "harness"): {"import"},
            ("harness_import", "evaluate"): {"import"},
            ("workload_import", "baseline"): {"import"},
            ("native_call", "hlo"): {"import"},
            ("native_call", "mlir"): {"import"},
        }
        return context in owners.get((flag, token), set())

    # --- imports ---------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module_path(alias.name, node)
            self.imported.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:  # relative import: a kernel is a single file; reaching a package around it is the harness
            self.hit("harness_import", node, "relative import")
        module = node.module or ""
        self._module_path(module, node)
        for alias in node.names:
            self.tokens(alias.name, node, "import:" + module.split(".")[0] if module else "import")
            if module.split(".")[0] in {"jax"} and alias.name == "config":
                self.hit("jax_config", node, "from jax import config")
            self.imported.add(alias.asname or alias.name)

    def _module_path(self, path: str, node: ast.AST) -> None:
        for part in path.split("."):
            if part:
                self.tokens(part, node, "import")

    # --- names, attributes, strings --------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        self.tokens(node.id, node, "builtin" if node.id not in self.imported else "")
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        chain = _dotted(node)
        owner = ".".join(chain[:-1]) if chain else ""
        self.tokens(node.attr, node, owner if owner not in {"jax"} else "jax")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and chain:
            self._patched(chain, node)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        """Bare identifiers and dotted module paths in strings ("_getframe", "workloads.8p_GEMM")."""
        if isinstance(node.value, str) and _DOTTED.match(node.value):
            for part in node.value.split("."):
                if part not in _AMBIGUOUS:
                    self.tokens(part, node)

    # --- structure ---------------------------------------------------------------------------------
    def _patched(self, chain: list[str], node: ast.AST) -> None:
        """Assignment to an attribute of an imported module (or of anything reached through one)."""
        if chain[0] in self.imported or chain[0] in {"builtins", "__builtins__"}:
            self.hit("monkeypatch", node, ".".join(chain))
            if chain[-1] in _TIMER_NAMES or "time" in chain or "profiler" in chain:
                self.hit("timer_patch", node, ".".join(chain))

    def visit_Call(self, node: ast.Call) -> None:
        name = _call_name(node)
        if name in {"setattr", "delattr"} and node.args:
            target = _dotted(node.args[0])
            attr = node.args[1].value if len(node.args) > 1 and isinstance(node.args[1], ast.Constant) else ""
            self.hit("monkeypatch", node, f"{name}({'.'.join(target)}, {attr!r})")
            if str(attr) in _TIMER_NAMES or "time" in target or "profiler" in target:
                self.hit("timer_patch", node, f"{name}({'.'.join(target)}, {attr!r})")
        chain = _dotted(node.func)
        if chain[-2:] == ["config", "update"]:
            self.hit("jax_config", node, ".".join(chain))
        if name == "id" and isinstance(node.func, ast.Name):
            self.hit("mutable_state", node, "id() keys a cache on object identity")
        if self.depth and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            base = _dotted(node.func.value)
            if base and base[0] in self.module_containers:
                self.hit("mutable_state", node, f"{'.'.join(base)}.{node.func.attr}() in a function")
        self.generic_visit(node)

    def visit_Global(self, node: ast.Global) -> None:
        self.hit("mutable_state", node, "global " + ", ".join(node.names))

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.hit("mutable_state", node, "nonlocal " + ", ".join(node.names))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            base = _dotted(node.value)
            if self.depth and base and base[0] in self.module_containers:
                self.hit("mutable_state", node, f"{base[0]}[...] assigned in a function")
            if len(base) > 1 and base[0] in self.imported:  # e.g. worker.COMMANDS["x"] = ..., sys.modules[...] = ...
                self.hit("monkeypatch", node, ".".join(base) + "[...] assigned")
        self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Raise(self, node: ast.Raise) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(exc, ast.Name) and exc.id in {"SystemExit", "KeyboardInterrupt"}:
            self.hit("exit", node, "raise " + exc.id)
        self.generic_visit(node)
