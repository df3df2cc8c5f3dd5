"""The MemoryBridge wheel a cluster's machines install: exactly the version that launched them.

No machine installs MemoryBridge from a package index: the project is not published there, and a
package of that name that anyone could publish would run as root beside the user's data. `up`
takes a wheel (``--wheel``) or builds the running checkout's, keeps a copy in the cluster's state
directory and writes its file name and sha256 into each machine's boot script; `provision run`
copies it onto every machine over SSH before it waits for their boot, and the boot script installs
it only if its sha256 matches. SSH rather than an object store: the job needs SSH anyway (staging,
launching), so nothing else is created, nothing needs deleting, no machine gets credentials or a
URL that expires, and a machine that replaces another gets the wheel from the next `run`.

The third-party packages come from the index, pinned to the versions installed here (``pins``),
and are installed at boot before the wheel arrives, so the slow downloads overlap everything else.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Final

from contracts.cluster import ShippedWheel
from foundation.errors import UsageError
from provisioning.errors import ProvisioningError

DISTRIBUTION: Final = "memorybridge"
# What each role imports beyond the base requirements: the learner trains (PyG, torch); both run MPI.
ROLE_EXTRAS: Final = {"learner": ("pyg", "mpi"), "memory": ("mpi",)}
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def metadata(path: Path) -> tuple[str, str, list[str]]:
    """(name, version, Requires-Dist lines) of a wheel, read from its METADATA."""
    try:
        with zipfile.ZipFile(path) as archive:
            name = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
            if name is None:
                raise UsageError(f"--wheel {path}: no .dist-info/METADATA inside; is it a wheel?")
            text = archive.read(name).decode()
    except (OSError, zipfile.BadZipFile) as exc:
        raise UsageError(f"--wheel {path}: not a readable wheel ({exc})") from None
    fields: dict[str, list[str]] = {}
    for line in text.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value.strip())
    return fields.get("Name", [""])[0], fields.get("Version", [""])[0], fields.get("Requires-Dist", [])


def pins(requires: list[str], extras: tuple[str, ...]) -> list[str]:
    """``name==version`` for each requirement of the wheel (base and ``extras``), at the version
    installed here (torch without its local build label, so each machine gets its platform's
    build); a requirement not installed here keeps its own specifier."""
    pinned: list[str] = []
    for line in requires:
        spec, _, marker = line.partition(";")
        extra = _EXTRA.search(marker)
        if extra and extra.group(1) not in extras:
            continue
        match = _NAME.match(spec)
        if match is None or match.group(1).lower() == DISTRIBUTION:
            continue
        name = match.group(1)
        try:
            version = importlib.metadata.version(name).split("+", 1)[0]
        except importlib.metadata.PackageNotFoundError:
            pinned.append(spec.strip())
            continue
        pinned.append(f"{name}=={version}")
    return sorted(set(pinned), key=str.lower)


def source_checkout() -> Path | None:
    """The project directory MemoryBridge runs from, when it runs from a source checkout."""
    root = Path(__file__).resolve().parents[1]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and f'name = "{DISTRIBUTION}"' in pyproject.read_text():
        return root
    return None


def _clean_copy(root: Path, into: Path) -> Path:
    """The packages pyproject.toml includes, with pyproject.toml and README.md, copied to ``into``:
    setuptools caches earlier builds in ``build/``, and a module deleted since would ship again."""
    config = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["packages"]["find"]["include"]
    tops = sorted({pattern.split(".")[0].rstrip("*") for pattern in patterns})
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc")
    for name in tops:
        shutil.copytree(root / name, into / name, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(root / name, into / name)
    return into


def build(destination: Path) -> Path:
    """The running checkout's wheel, built from a clean copy of its packages into ``destination``."""
    root = source_checkout()
    if root is None:
        raise UsageError(
            "MemoryBridge is not running from a source checkout, so there is nothing to build: pass the "
            "wheel it was installed from with --wheel"
        )
    with tempfile.TemporaryDirectory() as scratch:
        source = _clean_copy(root, Path(scratch) / "source")
        out = Path(scratch) / "dist"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "-q",
                "-w",
                str(out),
                str(source),
            ],
            capture_output=True,
            text=True,
        )
        built = sorted(out.glob(f"{DISTRIBUTION}-*.whl"))
        if done.returncode != 0 or not built:
            raise ProvisioningError(f"building the wheel of {root} failed: {done.stderr.strip()[-2000:]}")
        destination.mkdir(parents=True, exist_ok=True)
        return Path(shutil.copy2(built[0], destination / built[0].name))


def ship(wheel: Path | None, directory: Path) -> tuple[ShippedWheel, Path, list[str]]:
    """The wheel the cluster installs (``wheel``, or the checkout's, built), copied into
    ``directory``: its record for the state file, the copy, and its Requires-Dist lines."""
    if wheel is not None and not wheel.is_file():
        raise UsageError(f"--wheel {wheel}: no such file")
    with tempfile.TemporaryDirectory() as scratch:
        source = wheel if wheel is not None else build(Path(scratch))
        name, version, requires = metadata(source)
        if name.lower() != DISTRIBUTION:
            raise UsageError(f"--wheel {source}: a wheel of {name!r}, not of {DISTRIBUTION}")
        copy = place(source, directory)
    return ShippedWheel(file=copy.name, sha256=sha256_of(copy), version=version), copy, requires


def place(wheel: Path, directory: Path) -> Path:
    """Copy ``wheel`` into ``directory`` whole or not at all (a partial copy never has its name)."""
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / wheel.name
    partial = copy.with_name(copy.name + ".part")
    shutil.copyfile(wheel, partial)
    partial.replace(copy)
    return copy
