"""The import rule between the packages and inside them, checked on the source and on a real interpreter.

Between packages, imports point down only:

    foundation <- contracts <- planner <- {api, provisioning}
                  contracts <- remotegnn <- {fullgraph, testbed}

``contracts`` holds every file format two packages share and imports only foundation, so the
data layer, the full-graph package and the testbed never load the planner, and a machine that
serves batches loads neither the full-graph package nor the testbed. Inside every package, at
every depth, the modules and subpackages beside each other import one another without a cycle.

benchmarks/ holds scripts (a file with a top-level ``if __name__ == "__main__":``, run as
``python benchmarks/NAME.py``) and the helper modules they share, imported by name because the
running script's folder is on sys.path. A script is run, never imported: what two scripts share
lives in a helper, nothing in benchmarks/ imports a script, the helpers import one another
without a cycle, and no helper's name hides a package or a standard library module.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("foundation", "contracts", "planner", "api", "provisioning", "remotegnn", "fullgraph", "testbed")
BENCHMARKS = ROOT / "benchmarks"
DYNAMIC_IMPORTS = {"import_module", "__import__"}  # importlib.import_module("name"), __import__("name")

# What each package may import of the others.
ALLOWED: dict[str, set[str]] = {
    "foundation": set(),
    "contracts": {"foundation"},
    "planner": {"foundation", "contracts"},
    "api": {"foundation", "contracts", "planner"},
    "provisioning": {"foundation", "contracts", "planner"},
    "remotegnn": {"foundation", "contracts"},
    "fullgraph": {"foundation", "contracts", "remotegnn"},
    "testbed": {"foundation", "contracts", "remotegnn"},
}
INIT = "__init__"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == INIT else parts)


def _imports(path: Path) -> set[str]:
    """Every absolute module a file imports, at top level or inside functions (lazy imports count),
    including a module named by a literal to ``importlib.import_module`` or ``__import__``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif (name := _dynamic_import(node)) is not None:
            found.add(name)
    return found


def _dynamic_import(node: ast.AST) -> str | None:
    """The module ``importlib.import_module("name")`` or ``__import__("name")`` loads, else None."""
    if not isinstance(node, ast.Call) or not node.args or not isinstance(node.args[0], ast.Constant):
        return None
    func, name = node.func, node.args[0].value
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name if called in DYNAMIC_IMPORTS and isinstance(name, str) else None


def _modules(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py"))


def _children(package: Path) -> set[str]:
    """The names beside each other in ``package``: its modules and subpackages, and its __init__."""
    return {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}


def _edges(package: Path, root: Path = ROOT) -> dict[str, set[str]]:
    """Which child of ``package`` imports which other child (through any module inside it)."""
    prefix = _module_name(package / f"{INIT}.py", root)
    children = _children(package)
    edges: dict[str, set[str]] = {child: set() for child in children}
    for path in _modules(package):
        source = path.relative_to(package).parts[0].removesuffix(".py")
        for name in _imports(path):
            if name == prefix:
                target = INIT
            elif name.startswith(prefix + "."):
                target = name[len(prefix) + 1 :].split(".")[0]
            else:
                continue
            if target in children and target != source:
                edges[source].add(target)
    return edges


def _cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle among the nodes, as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(edges.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target) :] + [target]
            if target not in state and (found := visit(target)):
                return found
        state[node] = 2
        path.pop()
        return None

    for node in sorted(edges):
        if node not in state and (found := visit(node)):
            return found
    return None


def _packages(root: Path, top: str) -> list[Path]:
    """``top`` and every package inside it."""
    return sorted(p.parent for p in (root / top).rglob(f"{INIT}.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_what_it_builds_on(package):
    offences = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(ROOT / package)
        for name in _imports(path)
        if name.split(".")[0] in PACKAGES and name.split(".")[0] not in ALLOWED[package] | {package}
    }
    assert not offences, "import rule broken:\n" + "\n".join(sorted(offences))


def test_the_packages_themselves_form_no_cycle():
    assert _cycle({package: set(allowed) for package, allowed in ALLOWED.items()}) is None


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_at_any_depth(package):
    cycles = {
        f"{_module_name(inner / f'{INIT}.py')}: {' -> '.join(found)}"
        for inner in _packages(ROOT, package)
        if (found := _cycle(_edges(inner)))
    }
    assert not cycles, "import cycles:\n" + "\n".join(sorted(cycles))


def test_the_checker_sees_lazy_imports_and_cycles_between_subpackages(tmp_path):
    """A cycle through a function-level import two subpackages deep is found; a one-way chain is not."""
    pkg = tmp_path / "pkg"
    for folder in ("a", "b"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / f"{INIT}.py").write_text("")
    (pkg / f"{INIT}.py").write_text("")
    (pkg / "a" / "x.py").write_text("from pkg.b.y import f\n")
    (pkg / "b" / "y.py").write_text("def f():\n    from pkg.a import x\n")
    (pkg / "c.py").write_text("import pkg.a.x\n")
    edges = _edges(pkg, tmp_path)
    assert edges == {"a": {"b"}, "b": {"a"}, "c": {"a"}, INIT: set()}
    assert _cycle(edges) in (["a", "b", "a"], ["b", "a", "b"])
    (pkg / "b" / "y.py").write_text("def f():\n    return 1\n")
    assert _cycle(_edges(pkg, tmp_path)) is None


def _is_script(path: Path) -> bool:
    """A file run as a program: it has a top-level ``if __name__ == "__main__":``."""
    return any(
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Compare)
        and isinstance(node.test.left, ast.Name)
        and node.test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)
        for node in ast.parse(path.read_text(), filename=str(path)).body
    )


def _folder_edges(folder: Path) -> dict[str, set[str]]:
    """Which module of ``folder`` imports which other, the folder being on sys.path (as a running
    script's is): a module, or a package inside it, is imported by its name from the folder."""
    modules = {_module_name(path, folder): path for path in _modules(folder)}

    def loaded(imported: str) -> str | None:
        """The module of the folder an import of ``imported`` names: its longest prefix there."""
        parts = imported.split(".")
        return next((m for n in range(len(parts), 0, -1) if (m := ".".join(parts[:n])) in modules), None)

    return {
        name: {target for imported in _imports(path) if (target := loaded(imported)) not in (None, name)}
        for name, path in modules.items()
    }


def _script_imports(folder: Path) -> set[str]:
    """Every import, in ``folder``, of one of its scripts."""
    scripts = {_module_name(path, folder) for path in _modules(folder) if _is_script(path)}
    return {
        f"{name} imports the script {target}"
        for name, targets in _folder_edges(folder).items()
        for target in targets & scripts
    }


def test_no_benchmark_imports_a_script():
    offences = _script_imports(BENCHMARKS)
    assert not offences, "a script is run, not imported; move what it shares into a helper module:\n" + "\n".join(
        sorted(offences)
    )


def test_the_benchmark_modules_form_no_cycle():
    assert _cycle(_folder_edges(BENCHMARKS)) is None


def test_no_benchmark_module_hides_a_package_or_the_standard_library():
    """The running script's folder comes first on sys.path, so a helper called ``testbed`` or
    ``profile`` would be imported instead of the package or the standard library module."""
    names = {_module_name(path, BENCHMARKS).split(".")[0] for path in _modules(BENCHMARKS)}
    assert not names & (set(PACKAGES) | set(sys.stdlib_module_names))


def test_the_benchmark_checker_sees_lazy_and_importlib_imports_of_scripts_and_cycles(tmp_path):
    """A script imported by a script inside a function and by a helper through importlib is
    found, and so is a helper cycle closed by ``__import__``; helpers imported by scripts are not
    offences."""
    main = '\n\nif __name__ == "__main__":\n    main()\n'
    (tmp_path / "helper.py").write_text('import importlib\n\n\ndef f():\n    return importlib.import_module("tool")\n')
    (tmp_path / "tool.py").write_text("def main():\n    return 1\n" + main)
    (tmp_path / "other.py").write_text("import helper\n\n\ndef main():\n    from tool import main\n" + main)
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text('def g():\n    return __import__("a")\n')
    edges = _folder_edges(tmp_path)
    assert edges == {"helper": {"tool"}, "tool": set(), "other": {"helper", "tool"}, "a": {"b"}, "b": {"a"}}
    assert _script_imports(tmp_path) == {"helper imports the script tool", "other imports the script tool"}
    assert _cycle(edges) in (["a", "b", "a"], ["b", "a", "b"])
    (tmp_path / "helper.py").write_text("def f():\n    return 1\n")
    (tmp_path / "other.py").write_text("import helper\n\n\ndef main():\n    return helper.f()\n" + main)
    (tmp_path / "b.py").write_text("def g():\n    return 1\n")
    assert _script_imports(tmp_path) == set() and _cycle(_folder_edges(tmp_path)) is None


def test_importing_the_data_layer_loads_no_planner_full_graph_or_testbed():
    """On a real interpreter: every remotegnn CLI command module, the loader, the profile and the PyG stores."""
    probe = (
        "import sys, remotegnn.cli.main, remotegnn.loader, remotegnn.link_loader, remotegnn.profile, remotegnn.pyg; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.split('.')[0] in ('planner', 'fullgraph', 'testbed'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    assert loaded == []
