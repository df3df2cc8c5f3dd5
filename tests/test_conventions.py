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
import importlib
import inspect
import json
import re
import subprocess
import tomllib
from pathlib import Path
from typing import Annotated

import pytest
import typer
import typer.main
from pydantic import BaseModel, Field

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


# -- the product's code is there for the product ------------------------------------------------
USER_DOCS = ("README.md", "docs/*.md", "examples/*", "notebooks/*.ipynb", "pyproject.toml")
REGISTERING_DECORATORS = {"command", "callback", "get", "post", "put", "delete"}  # typer's and FastAPI's
# Public top-level functions the product never calls and no user document names, each with why it
# stays in the product rather than beside the tests or benchmarks that call it.
CALLED_FROM_TESTS_AND_BENCHMARKS: dict[str, str] = {
    "planner/calibration/testbed.py:link_bytes": "the pipeline model's link bytes for a testbed run, built "
    "from the cost model's own inputs; benchmarks/wire.py sets them beside what the run sent",
    "planner/calibration/testbed.py:predict_full_graph": "the full-graph models' prediction of a testbed run, "
    "built from the cost model's own inputs; retexo_time.py and slicegcn_time.py set it beside the run",
    "planner/calibration/runs.py:load_runs": "calibration's reader of runs files and job records, which "
    "fidelity.py, flow_cap.py and scale.py read recorded runs with",
    "planner/solver/pricing.py:forget_priced": "empties the pricing module's private cache, so "
    "planner_solve.py can time an uncached answer; it has to live beside the cache",
    "planner/costmodel/paper.py:c1": "equation (5) of the paper, kept with (3)-(8) so the module reads as "
    "the paper; the tests hold evaluate's costs to it",
    "planner/costmodel/paper.py:c2": "equation (8), as c1",
    "contracts/datavolume.py:gamma_eq2": "the paper's Eq. 2 as printed, the reference the tests hold the "
    "derived DataVolume.gamma to",
    "contracts/progress.py:read_events": "the reader of the progress format the module defines; the job "
    "runner parses the lines as they arrive instead, so only the tests read a whole file",
    "fullgraph/exchange/pinch/fixedpoint.py:quantize": "each value's contribution as to_records encodes it, "
    "the exact reference the tests and pinch_records.py check sums against, kept beside the encoding",
    "remotegnn/synth.py:rmat_edges": "the draw `remotegnn synth` makes, whole and unpermuted: the edge list "
    "convert_memory.py and the tests convert",
}


def _public_definitions(source: str) -> list[str]:
    """Public top-level functions and classes of ``source``, leaving out the functions a decorator
    registers (a typer command, a FastAPI route), which their framework calls."""
    return [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        and not node.name.startswith("_")
        and not any(
            isinstance(target := d.func if isinstance(d, ast.Call) else d, ast.Attribute)
            and target.attr in REGISTERING_DECORATORS
            for d in getattr(node, "decorator_list", [])
        )
    ]


def _referenced_names(source: str) -> set[str]:
    """Every name ``source`` uses, imports or reads an attribute by, and every part of a dotted or
    ``module:attr`` string (``__all__``, ``importlib.import_module``, an entry point)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and re.fullmatch(r"[\w.:]+", node.value):
            found.update(re.split(r"[.:]", node.value))
    return found


def test_the_reference_check_sees_uses_and_leaves_out_registered_functions():
    source = "from m import f\nm.g()\nh()\n__all__ = ['k']\nENTRY = 'pkg.mod:main'\nx = 'not a name'\n"
    assert _referenced_names(source) >= {"f", "m", "g", "h", "k", "pkg", "mod", "main"}
    assert "name" not in _referenced_names(source)
    definitions = "def f(): pass\ndef _g(): pass\nclass C: pass\n@app.command()\ndef cmd(): pass\n"
    assert _public_definitions(definitions + "@numba.njit\ndef kernel(): pass\n@app.get('/')\ndef route(): pass\n") == [
        "f",
        "C",
        "kernel",
    ]


def test_no_product_function_is_there_only_for_tests_and_benchmarks():
    """A public top-level function or class of an installed package is used by the product itself
    (called, imported, re-exported in ``__all__``, named as an entry point) or named in a user's
    document (README, docs, examples, notebooks); what only tests and benchmarks call lives beside
    them (a benchmarks helper module, a tests module). The few that stay say why in
    CALLED_FROM_TESTS_AND_BENCHMARKS, which must not outlive its entries. A name that something
    else in the product also bears counts as used: the check never blames code the product calls."""
    sources = {path: path.read_text() for path in _product_sources()}
    used = set().union(*(_referenced_names(text) for text in sources.values()))
    documented = "\n".join(path.read_text(errors="replace") for path in _tracked(*USER_DOCS))
    unused = {
        f"{path.relative_to(ROOT)}:{name}"
        for path, text in sources.items()
        for name in _public_definitions(text)
        if name not in used and not re.search(rf"\b{re.escape(name)}\b", documented)
    }
    unexplained = sorted(unused - CALLED_FROM_TESTS_AND_BENCHMARKS.keys())
    assert not unexplained, (
        "only tests or benchmarks use these: move each beside its callers (benchmarks/ helper module, tests/), "
        "or say in CALLED_FROM_TESTS_AND_BENCHMARKS why it stays:\n" + "\n".join(unexplained)
    )
    assert not CALLED_FROM_TESTS_AND_BENCHMARKS.keys() - unused, "the product uses these now: drop their entries"


# -- what users call documents its arguments -----------------------------------------------------
USER_PACKAGES = ("planner", "provisioning", "remotegnn", "fullgraph")
_PACKAGE = rf"(?:{'|'.join(USER_PACKAGES)})"
IMPORTED = re.compile(rf"^\s*from ({_PACKAGE}(?:\.\w+)*) import \(?([\w ,]+)\)?\s*(?:#.*)?$", re.MULTILINE)
DOTTED_CALL = re.compile(rf"\b({_PACKAGE}(?:\.\w+)*)\.(\w+)\(")
CLASS_CALL = re.compile(r"`([A-Z]\w*)\(")
ARGS_HEADER = re.compile(r"^(?P<indent>\s*)Args:\s*$")
ARG_LINE = re.compile(r"\s*\*{0,2}(?P<name>\w+)(?:\s*\([^)]*\))?:")
CLI_APPS = {
    "planner": "planner.cli.main",
    "provision": "provisioning.cli",
    "remotegnn": "remotegnn.cli.main",
    "fullgraph": "fullgraph.cli.main",
}  # each program's typer app, as pyproject's [project.scripts] names it


def _user_texts() -> list[str]:
    """README.md, docs/*.md, examples/*.py, and the code cells of notebooks/*.ipynb."""
    texts = [path.read_text() for path in _tracked("README.md", "docs/*.md", "examples/*.py")]
    for notebook in _tracked("notebooks/*.ipynb"):
        cells = json.loads(notebook.read_text())["cells"]
        texts += ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return texts


def _called_names(texts: list[str], definers: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, name) of each class or function the texts show a user importing
    (``from remotegnn.loader import DistributedGraphLoader``), calling by its dotted path
    (``remotegnn.checkpoint.Checkpointer(...)``), or constructing by a class name in inline code
    (```DistributedLinkLoader(DATASET, ...)```) that one module of the four packages defines."""
    found = set()
    for text in texts:
        for module, names in IMPORTED.findall(text):
            found.update((module, name.split(" as ")[0].strip()) for name in names.split(",") if name.strip())
        found.update(DOTTED_CALL.findall(text))
        found.update(
            (next(iter(definers[name])), name) for name in CLASS_CALL.findall(text) if len(definers.get(name, ())) == 1
        )
    return found


def _definers() -> dict[str, set[str]]:
    """Each public top-level class or function name of the four packages -> the modules defining it."""
    definers: dict[str, set[str]] = {}
    for path in _product_sources():
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[0] in USER_PACKAGES:
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            for name in _public_definitions(path.read_text()):
                definers.setdefault(name, set()).add(module)
    return definers


def _args_documented(docstring: str) -> set[str]:
    """The names an ``Args:`` block of a Google-style docstring describes (``*args`` as ``args``)."""
    lines, named = docstring.splitlines(), set()
    for number, line in enumerate(lines):
        if not (header := ARGS_HEADER.match(line)):
            continue
        entries = [entry for entry in lines[number + 1 :] if entry.strip()]
        depth = len(entries[0]) - len(entries[0].lstrip()) if entries else 0
        for entry in entries:
            indent = len(entry) - len(entry.lstrip())
            if indent <= len(header["indent"]):
                break
            if indent == depth and (arg := ARG_LINE.match(entry)):
                named.add(arg["name"])
    return named


def _undocumented_args(obj) -> list[str]:
    """The parameters of a function, or of a class's constructor, that no ``Args:`` block of its
    docstring (a class's own, or its ``__init__``'s) describes. A pydantic model's field may say
    what it is in its ``Field(description=...)`` instead, which its JSON schema and the API's
    OpenAPI page show too."""
    docstring = inspect.getdoc(obj) or ""
    if inspect.isclass(obj) and "__init__" in vars(obj):
        docstring += "\n" + (inspect.getdoc(obj.__init__) or "")
    named = _args_documented(docstring)
    if inspect.isclass(obj) and issubclass(obj, BaseModel):
        named |= {name for name, field in obj.model_fields.items() if field.description}
    return [name for name in inspect.signature(obj).parameters if name not in {"self", "cls"} | named]


def test_the_args_check_reads_google_style_blocks():
    def documented(path, *extra, mode="r", **options):
        """Open a file.

        Args:
            path: The file.
            mode (str): As ``open``'s, which
                path: is not an argument line (deeper).
            *extra: More.
            **options: Passed on.

        Returns:
            mode: not an argument.
        """

    def partly(path, mode="r"):
        """Open a file.

        Args:
            path: The file.
        """

    class Built:
        """A thing.

        Args:
            size: How big.
        """

        def __init__(self, size, colour):
            """Build it.

            Args:
                colour: Which.
            """

    assert not _undocumented_args(documented)
    assert _undocumented_args(partly) == ["mode"]
    assert not _undocumented_args(Built)
    assert _args_documented(partly.__doc__.replace("Args:", "Arguments")) == set()

    class Described(BaseModel):
        """A model.

        Args:
            size: How big.
        """

        size: int
        colour: str = Field(description="Which.")
        weight: float = 0.0

    assert _undocumented_args(Described) == ["weight"]
    texts = [
        "from remotegnn.loader import DistributedGraphLoader as NeighborLoader  # was PyG's\n",
        "x = remotegnn.checkpoint.Checkpointer(d)\nfrom torch import nn\n",
        "`DistributedLinkLoader(DATASET, ...)` and `Twice(` and `Unknown(`",
    ]
    definers = {"DistributedLinkLoader": {"remotegnn.link_loader"}, "Twice": {"a", "b"}}
    assert _called_names(texts, definers) == {
        ("remotegnn.loader", "DistributedGraphLoader"),
        ("remotegnn.checkpoint", "Checkpointer"),
        ("remotegnn.link_loader", "DistributedLinkLoader"),
    }


def test_what_users_call_documents_its_arguments():
    """A public class or function a user calls is one of the four user-facing packages (planner,
    provisioning, remotegnn, fullgraph) that README.md, docs/*.md, examples/*.py or a notebook's
    code shows a user importing (``from X import Y``), calling by its dotted path (``X.Y(``), or
    constructing by its class name in inline code (```Y(...)```, when one module defines a ``Y``).
    Its docstring (a class's, or its ``__init__``'s) has a Google-style ``Args:`` block naming
    every parameter of its signature, as PyG's loaders do (a pydantic model's field may be
    described in its ``Field(description=...)`` instead)."""
    called = _called_names(_user_texts(), _definers())
    assert len(called) > 10, f"the documents show users calling only {sorted(called)}: is the parsing broken?"
    gaps = {
        f"{module}.{name}": missing
        for module, name in called
        if (missing := _undocumented_args(getattr(importlib.import_module(module), name)))
    }
    assert not gaps, "describe each parameter in an Args: block:\n" + "\n".join(
        f"{name}: {', '.join(missing)}" for name, missing in sorted(gaps.items())
    )


def _silent_params(program: str, command) -> list[str]:
    """``program subcommand parameter`` for each visible option or argument of ``command`` and its
    subcommands whose help text is empty. A group is known by its ``commands``: typer builds its
    commands on a click of its own, whose classes are not the installed click's."""
    silent, pending = [], [([program], command)]
    while pending:
        path, command = pending.pop()
        pending += [([*path, name], sub) for name, sub in getattr(command, "commands", {}).items()]
        silent += [
            f"{' '.join(path)} {param.name}"
            for param in command.params
            if not getattr(param, "hidden", False) and not (getattr(param, "help", None) or "").strip()
        ]
    return silent


def test_the_help_check_finds_a_silent_option_in_a_subcommand():
    app, sub = typer.Typer(), typer.Typer()
    app.add_typer(sub, name="sub")

    @app.command()
    def top(size: Annotated[int, typer.Option(help="how big")] = 1) -> None:
        """Top."""

    @sub.command()
    def run(
        size: Annotated[int, typer.Option(help="how big")] = 1,
        colour: Annotated[str, typer.Option(help=" ")] = "red",
        secret: Annotated[str, typer.Option(hidden=True)] = "",
    ) -> None:
        """Run."""

    assert _silent_params("prog", typer.main.get_command(app)) == ["prog sub run colour"]


def test_every_command_option_has_help():
    """The commands' options are their API: each option and argument of every command of the
    four packages' programs says what it does in ``--help``."""
    silent = [
        name
        for program, module in CLI_APPS.items()
        for name in _silent_params(program, typer.main.get_command(importlib.import_module(module).app))
    ]
    assert not silent, "give each a help= text:\n" + "\n".join(silent)
