#!/usr/bin/env bash
# Set up (once) and run the whole test suite, writing bytecode as it goes: lint and format check
# (ruff), type check (mypy on every product package), then pytest on one worker per CPU core, at
# most 4 (pytest-xdist; the tests that need root run one after another on one worker; torch on one
# thread in every process, tests/conftest.py). Extra arguments go to pytest, e.g. -m "not root", or
# -n 0 to run everything in this process. The 25 slowest tests are listed at the end, to keep the
# suite short.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every process of the run writes the bytecode it compiles, where the environment says otherwise
# too (this project's CI machines set PYTHONDONTWRITEBYTECODE): the suite starts about a thousand
# Python processes, and each would compile every module it imports again. So the first import of a
# module compiles it once for the whole run, and the set-up need not compile every installed module
# ahead (setup.sh skips that for the test extras: about 30 s, most of it modules no test imports).
unset PYTHONDONTWRITEBYTECODE
bash scripts/setup.sh test
echo "ruff: lint and format check"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# While mypy runs on one core, a first collection on the other compiles what the tests import and
# writes pytest's assertion-rewritten test modules (each pytest worker would otherwise rewrite every
# test module itself, about 10 CPU s each), and stops at a collection error early.
collected="$(mktemp)"
trap 'rm -f "$collected"' EXIT
.venv/bin/python -m pytest --collect-only -q -p no:cacheprovider > "$collected" 2>&1 &
collecting=$!
echo "mypy: type check (packages listed in pyproject.toml)"
.venv/bin/mypy
wait "$collecting" || { cat "$collected"; exit 1; }
exec .venv/bin/python -m pytest --numprocesses auto --maxprocesses 4 --dist loadgroup --durations 25 "$@"
