"""The wheel `up` ships: the running checkout's, built clean, or one given; its pins."""

from __future__ import annotations

import importlib.metadata
import zipfile

import pytest

from foundation.errors import UsageError
from provisioning.wheel import ROLE_EXTRAS, pins, sha256_of, ship
from tests.provisioning.conftest import make_wheel


def test_the_running_checkout_is_built_and_kept_with_its_sha256(tmp_path):
    shipped, copy, requires = ship(None, tmp_path / "cluster")
    assert shipped.version == importlib.metadata.version("memorybridge")
    assert copy.parent == tmp_path / "cluster" and shipped.sha256 == sha256_of(copy)
    names = set(zipfile.ZipFile(copy).namelist())
    for module in ("provisioning/wheel.py", "planner/costmodel/gpu.py", "remotegnn/loader.py", "testbed/__init__.py"):
        assert module in names, module
    assert any(n.startswith("pricing_data/") and n.endswith(".json") for n in names)
    assert not any("__pycache__" in n for n in names)
    assert any(r.startswith("numpy") for r in requires)


def test_a_given_wheel_is_kept_as_it_is(tmp_path):
    given = make_wheel(tmp_path / "dist", version="1.2.3")
    shipped, copy, requires = ship(given, tmp_path / "cluster")
    assert (shipped.file, shipped.version) == (given.name, "1.2.3")
    assert copy.read_bytes() == given.read_bytes() and not list((tmp_path / "cluster").glob("*.part"))
    assert 'torch>=2.4; extra == "pyg"' in requires


def test_what_is_not_a_memorybridge_wheel_is_refused(tmp_path):
    with pytest.raises(UsageError, match="no such file"):
        ship(tmp_path / "missing.whl", tmp_path / "cluster")
    junk = tmp_path / "memorybridge-0.1.0-py3-none-any.whl"
    junk.write_text("not a zip")
    with pytest.raises(UsageError, match="not a readable wheel"):
        ship(junk, tmp_path / "cluster")
    other = make_wheel(tmp_path / "other")
    renamed = tmp_path / "other" / "evil.whl"
    with zipfile.ZipFile(other) as source, zipfile.ZipFile(renamed, "w") as target:
        for name in source.namelist():
            text = source.read(name).decode().replace("Name: memorybridge", "Name: evil")
            target.writestr(name, text)
    with pytest.raises(UsageError, match="a wheel of 'evil', not of memorybridge"):
        ship(renamed, tmp_path / "cluster")


def test_pins_follow_the_role_and_the_versions_installed_here():
    requires = ["numpy>=1.26", 'torch>=2.4; extra == "pyg"', 'mpi4py>=4.1; extra == "mpi"', "no-such-package>=1"]
    learner, memory = pins(requires, ROLE_EXTRAS["learner"]), pins(requires, ROLE_EXTRAS["memory"])
    numpy = f"numpy=={importlib.metadata.version('numpy')}"
    assert numpy in learner and numpy in memory
    torch = importlib.metadata.version("torch").split("+")[0]  # the platform's own build on each machine
    assert f"torch=={torch}" in learner and not any(p.startswith("torch") for p in memory)
    assert f"mpi4py=={importlib.metadata.version('mpi4py')}" in memory
    assert "no-such-package>=1" in memory  # not installed here: its own specifier
