#!/usr/bin/env bash
# Set up (once), byte-compile the checkout, and run the whole test suite: lint and format check
# (ruff), type check (mypy on every product package), then pytest on one worker per CPU core, at
# most 4 (pytest-xdist; the tests that need root run one after another on one worker; torch on one
# thread in every process, tests/conftest.py). Extra arguments go to pytest, e.g. -m "not root", or
# -n 0 to run everything in this process. The 25 slowest tests are listed at the end, to keep the
# suite short.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test
# Byte-compile the checkout once: where the environment sets PYTHONDONTWRITEBYTECODE (this project's
# CI machines do) no process writes the .pyc files it compiles, so each of the suite's many Python
# processes would compile every module of ours it imports again (about 0.2 CPU s each).
git ls-files -z '*.py' | xargs -0 .venv/bin/python -m compileall -q
echo "ruff: lint and format check"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# While mypy runs on one core, a first collection on the other writes pytest's assertion-rewritten
# test modules to __pycache__ (each pytest worker would otherwise rewrite every test module again,
# about 10 CPU s each, where PYTHONDONTWRITEBYTECODE is set) and stops at a collection error early.
collected="$(mktemp)"
trap 'rm -f "$collected"' EXIT
env -u PYTHONDONTWRITEBYTECODE .venv/bin/python -m pytest --collect-only -q -p no:cacheprovider > "$collected" 2>&1 &
collecting=$!
echo "mypy: type check (packages listed in pyproject.toml)"
.venv/bin/mypy
wait "$collecting" || { cat "$collected"; exit 1; }
exec .venv/bin/python -m pytest --numprocesses auto --maxprocesses 4 --dist loadgroup --durations 25 "$@"
