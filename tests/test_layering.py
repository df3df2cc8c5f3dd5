"""The import rule between the packages, checked on the source and on a real interpreter.

foundation <- planner <- {api, provisioning}; remotegnn <- foundation, and from the planner only
the dataset-profile schema (the boundary ``remotegnn profile`` writes and the planner reads) and the
RETEXO data-volume model (which both compute from the same terms). So a
memory machine never loads the planner's catalog, cost models or solver, and each package can be
read with only what it builds on.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("foundation", "planner", "api", "provisioning", "remotegnn")

# What each package may import of the others: a package name (all of it) or one module.
ALLOWED: dict[str, set[str]] = {
    "foundation": set(),
    "planner": {"foundation"},
    "api": {"foundation", "planner"},
    "provisioning": {"foundation", "planner"},
    "remotegnn": {"foundation", "planner.datasets.profile", "planner.costmodel.datavolume"},
}
# Modules of another package that a package may import, checked to import only foundation.
BOUNDARY_MODULES = ("planner.datasets.profile", "planner.costmodel.datavolume")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every absolute module a file imports, at top level or inside functions (lazy imports count)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _project_imports(path: Path) -> set[str]:
    """The imports of ``path`` into the project's packages, other than its own package."""
    own = path.relative_to(ROOT).parts[0]
    return {name for name in _imports(path) if name.split(".")[0] in PACKAGES and name.split(".")[0] != own}


def _permitted(name: str, allowed: set[str]) -> bool:
    top = name.split(".")[0]
    if top in allowed:
        return True
    # An allowed module, a member of it (`from planner.datasets.profile import DatasetProfile`), or a
    # package on its path (whose __init__ loads with it).
    return any(
        name == module or name.startswith(module + ".") or module.startswith(name + ".")
        for module in allowed
        if "." in module
    )


def _modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_what_it_builds_on(package):
    offences = {
        f"{path.relative_to(ROOT)} imports {name}"
        for path in _modules(package)
        for name in _project_imports(path)
        if not _permitted(name, ALLOWED[package])
    }
    assert not offences, "import rule broken:\n" + "\n".join(sorted(offences))


@pytest.mark.parametrize("module", BOUNDARY_MODULES)
def test_boundary_modules_import_only_foundation(module):
    path = ROOT / (module.replace(".", "/") + ".py")
    assert path.exists()
    others = {name for name in _imports(path) if name.split(".")[0] in PACKAGES and not name.startswith("foundation")}
    assert not others, f"{module} is imported by remotegnn, so it may import only foundation, not {sorted(others)}"


def test_the_checker_sees_lazy_and_from_imports(tmp_path):
    """The walk would catch an import hidden inside a function (what a lazy CLI import looks like)."""
    source = tmp_path / "mod.py"
    source.write_text("def f():\n    from planner.solver.recommend import recommend\n    import planner.catalog\n")
    assert {"planner.solver.recommend", "planner.catalog"} <= _imports(source)
    assert not _permitted("planner.solver.recommend", ALLOWED["remotegnn"])
    assert _permitted("planner.datasets.profile.DatasetProfile", ALLOWED["remotegnn"])


def test_importing_remotegnn_loads_no_planner_catalog_or_solver():
    """On a real interpreter: every remotegnn CLI command module, the loader and the profile."""
    probe = (
        "import sys, remotegnn.cli.main, remotegnn.loader, remotegnn.profile, remotegnn.pyg; "
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('planner'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split()
    boundary = {
        "planner",
        "planner.datasets",
        "planner.datasets.profile",
        "planner.costmodel",
        "planner.costmodel.datavolume",
    }
    assert set(loaded) <= boundary, loaded
