"""Habits the codebase keeps: every lint suppression says why, what ships speaks of the product,
every boundary model inherits the strict bases of foundation.models instead of spelling their config,
and no product function runs past 100 lines without saying why.

Shipped files (code, help text, docs, notebooks, data) talk to users, who have the repository and
nothing else: papers are cited by title, facts are stated in docs/, and no line refers to how the
project was made (tracker numbers, workspace paths). Tests and benchmarks may read the workspace's
shared data, so they are exempt from the path rule.
"""

from __future__ import annotations

import ast
import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOQA = re.compile(r"#\s*noqa(?::\s*[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*)?(?P<rest>.*)$")
TYPE_IGNORE = re.compile(r"#\s*type:\s*ignore(?:\[[\w\-, ]+\])?(?P<rest>.*)$")
LEAKS = re.compile(r"seed 00[0-9]|seeds/00|machine-notes|[Ii]ssue [0-9]+|\.\./shared")
EXEMPT_FROM_LEAKS = ("tests/", "benchmarks/", ".ci/")


def _tracked(*patterns: str) -> list[Path]:
    try:
        names = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", *patterns],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"needs a git checkout to list the project's files: {exc}")
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def _reasonless(line: str) -> bool:
    """A suppression comment with nothing after its codes but another comment or whitespace."""
    for pattern in (NOQA, TYPE_IGNORE):
        found = pattern.search(line)
        if found and not found["rest"].strip(" #"):
            return True
    return False


def test_the_reason_check_tells_bare_from_explained():
    assert _reasonless("import x  # noqa: F401")
    assert _reasonless("y = f()  # type: ignore[arg-type]")
    assert not _reasonless("import x  # noqa: F401  (registers its command)")
    assert not _reasonless("y = f()  # type: ignore[arg-type]  # the stub types it as str")


def test_every_lint_suppression_says_why():
    bare = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _tracked("*.py")
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if _reasonless(line)
    ]
    assert not bare, "give each suppression its reason on the same line:\n" + "\n".join(bare)


def test_shipped_files_speak_only_of_the_product():
    shipped = [
        path
        for path in _tracked("*.py", "*.md", "*.ipynb", "*.json", "*.toml", "*.txt", "*.sh")
        if not str(path.relative_to(ROOT)).startswith(EXEMPT_FROM_LEAKS)
    ]
    leaks = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in shipped
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if LEAKS.search(line)
    ]
    assert not leaks, "cite papers by title and state facts in docs/, in the product's words:\n" + "\n".join(leaks)


# -- boundary models inherit foundation.models' bases --------------------------------------------
MODEL_BASES = "foundation/models.py"
FORBID = re.compile(r"""extra\s*=\s*["']forbid["']""")
CONFIG = re.compile(r"model_config\s*=\s*ConfigDict\((?P<args>[^)]*)\)")


def _product_sources() -> list[Path]:
    """The installed packages' modules (pyproject's packages.find), not tests, benchmarks or examples."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        packages = tomllib.load(file)["tool"]["setuptools"]["packages"]["find"]["include"]
    return _tracked(*(f"{package.rstrip('*')}/*.py" for package in packages))


def _declares_frozen(text: str) -> bool:
    """A ``model_config`` that sets ``frozen=True`` itself: a frozen model is a boundary model, and
    those inherit :class:`foundation.models.StrictModel`, which forbids unknown fields too."""
    return any(re.search(r"frozen\s*=\s*True", found["args"]) for found in CONFIG.finditer(text))


def test_the_config_check_finds_a_frozen_config_however_spelled():
    assert _declares_frozen('    model_config = ConfigDict(frozen=True, extra="forbid")')
    assert _declares_frozen("    model_config = ConfigDict(\n        extra='forbid',\n        frozen=True,\n    )")
    assert _declares_frozen("    model_config = ConfigDict(frozen = True)")
    assert not _declares_frozen('    model_config = ConfigDict(extra="ignore")  # the file has more')
    assert FORBID.search("ConfigDict(extra='forbid')") and FORBID.search('ConfigDict(extra = "forbid")')


def test_only_the_model_bases_forbid_unknown_fields():
    spelled = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in _product_sources()
        if str(path.relative_to(ROOT)) != MODEL_BASES
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if FORBID.search(line)
    ]
    assert not spelled, (
        "inherit foundation.models.StrictModel (or StrictMutableModel) instead of forbidding extras again:\n"
        + "\n".join(spelled)
    )


def test_no_model_declares_frozen_itself():
    declared = [
        str(path.relative_to(ROOT))
        for path in _product_sources()
        if str(path.relative_to(ROOT)) != MODEL_BASES and _declares_frozen(path.read_text())
    ]
    assert not declared, (
        "inherit foundation.models.StrictModel instead of declaring frozen=True yourself (it also forbids "
        "unknown fields):\n" + "\n".join(declared)
    )


# -- a measurement names its machine, not "the development machine" ------------------------------
BUILD_MACHINE = re.compile(r"development (?:machine|vm)", re.IGNORECASE)


def _docs_and_product_modules() -> list[Path]:
    """README.md, docs/*.md, benchmarks/README.md, constraints.txt and the installed packages' modules."""
    return _tracked("README.md", "docs/*.md", "benchmarks/README.md", "constraints.txt") + _product_sources()


def test_no_measurement_is_said_to_come_from_the_development_machine():
    assert BUILD_MACHINE.search("on the Development VM") and BUILD_MACHINE.search("the development machines")
    assert not BUILD_MACHINE.search("a 2-vCPU Debian 12 VM, shared")
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in _docs_and_product_modules()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if BUILD_MACHINE.search(line)
    ]
    assert not found, (
        "say what the machine is (e.g. 'a 2-vCPU Debian 12 VM, shared'), not 'the development machine':\n"
        + "\n".join(found)
    )


# -- a function over 100 lines says why ----------------------------------------------------------
LONGEST_FUNCTION = 100
LONG_BECAUSE = "Long because"


def _unexplained_long_functions(source: str) -> list[tuple[str, int, int]]:
    """(name, line, lines) of each function or method in ``source`` longer than LONGEST_FUNCTION
    whose docstring does not say why."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
        lines = (node.end_lineno or node.lineno) - first + 1
        if lines > LONGEST_FUNCTION and LONG_BECAUSE not in (ast.get_docstring(node) or ""):
            found.append((node.name, node.lineno, lines))
    return found


def test_the_length_check_counts_decorators_and_reads_the_reason():
    body = "".join(f"    x{i} = {i}\n" for i in range(LONGEST_FUNCTION - 1))
    assert not _unexplained_long_functions(f"def f():\n{body}")  # exactly the limit
    assert _unexplained_long_functions(f"@cache\ndef f():\n{body}") == [("f", 2, LONGEST_FUNCTION + 1)]
    method = f"class C:\n    async def g(self):\n        pass\n{body.replace('    ', '        ')}"
    assert _unexplained_long_functions(method) == [("g", 2, LONGEST_FUNCTION + 1)]
    why = f'@cache\ndef f():\n    """Sum.\\f\n\n    {LONG_BECAUSE} typer declares the options."""\n{body}'
    assert not _unexplained_long_functions(why)
    assert _unexplained_long_functions(why.replace(LONG_BECAUSE, "It is long"))


def test_no_product_function_is_long_without_saying_why():
    """A product function longer than LONGEST_FUNCTION lines (decorators, signature, docstring and
    body together) mixes jobs a reader has to hold at once: split it. The exception says why in its
    own docstring, in a paragraph that starts with "Long because" (a typer command whose options
    fill its signature). A typer command's docstring is its --help, so there the reason follows a
    form feed (``\\f``) that ends the help's last paragraph: click and typer show nothing after it."""
    long = [
        f"{path.relative_to(ROOT)}:{line}: {name} ({lines} lines)"
        for path in _product_sources()
        for name, line, lines in _unexplained_long_functions(path.read_text())
    ]
    assert not long, (
        f"split each function over {LONGEST_FUNCTION} lines into functions that do one job each, or say why "
        f"it cannot be in its docstring ('{LONG_BECAUSE} ...'; after a \\f in a typer command's):\n" + "\n".join(long)
    )
