"""PyG's own samplers for the tests that compare with PyG's loaders: torch-sparse and torch-scatter,
which ``bash scripts/setup.sh test`` installs into ``.venv/pyg-samplers`` from CPU wheels beside
the checkout (PyPI has no build for this platform; never a dependency of the product).

They live off the interpreter's default path: PyG imports both in every process that can find them
(about 0.35 CPU seconds a process, in some two hundred processes a run), and what the product runs
in the suite should run as on a user's machine, which has neither. The suite's workers put the
folder on their own path (tests/conftest.py), so a test that compares in-process finds them, and
a process a test starts gets them only when the test asks (:func:`with_pyg_samplers`).
"""

from __future__ import annotations

import os
from pathlib import Path

PYG_SAMPLERS = Path(__file__).resolve().parents[1] / ".venv" / "pyg-samplers"


def with_pyg_samplers(env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (by default this process's environment) with PyG's samplers on ``PYTHONPATH``,
    where they are installed, for a process that compares with PyG's own loader."""
    env = dict(os.environ if env is None else env)
    if PYG_SAMPLERS.is_dir():
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYG_SAMPLERS), env.get("PYTHONPATH")]))
    return env
