"""Each value the packages share has one home: the default fanouts and batch size
(``contracts.workload``), the learner's RAM reserve (``contracts.calibration``) and the bytes of a
float32 (``foundation.units``) are defined once and imported everywhere else.

Text and syntax scans of the installed packages' modules (pyproject's packages.find), and for the
fanouts of benchmarks/ too (they measure what users get by default); not tests or examples, which
write values as a user would. Docstrings and comments may still cite a value.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

from contracts.calibration import LEARNER_RESERVE_GIB, Coefficients
from contracts.workload import DEFAULT_BATCH_SIZE, DEFAULT_FANOUTS, Workload

ROOT = Path(__file__).resolve().parents[1]
FANOUTS_HOME = "contracts/workload.py"
FLOAT32_HOME = "foundation/units.py"
FANOUTS_TEXT = re.compile(r"\b15,\s*10,\s*5\b")
# foundation sits below contracts and cannot import the constant: its int-list parser cites the syntax.
FANOUTS_TEXT_EXEMPT = ("foundation/",)
RESERVE_LITERAL = re.compile(
    r"\b8(?:\.0)?\s*(?:<<\s*30\b|\*\s*(?:GIB\b|2\s*\*\*\s*30\b|1024\s*\*\*\s*3\b|1024\s*\*\s*1024\s*\*\s*1024\b))"
)


def _product_sources() -> list[Path]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        packages = tomllib.load(file)["tool"]["setuptools"]["packages"]["find"]["include"]
    return sorted(path for package in packages for path in (ROOT / package.rstrip("*")).rglob("*.py"))


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _fanout_literals(text: str, strings: bool = True) -> list[int]:
    """Lines holding (15, 10, 5) as a tuple or list of ints, or (with ``strings``) in a string that
    is not a docstring."""
    tree = ast.parse(text)
    docstrings = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}

    def retyped(node: ast.AST) -> bool:
        if isinstance(node, ast.Tuple | ast.List):
            return [elt.value if isinstance(elt, ast.Constant) else None for elt in node.elts] == list(DEFAULT_FANOUTS)
        return (
            strings
            and isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
            and FANOUTS_TEXT.search(node.value) is not None
        )

    return [node.lineno for node in ast.walk(tree) if retyped(node)]


def _assigned(text: str, name: str) -> list[int]:
    """Lines that assign ``name`` at any level (``X = ...`` or ``X: T = ...``)."""
    found = []
    for node in ast.walk(ast.parse(text)):
        targets = (
            node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        )
        found += [node.lineno for target in targets if isinstance(target, ast.Name) and target.id == name]
    return found


def test_the_scans_tell_a_retyped_value_from_a_cited_one():
    assert _fanout_literals("x = (15, 10, 5)") == [1]
    assert _fanout_literals("f(fanouts=[15, 10, 5])") == [1]
    assert _fanout_literals('default = "15,10,5"') == [1]
    assert _fanout_literals('raise E(f"{x}: e.g. [15, 10, 5]")') == [1]
    assert _fanout_literals('raise E("such as 15,10,5")', strings=False) == []
    assert _fanout_literals('"""Docstring: [15, 10, 5]."""\nx = (15, 10)  # 15, 10, 5') == []
    assert _fanout_literals("x = (15, 10, 5, 1)") == []
    assert _assigned("FLOAT32_BYTES = 4\nclass A:\n    FLOAT32_BYTES: Final = 4\n", "FLOAT32_BYTES") == [1, 3]
    assert _assigned("y = FLOAT32_BYTES * 2", "FLOAT32_BYTES") == []
    for literal in ("8 << 30", "8 * GIB", "8.0 * GIB", "8 * 2**30", "8 * 1024**3", "8*1024*1024*1024"):
        assert RESERVE_LITERAL.search(f"RESERVE = {literal}"), literal
    for other in ("18 * GIB", "8 * GIBS", "LEARNER_RESERVE_GIB * GIB", "8 << 20"):
        assert not RESERVE_LITERAL.search(f"RESERVE = {other}"), other


def test_the_default_fanouts_are_typed_once():
    retyped = [
        f"{_name(path)}:{line}"
        for path in [*_product_sources(), *sorted((ROOT / "benchmarks").glob("*.py"))]
        if _name(path) != FANOUTS_HOME
        for line in _fanout_literals(path.read_text(), strings=not _name(path).startswith(FANOUTS_TEXT_EXEMPT))
    ]
    assert not retyped, "use contracts.workload.DEFAULT_FANOUTS (format it into help and messages):\n" + "\n".join(
        retyped
    )


def test_float32_bytes_is_defined_once():
    definitions = [
        f"{_name(path)}:{line}" for path in _product_sources() for line in _assigned(path.read_text(), "FLOAT32_BYTES")
    ]
    assert definitions == [f"{FLOAT32_HOME}:{_assigned((ROOT / FLOAT32_HOME).read_text(), 'FLOAT32_BYTES')[0]}"], (
        "import FLOAT32_BYTES from foundation.units:\n" + "\n".join(definitions)
    )


def test_the_learner_reserve_is_not_retyped():
    literals = [
        f"{_name(path)}:{number}: {line.strip()}"
        for path in _product_sources()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if RESERVE_LITERAL.search(line.split("#")[0])
    ]
    assert not literals, "use contracts.calibration.LEARNER_RESERVE_GIB (or name the value):\n" + "\n".join(literals)


def test_the_contracts_defaults_are_the_named_values():
    workload = Workload()
    assert (tuple(workload.fanouts), workload.batch_size) == (DEFAULT_FANOUTS, DEFAULT_BATCH_SIZE)
    assert Coefficients().learner_reserve_gib == LEARNER_RESERVE_GIB
