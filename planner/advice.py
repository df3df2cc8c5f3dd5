"""An Infeasibility's advice in words: one sentence, each request field called by the answering
interface's name for it (its path in the REST API and plan files, its option on the command line).

The contract holds the advice as data; the planner writes the sentences, here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from contracts.plan import Advice, Change, InfeasibleCode

FieldNamer = Callable[[str], str]  # a request field path -> what an interface calls it (a CLI option, ...)
CHANGE_VERBS = {Change.AT_LEAST: "raise", Change.AT_MOST: "lower"}
CHANGE_BOUNDS = {Change.AT_LEAST: "at least", Change.AT_MOST: "at most"}


def field_path(path: str) -> str:
    """The request's own name for a field: its path (the REST API's and the JSON documents' vocabulary)."""
    return path


def advice_text(code: InfeasibleCode, advice: Sequence[Advice], name: FieldNamer = field_path) -> str:
    """``advice`` as one sentence, each field called by ``name`` (a CLI option, or the path itself)."""
    if code is InfeasibleCode.NO_CANDIDATE:
        relax, shrink = _names(advice, Change.RELAX, name), _names(advice, Change.SHRINK, name)
        return f"Relax the filters ({relax})" + (f" or shrink the job ({shrink})" if shrink else "")
    if code is InfeasibleCode.ALL_CONSTRAINTS:
        alone = "; ".join(f"{name(a.field)} needs at least {_number(a.value)}" for a in advice)
        return "Relax more than one constraint" + (f" (even alone, {alone})" if alone else "")
    clauses = [
        f"{CHANGE_VERBS[a.change]} {name(a.field)} to {CHANGE_BOUNDS[a.change]} {_number(a.value)}" for a in advice
    ]
    sentence = ", or ".join(clauses)
    return sentence[:1].upper() + sentence[1:]


def _names(advice: Sequence[Advice], change: Change, name: FieldNamer) -> str:
    return ", ".join(name(a.field) for a in advice if a.change is change)


def _number(value: int | float | None) -> str:
    """A bound as a user would type it: no exponent, no trailing zeros (7.32, 0.561, 6)."""
    return format(value, "f").rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
